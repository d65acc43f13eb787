package sandbox

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// attemptIDPattern keeps ids safe as runsc container ids, cgroup directory
// names and file names: no separators, no leading dot or dash.
var attemptIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidAttemptID reports whether id can be used as Spec.AttemptID.
func ValidAttemptID(id string) bool { return attemptIDPattern.MatchString(id) }

// Validate checks the fields every driver relies on.
func (s *Spec) Validate() error {
	var errs []error
	if !ValidAttemptID(s.AttemptID) {
		errs = append(errs, fmt.Errorf("attempt id %q: want 1-128 of [A-Za-z0-9_.-], starting alphanumeric", s.AttemptID))
	}
	if !filepath.IsAbs(s.RootFS) {
		errs = append(errs, fmt.Errorf("rootfs %q: must be an absolute path", s.RootFS))
	}
	if !filepath.IsAbs(s.WorkDir) {
		errs = append(errs, fmt.Errorf("work dir %q: must be an absolute path", s.WorkDir))
	}
	if !filepath.IsAbs(s.CacheDir) {
		errs = append(errs, fmt.Errorf("cache dir %q: must be an absolute path", s.CacheDir))
	}
	for _, m := range s.Mounts {
		if err := validMount(m); err != nil {
			errs = append(errs, err)
		}
	}
	if len(s.Args) == 0 || !path.IsAbs(s.Args[0]) {
		errs = append(errs, fmt.Errorf("args %q: want an absolute executable path first", s.Args))
	}
	if s.Cwd != "" && !path.IsAbs(s.Cwd) {
		errs = append(errs, fmt.Errorf("cwd %q: must be absolute", s.Cwd))
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			errs = append(errs, fmt.Errorf("env %q: invalid name or value", k))
		}
	}
	for _, a := range s.Args {
		if strings.Contains(a, "\x00") {
			errs = append(errs, errors.New("args: contains NUL"))
			break
		}
	}
	if s.CPU < 0 || s.MemoryMB < 0 || s.PidsLimit < 0 || s.Timeout < 0 || s.MaxResultBytes < 0 ||
		s.StorageBytes < 0 || s.CacheBytes < 0 || s.MaxOutputFiles < 0 || s.MaxOutputBytes < 0 {
		errs = append(errs, errors.New("limits: must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid sandbox spec: %w", err)
	}
	return nil
}

func (s *Spec) maxResultBytes() int64 {
	if s.MaxResultBytes > 0 {
		return s.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

func (s *Spec) maxOutputFiles() int {
	if s.MaxOutputFiles > 0 {
		return s.MaxOutputFiles
	}
	return DefaultMaxOutputFiles
}

func (s *Spec) maxOutputBytes() int64 {
	if s.MaxOutputBytes > 0 {
		return s.MaxOutputBytes
	}
	return DefaultMaxOutputBytes
}
