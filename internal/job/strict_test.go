package job_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// A strict_complete job whose first task fails before any other ends is
// failed as a whole and its other tasks cancelled; its error says so
// rather than that all its tasks failed.
func TestStrictCompleteFailsBeforeAnySuccess(t *testing.T) {
	bd := setup(t, true)
	if _, err := bd.svc.Billing().GrantCredit(t.Context(), bd.account, 100_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	j, err := bd.svc.Submit(t.Context(), bd.account, decode(t, `{"project":"demo","runner_command":["/r"],"payload":{},
		"reliability_mode":"strict_complete","max_retries":0,"fan_out":{"items":[{"i":0},{"i":1},{"i":2}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	_, a, err := bd.svc.Claim(t.Context(), &store.TaskClaimParams{HostID: "wkr_test", AttemptID: id.New(id.Attempt),
		FreeCPU: 64, FreeMemoryMB: 1 << 20, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := bd.svc.AttemptStarted(t.Context(), a, now); err != nil {
		t.Fatal(err)
	}
	failed := &job.Outcome{ExitCode: 2, StartedAt: now, EndedAt: now.Add(time.Second), Result: json.RawMessage(`null`)}
	if err := bd.svc.AttemptFinished(t.Context(), a, failed, nil, ""); err != nil {
		t.Fatal(err)
	}
	got, err := bd.store.JobGetByID(t.Context(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.JobFailed || !strings.Contains(got.Error, "strict_complete") || strings.Contains(got.Error, "all 3 tasks failed") {
		t.Errorf("job %s: %q; want failed under strict_complete, not all tasks failed", got.Status, got.Error)
	}
}
