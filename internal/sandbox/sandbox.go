// Package sandbox defines how a host runs one task attempt: the Spec it is
// given, the Outcome it reports and the Driver interface that the gvisor and
// process drivers implement. It also holds the pieces both drivers share:
// the attempt's directory layout, the runner environment, result and
// artifact collection, and the timeout/cancel escalation.
//
// The runner protocol (spec section 2.10) is fixed here: the runner finds its
// payload, result path, artifact, scratch and cache directories through the
// SKIFF_* environment variables, never through hard-coded paths, because
// the drivers place them differently.
package sandbox

import (
	"context"
	"io"
	"time"
)

// Driver runs task attempts. Implementations must be safe for concurrent
// use: the host agent runs several attempts at once.
type Driver interface {
	// Name identifies the driver in logs and host fingerprints ("gvisor").
	Name() string

	// Run executes one attempt to completion. The returned error is only
	// for infrastructure failures (the sandbox could not be prepared or
	// started, or was lost); a runner that fails, times out, is cancelled
	// or runs out of memory yields an Outcome and a nil error.
	//
	// Cancelling ctx stops the attempt (SIGTERM, the driver's grace
	// period, SIGKILL) and Run still returns an Outcome, with Killed set,
	// once the runner is gone. A ctx already done before the start is an
	// error: nothing ran.
	Run(ctx context.Context, spec Spec) (*Outcome, error)

	// Cleanup removes what a crash of this host left behind (sandboxes,
	// cgroups) and what runs leave for reuse. Call it at start-up before
	// the first Run, and at shutdown after the last; never concurrently
	// with Run.
	Cleanup(ctx context.Context) error
}

// Spec describes one attempt.
type Spec struct {
	// AttemptID is unique per attempt; the gvisor driver uses it as the
	// runsc container id and cgroup name. See ValidAttemptID.
	AttemptID string
	// TaskID is exposed to the runner as SKIFF_TASK_ID.
	TaskID string

	// RootFS is the unpacked image root filesystem. It is mounted read-only
	// and shared by every attempt of the revision, so it is never written.
	RootFS string
	// Args is the runner command. Args[0] is a path inside RootFS, or a
	// command name that the driver looks up on the PATH of Env (ResolveCommand).
	Args []string
	// Cwd is the working directory inside the sandbox ("/" when empty).
	Cwd string
	// Env holds the image and project environment. The SKIFF_* protocol
	// variables are set by the driver and override entries of the same name.
	Env map[string]string

	// Payload is written to the payload file, which the runner can only read.
	Payload []byte
	// Inputs are artifact inputs, placed read-only beside the payload
	// (payload/inputs/<name>), listed in the payload's
	// _artifacts.local_paths and named by SKIFF_ARTIFACT_<NAME>.
	Inputs []Input
	// WorkDir is a host directory owned by this attempt. The driver creates
	// payload/, result/, artifacts/ and scratch/ (and, for gvisor, bundle/)
	// under it; they must not exist yet. The caller removes WorkDir once it
	// has taken the result and artifacts out of it.
	WorkDir string
	// CacheDir is a host directory shared by the project's attempts on this
	// host (SKIFF_TASK_CACHE_DIR). It is created if missing.
	CacheDir string
	// CacheBytes, when above 0, makes CacheDir a filesystem of its own of
	// this size (an image beside it, made on first use and kept mounted
	// for the project's later attempts): what the project's attempts
	// leave in their cache is bounded like their scratch. 0 leaves it on
	// the host's filesystem.
	CacheBytes int64
	// Mounts are further host paths bind-mounted into the sandbox (data
	// sources, cache mounts). Drivers without a mount namespace refuse
	// them.
	Mounts []Mount

	// CPU is the CPU limit in cores; 0 means no limit.
	CPU float64
	// MemoryMB is the memory limit in MiB; 0 means no limit. Under gVisor it
	// also covers the sandbox kernel, so the runner gets somewhat less.
	MemoryMB int64
	// PidsLimit caps the number of processes/threads; 0 means no limit.
	PidsLimit int64
	// StorageBytes, when above 0, is a hard limit on what the runner can
	// write to its result, artifact and scratch directories together
	// (requirements.storage_gb): they live on a filesystem of this size of
	// their own (diskquota), and a write past it fails with ENOSPC. 0
	// leaves them on WorkDir's filesystem, unbounded.
	StorageBytes int64
	// MaxOutputFiles and MaxOutputBytes cap the artifact directory that
	// Collect lists: past either the attempt's outputs are refused
	// (Outcome.OutputRejected). 0 means DefaultMaxOutputFiles and
	// DefaultMaxOutputBytes.
	MaxOutputFiles int
	MaxOutputBytes int64
	// Network enables outbound networking; false means none at all.
	Network bool

	// Timeout bounds the run; 0 means no timeout. When it expires the runner
	// gets SIGTERM, then SIGKILL after the driver's grace period.
	Timeout time.Duration
	// MaxResultBytes caps the result file; 0 means DefaultMaxResultBytes.
	MaxResultBytes int64

	// Stdout and Stderr receive the runner's output live, each from its own
	// goroutine (so the two must not share unsynchronised state). Nil
	// discards the stream.
	Stdout, Stderr io.Writer

	// GPU, when set, attaches GPUs to the attempt (gpu.go); nil: none.
	// Only the gvisor driver attaches them.
	GPU *GPU
}

// DefaultMaxResultBytes is the result size cap when Spec.MaxResultBytes is 0.
const DefaultMaxResultBytes = 1 << 20

// Output caps when the Spec leaves them 0: the artifact directory is
// listed into memory and each file is uploaded, so both are bounded.
const (
	DefaultMaxOutputFiles = 1000
	DefaultMaxOutputBytes = 10 << 30
)

// Outcome is what an attempt did.
type Outcome struct {
	// ExitCode is the runner's exit status; a runner killed by signal N
	// reports 128+N, as a shell would (SIGKILL is 137, SIGTERM 143).
	ExitCode int
	// TimedOut is set when the driver stopped the runner because Spec.Timeout
	// expired. An exit code of 137 or 143 is then ours, not an OOM.
	TimedOut bool
	// Killed is set when the driver stopped the runner because ctx was
	// cancelled (job cancel, host shutdown).
	Killed bool
	// OOMKilled is a best-effort guess: exit 137 that the driver did not
	// cause. A runner that SIGKILLs itself looks the same, and the protocol
	// treats both as infrastructure failures anyway.
	OOMKilled bool

	// SandboxError is the sandbox runtime's own error, when it failed to
	// start the runner or lost it (a missing executable or working
	// directory, a sandbox that could not start under its limits). The exit
	// code is then the runtime's (128 for runsc), not the runner's. The
	// message also went to Stderr.
	SandboxError string
	// StartFailed says the runner could not be started from the image as
	// asked (a missing or non-executable command, a bad binary format):
	// the project's fault, unlike a sandbox that failed. The driver decides,
	// because only it knows its runtime's errors.
	StartFailed bool

	// StartedAt and EndedAt bracket the sandbox from start to exit; billing
	// meters this span.
	StartedAt, EndedAt time.Time

	// Result is the result file's content, nil if the runner wrote none.
	Result []byte
	// ResultTooLarge is set (and Result is nil) when the result file exceeds
	// the size cap.
	ResultTooLarge bool
	// ResultRejected explains why a result file that exists was not read
	// (too large, a symlink, not a regular file); empty otherwise.
	ResultRejected string

	// Artifacts lists the regular files under the artifact directory, sorted
	// by Path. Symlinks and other special files are never followed.
	Artifacts []Artifact
	// SkippedArtifacts lists relative paths under the artifact directory
	// that were not collected because they are not regular files (symlinks
	// included), so the agent can report them as rejected.
	SkippedArtifacts []string

	// StorageExceeded is set when the attempt had a storage quota
	// (Spec.StorageBytes), its filesystem was full when the runner ended
	// and the runner did not succeed: it most likely failed on ENOSPC.
	StorageExceeded bool
	// FullMount is the destination of a writable bounded mount (Mount.
	// Bounded) that was full when the runner ended without succeeding:
	// it most likely failed on ENOSPC there. Empty otherwise.
	FullMount string

	// OutputRejected says why the artifact directory was not collected
	// (more files or bytes than the caps); Artifacts is then empty.
	OutputRejected string

	// Stages is how long the driver's own stages took, for benchmarks and
	// logs; zero where a driver does not measure them.
	Stages Stages
}

// Duration is the metered span of the attempt.
func (o *Outcome) Duration() time.Duration { return o.EndedAt.Sub(o.StartedAt) }

// Artifact is one regular file the runner left in its artifact directory.
type Artifact struct {
	// Path is relative to the artifact directory, with forward slashes.
	Path string
	// Size is the file size in bytes.
	Size int64
	// HostPath is where the file is on the host, inside Spec.WorkDir. Open it
	// with O_NOFOLLOW: the runner is gone, but the file is still its work.
	HostPath string
}

// Stages break a driver's Run down. Prepare runs from the call to the
// sandbox's start (directories, bundle, limits), Sandbox from its start to
// its exit (the runtime's start, the runner, its stop), Collect from there
// to the outcome (result, runtime errors) and Teardown is what the driver
// did after that before returning (nothing, when it could defer it).
type Stages struct {
	Prepare, Sandbox, Collect, Teardown time.Duration
}
