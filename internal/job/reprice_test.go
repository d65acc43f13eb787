package job_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// TestConcurrentEditsNeverOverReserve re-prices many jobs at once against
// a balance that covers only some of their hold increases: exactly those
// grow, every other edit is a 402 that changed neither the job nor its
// hold, and the holds never exceed the ledger.
func TestConcurrentEditsNeverOverReserve(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		ctx := t.Context()
		// One task of 1 cpu with a 600 s timeout holds 4641 micro-USD
		// at 256 MB and 4782 at 512 MB: each edit grows its hold by 141.
		small := billing.Capacity{CPU: 1, MemoryMB: 256}
		quote, _ := b.svc.Billing().Quote(billing.JobShape{Tasks: 1, TimeoutS: 600, Capacity: small})
		before := int64(quote.Estimate.TotalUSD)
		quote, rate := b.svc.Billing().Quote(billing.JobShape{Tasks: 1, TimeoutS: 600,
			Capacity: billing.Capacity{CPU: 1, MemoryMB: 512}})
		grown := int64(quote.Estimate.TotalUSD)
		if before != 4641 || grown != 4782 {
			t.Fatalf("holds: got %d and %d, want 4641 and 4782", before, grown)
		}
		const n, fits = 10, 4
		var jobs []*store.Job
		for range n {
			j, err := b.svc.Submit(ctx, b.account, decode(t,
				`{"project":"demo","runner_command":["/r"],"timeout_s":600,"requirements":{"cpu":1,"memory_mb":256}}`))
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}
		// Leave exactly fits increases and a little more available.
		bal, err := b.store.BalanceGet(ctx, b.account, clock.System{}.Now())
		if err != nil {
			t.Fatal(err)
		}
		const spare = 50
		if _, err := b.store.LedgerEntryCreate(ctx, &store.LedgerEntryCreateParams{ID: "led_drain", AccountID: b.account,
			EntryType: "test_adjustment", AmountMicros: fits*(grown-before) + spare - bal.AvailableMicros(),
			Now: clock.System{}.Now()}); err != nil {
			t.Fatal(err)
		}

		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted, refused := map[string]bool{}, 0
		for _, j := range jobs {
			wg.Go(func() {
				_, err := b.svc.EditRequirements(ctx, b.account, j.ID, map[string]json.RawMessage{"memory_mb": json.RawMessage(`512`)})
				mu.Lock()
				defer mu.Unlock()
				var fe *fault.Error
				switch {
				case err == nil:
					accepted[j.ID] = true
				case errors.As(err, &fe) && fe.Kind == fault.KindPaymentRequired:
					refused++
				default:
					t.Errorf("edit %s: %v", j.ID, err)
				}
			})
		}
		wg.Wait()
		if len(accepted) != fits || refused != n-fits {
			t.Fatalf("accepted %d, refused %d; want %d and %d", len(accepted), refused, fits, n-fits)
		}
		bal, err = b.store.BalanceGet(ctx, b.account, clock.System{}.Now())
		if err != nil {
			t.Fatal(err)
		}
		if bal.HeldMicros != n*before+fits*(grown-before) || bal.AvailableMicros() != spare || bal.ActiveHoldCount != n {
			t.Errorf("balance: held %d (want %d), available %d (want %d), holds %d", bal.HeldMicros,
				n*before+fits*(grown-before), bal.AvailableMicros(), spare, bal.ActiveHoldCount)
		}
		for _, j := range jobs {
			got, err := b.store.JobGetByID(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			h, err := b.store.HoldGetByJob(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := b.store.TaskList(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantRate, wantHold, wantMem := j.RateMicrosPerHour, before, int64(256)
			if accepted[j.ID] {
				wantRate, wantHold, wantMem = rate, grown, 512
			}
			if got.RateMicrosPerHour != wantRate || h.AmountMicros != wantHold || tasks[0].MemoryMB != wantMem {
				t.Errorf("job %s (accepted %v): got rate %d, hold %d, task %d MB; want %d, %d, %d MB", j.ID, accepted[j.ID],
					got.RateMicrosPerHour, h.AmountMicros, tasks[0].MemoryMB, wantRate, wantHold, wantMem)
			}
		}
	})
}
