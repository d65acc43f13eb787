package build

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// Builds run side by side, up to Config.Workers of them, each in a slot of
// its own. A slot owns a runsc state root (buildah's --runtime-flag root=)
// and a TMPDIR (the RUN steps' bundles), so the cleanup after a killed build
// deletes and kills only that build's sandboxes and empties only its
// bundles. The storage root is shared: containers/storage locks it, so
// concurrent buildah processes are safe there. What cannot be told apart per
// build is buildah's working containers (buildah 1.42's bud has no flag that
// names or labels them), so the `buildah rm --all` that removes a killed
// build's leftovers waits until no build holds a slot (see Builder.finish).

// slot is where one build runs.
type slot struct {
	index     int
	runscRoot string // runsc's --root for this slot's RUN steps
	tmpDir    string // buildah's TMPDIR for this slot
}

// slots hands out a builder's slots, and all of them at once to whoever
// must have the storage to itself.
type slots struct {
	mu        sync.Mutex
	all       []*slot
	free      []*slot
	exclusive int           // callers waiting in acquireAll; no build starts meanwhile
	changed   chan struct{} // closed and replaced whenever a slot is given back
}

// slotsFor lays out cfg.Workers slots: runsc roots <RunRoot>/runsc/<i> and
// TMPDIRs <TmpDir>/<i>. Names stay short: runsc's unix socket paths live
// under its root and must fit in 108 bytes.
func slotsFor(cfg Config) *slots {
	s := &slots{changed: make(chan struct{})}
	for i := range max(cfg.Workers, 1) {
		name := strconv.Itoa(i)
		s.all = append(s.all, &slot{
			index:     i,
			runscRoot: filepath.Join(runscBaseRoot(cfg), name),
			tmpDir:    filepath.Join(cfg.TmpDir, name),
		})
	}
	s.free = slices.Clone(s.all)
	return s
}

// runscBaseRoot holds every slot's runsc root. Before builds ran side by
// side it was itself the one runsc root, so startup recovery sweeps it too.
func runscBaseRoot(cfg Config) string { return filepath.Join(cfg.RunRoot, runscStateDirName) }

// acquire waits for a free slot.
func (s *slots) acquire(ctx context.Context) (*slot, error) {
	for {
		s.mu.Lock()
		if s.exclusive == 0 && len(s.free) > 0 {
			sl := s.free[len(s.free)-1]
			s.free = s.free[:len(s.free)-1]
			s.mu.Unlock()
			return sl, nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the builder: %w", ctx.Err())
		}
	}
}

// release gives sl back.
func (s *slots) release(sl *slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = append(s.free, sl)
	s.wake()
}

// acquireAll waits until no build runs and takes every slot; builds that
// ask meanwhile wait behind it.
func (s *slots) acquireAll(ctx context.Context) error {
	s.mu.Lock()
	s.exclusive++
	for len(s.free) < len(s.all) {
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			s.exclusive--
			s.wake()
			s.mu.Unlock()
			return fmt.Errorf("waiting for the builder: %w", ctx.Err())
		}
	}
	s.exclusive--
	s.free = nil
	s.mu.Unlock()
	return nil
}

// tryAll takes every slot if none is taken and nobody waits in acquireAll
// (who will hold them all soon anyway), without waiting.
func (s *slots) tryAll() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exclusive > 0 || len(s.free) < len(s.all) {
		return false
	}
	s.free = nil
	return true
}

// releaseAll gives back every slot taken by acquireAll or tryAll.
func (s *slots) releaseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = slices.Clone(s.all)
	s.wake()
}

// wake tells the waiters that a slot came back. s.mu is held.
func (s *slots) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}
