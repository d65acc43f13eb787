package manifest

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Bounds on list and map sizes. They are far above what a project needs and
// keep a hostile manifest from costing more than a glance.
const (
	maxPathLen     = 1024
	maxCommandArgs = 256
	maxEnv         = 128
	maxBuildArgs   = 64
	maxBuildInputs = 1000
	maxValidation  = 256
	maxDataSources = 32
	maxCacheMounts = 16
	maxValueLen    = 4096
)

var (
	// namePattern is for data source and cache mount names, the same
	// alphabet as project names.
	namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	// envNamePattern is a POSIX shell variable name, as Dockerfile ARG and
	// ENV expect.
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// stagePattern is a Dockerfile stage name (FROM ... AS <name>).
	stagePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	// hfRepoPattern is a Hugging Face repo id: "name" or "owner/name".
	hfRepoPattern = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)
	// commitPattern is a full git commit id, the only revision that cannot
	// move.
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// reservedMount reports whether a mount at p would cover what the sandbox
// provides itself (the root, /proc, /sys, /dev): the task would break or the
// mount would be silently replaced.
func reservedMount(p string) bool {
	return p == "/" || within(p, "/proc") || within(p, "/sys") || within(p, "/dev")
}

// checkContainerPath checks an absolute path inside the image.
func checkContainerPath(p string) error {
	if err := checkText(p); err != nil {
		return err
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("must be an absolute path inside the container, such as %q", "/"+strings.TrimPrefix(path.Clean(p), "./"))
	}
	if c := path.Clean(p); c != p {
		return fmt.Errorf("must be a clean path; write %q", c)
	}
	return nil
}

// cleanProjectPath checks a path relative to the project root and returns
// its clean form. Leading "./" is accepted because people write it.
func cleanProjectPath(p string) (string, error) {
	if err := checkText(p); err != nil {
		return "", err
	}
	if strings.HasPrefix(p, "/") {
		return "", errors.New("must be relative to the project root, not absolute")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", errors.New("must stay inside the project ('..' is not allowed)")
		}
	}
	return path.Clean(p), nil
}

// checkText applies what every path and value shares: not empty, bounded,
// no control characters (they would end up in argv, mounts and logs).
func checkText(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	if len(s) > maxPathLen {
		return fmt.Errorf("is %d bytes long; the limit is %d", len(s), maxPathLen)
	}
	if hasControl(s) {
		return errors.New("must not contain control characters")
	}
	return nil
}

// checkValue checks a free-form string value (an environment variable or
// build argument): bounded, and without NUL, which no process can receive.
func checkValue(s string) error {
	if len(s) > maxValueLen {
		return fmt.Errorf("is %d bytes long; the limit is %d", len(s), maxValueLen)
	}
	if strings.ContainsRune(s, 0) {
		return errors.New("must not contain a NUL character")
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// within reports whether p is dir or below it; both are clean absolute
// paths.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// containerPath is checkContainerPath in the shape pathList takes.
func containerPath(p string) (string, error) {
	return p, checkContainerPath(p)
}

// pathList checks a list of paths with check, which returns the path in
// the form to keep. A path listed twice is reported: it is almost always a
// typo for another one.
func pathList(c *collector, field string, paths []string, limit int, check func(string) (string, error)) []string {
	if len(paths) > limit {
		c.add(field, "has %d entries; the limit is %d", len(paths), limit)
	}
	out := make([]string, 0, len(paths))
	first := make(map[string]int, len(paths))
	for i, s := range paths {
		at := fmt.Sprintf("%s[%d]", field, i)
		p, err := check(s)
		if err != nil {
			c.add(at, "%v", err)
			continue
		}
		if j, dup := first[p]; dup {
			c.add(at, "%q is already listed as %s[%d]", s, field, j)
			continue
		}
		first[p] = i
		out = append(out, p)
	}
	return out
}
