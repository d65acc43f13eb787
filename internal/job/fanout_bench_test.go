package job_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// BenchmarkFanOut10k admits a 10,000-task fan-out job in one transaction
// and then dispatches it through the job service as hosts would (claim,
// start, finish), without sandboxes: it measures the controller's side.
// Reported: admit_ms (one submission), dispatch_tasks/s, and the final
// summary's size.
//
//	go test -run '^$' -bench FanOut10k -benchtime 1x ./internal/job/
func BenchmarkFanOut10k(b *testing.B) {
	const n = 10_000
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"i":%d}`, i)
	}
	body := `{"project":"demo","runner_command":["/r"],"payload":{},"fan_out":{"items":[` + strings.Join(items, ",") + `]}}`
	for range b.N {
		b.StopTimer()
		bd := setup(b, true)
		if _, err := bd.svc.Billing().GrantCredit(b.Context(), bd.account, 1000_000_000, "bench"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		j, err := bd.svc.Submit(b.Context(), bd.account, decode(b, body))
		if err != nil {
			b.Fatal(err)
		}
		admit := time.Since(start)
		start = time.Now()
		outcome := &agentproto.Outcome{ExitCode: 0, StartedAt: start, EndedAt: start.Add(time.Second), Result: json.RawMessage(`{"ok":true}`)}
		for k := 0; k < n; k++ {
			_, a, err := bd.svc.Claim(b.Context(), &store.TaskClaimParams{HostID: "wkr_bench", AttemptID: id.New(id.Attempt),
				FreeCPU: 64, FreeMemoryMB: 1 << 20, Now: time.Now()})
			if err != nil {
				b.Fatalf("claim %d: %v", k, err)
			}
			if err := bd.svc.AttemptStarted(b.Context(), a, time.Now()); err != nil {
				b.Fatal(err)
			}
			if err := bd.svc.AttemptFinished(b.Context(), a, outcome, nil, ""); err != nil {
				b.Fatal(err)
			}
		}
		dispatch := time.Since(start)
		got, err := bd.store.JobGetByID(b.Context(), j.ID)
		if err != nil || got.Status != store.JobCompleted {
			b.Fatalf("job: %v %v", got.Status, err)
		}
		b.ReportMetric(float64(admit.Milliseconds()), "admit_ms")
		b.ReportMetric(float64(n)/dispatch.Seconds(), "dispatch_tasks/s")
		b.ReportMetric(float64(len(got.Summary)), "summary_bytes")
	}
}
