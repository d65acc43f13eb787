package gvisor

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

var _ sandbox.Warmer = (*Driver)(nil)

// A warm sandbox is booted ahead of its attempt (`runsc run`, the bulk of a
// cold start) with the attempt's mounts and cgroup limits and the launcher
// (launcher.go) as its init, waiting for its command. When an attempt with
// the same key arrives, its slot directory is renamed to the attempt's
// WorkDir (the gofer holds the mounted directories open, so the sandbox
// follows the rename), the payload is written, and the command goes down
// the launcher's pipe; the launcher execs the runner, which is then the
// sandbox's init under the process spec a cold start uses (user, no
// capabilities, rlimits) with the attempt's arguments, environment and
// working directory. When it exits the sandbox ends as a cold one does,
// and the `runsc run` that booted it exits with the runner's status: a warm
// sandbox runs exactly one attempt.

// warmSlot is one booted sandbox waiting for its attempt.
type warmSlot struct {
	key     sandbox.WarmKey
	id      string // runsc container id and cgroup name
	dir     string // the slot's work directory (payload/, result/, ..., bundle/)
	logPath string // runsc's log
	// resident is the `runsc run` that booted the sandbox, with the
	// driver's ends of the launcher's and the sandbox's pipes; nil until
	// it starts.
	*resident
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

// takeWarm removes and returns a ready sandbox for spec, or nil. The
// attempt that takes it starts the refill (refillWarm) once its start is
// past.
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
	return s
}

// warmRefillDelay is how long after a warm attempt's start its pool's
// refill begins, if the attempt has not ended by then.
const warmRefillDelay = time.Second

// refillWarm starts the refill of key's pool, if it still wants sandboxes.
func (d *Driver) refillWarm(key sandbox.WarmKey) {
	w := &d.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pools[key.CacheDir]; p != nil && p.key == key {
		d.fillLocked(p)
	}
}

// warmDir holds the slots' directories, on the work directories'
// filesystem, so that a slot can be renamed to an attempt's WorkDir.
func (d *Driver) warmDir() string { return d.cfg.WarmDir }

// bootWarm boots one sandbox for key and waits until its launcher runs.
// On error the returned slot, when not nil, is what must be destroyed.
func (d *Driver) bootWarm(key sandbox.WarmKey) (*warmSlot, error) {
	s := &warmSlot{key: key, id: "warm-" + strings.ToLower(rand.Text()[:16])}
	s.dir = filepath.Join(d.warmDir(), s.id)
	spec := sandbox.Spec{AttemptID: s.id, RootFS: key.RootFS, CacheDir: key.CacheDir, CPU: key.CPU,
		MemoryMB: key.MemoryMB, PidsLimit: key.PidsLimit, StorageBytes: key.StorageBytes, CacheBytes: key.CacheBytes, WorkDir: s.dir,
		Args: []string{launcherPath}}
	host, err := sandbox.PrepareEmpty(&spec, &sandbox.Owner{UID: RunnerUID, GID: RunnerGID}, sandbox.ContainerDirs())
	if err != nil {
		return nil, errors.Join(err, sandbox.RemoveWorkDir(s.dir))
	}
	bundle := filepath.Join(s.dir, "bundle")
	launcher := filepath.Join(bundle, "launcher")
	err = writeBundle(bundle, bundleParams{Spec: &spec, Host: host, CgroupsPath: d.cgroupPath(s.id),
		NoFile: d.cfg.NoFile, PidsOverhead: d.cfg.PidsOverhead, Launcher: launcher})
	if err == nil {
		err = os.WriteFile(launcher, launcherELF(), 0o555)
	}
	if err != nil {
		return nil, errors.Join(err, sandbox.RemoveWorkDir(s.dir))
	}
	s.logPath = filepath.Join(bundle, "runsc.log")
	// From here a container and a cgroup may exist: the caller destroys s.
	if s.resident, err = startResident(d.cfg.RunscPath, d.runsc.warmRunArgs(bundle, s.logPath, s.id), bundle); err != nil {
		return s, fmt.Errorf("boot warm sandbox: %w", err)
	}
	if err := s.waitReady(runscTimeout); err != nil {
		msg, _ := runscErrors(s.logPath)
		return s, fmt.Errorf("boot warm sandbox: %w: %s", err, msg)
	}
	return s, nil
}

// destroyWarm stops and removes a sandbox that ran no attempt (a dropped
// pool, a failed boot) with its directory.
func (d *Driver) destroyWarm(s *warmSlot) {
	log := d.log.With("warm_id", s.id)
	s.end(d, false, log)
	if err := sandbox.RemoveWorkDir(s.dir); err != nil {
		log.Warn("remove warm slot", "err", err)
	}
}

// end stops the slot's sandbox if it still runs, waits for its `runsc
// run`, removes the container and its cgroup, and closes the driver's
// pipes. clean says the runner exited by itself and runsc reported no
// error: `runsc run` then removed the container itself.
func (s *warmSlot) end(d *Driver, clean bool, log *slog.Logger) {
	if s.resident != nil {
		s.closeLaunch() // a launcher still waiting reads no command and exits
	}
	if clean {
		d.teardownAfterCleanExit(s.id, log)
	} else {
		d.teardown(context.Background(), s.id, log)
	}
	if s.resident != nil {
		s.close(warmKillWait, log)
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
