package job

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/store"
)

// Requeue caps (spec 2.10 rules 2 and 3, section 8).
const (
	// MaxDeclaredInfraRequeues is how often a runner may ask for a free
	// requeue with failure_class "infra" and a non-zero exit. Past it the
	// failure counts against max_retries like any other.
	MaxDeclaredInfraRequeues = 3
	// MaxInfraRequeues caps the free requeues of exit 137 (out of memory,
	// killed) and of attempts lost with their host or sandbox, so that a
	// task that is always killed ends: the next such end fails the task with
	// failure_kind "infra_requeue_limit".
	MaxInfraRequeues = 5
)

// Failure kinds of the failure payload (spec 2.5).
const (
	FailureExit       = "exit_code"           // non-zero exit
	FailureTimeout    = "timeout"             // timeout_s elapsed
	FailureOOM        = "out_of_memory"       // exit 137 or the memory limit
	FailureInfraLimit = "infra_requeue_limit" // killed or lost too often
	FailureHost       = "host_error"          // the host could not run it
	FailureStart      = "start_failed"        // the command could not be started from the image
	FailureArtifact   = "artifact_rejected"   // declared uploads broke the rules, an upload failed, or an input failed its sha256 check
	FailureStorage    = "storage_exceeded"    // the runner used up requirements.storage_gb (ENOSPC)
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
}

// Classify decides what an attempt's outcome means for its task (spec 2.10
// and 3.1): exit 0 succeeds; exit 137 or an out-of-memory kill and a host
// or sandbox failure requeue free (up to MaxInfraRequeues); failure_class
// infra with a non-zero exit requeues free (up to
// MaxDeclaredInfraRequeues); any other failure, a timeout included, retries
// while max_retries allows, then fails the task.
func Classify(t *store.Task, maxRetries int, o *agentproto.Outcome) Decision {
	d := Decision{RetriesUsed: t.RetriesUsed, InfraRequeues: t.InfraRequeues, DeclaredInfra: t.DeclaredInfra}
	free := func(status store.AttemptStatus, kind, event string) Decision {
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
	switch {
	case o.HostError != "":
		return free(store.AttemptLost, "host_error", "attempt.lost")
	case o.StartFailed:
		// The runner could not be started from the image as asked (a
		// missing or non-executable command): the project's fault, so a
		// failure like a non-zero exit, not a free requeue.
		d.Attempt, d.TerminalKind = store.AttemptFailed, "start_failed"
		if d.RetriesUsed < int64(maxRetries) {
			d.RetriesUsed++
			d.RetryDecision, d.Task, d.Event = "retry", store.TaskQueued, "attempt.retried"
			return d
		}
		d.RetryDecision, d.Task, d.Event, d.FailureKind = "none", store.TaskFailed, "attempt.failed", FailureStart
		return d
	case o.SandboxError != "" && !o.TimedOut && !o.OOMKilled:
		return free(store.AttemptLost, "lost", "attempt.lost")
	case o.Killed && !o.TimedOut && !o.OOMKilled:
		// Killed without the controller's cancel having ended the
		// attempt first (that path never reaches here): the host stopped
		// it, which is the platform's doing.
		return free(store.AttemptLost, "killed", "attempt.lost")
	case o.OOMKilled || (o.ExitCode == 137 && !o.TimedOut):
		kind := "killed"
		if o.OOMKilled {
			kind = "oom"
		}
		return free(store.AttemptInfra, kind, "attempt.infra_requeued")
	case o.StorageError != "" && !o.TimedOut:
		// The runner filled its storage quota and failed on ENOSPC: a
		// retry with the same storage_gb would fill it again. The runner
		// ran, so it is metered like any failure of the project's.
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
	case o.FailureClass == agentproto.FailureClassInfra && !o.TimedOut && d.DeclaredInfra < MaxDeclaredInfraRequeues:
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

// lostOutcome is the outcome recorded for an attempt that the controller
// gave up on: its host vanished, or no longer runs it, or the controller
// restarted under it.
func lostOutcome(reason string) *agentproto.Outcome {
	return &agentproto.Outcome{HostError: reason}
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

// failurePayload describes how a task failed, for its result.
func failurePayload(kind string, o *agentproto.Outcome, command []string, cwd string, timeoutS int64) json.RawMessage {
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
		p.Message = fmt.Sprintf("the attempt was killed or lost %d times in a row on the platform's side; the task was given up", MaxInfraRequeues+1)
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
	out, _ := json.Marshal(p)
	return out
}

// combined is the end of the attempt's stdout and stderr, for the failure
// payload: stderr last, since that is where runners say why they failed.
func combined(o *agentproto.Outcome) string {
	var b strings.Builder
	stdout := o.Stdout
	if len(stdout) > agentproto.StderrTailBytes {
		stdout = stdout[len(stdout)-agentproto.StderrTailBytes:]
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
