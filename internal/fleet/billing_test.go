package fleet_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/store"
)

// TestMoneyInvariants runs a mixed workload through real gVisor hosts
// (successes, failures with retries, exit-137 and declared-infra requeues
// (billed, outside the retry budget),
// a timeout, a cancel while running, a dependency cancelled by its failed
// dependency, and a controller restart under a running attempt), then
// checks from the store that the money is exactly right.
func TestMoneyInvariants(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) { testMoneyInvariants(t, harnessOptions{store: st}) })
}

func testMoneyInvariants(t *testing.T, opts harnessOptions) {
	h := newHarness(t, opts)
	_, stopFirst := h.host(3)
	var jobs []*store.Job
	add := func(js apiv1.JobSubmit) *store.Job {
		j := h.submit(js)
		jobs = append(jobs, j)
		return j
	}
	add(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{Stdout: "ok"})})
	add(apiv1.JobSubmit{MaxRetries: ptr[int64](2), Payload: payload(t, sandboxtest.Payload{Exit: 4, NoResult: true})})
	add(apiv1.JobSubmit{MaxRetries: ptr[int64](1), Payload: payload(t, sandboxtest.Payload{Exit: 137, NoResult: true})})
	add(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{Exit: 1, FailureClass: "infra"})})
	add(apiv1.JobSubmit{TimeoutS: ptr[int64](1), Payload: payload(t, sandboxtest.Payload{SleepMS: 20000})})
	failing := add(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{Exit: 2, NoResult: true})})
	add(apiv1.JobSubmit{DependsOn: []string{failing.ID}, Payload: payload(t, sandboxtest.Payload{})})
	add(apiv1.JobSubmit{RuntimeHintS: ptr[int64](30), TimeoutS: ptr[int64](600),
		FanOut:  &apiv1.JobFanOut{Items: []json.RawMessage{payload(t, sandboxtest.Payload{}), payload(t, sandboxtest.Payload{Exit: 3, NoResult: true})}},
		Payload: json.RawMessage(`{}`)})
	// Requirement edits re-price: one edited while its first attempt runs
	// (that attempt is metered at its claim's rate, the retry at the new
	// one, and the hold grows), one edited while it waits on a dependency.
	edited := add(apiv1.JobSubmit{MaxRetries: ptr[int64](1), Payload: payload(t, sandboxtest.Payload{SleepMS: 5000, Exit: 4, NoResult: true})})
	h.waitFor(edited, time.Minute, "attempt running", func(_ []*store.Task, a []*store.Attempt) bool {
		return len(a) == 1 && a[0].Status == store.AttemptRunning
	})
	edit := func(j *store.Job, memoryMB string) {
		t.Helper()
		if _, err := h.jobs.EditRequirements(context.Background(), h.accountID, j.ID,
			map[string]json.RawMessage{"memory_mb": json.RawMessage(memoryMB)}); err != nil {
			t.Fatalf("edit %s: %v", j.ID, err)
		}
	}
	edit(edited, "512")
	slow := add(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{SleepMS: 3000})})
	waiting := add(apiv1.JobSubmit{DependsOn: []string{slow.ID}, Payload: payload(t, sandboxtest.Payload{})})
	edit(waiting, "768")
	cancelled := add(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{SleepMS: 60000})})
	h.waitFor(cancelled, time.Minute, "attempt running", func(_ []*store.Task, a []*store.Attempt) bool {
		return len(a) == 1 && a[0].Status == store.AttemptRunning
	})
	if _, _, err := h.jobs.Cancel(context.Background(), h.accountID, cancelled.ID, "test"); err != nil {
		t.Fatal(err)
	}
	// A restart under a running attempt: it is lost, requeued free, and
	// runs again on a new host.
	restarted := add(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{SleepMS: 2500})})
	h.waitFor(restarted, time.Minute, "attempt running", func(_ []*store.Task, a []*store.Attempt) bool {
		return len(a) == 1 && a[0].Status == store.AttemptRunning
	})
	h.stop()
	stopFirst()
	h.start()
	h.host(3)
	for _, j := range jobs {
		h.wait(j, 2*time.Minute)
	}
	checkMoney(t, h, jobs)

	// The edited job's attempts ran at two rates: its first (running when
	// the edit came) at the one it was admitted at, every later one (the
	// retry, and any free requeue of it after the restart) at the new one.
	after, err := h.st.JobGetByID(context.Background(), edited.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.RateMicrosPerHour <= edited.RateMicrosPerHour {
		t.Errorf("edited job: rate %d -> %d, want it raised", edited.RateMicrosPerHour, after.RateMicrosPerHour)
	}
	_, atts := h.tasks(edited)
	if len(atts) < 2 {
		t.Fatalf("edited job: got %d attempts, want the failed first one and its retry", len(atts))
	}
	for i, a := range atts {
		rate, mem := after.RateMicrosPerHour, int64(512)
		if i == 0 {
			rate, mem = edited.RateMicrosPerHour, 256
		}
		if a.RateMicrosPerHour != rate || a.MemoryMB != mem {
			t.Errorf("edited job attempt %d (%s): got rate %d, %d MB; want %d, %d MB", a.Number, a.Status, a.RateMicrosPerHour, a.MemoryMB, rate, mem)
		}
	}
}

// checkMoney asserts the billing invariants of issue 5 from the store.
func checkMoney(t *testing.T, h *harness, jobs []*store.Job) {
	t.Helper()
	ctx := context.Background()
	for _, j := range jobs {
		j, err := h.st.JobGetByID(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !j.Status.IsTerminal() {
			t.Fatalf("job %s is %s", j.ID, j.Status)
		}
		sub, err := job.Request(j)
		if err != nil {
			t.Fatal(err)
		}
		hold, err := h.st.HoldGetByJob(ctx, j.ID)
		if err != nil {
			t.Fatalf("job %s: hold: %v", j.ID, err)
		}
		if hold.Status == store.HoldActive || hold.CapturedAt == nil {
			t.Errorf("job %s (%s): hold still %s", j.ID, j.Status, hold.Status)
		}
		_, atts := h.tasks(j)
		var metered int64
		for _, a := range atts {
			switch a.Status {
			case store.AttemptLost:
				if a.CostMicros != 0 || a.BilledSeconds != 0 {
					t.Errorf("job %s attempt %d (%s): charged %d micro-USD for %d s; the platform's losses are free",
						j.ID, a.Number, a.Status, a.CostMicros, a.BilledSeconds)
				}
			case store.AttemptSucceeded, store.AttemptFailed, store.AttemptInfra:
				// Infra ends (exit 137, declared infra) are requeued
				// outside the retry budget but billed: the runner ran
				// (issue 28).
				ceiling := max(int64(billing.MinBilledSeconds), sub.TimeoutS)
				if a.BilledSeconds < billing.MinBilledSeconds || a.BilledSeconds > ceiling {
					t.Errorf("job %s attempt %d: billed %d s, want %d..%d", j.ID, a.Number, a.BilledSeconds, billing.MinBilledSeconds, ceiling)
				}
				// Metered at the rate the attempt was claimed at: the job's,
				// unless a requirements edit re-priced the job since.
				if a.RateMicrosPerHour <= 0 {
					t.Errorf("job %s attempt %d: no rate recorded", j.ID, a.Number)
				}
				if want := (a.RateMicrosPerHour*a.BilledSeconds + 3599) / 3600; a.CostMicros != want {
					t.Errorf("job %s attempt %d: cost %d, want %d (rate %d/h x %d s, rounded up)", j.ID, a.Number, a.CostMicros, want, a.RateMicrosPerHour, a.BilledSeconds)
				}
			case store.AttemptCancelled:
				if a.StartedAt == nil && a.CostMicros != 0 {
					t.Errorf("job %s: an attempt cancelled before it started cost %d", j.ID, a.CostMicros)
				}
			}
			metered += a.CostMicros
		}
		// The hold covers what was billed (it grows with billed requeues),
		// so the hold's capture charges every metered attempt.
		if metered > hold.AmountMicros {
			t.Errorf("job %s: metered %d, above its hold of %d", j.ID, metered, hold.AmountMicros)
		}
		if hold.CapturedMicros != min(metered, hold.AmountMicros) {
			t.Errorf("job %s: captured %d, want min(metered %d, hold %d)", j.ID, hold.CapturedMicros, metered, hold.AmountMicros)
		}
		wantStatus := store.HoldPartiallyCaptured
		switch hold.CapturedMicros {
		case 0:
			wantStatus = store.HoldReleased
		case hold.AmountMicros:
			wantStatus = store.HoldCaptured
		}
		if hold.Status != wantStatus {
			t.Errorf("job %s: hold %s, want %s", j.ID, hold.Status, wantStatus)
		}
		entries, _, err := h.st.LedgerList(ctx, &store.LedgerListParams{AccountID: h.accountID, EntryType: billing.EntryJobCharge, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var charges []int64
		for _, e := range entries {
			if e.Reference == j.ID {
				charges = append(charges, e.AmountMicros)
			}
		}
		switch {
		case hold.CapturedMicros == 0 && len(charges) != 0:
			t.Errorf("job %s: nothing captured but charged %v", j.ID, charges)
		case hold.CapturedMicros > 0 && (len(charges) != 1 || charges[0] != -hold.CapturedMicros):
			t.Errorf("job %s: captured %d, ledger charges %v; want exactly one of -%d", j.ID, hold.CapturedMicros, charges, hold.CapturedMicros)
		}
	}
	// The balance agrees with the ledger and the holds.
	bal, err := h.st.BalanceGet(ctx, h.accountID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := h.st.LedgerList(ctx, &store.LedgerListParams{AccountID: h.accountID, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, e := range entries {
		sum += e.AmountMicros
	}
	holds, _, err := h.st.HoldList(ctx, &store.HoldListParams{AccountID: h.accountID, Status: store.HoldActive, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if bal.LedgerMicros != sum || bal.HeldMicros != 0 || len(holds) != 0 || bal.ActiveHoldCount != 0 {
		t.Errorf("balance %+v; ledger sums to %d, %d holds active; want equal and none", bal, sum, len(holds))
	}
	t.Logf("%d jobs captured; charged %s USD in all", len(jobs), apiv1.USD(100_000_000-sum))
}
