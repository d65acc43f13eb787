package sandbox

import (
	"context"
	"fmt"
	"os"
)

// WarmKey is what a pre-started sandbox fixes before its attempt is known:
// the image, the project's cache mount and the limits of its cgroup. An
// attempt may use a warm sandbox only when its spec has the same key and no
// network; everything else (command, environment, payload, inputs, user,
// timeout) is given when the attempt starts.
type WarmKey struct {
	RootFS    string
	CacheDir  string
	CPU       float64
	MemoryMB  int64
	PidsLimit int64
	// StorageBytes is the size of the filesystem a warm sandbox's
	// writable directories are on (Spec.StorageBytes): made at boot, so
	// that an attempt's start does not pay for it.
	StorageBytes int64
	// CacheBytes is Spec.CacheBytes: the project cache's filesystem is
	// mounted before the sandbox binds it.
	CacheBytes int64
}

// KeyOf is spec's warm key; ok is false when spec cannot use a warm sandbox:
// it asks for a network, or for data-source or cache mounts, which a
// sandbox booted ahead does not have (its mounts are fixed at boot).
func KeyOf(spec *Spec) (key WarmKey, ok bool) {
	if spec.GPU != nil {
		// A warm sandbox holds no GPU while idle, and a GPU cannot be
		// attached to a running sandbox: GPU attempts start cold.
		return WarmKey{}, false
	}
	return WarmKey{RootFS: spec.RootFS, CacheDir: spec.CacheDir, CPU: spec.CPU, MemoryMB: spec.MemoryMB,
		PidsLimit: spec.PidsLimit, StorageBytes: spec.StorageBytes, CacheBytes: spec.CacheBytes}, !spec.Network && len(spec.Mounts) == 0
}

// Warmer keeps pre-started sandboxes: a host asks for n of a key once a
// revision is prepared (POST /projects/:name/init), and Run uses one for
// an attempt whose spec has that key. A warm sandbox runs one attempt and
// is destroyed; the pool refills in the background.
type Warmer interface {
	// Warm keeps n sandboxes of key ready, replacing any pool of another
	// key with the same CacheDir (the project's previous revision); n = 0
	// drops the pool.
	Warm(ctx context.Context, key WarmKey, n int)
	// DropWarm destroys the pool of the project whose cache is cacheDir.
	DropWarm(cacheDir string)
	// WarmReady is how many sandboxes of key are ready now.
	WarmReady(key WarmKey) int
}

// PrepareEmpty creates the attempt's directories under spec.WorkDir, as
// Prepare does, but leaves the payload directory empty: a warm sandbox
// mounts them before its attempt is known, and FillPayload completes them.
func PrepareEmpty(spec *Spec, owner *Owner, runner Dirs) (Dirs, error) {
	bare := *spec
	bare.Payload, bare.Inputs = nil, nil
	d, err := Prepare(&bare, owner, runner)
	if err != nil {
		return Dirs{}, err
	}
	if err := os.Remove(d.PayloadFile()); err != nil {
		return Dirs{}, fmt.Errorf("empty payload dir: %w", err)
	}
	return d, nil
}

// FillPayload writes spec's payload file and inputs into the payload
// directory that PrepareEmpty left empty.
func FillPayload(spec *Spec, runner Dirs) error {
	d := HostDirs(spec)
	if err := os.WriteFile(d.PayloadFile(), payloadWithLocalPaths(spec.Payload, spec.Inputs, runner), 0o444); err != nil {
		return fmt.Errorf("write payload: %w", err)
	}
	return placeInputs(d, spec.Inputs)
}
