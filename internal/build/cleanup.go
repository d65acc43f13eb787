package build

import (
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

	"github.com/skiffhq/skiff/internal/mountinfo"
)

// Killing buildah's process group is not enough to end a build: runsc starts
// each RUN step's sandbox and gofer in sessions of their own, so they outlive
// buildah (and keep its output pipe open), and buildah's working containers
// stay mounted in storage. These functions finish that off. A build's own
// cleanup reaches only its slot (slots.go): the sandboxes under the slot's
// runsc root and the bundles in its TMPDIR. Working containers live in the
// shared storage with nothing that tells whose they are, so they are swept
// with `buildah rm --all` only while no build holds a slot (finish).

// cleanupTimeout bounds the cleanup after a kill, which runs on a context of
// its own: the build's context is already over.
const cleanupTimeout = 30 * time.Second

// killSandboxes ends every runsc container under the runsc root: `runsc
// delete --force` kills the sandbox and removes its cgroups and state; then
// any process still naming that root (one whose state was never written) is
// killed outright.
func (b *Builder) killSandboxes(ctx context.Context, root string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	b.deleteSandboxes(ctx, root)
	b.killProcesses(ctx, func(arg string) bool { return arg == "--root="+root })
}

// deleteSandboxes force-deletes the runsc containers whose state is under root.
func (b *Builder) deleteSandboxes(ctx context.Context, root string) {
	if b.cfg.Isolation != IsolationOCI {
		return
	}
	out, err := b.runsc(root, "list", "-quiet").output(ctx)
	if err != nil {
		b.logger.WarnContext(ctx, "listing leftover build sandboxes", "root", root, "err", err)
	}
	for _, id := range strings.Fields(string(out)) {
		if _, err := b.runsc(root, "delete", "--force", id).output(ctx); err != nil {
			// runsc removes the container but complains about its filestore
			// when the rootfs mount is already gone; the sweep below checks.
			b.logger.DebugContext(ctx, "deleting build sandbox", "id", id, "err", err)
		}
	}
}

// killProcesses kills every process with an argument that match accepts.
func (b *Builder) killProcesses(ctx context.Context, match func(arg string) bool) {
	for _, pid := range processesWithArg(match) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			b.logger.WarnContext(ctx, "killing leftover runsc process", "pid", pid, "err", err)
		}
	}
}

// recoverAll clears what builds killed with an earlier server process left
// behind, before any build of this one starts: the sandboxes under every
// runsc root below runscBaseRoot (whatever the number of slots then) and
// that root itself (the one root of builders before slots), every working
// container, and all of TmpDir.
func (b *Builder) recoverAll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	base := runscBaseRoot(b.cfg)
	roots := []string{base}
	if entries, err := os.ReadDir(base); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				roots = append(roots, filepath.Join(base, e.Name()))
			}
		}
	}
	for _, root := range roots {
		b.deleteSandboxes(ctx, root)
	}
	b.killProcesses(ctx, func(arg string) bool {
		return arg == "--root="+base || strings.HasPrefix(arg, "--root="+base+"/")
	})
	b.removeWorkingContainers(ctx)
	if err := emptyDir(b.cfg.TmpDir); err != nil {
		b.logger.WarnContext(ctx, "emptying build tmp dir", "dir", b.cfg.TmpDir, "err", err)
	}
}

// removeWorkingContainers removes every buildah working container (a killed
// build leaves its own mounted). Only while no build runs: it would remove a
// running build's too.
func (b *Builder) removeWorkingContainers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := b.buildah("rm", "--all").output(ctx); err != nil {
		b.logger.WarnContext(ctx, "removing leftover working containers", "err", err)
	}
}

// cleanSlot empties the slot's TMPDIR (its RUN steps' bundles) after a
// failed build and asks for the sweep of working containers.
func (b *Builder) cleanSlot(ctx context.Context, sl *slot) {
	b.sweepPending.Store(true)
	if err := emptyDir(sl.tmpDir); err != nil {
		b.logger.WarnContext(ctx, "emptying build tmp dir", "dir", sl.tmpDir, "err", err)
	}
}

// finish gives a build's slot back. When a failed build asked for the sweep
// and no build runs now, it removes the working containers, holding every
// slot meanwhile; when a build still runs, the last one to finish does.
// Deferring the sweep rather than making builds wait for it keeps one
// account's killed builds from stalling everyone's.
func (b *Builder) finish(ctx context.Context, sl *slot) {
	b.slots.release(sl)
	if !b.sweepPending.Load() || !b.slots.tryAll() {
		return
	}
	defer b.slots.releaseAll()
	b.sweepIfPending(ctx)
}

// sweepIfPending removes the working containers when a failed build asked.
// The caller holds every slot.
func (b *Builder) sweepIfPending(ctx context.Context) {
	if b.sweepPending.Swap(false) {
		b.removeWorkingContainers(ctx)
	}
}

// processesWithArg returns the ids of processes that have an argument that
// match accepts.
func processesWithArg(match func(arg string) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
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
			if match(string(a)) {
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
	mounts, err := mountinfo.Below(mountinfo.Self, dir)
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
