// Package mountinfo reads the mount points of a process's mountinfo file,
// for the cleanups that must unmount what lies under a directory before
// removing it (buildah's overlays, runsc's namespaces, loop-mounted quota
// volumes): removing through a live mount would reach into another file
// system.
package mountinfo

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Self is this process's mountinfo file.
const Self = "/proc/self/mountinfo"

// Below lists the mount points strictly below dir in the mountinfo file at
// path (the fifth field of each line, its octal escapes decoded), in the
// file's order.
func Below(path, dir string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	prefix := filepath.Clean(dir) + "/"
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if mp := unescape(fields[4]); strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space, \011 for a
// tab, \012 for a newline, \134 for a backslash).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
