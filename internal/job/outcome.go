package job

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// Requeue caps (spec 2.10 rules 2 and 3, section 8). The requeues they
// cap do not use the task's retry budget; since issue 28 those in which the
// runner ran (exit 137, an OOM kill, a declared infra failure) are billed
// all the same, so the caps bound how long a task can loop, not what it
// can get for free.
const (
	// MaxDeclaredInfraRequeues is how often a runner may ask for a requeue
	// outside its retry budget with failure_class "infra" and a non-zero
	// exit. Past it the failure counts against max_retries like any other.
	MaxDeclaredInfraRequeues = 3
	// MaxInfraRequeues caps the requeues outside the retry budget of exit
	// 137 (out of memory, killed), of sandboxes that died and of attempts
	// lost with their host, so that a task that is always killed ends: the
	// next such end fails the task with failure_kind "infra_requeue_limit".
	MaxInfraRequeues = 5
)

// SandboxStartWindow tells a sandbox that failed to start from one that
// died under a running runner: a sandbox error within this much metered
// runtime is the platform's failure to start it (free); a later one ended
// a runner that ran, and is billed like an exit 137 (the runner may have
// caused it, and it used the capacity).
const SandboxStartWindow = 10 * time.Second

// Failure kinds of the failure payload (spec 2.5).
const (
	FailureExit       = "exit_code"            // non-zero exit
	FailureTimeout    = "timeout"              // timeout_s elapsed
	FailureOOM        = "out_of_memory"        // exit 137 or the memory limit
	FailureInfraLimit = "infra_requeue_limit"  // killed or lost too often
	FailureHost       = "host_error"           // the host could not run it
	FailureStart      = "start_failed"         // the command could not be started from the image
	FailureArtifact   = "artifact_rejected"    // declared uploads broke the rules, an upload failed, or an input failed its sha256 check
	FailureBalance    = "insufficient_balance" // the hold could not grow to cover another attempt
	FailureStorage    = "storage_exceeded"     // the runner used up requirements.storage_gb (ENOSPC)
)

// Decision is what an attempt's end does to its attempt and task.
type Decision struct {
	Attempt       store.AttemptStatus
	TerminalKind  string // exit, timeout, oom, killed, infra_declared, lost, host_error
	RetryDecision string // retry, requeue_free, none
	Task          store.TaskStatus
	RetriesUsed   int64
	InfraRequeues int64
	DeclaredInfra int64
	// Event is the job event the end records: attempt.succeeded,
	// attempt.failed, attempt.retried, attempt.infra_requeued, attempt.lost.
	Event string
	// FailureKind is set when the task failed for good.
	FailureKind string
	// Billed says the attempt is metered: the runner ran, and the end was
	// not the platform's doing (issue 28: billing follows runtime).
	Billed bool
	// Message replaces the failure payload's default message when set.
	Message string
}

// Outcome is how an attempt ended, as the job service judges it: what its
// host reported, translated from the wire (agentproto.Outcome) by fleet at
// its edge, so that the job service knows nothing of the host protocol.
type Outcome struct {
	ExitCode  int
	TimedOut  bool
	OOMKilled bool
	// Killed: stopped because the controller cancelled it.
	Killed bool
	// SandboxError is the sandbox runtime's error when it could not start
	// or lost the runner.
	SandboxError string
	// StartFailed: the runner could not be started from the image.
	StartFailed        bool
	StartedAt, EndedAt time.Time
	// Result is the structured result kept inline; ResultArtifactID the
	// artifact a result too large to keep inline was spilled to.
	Result           json.RawMessage
	ResultArtifactID string
	// Stdout is the head of stdout, Stderr the tail of stderr.
	Stdout, Stderr string
	// FailureClass is FailureClassInfra when the runner's result said its
	// failure was the infrastructure's.
	FailureClass string
	// HostError is a failure of the host, StorageError the task's storage
	// quota used up, ArtifactError a refused upload or a corrupt input.
	HostError, StorageError, ArtifactError string
	// GPUsAttached is how many GPUs the sandbox had: the GPU rate is
	// billed for those only.
	GPUsAttached int
	// Outputs are the files the host uploaded from the attempt's artifact
	// directory: a checkpoint kept as an artifact is published from them.
	Outputs []OutputArtifact
}

// FailureClassInfra is a runner's declaration, in its result, that its
// failure was the infrastructure's (the spec's failure_class "infra").
const FailureClassInfra = "infra"

// errorTailBytes is how much of stderr a task's error shows (spec 2.5: the
// last ~1000 characters).
const errorTailBytes = 1000

// Classify decides what an attempt's outcome means for its task (spec 2.10
// and 3.1) and whether it is billed; ran is its metered runtime
// (meteredRuntime). Exit 0 succeeds. Exit 137 or an out-of-memory kill, and
// a sandbox that died after SandboxStartWindow, requeue outside the retry
// budget (up to MaxInfraRequeues); failure_class infra with a non-zero exit
// does too (up to MaxDeclaredInfraRequeues); all of these are billed, since
// the runner ran. A lost or stopped host, a sandbox that failed to start and
// a kill the runner did not cause are the platform's: requeued outside the
// budget (up to MaxInfraRequeues) and free. Any other failure, a timeout
// included, is billed and retries while max_retries allows, then fails the
// task.
func Classify(t *store.Task, maxRetries int, o *Outcome, ran time.Duration) Decision {
	d := Decision{RetriesUsed: t.RetriesUsed, InfraRequeues: t.InfraRequeues, DeclaredInfra: t.DeclaredInfra, Billed: true}
	requeue := func(status store.AttemptStatus, kind, event string) Decision {
		if d.InfraRequeues >= MaxInfraRequeues {
			d.Attempt, d.TerminalKind, d.RetryDecision = status, kind, "none"
			d.Task, d.Event, d.FailureKind = store.TaskFailed, "attempt.failed", FailureInfraLimit
			return d
		}
		d.InfraRequeues++
		d.Attempt, d.TerminalKind, d.RetryDecision = status, kind, "requeue_free"
		d.Task, d.Event = store.TaskQueued, event
		return d
	}
	platforms := func(kind string) Decision {
		d.Billed = false
		return requeue(store.AttemptLost, kind, "attempt.lost")
	}
	switch {
	case o.HostError != "":
		// The host failed (image, inputs, sandbox setup) or shut down
		// under the attempt: the platform's doing.
		return platforms("host_error")
	case o.StartFailed:
		// The runner could not be started from the image as asked (a
		// missing or non-executable command): the project's fault, so a
		// failure like a non-zero exit, not a free requeue; nothing ran,
		// so nothing is billed.
		d.Billed = false
		d.Attempt, d.TerminalKind = store.AttemptFailed, "start_failed"
		if d.RetriesUsed < int64(maxRetries) {
			d.RetriesUsed++
			d.RetryDecision, d.Task, d.Event = "retry", store.TaskQueued, "attempt.retried"
			return d
		}
		d.RetryDecision, d.Task, d.Event, d.FailureKind = "none", store.TaskFailed, "attempt.failed", FailureStart
		return d
	case o.SandboxError != "" && !o.TimedOut && !o.OOMKilled:
		if ran < SandboxStartWindow {
			return platforms("lost") // the sandbox failed to start
		}
		// The sandbox died under a runner that ran: billed, and requeued
		// outside the budget like an exit 137.
		return requeue(store.AttemptInfra, "killed", "attempt.infra_requeued")
	case o.Killed && !o.TimedOut && !o.OOMKilled:
		// Killed without the controller's cancel having ended the
		// attempt first (that path never reaches here, and a runner
		// cannot set it): the host stopped it, the platform's doing.
		return platforms("killed")
	case o.OOMKilled || (o.ExitCode == 137 && !o.TimedOut):
		kind := "killed"
		if o.OOMKilled {
			kind = "oom"
		}
		return requeue(store.AttemptInfra, kind, "attempt.infra_requeued")
	case o.StorageError != "" && !o.TimedOut:
		// The runner filled its storage quota and failed on ENOSPC: a
		// retry with the same storage_gb would fill it again. The runner
		// ran, so it is billed like any failure of the project's.
		d.Attempt, d.TerminalKind, d.RetryDecision = store.AttemptFailed, "storage_exceeded", "none"
		d.Task, d.Event, d.FailureKind = store.TaskFailed, "attempt.failed", FailureStorage
		return d
	case o.ArtifactError != "":
		// Declared uploads that are absolute, escape, are symlinks or are
		// missing fail the task whatever the exit code; a retry would
		// write the same files. An input whose content does not match its
		// sha256 would not match on a retry either.
		d.Attempt, d.TerminalKind, d.RetryDecision = store.AttemptFailed, "artifact_rejected", "none"
		d.Task, d.Event, d.FailureKind = store.TaskFailed, "attempt.failed", FailureArtifact
		return d
	case o.ExitCode == 0 && !o.TimedOut:
		d.Attempt, d.TerminalKind, d.RetryDecision = store.AttemptSucceeded, "exit", "none"
		d.Task, d.Event = store.TaskSucceeded, "attempt.succeeded"
		return d
	case o.FailureClass == FailureClassInfra && !o.TimedOut && d.DeclaredInfra < MaxDeclaredInfraRequeues:
		d.DeclaredInfra++
		d.Attempt, d.TerminalKind, d.RetryDecision = store.AttemptInfra, "infra_declared", "requeue_free"
		d.Task, d.Event = store.TaskQueued, "attempt.infra_requeued"
		return d
	}
	d.Attempt, d.TerminalKind = store.AttemptFailed, "exit"
	kind := FailureExit
	if o.TimedOut {
		d.TerminalKind, kind = "timeout", FailureTimeout
	}
	if d.RetriesUsed < int64(maxRetries) {
		d.RetriesUsed++
		d.RetryDecision, d.Task, d.Event = "retry", store.TaskQueued, "attempt.retried"
		return d
	}
	d.RetryDecision, d.Task, d.Event, d.FailureKind = "none", store.TaskFailed, "attempt.failed", kind
	return d
}

// stopRequeue turns decision d, which requeued task t, into the task's
// failure because the job's hold could not grow to cover another attempt
// (msg says by how much): the attempt keeps its status and its bill, the
// task keeps the counters it had.
func stopRequeue(d Decision, t *store.Task, msg string) Decision {
	d.RetriesUsed, d.InfraRequeues, d.DeclaredInfra = t.RetriesUsed, t.InfraRequeues, t.DeclaredInfra
	d.RetryDecision, d.Task, d.Event = "none", store.TaskFailed, "attempt.failed"
	d.FailureKind, d.Message = FailureBalance, msg
	return d
}

// lostOutcome is the outcome recorded for an attempt that the controller
// gave up on: its host vanished, or no longer runs it, or the controller
// restarted under it.
func lostOutcome(reason string) *Outcome {
	return &Outcome{HostError: reason}
}

// FailurePayload is the machine-readable result of a task that failed for
// good (spec 2.5).
type FailurePayload struct {
	FailureKind    string   `json:"failure_kind"`
	ExitCode       *int     `json:"exit_code"`
	Command        []string `json:"command"`
	Cwd            string   `json:"cwd"`
	CombinedOutput string   `json:"combined_output"`
	Message        string   `json:"message"`
}

// failurePayload describes how a task failed, for its result; msg, when
// set, replaces the message kind implies.
func failurePayload(kind, msg string, o *Outcome, command []string, cwd string, timeoutS int64) json.RawMessage {
	p := FailurePayload{FailureKind: kind, Command: command, Cwd: cwd}
	if command == nil {
		p.Command = []string{}
	}
	if o.HostError == "" && o.SandboxError == "" {
		code := o.ExitCode
		p.ExitCode = &code
	}
	p.CombinedOutput = combined(o)
	switch kind {
	case FailureTimeout:
		p.Message = fmt.Sprintf("the runner did not exit within timeout_s (%d s) and was killed", timeoutS)
	case FailureOOM:
		p.Message = "the runner was killed (exit 137, usually out of memory)"
	case FailureInfraLimit:
		p.Message = fmt.Sprintf("the task's attempts were killed (exit 137, out of memory), lost with their host or sandbox %d times; the task was given up", MaxInfraRequeues+1)
	case FailureHost:
		p.Message = "the host could not run the task"
	case FailureArtifact:
		p.Message = o.ArtifactError
	case FailureStorage:
		p.Message = o.StorageError
	case FailureStart:
		p.Message = "the runner could not be started: check runner_command (or the manifest's entrypoint) and that it names an executable in the image"
	default:
		p.Message = fmt.Sprintf("the runner exited with code %d", o.ExitCode)
	}
	if msg != "" {
		p.Message = msg
	}
	out, _ := json.Marshal(p)
	return out
}

// combined is the end of the attempt's stdout and stderr, for the failure
// payload: stderr last, since that is where runners say why they failed.
func combined(o *Outcome) string {
	var b strings.Builder
	stdout := o.Stdout
	if len(stdout) > errorTailBytes {
		stdout = stdout[len(stdout)-errorTailBytes:]
	}
	b.WriteString(stdout)
	if stdout != "" && o.Stderr != "" && !strings.HasSuffix(stdout, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(o.Stderr)
	if b.Len() == 0 {
		return cmp.Or(o.HostError, o.SandboxError)
	}
	return b.String()
}

// withFailure is a failed task's result: the failure payload, with the
// runner's own result kept when it wrote one. A result object gains the
// payload's fields it does not have itself; any other result is kept under
// "runner_result".
func withFailure(result, failure json.RawMessage) json.RawMessage {
	if len(result) == 0 {
		return failure
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(result, &obj); err != nil || obj == nil {
		var f map[string]json.RawMessage
		_ = json.Unmarshal(failure, &f)
		f["runner_result"] = result
		out, _ := json.Marshal(f)
		return out
	}
	var f map[string]json.RawMessage
	_ = json.Unmarshal(failure, &f)
	for k, v := range f {
		if _, ok := obj[k]; !ok {
			obj[k] = v
		}
	}
	out, _ := json.Marshal(obj)
	return out
}
