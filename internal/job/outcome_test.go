package job

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// TestClassify is the table of issue 28's billing rules: every end in
// which the runner ran is billed (its own exit 137, an OOM kill, a declared
// infra failure, a sandbox that died under it), and only the ends the
// platform caused are free (a lost or stopped host, a sandbox that failed
// to start, a kill the runner did not cause). Exit 137 and declared infra
// still requeue without using the retry budget.
func TestClassify(t *testing.T) {
	type counters struct{ retries, infra, declared int64 }
	const short, long = time.Second, 10 * time.Minute // runtimes, for sandbox errors
	cases := []struct {
		name       string
		task       counters
		maxRetries int
		outcome    Outcome
		ran        time.Duration
		attempt    store.AttemptStatus
		taskTo     store.TaskStatus
		retry      string
		event      string
		failure    string
		after      counters
		billed     bool
	}{
		{"exit 0 succeeds", counters{}, 0, Outcome{}, long, store.AttemptSucceeded, store.TaskSucceeded, "none", "attempt.succeeded", "", counters{}, true},
		{"exit 0 with failure_class infra still succeeds", counters{}, 0, Outcome{FailureClass: "infra"}, long, store.AttemptSucceeded, store.TaskSucceeded, "none", "attempt.succeeded", "", counters{}, true},
		{"exit 1 retries while budget lasts", counters{}, 2, Outcome{ExitCode: 1}, long, store.AttemptFailed, store.TaskQueued, "retry", "attempt.retried", "", counters{retries: 1}, true},
		{"exit 1 fails when budget spent", counters{retries: 2}, 2, Outcome{ExitCode: 1}, long, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureExit, counters{retries: 2}, true},
		{"timeout uses the budget", counters{}, 1, Outcome{ExitCode: 137, TimedOut: true}, long, store.AttemptFailed, store.TaskQueued, "retry", "attempt.retried", "", counters{retries: 1}, true},
		{"timeout fails", counters{}, 0, Outcome{ExitCode: 137, TimedOut: true}, long, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureTimeout, counters{}, true},
		{"exit 137 requeues without a retry, billed", counters{retries: 1}, 1, Outcome{ExitCode: 137}, long, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{retries: 1, infra: 1}, true},
		{"a short exit 137 is billed too", counters{}, 0, Outcome{ExitCode: 137}, short, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{infra: 1}, true},
		{"oom requeues without a retry, billed", counters{}, 0, Outcome{ExitCode: 137, OOMKilled: true}, long, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{infra: 1}, true},
		{"oom with a sandbox error is an oom", counters{}, 0, Outcome{ExitCode: 137, OOMKilled: true, SandboxError: "oom"}, long, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{infra: 1}, true},
		{"exit 137 past the cap fails, billed", counters{infra: MaxInfraRequeues}, 3, Outcome{ExitCode: 137}, long, store.AttemptInfra, store.TaskFailed, "none", "attempt.failed", FailureInfraLimit, counters{infra: MaxInfraRequeues}, true},
		{"host shut down under it: lost and free", counters{}, 0, Outcome{HostError: "shutdown", Killed: true}, long, store.AttemptLost, store.TaskQueued, "requeue_free", "attempt.lost", "", counters{infra: 1}, false},
		{"host error: lost and free", counters{}, 0, Outcome{HostError: "prepare image: no space"}, short, store.AttemptLost, store.TaskQueued, "requeue_free", "attempt.lost", "", counters{infra: 1}, false},
		{"host error past the cap fails, free", counters{infra: MaxInfraRequeues}, 0, Outcome{HostError: "gone"}, short, store.AttemptLost, store.TaskFailed, "none", "attempt.failed", FailureInfraLimit, counters{infra: MaxInfraRequeues}, false},
		{"a missing command fails without a free requeue, free", counters{}, 0, Outcome{SandboxError: "starting sandbox: creating process: failed to load /nope: no such file or directory", StartFailed: true, ExitCode: 128}, short, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureStart, counters{}, false},
		{"a missing command uses a retry, free", counters{}, 1, Outcome{SandboxError: "creating process: failed to load /x: permission denied", StartFailed: true, ExitCode: 128}, short, store.AttemptFailed, store.TaskQueued, "retry", "attempt.retried", "", counters{retries: 1}, false},
		{"sandbox failed to start: lost and free", counters{}, 0, Outcome{SandboxError: "runsc died", ExitCode: -1}, short, store.AttemptLost, store.TaskQueued, "requeue_free", "attempt.lost", "", counters{infra: 1}, false},
		{"sandbox died after the runner ran: requeued, billed", counters{}, 0, Outcome{SandboxError: "runsc died", ExitCode: -1}, long, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{infra: 1}, true},
		{"killed, not by a timeout or the runner: the platform's, free", counters{}, 0, Outcome{Killed: true, ExitCode: 137}, long, store.AttemptLost, store.TaskQueued, "requeue_free", "attempt.lost", "", counters{infra: 1}, false},
		{"declared infra requeues without a retry, billed", counters{declared: 2}, 0, Outcome{ExitCode: 1, FailureClass: "infra"}, long, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{declared: 3}, true},
		{"declared infra past 3 uses the budget", counters{declared: 3}, 1, Outcome{ExitCode: 1, FailureClass: "infra"}, long, store.AttemptFailed, store.TaskQueued, "retry", "attempt.retried", "", counters{declared: 3, retries: 1}, true},
		{"declared infra past 3 and no budget fails", counters{declared: 3}, 0, Outcome{ExitCode: 1, FailureClass: "infra"}, long, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureExit, counters{declared: 3}, true},
		{"rejected uploads fail the task, billed", counters{}, 2, Outcome{ArtifactError: "upload escapes"}, long, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureArtifact, counters{}, true},
		{"storage used up fails without a retry, billed", counters{}, 2, Outcome{ExitCode: 1, StorageError: "the task used up its storage quota"}, long, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureStorage, counters{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := &store.Task{RetriesUsed: c.task.retries, InfraRequeues: c.task.infra, DeclaredInfra: c.task.declared}
			d := Classify(task, c.maxRetries, &c.outcome, c.ran)
			got := counters{d.RetriesUsed, d.InfraRequeues, d.DeclaredInfra}
			if d.Attempt != c.attempt || d.Task != c.taskTo || d.RetryDecision != c.retry || d.Event != c.event ||
				d.FailureKind != c.failure || got != c.after || d.Billed != c.billed {
				t.Errorf("got %+v, want attempt %s task %s retry %s event %s failure %q counters %+v billed %v",
					d, c.attempt, c.taskTo, c.retry, c.event, c.failure, c.after, c.billed)
			}
		})
	}
}

func TestWithFailure(t *testing.T) {
	failure := json.RawMessage(`{"failure_kind":"exit_code","exit_code":3}`)
	for _, c := range []struct{ result, want string }{
		{``, `{"failure_kind":"exit_code","exit_code":3}`},
		{`{"score":1,"exit_code":9}`, `{"exit_code":9,"failure_kind":"exit_code","score":1}`},
		{`[1,2]`, `{"exit_code":3,"failure_kind":"exit_code","runner_result":[1,2]}`},
	} {
		if got := string(withFailure(json.RawMessage(c.result), failure)); got != c.want {
			t.Errorf("withFailure(%s): got %s, want %s", c.result, got, c.want)
		}
	}
}
