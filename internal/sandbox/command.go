package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// DefaultPath is the search path for a runner command when the image sets
// no PATH, the one Docker uses.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ExitCommandNotFound is what a shell exits with for a command it cannot find.
const ExitCommandNotFound = 127

// ResolveCommand makes spec.Args[0] an absolute path inside the image, as
// `docker run` does: a bare name ("python") is looked up in the PATH of
// spec.Env (DefaultPath when unset) under spec.RootFS, and a relative path
// ("bin/run") is taken from spec.Cwd. Users write ["python", "main.py"], and
// the drivers need a path: runsc and the process driver both start Args[0]
// as given.
//
// A command found nowhere is the user's mistake, not the host's: it returns
// the outcome of a run that exited 127 (and says why on spec.Stderr), which
// the driver returns as is. It returns nil when Args[0] is (now) absolute.
func ResolveCommand(spec *Spec) *Outcome {
	if len(spec.Args) == 0 || path.IsAbs(spec.Args[0]) {
		return nil // Validate speaks for an empty command
	}
	// A new slice: the caller's Args are theirs.
	name := spec.Args[0]
	if strings.Contains(name, "/") {
		spec.Args = append([]string{path.Join("/", spec.Cwd, name)}, spec.Args[1:]...)
		return nil
	}
	search := DefaultPath
	if p, ok := spec.Env["PATH"]; ok {
		search = p
	}
	if found := lookPath(spec.RootFS, name, search); found != "" {
		spec.Args = append([]string{found}, spec.Args[1:]...)
		return nil
	}
	msg := fmt.Sprintf("skiff: %s: command not found in the image (PATH %s); give runner_command an absolute path, or install it in the Dockerfile", name, search)
	if spec.Stderr != nil {
		fmt.Fprintln(spec.Stderr, msg)
	}
	now := time.Now()
	o := NewOutcome(ExitCommandNotFound, StopNone, now, now)
	o.SandboxError = msg
	o.StartFailed = true
	return o
}

// lookPath returns the first "/dir/name" of search that names an executable
// file (or a link, which the runtime follows inside the sandbox) under
// rootfs, or "". os.Root keeps the lookup inside rootfs: an image's links
// could otherwise point the host's own file system.
func lookPath(rootfs, name, search string) string {
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return ""
	}
	defer root.Close()
	for _, dir := range filepath.SplitList(search) {
		if !path.IsAbs(dir) {
			continue // a relative PATH entry would depend on the cwd; shells differ, so skip it
		}
		p := path.Join(dir, name)
		fi, err := root.Lstat(strings.TrimPrefix(p, "/"))
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}
