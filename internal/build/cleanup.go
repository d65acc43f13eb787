package build

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Killing buildah's process group is not enough to end a build: runsc starts
// each RUN step's sandbox and gofer in sessions of their own, so they outlive
// buildah (and keep its output pipe open), and buildah's working containers
// stay mounted in storage. These functions finish that off. They are safe
// only because builds are serialised and the builder owns its storage root,
// runsc root and TmpDir.

// cleanupTimeout bounds the cleanup after a kill, which runs on a context of
// its own: the build's context is already over.
const cleanupTimeout = 30 * time.Second

// killSandboxes ends every runsc container under the builder's runsc root:
// `runsc delete --force` kills the sandbox and removes its cgroups and state;
// then any process still naming that root (one whose state was never written)
// is killed outright.
func (b *Builder) killSandboxes(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if b.cfg.Isolation == IsolationOCI {
		out, err := b.runsc("list", "-quiet").output(ctx)
		if err != nil {
			b.logger.WarnContext(ctx, "listing leftover build sandboxes", "err", err)
		}
		for _, id := range strings.Fields(string(out)) {
			if _, err := b.runsc("delete", "--force", id).output(ctx); err != nil {
				// runsc removes the container but complains about its filestore
				// when the rootfs mount is already gone; the sweep below checks.
				b.logger.DebugContext(ctx, "deleting build sandbox", "id", id, "err", err)
			}
		}
	}
	for _, pid := range processesWithArg("--root=" + b.runscRoot()) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			b.logger.WarnContext(ctx, "killing leftover runsc process", "pid", pid, "err", err)
		}
	}
}

// removeLeftovers removes buildah's working containers (a killed build leaves
// them mounted) and empties TmpDir (the RUN steps' bundles).
func (b *Builder) removeLeftovers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := b.buildah("rm", "--all").output(ctx); err != nil {
		b.logger.WarnContext(ctx, "removing leftover working containers", "err", err)
	}
	if err := emptyDir(b.cfg.TmpDir); err != nil {
		b.logger.WarnContext(ctx, "emptying build tmp dir", "dir", b.cfg.TmpDir, "err", err)
	}
}

// processesWithArg returns the ids of processes that have arg among their
// command-line arguments.
func processesWithArg(arg string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	want := []byte(arg)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(cmdline, []byte{0}) {
			if bytes.Equal(a, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// emptyDir removes everything inside dir, except that it refuses to descend
// into anything still mounted: removing through a live overlay mount would
// delete files of the image it shows.
func emptyDir(dir string) error {
	mounts, err := mountPointsUnder(dir)
	if err != nil {
		return err
	}
	if len(mounts) > 0 {
		return fmt.Errorf("%d mounts still under %s (first %s); leaving it", len(mounts), dir, mounts[0])
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// mountPointsUnder lists the mount points strictly below dir.
func mountPointsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
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
		if mp := unescapeMountPath(fields[4]); strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	return out, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
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
