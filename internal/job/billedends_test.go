package job_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// This file checks issue 28's billing rules against both stores: what the
// ledger, the hold and the balance say after each kind of end.

// billedRun is one attempt of a test: the outcome the host reports, how long
// the controller saw it run, and how long the host says it ran.
type billedRun struct {
	outcome  job.Outcome
	observed time.Duration // between the started and finished reports
	reported time.Duration // the host's runtime (0: observed)
}

// runBilled claims the job's next task, reports its start and, after
// observed on the service's clock, its end. It returns the attempt.
func runBilled(t *testing.T, b *bundle, r billedRun) *store.Attempt {
	t.Helper()
	ctx := t.Context()
	_, a, err := b.svc.Claim(ctx, &store.TaskClaimParams{HostID: "wkr_test", AttemptID: id.New(id.Attempt),
		ResourceProfile: json.RawMessage(`{}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, FreeGPUs: 8, Now: b.clock.Now()})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if err := b.svc.AttemptStarted(ctx, a, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	hostStart := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC) // a host's clock of its own
	b.clock.Advance(r.observed)
	o := r.outcome
	o.StartedAt, o.EndedAt = hostStart, hostStart.Add(cmpOr(r.reported, r.observed))
	if err := b.svc.AttemptFinished(ctx, a, &o, nil, ""); err != nil {
		t.Fatalf("finish: %v", err)
	}
	return a
}

func cmpOr(d, or time.Duration) time.Duration {
	if d != 0 {
		return d
	}
	return or
}

// cost is what secs of runtime cost at rate: rounded up to a micro-USD.
func cost(rate, secs int64) int64 { return (rate*secs + 3599) / 3600 }

// moneyOf checks the money of an ended job: its attempts were billed
// wantSecs (in order; 0 for a free one), one job_charge of their total is
// in the ledger, the hold captured at it, nothing is held, and the balance
// is the grant less every charge. It returns the job's charge.
func moneyOf(t *testing.T, b *bundle, jobID string, wantSecs []int64) int64 {
	t.Helper()
	ctx := t.Context()
	j, err := b.store.JobGetByID(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Status.IsTerminal() {
		t.Fatalf("job %s is %s, want it ended", jobID, j.Status)
	}
	atts, err := b.store.AttemptList(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	var gotSecs []int64
	var metered int64
	for _, a := range atts {
		gotSecs = append(gotSecs, a.BilledSeconds)
		if want := cost(a.RateMicrosPerHour, a.BilledSeconds); a.CostMicros != want {
			t.Errorf("attempt %d (%s): cost %d, want %d", a.Number, a.TerminalKind, a.CostMicros, want)
		}
		metered += a.CostMicros
	}
	if !equalInts(gotSecs, wantSecs) {
		t.Errorf("billed seconds per attempt: got %v, want %v", gotSecs, wantSecs)
	}
	h, err := b.store.HoldGetByJob(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status == store.HoldActive || h.CapturedMicros != metered || metered > h.AmountMicros {
		t.Errorf("hold %s: captured %d of %d, want all of the metered %d", h.Status, h.CapturedMicros, h.AmountMicros, metered)
	}
	entries, _, err := b.store.LedgerList(ctx, &store.LedgerListParams{AccountID: b.account, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var charge, sum int64
	for _, e := range entries {
		sum += e.AmountMicros
		if e.EntryType == billing.EntryJobCharge && e.Reference == jobID {
			charge += e.AmountMicros
		}
	}
	if charge != -metered {
		t.Errorf("ledger charges job %s %d, want -%d", jobID, charge, metered)
	}
	bal, err := b.store.BalanceGet(ctx, b.account, b.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if bal.LedgerMicros != sum || bal.HeldMicros != 0 || bal.AvailableMicros() != sum {
		t.Errorf("balance %+v, want the ledger's %d and nothing held", bal, sum)
	}
	return metered
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBilledEnds: an attempt in which the runner ran is billed however it
// ended (its own exit 137, an OOM kill, a declared infra failure), still
// requeued outside the retry budget; the platform's ends (a lost host, a
// sandbox that failed to start) are free; a cancel bills the runtime used;
// a host's runtime report is believed only within what the controller saw.
func TestBilledEnds(t *testing.T) {
	succeed := job.Outcome{Result: json.RawMessage(`{"ok":true}`)}
	cases := []struct {
		name     string
		runs     []billedRun
		wantSecs []int64
	}{
		{"exit 137 by the runner", []billedRun{{outcome: job.Outcome{ExitCode: 137}, observed: 90 * time.Second},
			{outcome: succeed, observed: 10 * time.Second}}, []int64{90, 60}},
		{"oom kill", []billedRun{{outcome: job.Outcome{ExitCode: 137, OOMKilled: true}, observed: 150 * time.Second},
			{outcome: succeed, observed: 61 * time.Second}}, []int64{150, 61}},
		{"declared infra", []billedRun{{outcome: job.Outcome{ExitCode: 1, FailureClass: "infra", Result: json.RawMessage(`{"failure_class":"infra"}`)}, observed: 5 * time.Second},
			{outcome: succeed, observed: 70 * time.Second}}, []int64{60, 70}},
		{"the platform's ends are free", []billedRun{{outcome: job.Outcome{HostError: "host shut down while the attempt ran", Killed: true}, observed: 300 * time.Second},
			{outcome: job.Outcome{SandboxError: "runsc: cannot start", ExitCode: 128}, observed: 2 * time.Second},
			{outcome: succeed, observed: 10 * time.Second}}, []int64{0, 0, 60}},
		{"a host claiming more than was observed", []billedRun{{outcome: succeed, observed: 120 * time.Second, reported: 7 * 24 * time.Hour}}, []int64{120}},
		{"a host claiming far less than was observed", []billedRun{{outcome: succeed, observed: 2 * time.Hour, reported: time.Second}}, []int64{int64((2*time.Hour - job.ReportSlack) / time.Second)}},
		{"a host reporting less within the slack", []billedRun{{outcome: succeed, observed: 400 * time.Second, reported: 100 * time.Second}}, []int64{100}},
	}
	onEngines(t, func(t *testing.T, b *bundle) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				j, err := b.svc.Submit(t.Context(), b.account, decode(t, `{"project":"demo","runner_command":["/r"],"timeout_s":86400}`))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range c.runs {
					runBilled(t, b, r)
				}
				tasks, err := b.store.TaskList(t.Context(), j.ID)
				if err != nil {
					t.Fatal(err)
				}
				if tasks[0].Status != store.TaskSucceeded || tasks[0].RetriesUsed != 0 {
					t.Errorf("task %s with %d retries used; want succeeded, the requeues outside the budget", tasks[0].Status, tasks[0].RetriesUsed)
				}
				moneyOf(t, b, j.ID, c.wantSecs)
			})
		}
		t.Run("a cancel bills the runtime used", func(t *testing.T) {
			ctx := t.Context()
			j, err := b.svc.Submit(ctx, b.account, decode(t, `{"project":"demo","runner_command":["/r"],"timeout_s":3600}`))
			if err != nil {
				t.Fatal(err)
			}
			_, a, err := b.svc.Claim(ctx, &store.TaskClaimParams{HostID: "wkr_test", AttemptID: id.New(id.Attempt),
				ResourceProfile: json.RawMessage(`{}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, FreeGPUs: 8, Now: b.clock.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.svc.AttemptStarted(ctx, a, b.clock.Now()); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(130 * time.Second)
			if _, _, err := b.svc.Cancel(ctx, b.account, j.ID, "test"); err != nil {
				t.Fatal(err)
			}
			moneyOf(t, b, j.ID, []int64{130})
		})
	})
}

// TestBilledRequeuesGrowTheHold: admission held one attempt for the
// runtime cap; an exit 137 requeue is billed but uses no retry, so the
// hold grows by what it cost (the task may still run its whole budget),
// and the job is charged every attempt.
func TestBilledRequeuesGrowTheHold(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		ctx := t.Context()
		j, err := b.svc.Submit(ctx, b.account, decode(t, `{"project":"demo","runner_command":["/r"],"timeout_s":600}`))
		if err != nil {
			t.Fatal(err)
		}
		held := billing.AttemptEstimate(j.RateMicrosPerHour, 600)
		for i := range 2 {
			runBilled(t, b, billedRun{outcome: job.Outcome{ExitCode: 137}, observed: 300 * time.Second})
			h, err := b.store.HoldGetByJob(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := held + int64(i+1)*cost(j.RateMicrosPerHour, 300); h.AmountMicros != want || h.Status != store.HoldActive {
				t.Errorf("after requeue %d: hold %d (%s), want %d", i+1, h.AmountMicros, h.Status, want)
			}
		}
		evPage, err := b.views.Events(ctx, j, store.JobEventPageParams{Limit: 100})
		evs := evPage.Events
		if err != nil {
			t.Fatal(err)
		}
		grown := 0
		for _, e := range evs {
			if e.Kind == "attempt.infra_requeued" && strings.Contains(string(e.Data), `"hold_grown_usd"`) {
				grown++
			}
		}
		if grown != 2 {
			t.Errorf("%d attempt.infra_requeued events say the hold grew, want 2", grown)
		}
		// The third attempt runs the whole cap, which the hold still covers.
		runBilled(t, b, billedRun{outcome: job.Outcome{Result: json.RawMessage(`{}`)}, observed: 600 * time.Second})
		moneyOf(t, b, j.ID, []int64{300, 300, 600})
	})
}

// TestBilledRequeueStopsWhenTheBalanceCannotCoverIt: when the hold cannot
// grow for another attempt, the requeue does not happen: the task fails
// with failure_kind insufficient_balance and a message that says so, the
// attempt that ran is still charged, and the money adds up.
func TestBilledRequeueStopsWhenTheBalanceCannotCoverIt(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		ctx := t.Context()
		j, err := b.svc.Submit(ctx, b.account, decode(t, `{"project":"demo","runner_command":["/r"],"timeout_s":600}`))
		if err != nil {
			t.Fatal(err)
		}
		// Leave 10 micro-USD available: less than the 300 s the requeue
		// adds to what the job may be billed.
		bal, err := b.store.BalanceGet(ctx, b.account, b.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.LedgerEntryCreate(ctx, &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: b.account,
			EntryType: "test_adjustment", AmountMicros: 10 - bal.AvailableMicros(), Now: b.clock.Now()}); err != nil {
			t.Fatal(err)
		}
		a := runBilled(t, b, billedRun{outcome: job.Outcome{ExitCode: 137, Result: json.RawMessage(`{"partial":1}`)}, observed: 300 * time.Second})

		got, err := b.store.JobGetByID(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := b.store.TaskList(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		var fp job.FailurePayload
		if err := json.Unmarshal(tasks[0].Result, &fp); err != nil {
			t.Fatal(err)
		}
		if got.Status != store.JobFailed || tasks[0].Status != store.TaskFailed || fp.FailureKind != job.FailureBalance ||
			!strings.Contains(fp.Message, "balance") || !strings.Contains(fp.Message, "another attempt") ||
			!strings.Contains(got.Error, "balance") {
			t.Errorf("job %s (%q), task %s with %+v; want failed for the balance", got.Status, got.Error, tasks[0].Status, fp)
		}
		atts, err := b.store.AttemptList(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(atts) != 1 || atts[0].ID != a.ID || atts[0].RetryDecision != "none" || tasks[0].InfraRequeues != 0 {
			t.Errorf("attempts %d, decision %q, infra requeues %d; want the one attempt, not requeued", len(atts),
				atts[0].RetryDecision, tasks[0].InfraRequeues)
		}
		moneyOf(t, b, j.ID, []int64{300})
		// Nothing else can be claimed: the task did not return to the queue.
		_, _, err = b.svc.Claim(context.WithoutCancel(ctx), &store.TaskClaimParams{HostID: "wkr_test", AttemptID: id.New(id.Attempt),
			ResourceProfile: json.RawMessage(`{}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, FreeGPUs: 8, Now: b.clock.Now()})
		if err != store.ErrNotFound {
			t.Errorf("claim after the stop: %v, want nothing queued", err)
		}
	})
}

// TestRunPastTheHintIsCharged: runtime_hint_s sizes the hold, timeout_s
// caps the runtime; an attempt that runs past the hint used to be charged
// only the hold. The hold now grows to what the attempt was metered.
func TestRunPastTheHintIsCharged(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		j, err := b.svc.Submit(t.Context(), b.account, decode(t,
			`{"project":"demo","runner_command":["/r"],"timeout_s":3600,"runtime_hint_s":60}`))
		if err != nil {
			t.Fatal(err)
		}
		runBilled(t, b, billedRun{outcome: job.Outcome{Result: json.RawMessage(`{}`)}, observed: 1800 * time.Second})
		if got := moneyOf(t, b, j.ID, []int64{1800}); got != cost(j.RateMicrosPerHour, 1800) {
			t.Errorf("charged %d, want the 1800 s metered, %d", got, cost(j.RateMicrosPerHour, 1800))
		}
	})
}
