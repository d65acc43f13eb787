package job

import (
	"encoding/json"
	"testing"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/store"
)

func TestClassify(t *testing.T) {
	type counters struct{ retries, infra, declared int64 }
	cases := []struct {
		name       string
		task       counters
		maxRetries int
		outcome    agentproto.Outcome
		attempt    store.AttemptStatus
		taskTo     store.TaskStatus
		retry      string
		event      string
		failure    string
		after      counters
	}{
		{"exit 0 succeeds", counters{}, 0, agentproto.Outcome{}, store.AttemptSucceeded, store.TaskSucceeded, "none", "attempt.succeeded", "", counters{}},
		{"exit 0 with failure_class infra still succeeds", counters{}, 0, agentproto.Outcome{FailureClass: "infra"}, store.AttemptSucceeded, store.TaskSucceeded, "none", "attempt.succeeded", "", counters{}},
		{"exit 1 retries while budget lasts", counters{}, 2, agentproto.Outcome{ExitCode: 1}, store.AttemptFailed, store.TaskQueued, "retry", "attempt.retried", "", counters{retries: 1}},
		{"exit 1 fails when budget spent", counters{retries: 2}, 2, agentproto.Outcome{ExitCode: 1}, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureExit, counters{retries: 2}},
		{"timeout uses the budget", counters{}, 1, agentproto.Outcome{ExitCode: 137, TimedOut: true}, store.AttemptFailed, store.TaskQueued, "retry", "attempt.retried", "", counters{retries: 1}},
		{"timeout fails", counters{}, 0, agentproto.Outcome{ExitCode: 137, TimedOut: true}, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureTimeout, counters{}},
		{"exit 137 requeues free", counters{retries: 1}, 1, agentproto.Outcome{ExitCode: 137}, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{retries: 1, infra: 1}},
		{"oom requeues free", counters{}, 0, agentproto.Outcome{ExitCode: 137, OOMKilled: true}, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{infra: 1}},
		{"exit 137 past the cap fails", counters{infra: MaxInfraRequeues}, 3, agentproto.Outcome{ExitCode: 137}, store.AttemptInfra, store.TaskFailed, "none", "attempt.failed", FailureInfraLimit, counters{infra: MaxInfraRequeues}},
		{"host error is lost and free", counters{}, 0, agentproto.Outcome{HostError: "shutdown", Killed: true}, store.AttemptLost, store.TaskQueued, "requeue_free", "attempt.lost", "", counters{infra: 1}},
		{"a missing command fails without a free requeue", counters{}, 0, agentproto.Outcome{SandboxError: "starting sandbox: creating process: failed to load /nope: no such file or directory", StartFailed: true, ExitCode: 128}, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureStart, counters{}},
		{"a missing command uses a retry", counters{}, 1, agentproto.Outcome{SandboxError: "creating process: failed to load /x: permission denied", StartFailed: true, ExitCode: 128}, store.AttemptFailed, store.TaskQueued, "retry", "attempt.retried", "", counters{retries: 1}},
		{"sandbox error is lost and free", counters{}, 0, agentproto.Outcome{SandboxError: "runsc died", ExitCode: -1}, store.AttemptLost, store.TaskQueued, "requeue_free", "attempt.lost", "", counters{infra: 1}},
		{"storage used up fails without a retry", counters{}, 2, agentproto.Outcome{ExitCode: 1, StorageError: "the task used up its storage quota"}, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureStorage, counters{}},
		{"declared infra requeues free", counters{declared: 2}, 0, agentproto.Outcome{ExitCode: 1, FailureClass: "infra"}, store.AttemptInfra, store.TaskQueued, "requeue_free", "attempt.infra_requeued", "", counters{declared: 3}},
		{"declared infra past 3 uses the budget", counters{declared: 3}, 1, agentproto.Outcome{ExitCode: 1, FailureClass: "infra"}, store.AttemptFailed, store.TaskQueued, "retry", "attempt.retried", "", counters{declared: 3, retries: 1}},
		{"declared infra past 3 and no budget fails", counters{declared: 3}, 0, agentproto.Outcome{ExitCode: 1, FailureClass: "infra"}, store.AttemptFailed, store.TaskFailed, "none", "attempt.failed", FailureExit, counters{declared: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := &store.Task{RetriesUsed: c.task.retries, InfraRequeues: c.task.infra, DeclaredInfra: c.task.declared}
			d := Classify(task, c.maxRetries, &c.outcome)
			got := counters{d.RetriesUsed, d.InfraRequeues, d.DeclaredInfra}
			if d.Attempt != c.attempt || d.Task != c.taskTo || d.RetryDecision != c.retry || d.Event != c.event ||
				d.FailureKind != c.failure || got != c.after {
				t.Errorf("got %+v, want attempt %s task %s retry %s event %s failure %q counters %+v",
					d, c.attempt, c.taskTo, c.retry, c.event, c.failure, c.after)
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
