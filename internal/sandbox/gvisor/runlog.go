package gvisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// maxRunscError caps the runsc error text kept in an Outcome.
const maxRunscError = 4096

// runscErrors returns the error-level messages runsc wrote to its JSON log
// at path, joined and capped; "" when there are none. With --debug in
// ExtraFlags the log is long, hence the line-by-line scan.
func runscErrors(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("open runsc log: %w", err)
	}
	defer f.Close()
	var msgs []string
	size := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var entry struct {
			Msg   string `json:"msg"`
			Level string `json:"level"`
		}
		if json.Unmarshal(sc.Bytes(), &entry) != nil {
			continue // runsc also writes plain text; the JSON entries suffice
		}
		if entry.Level != "error" && entry.Level != "fatal" {
			continue
		}
		msgs = append(msgs, entry.Msg)
		if size += len(entry.Msg); size > maxRunscError {
			break
		}
	}
	// A line over the buffer ends the scan early; what was read still helps.
	out := strings.Join(msgs, "\n")
	if len(out) > maxRunscError {
		out = out[:maxRunscError]
	}
	return out, nil
}
