// Package agentproto is the wire protocol between the controller and its
// hosts. Hosts only dial out: a host registers, then long-polls for work
// (each poll is also its heartbeat) and posts attempt events. The
// local host inside `skiff server` speaks the same protocol over loopback,
// so the single-machine path and the fleet path are one path.
//
// Endpoints (JSON bodies, snake_case, all POST):
//
//	POST /agent/v1/register              RegisterRequest  -> RegisterResponse
//	POST /agent/v1/lease                 PollRequest      -> PollResponse (long-poll; the path keeps its old name)
//	POST /agent/v1/attempts/{id}/events  AttemptEvent     -> EventResponse
//	GET  /agent/v1/attempts/{id}/inputs/{artifact_id}      -> the bytes (v3)
//	POST /agent/v1/attempts/{id}/artifacts?path=&kind=     raw body -> UploadedArtifact (v3)
//
// Every request carries "Authorization: Bearer <host token>" (the token a
// host was enrolled with; it is never logged) and the VersionHeader with
// ProtocolVersion. Errors come back as a non-2xx status with an
// ErrorResponse body. Status codes the host acts on:
//
//   - 404 on a poll or events with code CodeUnknownHost: the controller does
//     not know this host (id expired after it was declared lost); the host
//     registers again.
//   - 409 or 410 on events: the controller already recorded this event or the
//     attempt is gone; the host treats the event as acknowledged.
//   - 426 with code CodeUnsupportedVersion: the controller does not speak
//     this ProtocolVersion; the host keeps retrying at its slowest backoff.
//   - anything else (5xx, 429, network errors): retried with backoff.
//
// Event delivery is at-least-once: a host retries an event until it gets a
// 2xx (or 409/410), so the controller must treat a repeated (attempt_id,
// seq) as a duplicate.
package agentproto

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// ProtocolVersion is the version of this protocol that this build speaks.
// Bump it for every change a peer could observe, and say what changed:
//
//   - 1: register, long-poll for work with heartbeat, attempt events
//     started/progress/finished with the outcome inline (no artifact
//     upload yet).
//   - 2: Outcome.StartFailed: the host says, typed, that the runner could
//     not be started from the image. A version-1 host's outcome lacks it,
//     and the controller infers it from the sandbox error's words.
//   - 3: artifacts. Assignment.Inputs lists the task's artifact inputs,
//     which the host fetches (GET .../inputs/{artifact_id}) into its cache
//     by sha256; the host uploads the files of the artifact directory, a
//     spilled result and the full output (POST .../artifacts) before it
//     reports the attempt finished, and Outcome lists them (Artifacts,
//     ArtifactError, ResultArtifactID, OutputArtifactID). A version-2 host
//     would ignore Inputs, so the controller gives a task with inputs only
//     to hosts of version 3 or later; tasks without inputs run on any.
//   - 4: Assignment.DataSources and CacheMounts: the revision's manifest
//     data sources, which the host fetches into its content-addressed
//     data cache and mounts read-only, and its cache mounts, which it
//     mounts writable from a per-project directory kept between tasks.
//     Tasks of revisions with either go only to hosts of version 4.
//   - 5: a host the controller does not share a filesystem with (an
//     enrolled host) gets its image by URL (Assignment.ImageURL,
//     AttemptImageURLPath): the OCI layout as a tar stream, which it
//     verifies blob by blob and caches by digest.
//   - 6: GPUs, and tenants kept apart on a host (two features that
//     shipped together). Assignment.GPUs is how many GPUs the attempt
//     gets, and Outcome.GPUsAttached how many its sandbox had attached;
//     the GPU rate is billed only for those. Older hosts attach none, so
//     the controller counts no GPUs of a host below version 6.
//     Assignment.AccountID names the job's account, and the host keys its
//     input and data-source caches by it (an account never reuses bytes
//     another account fetched); a DataSource carries the account and, for
//     a huggingface source, the token the host sends to the hub (the
//     tenant's own, or the operator's for a repo on the operator's list).
//     An older host would share cached bytes across accounts, so tasks
//     with inputs or data sources go only to hosts of version 6.
const ProtocolVersion = 6

// GPUProtocolVersion is the first version whose hosts attach GPUs.
const GPUProtocolVersion = 6

// MinProtocolVersion is the oldest version the controller still accepts,
// so that hosts can be upgraded one at a time. The controller answers a
// registration with the version it will speak to that host: the host's own.
const MinProtocolVersion = 1

// Supported reports whether the controller speaks version v.
func Supported(v int) bool { return v >= MinProtocolVersion && v <= ProtocolVersion }

// VersionHeader carries ProtocolVersion on every request.
const VersionHeader = "Skiff-Agent-Protocol"

// Paths of the endpoints. AttemptEventsPath is a prefix: the attempt id and
// "/events" follow it (AttemptEventsURLPath builds the whole path).
const (
	RegisterPath      = "/agent/v1/register"
	PollPath          = "/agent/v1/lease"
	AttemptEventsPath = "/agent/v1/attempts/"
)

// AttemptInputURLPath is where a host fetches one artifact input of an
// attempt (version 3).
func AttemptInputURLPath(attemptID, artifactID string) string {
	return AttemptEventsPath + attemptID + "/inputs/" + artifactID
}

// AttemptImageURLPath is where a host fetches the image of an attempt it
// was assigned (version 5): the image's OCI layout as an uncompressed tar
// stream (oci-layout, index.json, blobs/sha256/<hex>).
func AttemptImageURLPath(attemptID string) string {
	return AttemptEventsPath + attemptID + "/image"
}

// AttemptArtifactsURLPath is where a host uploads an attempt's files
// (version 3), with the query parameters path and kind.
func AttemptArtifactsURLPath(attemptID string) string {
	return AttemptEventsPath + attemptID + "/artifacts"
}

// Kinds of uploaded artifacts (the kind query parameter).
const (
	ArtifactKindOutput       = "output"        // a file of the artifact directory
	ArtifactKindFailedOutput = "failed_output" // the same, of an attempt that failed
	ArtifactKindResult       = "result"        // a result too large to keep inline
	ArtifactKindLog          = "log"           // the full stdout and stderr
)

// InputArtifact is one artifact input of an assignment (version 3). The
// host fetches it once per SHA256 into its cache and places it read-only
// in the sandbox under Name.
type InputArtifact struct {
	ID       string `json:"id"`
	SHA256   string `json:"sha256,omitempty"` // empty: an external artifact registered without one
	Size     int64  `json:"size"`
	Filename string `json:"filename"`
	// URL is set for an external artifact: the host downloads it from
	// there (verifying SHA256 when given) instead of from the controller.
	URL string `json:"url,omitempty"`
}

// UploadedArtifact answers an upload and is listed in Outcome.Artifacts.
type UploadedArtifact struct {
	ID     string `json:"id"`
	Path   string `json:"path"` // relative to the artifact directory, or the result or log file name
	Kind   string `json:"kind"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// AttemptEventsURLPath is the events path of one attempt.
func AttemptEventsURLPath(attemptID string) string {
	return AttemptEventsPath + attemptID + "/events"
}

// Error codes in ErrorResponse.Code.
const (
	CodeUnknownHost        = "unknown_host"
	CodeUnsupportedVersion = "unsupported_version"
)

// ErrorResponse is the body of a non-2xx answer.
type ErrorResponse struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ResourceProfile describes the host's hardware, shown with each attempt
// (spec section 2.5).
type ResourceProfile struct {
	CPUModel    string  `json:"cpu_model"`
	CPUClockGHz float64 `json:"cpu_clock_ghz"`
	// SingleCoreScore is relative to a reference host (1.0). See
	// agent.MeasureSingleCore for how it is measured.
	SingleCoreScore float64 `json:"single_core_score"`
	CPUCount        int     `json:"cpu_count"`
	MemoryTotalMB   int64   `json:"memory_total_mb"`
	GPUCount        int     `json:"gpu_count"`
	// GPUMemoryMB is the memory of each GPU (the smallest one's), which
	// requirements.gpu_memory_mb is placed against; 0: unknown.
	GPUMemoryMB int64 `json:"gpu_memory_mb,omitempty"`
}

// Capacity is an amount of host resources: the whole of what a host offers
// tasks at registration, what is free in a poll.
type Capacity struct {
	CPU      float64 `json:"cpu"`
	MemoryMB int64   `json:"memory_mb"`
	GPUs     int     `json:"gpus"`
	// Slots is the number of attempts the host runs at once.
	Slots int `json:"slots"`
	// StorageGB is the disk the host lends each attempt, which
	// requirements.storage_gb is placed against; 0 (omitted) declares no
	// share and bounds nothing. Only registration's capacity says it.
	StorageGB int64 `json:"storage_gb,omitempty"`
}

// RegisterRequest announces a host. A host registers at start-up and again
// whenever the controller answers CodeUnknownHost.
type RegisterRequest struct {
	ProtocolVersion int             `json:"protocol_version"`
	Driver          string          `json:"driver"` // sandbox driver name ("gvisor")
	Profile         ResourceProfile `json:"resource_profile"`
	Capacity        Capacity        `json:"capacity"`
	// Running lists attempt ids the host is still running (after a lost
	// registration); empty on a fresh start.
	Running []string `json:"running,omitempty"`
}

// RegisterResponse gives the host its id.
type RegisterResponse struct {
	ProtocolVersion int `json:"protocol_version"`
	// HostID is the pseudonymous handle, "wkr_...".
	HostID string `json:"host_id"`
	// HeartbeatIntervalS is the longest the host may stay silent: it
	// long-polls for at most this long, so a host whose polls stop
	// for several intervals is lost.
	HeartbeatIntervalS int `json:"heartbeat_interval_s"`
}

// PollRequest asks for work and is the host's heartbeat.
type PollRequest struct {
	HostID string `json:"host_id"`
	// Free is what the host had free when it asked. The controller sizes
	// assignments by its own record of the host's live attempts instead
	// (capacity at registration less what it assigned and has not seen
	// end), because a long poll outlives this figure: a slot that frees
	// while the request waits is refilled in the same poll.
	Free Capacity `json:"free"`
	// Running lists every attempt the host still runs. The controller
	// compares it with what it assigned: an assigned attempt missing from
	// Running (assignment lost in transit, host restarted) is lost.
	Running []string `json:"running"`
	// WaitS is how long the controller may hold the request when it has
	// nothing to say (long-poll); 0 means answer at once.
	WaitS int `json:"wait_s"`
	// Paused, when set, says why the host takes no new work now (its work
	// dir is under the free-disk watermark): the controller assigns it
	// nothing and keeps it alive. Older controllers ignore it, and the
	// host then refuses what it is given with a host error.
	Paused string `json:"paused,omitempty"`
}

// PollResponse carries new work and cancellations.
type PollResponse struct {
	Assignments []Assignment `json:"assignments"`
	// Cancel lists attempt ids the host must stop (job cancelled, requeued
	// elsewhere). Unknown ids are ignored.
	Cancel []string `json:"cancel"`
}

// Assignment is one attempt for the host to run.
type Assignment struct {
	AttemptID string `json:"attempt_id"`
	TaskID    string `json:"task_id"`
	JobID     string `json:"job_id"`
	ProjectID string `json:"project_id"` // names the host's per-project cache dir
	// AccountID (version 6) is the job's account: the host keeps the
	// inputs and data sources it fetches for one account apart from every
	// other's.
	AccountID string `json:"account_id,omitempty"`

	// ImageDigest is the image manifest digest, "sha256:<hex>".
	ImageDigest string `json:"image_digest"`
	// The OCI layout holding the image: exactly one of ImageLayoutDir (a
	// directory on the host's filesystem, for the local host) or ImageURL
	// (where to download it; not yet implemented by the agent).
	ImageLayoutDir string `json:"image_layout_dir,omitempty"`
	ImageURL       string `json:"image_url,omitempty"`

	// Args is the project's runner_command; empty means the image's
	// entrypoint and cmd.
	Args []string `json:"args,omitempty"`
	// Cwd is the manifest's workdir; empty means the image's WORKDIR.
	Cwd string `json:"cwd,omitempty"`
	// Env is the project env; it wins over the image's.
	Env     map[string]string `json:"env,omitempty"`
	Payload json.RawMessage   `json:"payload"`
	// Inputs (version 3) are the task's artifact inputs.
	Inputs []InputArtifact `json:"inputs,omitempty"`

	// DataSources and CacheMounts (version 4) come from the revision's
	// manifest (data_sources, cache_mounts).
	DataSources []DataSource `json:"data_sources,omitempty"`
	CacheMounts []CacheMount `json:"cache_mounts,omitempty"`

	CPU      float64 `json:"cpu"`
	MemoryMB int64   `json:"memory_mb"`
	TimeoutS int     `json:"timeout_s"` // 0: no timeout
	Network  bool    `json:"network"`
	// GPUs (version 6) is how many of the host's GPUs the attempt gets.
	GPUs int `json:"gpus,omitempty"`
	// StorageGB is the task's requirements.storage_gb: the hard limit on
	// what the attempt may write (scratch, outputs, result); 0 (an older
	// controller) means the host's default.
	StorageGB int64 `json:"storage_gb,omitempty"`
}

// Data source kinds (the manifest's data_sources[].source).
const (
	DataSourceURL         = "url"
	DataSourceHuggingFace = "huggingface"
)

// DataSource is one immutable input of a revision, mounted read-only at
// MountPath: one file (url) or a directory in the repo's layout
// (huggingface).
type DataSource struct {
	Name      string `json:"name"`
	Source    string `json:"source"`
	MountPath string `json:"mount_path"`
	// url
	URI    string `json:"uri,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// huggingface
	Repo     string   `json:"repo,omitempty"`
	RepoType string   `json:"repo_type,omitempty"`
	Revision string   `json:"revision,omitempty"`
	Include  []string `json:"include,omitempty"`

	// Account (version 6) is the account the source is fetched for: the
	// host's cache entry is that account's alone.
	Account string `json:"account_id,omitempty"`
	// Token (version 6, huggingface) is the bearer token sent to the hub
	// for this source: the tenant's own (the project env variable the
	// source names), or the operator's when the repo is on the operator's
	// list; empty fetches anonymously. Never logged (see LogValue).
	Token string `json:"token,omitempty"`
}

// LogValue keeps the token out of every log line that names a source.
func (ds DataSource) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", ds.Name), slog.String("source", ds.Source),
		slog.String("repo", ds.Repo), slog.String("revision", ds.Revision), slog.Bool("token", ds.Token != ""))
}

// String keeps the token out of a source printed with %v.
func (ds DataSource) String() string {
	return fmt.Sprintf("data source %q (%s)", ds.Name, ds.Source)
}

// CacheMount is a writable directory of the project on the host, kept
// between tasks and revisions, mounted at Path.
type CacheMount struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Seed is a directory on the controller's machine holding the
	// manifest's seed, copied into the cache while it is empty; only a
	// host that shares that filesystem (the local host) can use it.
	Seed string `json:"seed,omitempty"`
	// Epoch moves on when the project is invalidated: the host keeps
	// caches per epoch and removes older epochs' no task holds.
	Epoch int64 `json:"epoch,omitempty"`
}

// EventKind is the kind of an AttemptEvent.
type EventKind string

const (
	EventStarted  EventKind = "started"
	EventProgress EventKind = "progress"
	EventFinished EventKind = "finished"
)

// AttemptEvent reports what an attempt did. Per attempt, Seq starts at 1
// and grows by one per event; started comes first and finished last.
type AttemptEvent struct {
	AttemptID string    `json:"attempt_id"`
	HostID    string    `json:"host_id"`
	Seq       int64     `json:"seq"`
	Kind      EventKind `json:"kind"`
	At        time.Time `json:"at"`
	// Progress is the JSON object of the last SKIFF_PROGRESS: line seen so
	// far (on progress and finished events), nil if none.
	Progress json.RawMessage `json:"progress,omitempty"`
	// OutputTail is the last ~1000 bytes of stdout and stderr interleaved
	// (on progress and finished events), for live_feedback.output_tail.
	OutputTail string `json:"output_tail,omitempty"`
	// Outcome is set on finished events only.
	Outcome *Outcome `json:"outcome,omitempty"`
}

// EventResponse acknowledges an event.
type EventResponse struct{}

// FailureClassInfra is the failure_class a runner writes in its result to
// ask for a free requeue (spec section 2.10 rule 3).
const FailureClassInfra = "infra"

// Outcome is how an attempt ended. When HostError is set the host itself
// failed (image fetch, sandbox start, shutdown): an infrastructure failure,
// and the runner fields are not meaningful.
type Outcome struct {
	ExitCode  int  `json:"exit_code"`
	TimedOut  bool `json:"timed_out"`
	OOMKilled bool `json:"oom_killed"`
	// Killed: stopped because the controller cancelled it (or the host
	// shut down, which also sets HostError).
	Killed bool `json:"killed"`
	// SandboxError is the sandbox runtime's error when it could not start
	// or lost the runner.
	SandboxError string `json:"sandbox_error,omitempty"`
	// StartFailed (version 2): the runner could not be started from the
	// image (missing or non-executable command): a failure of the
	// project's, retried under max_retries and not charged.
	StartFailed bool      `json:"start_failed,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	EndedAt     time.Time `json:"ended_at"`

	// Result is the result file, nil when absent, too large or not JSON.
	Result         json.RawMessage `json:"result,omitempty"`
	ResultTooLarge bool            `json:"result_too_large,omitempty"`
	// ResultRejected says why a present result file was not taken.
	ResultRejected string `json:"result_rejected,omitempty"`

	// Stdout is the first 10 KB (StdoutMaxBytes) of stdout;
	// StdoutTruncated is set when there was more.
	Stdout          string `json:"stdout"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	// Stderr is the last ~1000 bytes (StderrTailBytes) of stderr.
	Stderr string `json:"stderr"`

	// FailureClass is FailureClassInfra when the result said so, else "".
	FailureClass string `json:"failure_class,omitempty"`
	// HostError describes a failure of the host, not of the runner.
	HostError string `json:"host_error,omitempty"`
	// StorageError is set when the runner failed with its storage quota
	// (requirements.storage_gb) used up: writes past it failed with
	// ENOSPC. It says so in words for the task's failure message.
	StorageError string `json:"storage_error,omitempty"`

	// Version 3. Artifacts are the files uploaded from the artifact
	// directory, a spilled result and the full output.
	Artifacts []UploadedArtifact `json:"artifacts,omitempty"`
	// ArtifactError says why declared uploads (payload._artifacts.upload)
	// were refused (an absolute path, an escape, a symlink or a missing
	// file) or why an input was (its content does not have the sha256
	// its artifact names; the runner did not start). The attempt then
	// fails, whatever the runner's exit code, and is not retried.
	ArtifactError string `json:"artifact_error,omitempty"`
	// ResultArtifactID is set when the result file was too large to keep
	// inline and was uploaded as an artifact instead.
	ResultArtifactID string `json:"result_artifact_id,omitempty"`
	// OutputArtifactID is the full stdout and stderr, uploaded when they
	// did not fit the Stdout and Stderr windows.
	OutputArtifactID string `json:"output_artifact_id,omitempty"`

	// GPUsAttached (version 6) is how many GPUs the attempt's sandbox had
	// attached: the GPU rate is billed for those only.
	GPUsAttached int `json:"gpus_attached,omitempty"`
}

// Output limits (spec section 2.5: output up to 10 KB, error the last ~1000
// characters).
const (
	StdoutMaxBytes   = 10 << 10
	StderrTailBytes  = 1000
	OutputTailBytes  = 1000
	ProgressMaxBytes = 64 << 10
	// ResultInlineMaxBytes is the largest structured result kept inline
	// with the task; a larger result file (up to the relay upload limit)
	// is spilled to an artifact (version 3).
	ResultInlineMaxBytes = 256 << 10
)

// InferStartFailed fills in StartFailed of a version-1 host's outcome, which
// lacks it, from runsc's words in its sandbox error ("creating process:
// failed to load /x: no such file or directory", "exec format error"), as
// controllers did before version 2. Drop it with version 1.
func (o *Outcome) InferStartFailed(hostVersion int) {
	if hostVersion >= 2 || o.SandboxError == "" {
		return
	}
	for _, p := range []string{"creating process:", "failed to load", "executable file not found", "exec format error"} {
		if strings.Contains(o.SandboxError, p) {
			o.StartFailed = true
			return
		}
	}
}
