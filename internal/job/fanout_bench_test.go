package job_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// BenchmarkFanOut10k admits a 10,000-task fan-out job in one transaction
// and then dispatches it through the job service as hosts would (claim,
// start, finish), without sandboxes: it measures the controller's side.
// slots=1 is a host that runs one task at a time (claim, start and finish
// one after the other); slots=16 is a host with 16 free slots, as the
// fleet's lease fills them: one ClaimSeveral for every free slot, then each
// slot reports its start and end on its own goroutine, as concurrent host
// reports arrive. Reported: admit_ms (one submission), dispatch_tasks/s,
// and the final summary's size.
//
//	go test -run '^$' -bench FanOut10k -benchtime 1x ./internal/job/
func BenchmarkFanOut10k(b *testing.B) {
	for _, slots := range []int{1, 16} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) { benchFanOut(b, slots) })
	}
}

func benchFanOut(b *testing.B, slots int) {
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
		outcome := &job.Outcome{ExitCode: 0, StartedAt: start, EndedAt: start.Add(time.Second), Result: json.RawMessage(`{"ok":true}`)}
		for done := 0; done < n; {
			claimed, err := bd.svc.ClaimSeveral(b.Context(), func(prev []job.Claimed) *store.TaskClaimParams {
				if len(prev) >= slots {
					return nil
				}
				return &store.TaskClaimParams{HostID: "wkr_bench", AttemptID: id.New(id.Attempt),
					FreeCPU: 64, FreeMemoryMB: 1 << 20, Now: time.Now()}
			})
			if err != nil || len(claimed) == 0 {
				b.Fatalf("claim after %d: %d claimed, %v", done, len(claimed), err)
			}
			errs := make([]error, len(claimed))
			var wg sync.WaitGroup
			for i, c := range claimed {
				wg.Go(func() {
					if errs[i] = bd.svc.AttemptStarted(b.Context(), c.Attempt, time.Now()); errs[i] == nil {
						errs[i] = bd.svc.AttemptFinished(b.Context(), c.Attempt, outcome, nil, "")
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
			done += len(claimed)
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
