package job_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
)

// TestConcurrentAdmissionNeverOverReserves submits many jobs at once
// against a balance that covers only some of them: exactly those are
// admitted with their holds, every other answer is a 402 that stored
// nothing, and the holds never exceed the ledger.
func TestConcurrentAdmissionNeverOverReserves(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		ctx := t.Context()
		// The setup granted 50 USD; one job of 1 cpu / 2048 MB, timeout
		// 3600 s, max_retries 0 holds 0.03375 USD. Drain the balance to
		// exactly 7 holds' worth.
		body := `{"project":"demo","runner_command":["/r"],"timeout_s":3600}`
		quote, _ := b.svc.Billing().Quote(billing.JobShape{Tasks: 1, TimeoutS: 3600,
			Capacity: billing.Capacity{CPU: 1, MemoryMB: 2048}})
		per := int64(quote.Estimate.TotalUSD)
		bal, err := b.store.BalanceGet(ctx, b.account, b.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.LedgerEntryCreate(ctx, &store.LedgerEntryCreateParams{ID: "led_drain", AccountID: b.account,
			EntryType: "test_adjustment", AmountMicros: 7*per - bal.AvailableMicros(), Now: b.clock.Now()}); err != nil {
			t.Fatal(err)
		}

		const n = 40
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted, refused := 0, 0
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.svc.Submit(ctx, b.account, decode(t, body))
				mu.Lock()
				defer mu.Unlock()
				var fe *fault.Error
				switch {
				case err == nil:
					admitted++
				case errors.As(err, &fe) && fe.Kind == fault.KindPaymentRequired:
					refused++
				default:
					t.Errorf("submit: %v", err)
				}
			}()
		}
		wg.Wait()
		if admitted != 7 || refused != n-7 {
			t.Fatalf("admitted %d, refused %d; want 7 and %d", admitted, refused, n-7)
		}
		bal, err = b.store.BalanceGet(ctx, b.account, b.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if bal.HeldMicros != 7*per || bal.AvailableMicros() != 0 || bal.ActiveHoldCount != 7 {
			t.Errorf("balance: held %d (want %d), available %d, holds %d", bal.HeldMicros, 7*per, bal.AvailableMicros(), bal.ActiveHoldCount)
		}
		jobs, total, err := b.store.JobList(ctx, &store.JobListParams{AccountID: b.account})
		if err != nil || total != 7 || len(jobs) != 7 {
			t.Errorf("jobs stored: %d (%v), want 7: a refused submission stores nothing", total, err)
		}
		if bal.OpenQuoteCount != int64(n-7) {
			t.Errorf("open quotes: %d, want one shortfall quote per refusal (%d)", bal.OpenQuoteCount, n-7)
		}
	})
}

// TestIdempotentSubmit: a resend with the same key and body returns the
// first job and creates nothing; another body under the key is a 409; a
// 402 stores no key, so the same request is admitted once funded.
func TestIdempotentSubmit(t *testing.T) {
	b := setup(t, true)
	ctx := t.Context()
	body := `{"project":"demo","runner_command":["/r"]}`
	key := job.Idempotency{Key: "k-1", RequestHash: "h1"}
	first, replayed, err := b.svc.SubmitIdempotent(ctx, b.account, decode(t, body), key)
	if err != nil || replayed {
		t.Fatalf("first: %v, replayed %v", err, replayed)
	}
	again, replayed, err := b.svc.SubmitIdempotent(ctx, b.account, decode(t, body), key)
	if err != nil || !replayed || again.ID != first.ID {
		t.Fatalf("resend: got %v (replayed %v, %v), want job %s replayed", again, replayed, err, first.ID)
	}
	_, _, err = b.svc.SubmitIdempotent(ctx, b.account, decode(t, body), job.Idempotency{Key: "k-1", RequestHash: "other"})
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Kind != fault.KindConflict {
		t.Fatalf("same key, other body: got %v, want a conflict", err)
	}
	if _, total, _ := b.store.JobList(ctx, &store.JobListParams{AccountID: b.account}); total != 1 {
		t.Errorf("jobs: %d, want 1", total)
	}

	// Drain the balance: the next keyed submit is a 402 and stores no key.
	bal, _ := b.store.BalanceGet(ctx, b.account, b.clock.Now())
	if _, err := b.store.LedgerEntryCreate(ctx, &store.LedgerEntryCreateParams{ID: "led_drain", AccountID: b.account,
		EntryType: "test_adjustment", AmountMicros: -bal.AvailableMicros(), Now: b.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	funded := job.Idempotency{Key: "k-2", RequestHash: "h2"}
	_, _, err = b.svc.SubmitIdempotent(ctx, b.account, decode(t, body), funded)
	if !errors.As(err, &fe) || fe.Kind != fault.KindPaymentRequired {
		t.Fatalf("unfunded: got %v, want 402", err)
	}
	if _, err := billing.New(b.store, b.clock, nil).GrantCredit(ctx, b.account, 1_000_000, "top-up"); err != nil {
		t.Fatal(err)
	}
	j, replayed, err := b.svc.SubmitIdempotent(ctx, b.account, decode(t, body), funded)
	if err != nil || replayed {
		t.Fatalf("after funding: %v (replayed %v), want admitted", err, replayed)
	}
	if again, replayed, _ := b.svc.SubmitIdempotent(ctx, b.account, decode(t, body), funded); !replayed || again.ID != j.ID {
		t.Errorf("resend after funding: want the funded job replayed")
	}
}

// The job a submission answers with shows the same summary (task counts,
// completeness, hold and cost) as a read of the job right after it; a
// replay of an Idempotency-Key leaves the summary to that read.
func TestSubmitHeldShowsWhatAReadShows(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		ctx := t.Context()
		for i, body := range []string{
			`{"project":"demo","runner_command":["/r"]}`,
			`{"project":"demo","runner_command":["/r"],"payload":{},"fan_out":{"items":[{},{},{}]},"max_retries":2}`,
		} {
			key := job.Idempotency{Key: fmt.Sprintf("view-%d", i), RequestHash: "h"}
			j, hold, replayed, err := b.svc.SubmitHeld(ctx, b.account, decode(t, body), key)
			if err != nil || replayed || hold == nil {
				t.Fatalf("submit %d: hold %v, replayed %v, %v; want a hold", i, hold, replayed, err)
			}
			summary, err := jobview.AdmittedSummary(j, hold)
			if err != nil {
				t.Fatal(err)
			}
			read, err := b.views.SummaryOf(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(summary, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(read, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("submit %d answered summary\n%s\nbut a read shows\n%s", i, summary, read)
			}
			again, hold, replayed, err := b.svc.SubmitHeld(ctx, b.account, decode(t, body), key)
			if err != nil || !replayed || again.ID != j.ID || hold != nil {
				t.Errorf("resend %d: job %v, replayed %v, hold %v, %v; want the same job replayed, no hold", i, again, replayed, hold, err)
			}
		}
	})
}
