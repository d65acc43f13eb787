package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// enrollCode is the one-time enrollment code a host starts with, and the
// file it came from.
type enrollCode struct {
	value, file string
}

// enrollmentCode reads the code from --code-file and refuses --code: the
// code never belongs on a command line, where every user of the machine
// reads it in ps, and a unit file or shell history keeps it.
func enrollmentCode(f *remoteHostFlags, log *slog.Logger) (enrollCode, error) {
	if f.code != "" {
		return enrollCode{}, errors.New("--code puts the enrollment code where every user of this machine reads it (ps, shell history, unit files): " +
			"write it to a file only you can read (umask 077; printf '%s\\n' cek_... > FILE) and pass --code-file FILE")
	}
	if f.codeFile == "" {
		return enrollCode{}, nil
	}
	code, err := readCodeFile(f.codeFile)
	if err != nil {
		return enrollCode{}, err
	}
	return enrollCode{value: code, file: f.codeFile}, nil
}

// readCodeFile reads a code file, refusing one that group or others may
// read, as ssh refuses such a key: the code would not be one-time to them.
// A missing file is no code (a host already enrolled, whose unit still
// names the file it redeemed and removed).
func readCodeFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("--code-file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("--code-file %s has mode %04o: others can read the code; chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--code-file: %w", err)
	}
	code := strings.TrimSpace(string(b))
	if code == "" {
		return "", fmt.Errorf("--code-file %s is empty", path)
	}
	return code, nil
}
