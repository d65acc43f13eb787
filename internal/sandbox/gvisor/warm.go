package gvisor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/internal/sandbox"
)

var _ sandbox.Warmer = (*Driver)(nil)

// A warm sandbox is booted ahead of its attempt (`runsc create` and `runsc
// start`, the bulk of a cold start) with the attempt's mounts and cgroup
// limits, and a pause process as its init. When an attempt with the same
// key arrives, its slot directory is renamed to the attempt's WorkDir (the
// gofer holds the mounted directories open, so the sandbox follows the
// rename), the payload is written, and the runner is started in the
// sandbox with `runsc exec` under the same process spec a cold start uses
// (user, no capabilities, environment, rlimits). When the runner exits the
// whole sandbox is killed before the result is read, and destroyed: a warm
// sandbox runs exactly one attempt.

// warmInitName is the pause program's file in the slot's scratch
// directory; it is removed once the init runs, so the runner finds its
// scratch directory empty, as in a cold start.
const warmInitName = ".skiff-init"

// pauseELF is a static x86-64 Linux program of 129 bytes that loops on
// pause(2): the warm sandbox's init. The images are the user's (a FROM
// scratch image has nothing to run), so the driver brings its own.
var pauseELF = func() []byte {
	code := []byte{0xb8, 0x22, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7} // mov eax, 34 (pause); syscall; jmp back
	const base, ehsize, phsize = 0x400000, 64, 56
	total := uint64(ehsize + phsize + len(code))
	b := make([]byte, 0, total)
	b = append(b, 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	le := binary.LittleEndian
	b = le.AppendUint16(b, 2)    // ET_EXEC
	b = le.AppendUint16(b, 0x3e) // x86-64
	b = le.AppendUint32(b, 1)
	b = le.AppendUint64(b, base+ehsize+phsize) // entry
	b = le.AppendUint64(b, ehsize)             // program headers
	b = le.AppendUint64(b, 0)                  // no section headers
	b = le.AppendUint32(b, 0)
	for _, v := range []uint16{ehsize, phsize, 1, 0, 0, 0} {
		b = le.AppendUint16(b, v)
	}
	b = le.AppendUint32(b, 1) // PT_LOAD
	b = le.AppendUint32(b, 5) // r-x
	for _, v := range []uint64{0, base, base, total, total, 0x1000} {
		b = le.AppendUint64(b, v)
	}
	return append(b, code...)
}()

// WarmSupported reports whether this build can keep warm sandboxes (the
// pause program is x86-64 only).
func WarmSupported() bool { return runtime.GOARCH == "amd64" }

// warmSlot is one booted sandbox waiting for its attempt.
type warmSlot struct {
	id    string // runsc container id and cgroup name
	dir   string // the slot's work directory (payload/, result/, ..., bundle/)
	pidfd int    // the sandbox process on the host; -1 until known
}

// warmPool holds one project's warm sandboxes (one key at a time).
type warmPool struct {
	key     sandbox.WarmKey
	want    int
	ready   []*warmSlot
	filling bool
	dropped bool
}

// warmState is the driver's pools, by the project's cache directory.
type warmState struct {
	mu    sync.Mutex
	pools map[string]*warmPool
	wg    sync.WaitGroup // fills and drops in flight
	// stopped is set by Cleanup: no pool is filled after it.
	stopped bool
	// used counts the attempts that ran in a warm sandbox.
	used atomic.Int64
}

// Warm implements sandbox.Warmer. It returns at once; the pool fills in the
// background, one sandbox at a time.
func (d *Driver) Warm(_ context.Context, key sandbox.WarmKey, n int) {
	if !WarmSupported() {
		return
	}
	w := &d.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if w.pools == nil {
		w.pools = map[string]*warmPool{}
	}
	p := w.pools[key.CacheDir]
	if p != nil && p.key != key {
		d.dropLocked(p)
		p = nil
	}
	if n <= 0 {
		if p != nil {
			d.dropLocked(p)
		}
		return
	}
	if p == nil {
		p = &warmPool{key: key}
		w.pools[key.CacheDir] = p
	}
	p.want = n
	d.fillLocked(p)
}

// DropWarm implements sandbox.Warmer.
func (d *Driver) DropWarm(cacheDir string) {
	w := &d.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pools[cacheDir]; p != nil {
		d.dropLocked(p)
	}
}

// WarmReady implements sandbox.Warmer.
func (d *Driver) WarmReady(key sandbox.WarmKey) int {
	w := &d.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pools[key.CacheDir]; p != nil && p.key == key {
		return len(p.ready)
	}
	return 0
}

// WarmUsed is how many attempts have run in a warm sandbox.
func (d *Driver) WarmUsed() int64 { return d.warm.used.Load() }

// dropLocked removes p and destroys its ready sandboxes in the background;
// a fill in flight destroys its sandbox when it sees p dropped.
func (d *Driver) dropLocked(p *warmPool) {
	w := &d.warm
	p.dropped = true
	if w.pools[p.key.CacheDir] == p {
		delete(w.pools, p.key.CacheDir)
	}
	slots := p.ready
	p.ready = nil
	for _, s := range slots {
		w.wg.Go(func() { d.destroyWarm(s) })
	}
}

// fillLocked starts p's filler unless it runs.
func (d *Driver) fillLocked(p *warmPool) {
	if p.filling || p.dropped || len(p.ready) >= p.want {
		return
	}
	p.filling = true
	d.warm.wg.Go(func() { d.fill(p) })
}

// warmRetry is the pause after a failed boot before the filler tries again.
const warmRetry = 5 * time.Second

// fill boots sandboxes for p until it has what it wants or is dropped.
func (d *Driver) fill(p *warmPool) {
	w := &d.warm
	for {
		w.mu.Lock()
		if p.dropped || w.stopped || len(p.ready) >= p.want {
			p.filling = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		s, err := d.bootWarm(p.key)
		w.mu.Lock()
		if err == nil && !p.dropped && !w.stopped {
			p.ready = append(p.ready, s)
			w.mu.Unlock()
			continue
		}
		gone := p.dropped || w.stopped
		w.mu.Unlock()
		if s != nil {
			d.destroyWarm(s)
		}
		if err != nil && !gone {
			d.log.Warn("boot warm sandbox", "cache_dir", p.key.CacheDir, "err", err)
			time.Sleep(warmRetry)
		}
	}
}

// takeWarm removes and returns a ready sandbox for spec, or nil, and
// starts the refill.
func (d *Driver) takeWarm(spec *sandbox.Spec) *warmSlot {
	key, ok := sandbox.KeyOf(spec)
	if !ok {
		return nil
	}
	w := &d.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pools[key.CacheDir]
	if p == nil {
		return nil
	}
	if p.key.RootFS != key.RootFS {
		// The project runs another revision now: its pool is stale.
		d.dropLocked(p)
		return nil
	}
	if p.key != key || len(p.ready) == 0 {
		return nil
	}
	s := p.ready[0]
	p.ready = p.ready[1:]
	d.fillLocked(p)
	return s
}

// warmDir holds the slots' directories, on the work directories'
// filesystem, so that a slot can be renamed to an attempt's WorkDir.
func (d *Driver) warmDir() string { return d.cfg.WarmDir }

// bootWarm creates and starts one sandbox for key. On error the returned
// slot, when not nil, is what must be destroyed.
func (d *Driver) bootWarm(key sandbox.WarmKey) (*warmSlot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runscTimeout)
	defer cancel()
	s := &warmSlot{id: "warm-" + strings.ToLower(rand.Text()[:16]), pidfd: -1}
	s.dir = filepath.Join(d.warmDir(), s.id)
	spec := sandbox.Spec{AttemptID: s.id, RootFS: key.RootFS, CacheDir: key.CacheDir, CPU: key.CPU,
		MemoryMB: key.MemoryMB, PidsLimit: key.PidsLimit, StorageBytes: key.StorageBytes, CacheBytes: key.CacheBytes, WorkDir: s.dir,
		Args: []string{sandbox.ContainerDirs().Scratch + "/" + warmInitName}}
	host, err := sandbox.PrepareEmpty(&spec, &sandbox.Owner{UID: RunnerUID, GID: RunnerGID}, sandbox.ContainerDirs())
	if err != nil {
		return nil, errors.Join(err, sandbox.RemoveWorkDir(s.dir))
	}
	initPath := filepath.Join(host.Scratch, warmInitName)
	if err := os.WriteFile(initPath, pauseELF, 0o555); err != nil {
		return nil, errors.Join(err, sandbox.RemoveWorkDir(s.dir))
	}
	bundle := filepath.Join(s.dir, "bundle")
	if err := writeBundle(bundle, bundleParams{Spec: &spec, Host: host, CgroupsPath: d.cgroupPath(s.id),
		NoFile: d.cfg.NoFile, PidsOverhead: d.cfg.PidsOverhead}); err != nil {
		return nil, errors.Join(err, sandbox.RemoveWorkDir(s.dir))
	}
	pidFile := filepath.Join(bundle, "sandbox.pid")
	// From here a container and a cgroup may exist: the caller destroys s.
	if err := d.runsc.execQuiet(ctx, filepath.Join(bundle, "create.err"), "create", "--bundle", bundle, "--pid-file", pidFile, s.id); err != nil {
		return s, err
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return s, fmt.Errorf("sandbox pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return s, fmt.Errorf("sandbox pid: %w", err)
	}
	// A pidfd names this process for good: the kill after the attempt
	// cannot reach another process that reused the number.
	if s.pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
		return s, fmt.Errorf("open sandbox pidfd: %w", err)
	}
	if err := d.runsc.execQuiet(ctx, filepath.Join(bundle, "start.err"), "start", s.id); err != nil {
		return s, err
	}
	// The init has loaded the program; the runner will not see it.
	if err := os.Remove(initPath); err != nil {
		return s, err
	}
	return s, nil
}

// destroyWarm stops and removes a sandbox that ran no attempt (a dropped
// pool, a failed boot) with its directory.
func (d *Driver) destroyWarm(s *warmSlot) {
	s.closePidfd()
	d.teardown(context.Background(), s.id, d.log.With("warm_id", s.id))
	if err := sandbox.RemoveWorkDir(s.dir); err != nil {
		d.log.Warn("remove warm slot", "warm_id", s.id, "err", err)
	}
}

// stopWarm drops every pool and waits for fills and drops in flight; no
// pool fills until resumeWarm. Cleanup brackets its work with them.
func (d *Driver) stopWarm() {
	w := &d.warm
	w.mu.Lock()
	w.stopped = true
	for _, p := range w.pools {
		d.dropLocked(p)
	}
	w.mu.Unlock()
	w.wg.Wait()
	// Slots of an earlier process (a crash): Cleanup deletes their
	// containers; their filesystems are unmounted and their directories
	// go here.
	if _, err := sandbox.ReapDisks(d.warmDir()); err != nil {
		d.log.Warn("unmount warm slots' disks", "err", err)
	}
	if err := os.RemoveAll(d.warmDir()); err != nil {
		d.log.Warn("remove warm slots", "err", err)
	}
}

func (d *Driver) resumeWarm() {
	d.warm.mu.Lock()
	d.warm.stopped = false
	d.warm.mu.Unlock()
}

// writeProcess writes the runner's process spec for `runsc exec --process`:
// the process a cold start's config.json would hold.
func writeProcess(path string, p bundleParams) error {
	b, err := json.Marshal(ociSpec(p).Process)
	if err != nil {
		return fmt.Errorf("encode process.json: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write process.json: %w", err)
	}
	return nil
}

func (s *warmSlot) closePidfd() {
	if s.pidfd >= 0 {
		unix.Close(s.pidfd)
		s.pidfd = -1
	}
}

// killSandbox SIGKILLs the sandbox process and waits until it is gone, so
// that nothing the runner started can still write to its directories.
func (s *warmSlot) killSandbox(timeout time.Duration) error {
	if err := s.signalKill(); err != nil {
		return err
	}
	return s.waitGone(timeout)
}

// signalKill sends SIGKILL to the sandbox process.
func (s *warmSlot) signalKill() error {
	if s.pidfd < 0 {
		return errors.New("no sandbox pidfd")
	}
	if err := unix.PidfdSendSignal(s.pidfd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill sandbox: %w", err)
	}
	return nil
}

// waitGone waits until the sandbox process has exited.
func (s *warmSlot) waitGone(timeout time.Duration) error {
	if s.pidfd < 0 {
		return errors.New("no sandbox pidfd")
	}
	fds := []unix.PollFd{{Fd: int32(s.pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(timeout.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for sandbox: %w", err)
		}
		if n == 0 {
			return errors.New("sandbox still running after SIGKILL")
		}
		return nil
	}
}
