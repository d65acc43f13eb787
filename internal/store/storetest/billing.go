package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

var billingTests = map[string]func(*testing.T, store.Store){
	"HoldsCaptureOnce":      testHoldsCaptureOnce,
	"HoldGrow":              testHoldGrow,
	"BillingLists":          testBillingLists,
	"AttemptCosts":          testAttemptCosts,
	"IdempotencyKeys":       testIdempotencyKeys,
	"AccountLockInTx":       testAccountLockInTx,
	"HoldReserve":           testHoldReserve,
	"HoldReserveConcurrent": testHoldReserveConcurrent,
}

// An active hold grows in place, guarded by the amount read, and the
// balance's held total follows; a captured or missing hold does not grow.
func testHoldGrow(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	h, err := s.HoldCreate(ctx(t), &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: a.ID, JobID: "job_1", AmountMicros: 900, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(time.Minute)
	got, err := s.HoldGrow(ctx(t), &store.HoldGrowParams{ID: h.ID, PrevAmountMicros: 900, AmountMicros: 1500, Now: t1})
	if err != nil || got.AmountMicros != 1500 || got.Status != store.HoldActive || !got.UpdatedAt.Equal(t1) || !got.CreatedAt.Equal(t0) {
		t.Fatalf("HoldGrow: got %+v, %v; want an active hold of 1500 updated at %v", got, err, t1)
	}
	if bal, _ := s.BalanceGet(ctx(t), a.ID, t1); bal.HeldMicros != 1500 || bal.ActiveHoldCount != 1 {
		t.Errorf("balance after growing: got %+v, want 1500 held in one hold", bal)
	}
	for _, tc := range []struct {
		name       string
		prev, want int64
	}{{"stale amount", 900, 2000}, {"not more", 1500, 1500}, {"less", 1500, 1000}} {
		if _, err := s.HoldGrow(ctx(t), &store.HoldGrowParams{ID: h.ID, PrevAmountMicros: tc.prev, AmountMicros: tc.want, Now: t1}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: got %v, want ErrConflict", tc.name, err)
		}
	}
	if _, err := s.HoldCapture(ctx(t), &store.HoldCaptureParams{ID: h.ID, Status: store.HoldReleased, Now: t1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HoldGrow(ctx(t), &store.HoldGrowParams{ID: h.ID, PrevAmountMicros: 1500, AmountMicros: 2000, Now: t1}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("growing a captured hold: got %v, want ErrConflict", err)
	}
	if _, err := s.HoldGrow(ctx(t), &store.HoldGrowParams{ID: "hld_missing", PrevAmountMicros: 1, AmountMicros: 2, Now: t1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("growing a missing hold: got %v, want ErrNotFound", err)
	}
	if got, _ := s.HoldGetByJob(ctx(t), "job_1"); got.AmountMicros != 1500 || got.Status != store.HoldReleased {
		t.Errorf("hold after refused growths: got %+v, want 1500 released", got)
	}
	if bal, _ := s.BalanceGet(ctx(t), a.ID, t1); bal.HeldMicros != 0 || bal.ActiveHoldCount != 0 {
		t.Errorf("balance after settling: got %+v, want nothing held", bal)
	}
}

func testHoldsCaptureOnce(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	h, err := s.HoldCreate(ctx(t), &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: a.ID, JobID: "job_1", AmountMicros: 900, Now: t0})
	if err != nil || h.Status != store.HoldActive || h.AmountMicros != 900 {
		t.Fatalf("HoldCreate: %+v, %v", h, err)
	}
	if _, err := s.HoldCreate(ctx(t), &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: a.ID, JobID: "job_1", AmountMicros: 1, Now: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second hold for a job: got %v, want ErrConflict", err)
	}
	bal, _ := s.BalanceGet(ctx(t), a.ID, t0)
	if bal.HeldMicros != 900 || bal.ActiveHoldCount != 1 {
		t.Fatalf("balance with a hold: %+v", bal)
	}
	got, err := s.HoldCapture(ctx(t), &store.HoldCaptureParams{ID: h.ID, Status: store.HoldPartiallyCaptured, CapturedMicros: 400, Now: t0.Add(time.Minute)})
	if err != nil || got.Status != store.HoldPartiallyCaptured || got.CapturedMicros != 400 || got.CapturedAt == nil {
		t.Fatalf("HoldCapture: %+v, %v", got, err)
	}
	if _, err := s.HoldCapture(ctx(t), &store.HoldCaptureParams{ID: h.ID, Status: store.HoldCaptured, CapturedMicros: 900, Now: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("settling twice: got %v, want ErrConflict", err)
	}
	if _, err := s.HoldCapture(ctx(t), &store.HoldCaptureParams{ID: "hld_missing", Status: store.HoldReleased, Now: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("capturing a missing hold: got %v, want ErrNotFound", err)
	}
	h2, _ := s.HoldCreate(ctx(t), &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: a.ID, JobID: "job_2", AmountMicros: 10, Now: t0})
	if _, err := s.HoldCapture(ctx(t), &store.HoldCaptureParams{ID: h2.ID, Status: store.HoldCaptured, CapturedMicros: 11, Now: t0}); err == nil {
		t.Fatal("capturing more than the hold: accepted")
	}
	if got, err := s.HoldGetByJob(ctx(t), "job_1"); err != nil || got.ID != h.ID {
		t.Fatalf("HoldGetByJob: %+v, %v", got, err)
	}
	if _, err := s.HoldGetByJob(ctx(t), "job_none"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("HoldGetByJob of a job without one: %v", err)
	}
	bal, _ = s.BalanceGet(ctx(t), a.ID, t0)
	if bal.HeldMicros != 10 || bal.ActiveHoldCount != 1 {
		t.Fatalf("balance after settling: %+v", bal)
	}
}

func testBillingLists(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	for i := range 5 {
		typ := "beta_credit_grant"
		if i%2 == 1 {
			typ = "job_charge"
		}
		for _, acct := range []string{a.ID, b.ID} {
			if _, err := s.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: acct,
				EntryType: typ, AmountMicros: int64(i + 1), Now: t0.Add(time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.HoldCreate(ctx(t), &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: a.ID, JobID: fmt.Sprintf("job_%d", i),
			AmountMicros: 5, Now: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.QuoteCreate(ctx(t), &store.QuoteCreateParams{ID: id.New(id.Quote), AccountID: a.ID, QuoteType: "job_shortfall",
			AmountMicros: 7, ExpiresAt: t0.Add(time.Duration(i) * time.Hour), Now: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	es, total, err := s.LedgerList(ctx(t), &store.LedgerListParams{AccountID: a.ID, Limit: 2, Offset: 1})
	if err != nil || total != 5 || len(es) != 2 || es[0].AmountMicros != 4 || es[1].AmountMicros != 3 {
		t.Fatalf("LedgerList page: %d entries of %d (%v), want entries 4 and 3 of 5, newest first", len(es), total, err)
	}
	es, total, _ = s.LedgerList(ctx(t), &store.LedgerListParams{AccountID: a.ID, EntryType: "job_charge", Limit: 10})
	if total != 2 || len(es) != 2 {
		t.Fatalf("LedgerList by type: %d of %d, want 2", len(es), total)
	}
	hs, total, _ := s.HoldList(ctx(t), &store.HoldListParams{AccountID: a.ID, Status: store.HoldActive, Limit: 3})
	if total != 5 || len(hs) != 3 {
		t.Fatalf("HoldList: %d of %d", len(hs), total)
	}
	if _, total, _ := s.HoldList(ctx(t), &store.HoldListParams{AccountID: b.ID, Limit: 3}); total != 0 {
		t.Fatalf("HoldList of another account: %d", total)
	}
	// At t0+150m the quotes expiring at t0, 1h and 2h are expired.
	now := t0.Add(150 * time.Minute)
	qs, total, _ := s.QuoteList(ctx(t), &store.QuoteListParams{AccountID: a.ID, Status: "expired", Limit: 10, Now: now})
	if total != 3 || len(qs) != 3 || qs[0].Status != "expired" {
		t.Fatalf("QuoteList expired: %d of %d", len(qs), total)
	}
	if _, total, _ := s.QuoteList(ctx(t), &store.QuoteListParams{AccountID: a.ID, Status: "open", QuoteType: "job_shortfall", Limit: 10, Now: now}); total != 2 {
		t.Fatalf("QuoteList open: %d, want 2", total)
	}
}

func testAttemptCosts(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	j := tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 2})
	var atts []*store.Attempt
	for range 2 {
		_, a, err := s.TaskClaim(ctx(t), &store.TaskClaimParams{HostID: "wkr_a", AttemptID: id.New(id.Attempt), Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		atts = append(atts, a)
	}
	if _, err := s.AttemptFinish(ctx(t), &store.AttemptFinishParams{AttemptID: atts[0].ID, Status: store.AttemptSucceeded,
		TerminalKind: "exit", RetryDecision: "none", TaskStatus: store.TaskSucceeded, BilledSeconds: 60, CostMicros: 563, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.AttemptSetCost(ctx(t), atts[1].ID, 75, 704); err != nil {
		t.Fatal(err)
	}
	if err := s.AttemptSetCost(ctx(t), "att_missing", 1, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("AttemptSetCost of a missing attempt: %v", err)
	}
	total, err := s.JobChargeTotal(ctx(t), j.ID)
	if err != nil || total != 563+704 {
		t.Fatalf("JobChargeTotal: %d, %v", total, err)
	}
	m, err := s.JobMeterTotal(ctx(t), j.ID)
	if err != nil || m.BilledSeconds != 60+75 || m.CostMicros != 563+704 {
		t.Fatalf("JobMeterTotal: %+v, %v; want 135 s, 1267 micro-USD", m, err)
	}
	if m, err := s.JobMeterTotal(ctx(t), "job_missing"); err != nil || *m != (store.JobMeter{}) {
		t.Fatalf("JobMeterTotal of a job without attempts: %+v, %v; want zeros", m, err)
	}
	listed, _ := s.AttemptList(ctx(t), j.ID)
	if listed[0].BilledSeconds != 60 || listed[0].CostMicros != 563 || listed[1].BilledSeconds != 75 {
		t.Fatalf("attempt costs: %+v %+v", listed[0], listed[1])
	}
}

func testIdempotencyKeys(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	k := &store.IdempotencyKey{AccountID: a.ID, Key: "k", RequestHash: "h", Response: "job_1", CreatedAt: t0}
	if err := s.IdempotencyKeyPut(ctx(t), k); err != nil {
		t.Fatal(err)
	}
	if err := s.IdempotencyKeyPut(ctx(t), k); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("same key twice: %v, want ErrConflict", err)
	}
	if err := s.IdempotencyKeyPut(ctx(t), &store.IdempotencyKey{AccountID: b.ID, Key: "k", RequestHash: "x", CreatedAt: t0}); err != nil {
		t.Fatalf("same key, another account: %v", err)
	}
	got, err := s.IdempotencyKeyGet(ctx(t), a.ID, "k")
	if err != nil || got.RequestHash != "h" || got.Response != "job_1" {
		t.Fatalf("IdempotencyKeyGet: %+v, %v", got, err)
	}
	if _, err := s.IdempotencyKeyGet(ctx(t), a.ID, "other"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	// Keys of batch entries join the caller's key and an index with a
	// control character (job.BatchEntryKey); both engines keep it exactly.
	long := strings.Repeat("k", 255) + "\x1f199"
	if err := s.IdempotencyKeyPut(ctx(t), &store.IdempotencyKey{AccountID: a.ID, Key: long, RequestHash: "h2", Response: "job_2", CreatedAt: t0}); err != nil {
		t.Fatalf("key with a control character: %v", err)
	}
	if got, err := s.IdempotencyKeyGet(ctx(t), a.ID, long); err != nil || got.Key != long || got.Response != "job_2" {
		t.Fatalf("key with a control character: %+v, %v", got, err)
	}
	if _, err := s.IdempotencyKeyGet(ctx(t), a.ID, strings.Repeat("k", 255)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("prefix of a batch key: %v, want not found", err)
	}
}

func testAccountLockInTx(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	err := s.InTx(ctx(t), func(q store.Querier) error { return q.AccountLock(ctx(t), a.ID) })
	if err != nil {
		t.Fatal(err)
	}
	err = s.InTx(ctx(t), func(q store.Querier) error { return q.AccountLock(ctx(t), "acc_missing") })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("locking a missing account: %v", err)
	}
}

// testBalanceTotals: the balance (running totals kept by the database)
// always equals the sums of the ledger and the active holds.
func testBalanceTotals(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	check := func(step string) {
		t.Helper()
		for _, acct := range []string{a.ID, b.ID} {
			bal, err := s.BalanceGet(ctx(t), acct, t0)
			if err != nil {
				t.Fatal(err)
			}
			es, _, _ := s.LedgerList(ctx(t), &store.LedgerListParams{AccountID: acct, Limit: 1000})
			hs, _, _ := s.HoldList(ctx(t), &store.HoldListParams{AccountID: acct, Status: store.HoldActive, Limit: 1000})
			var ledger, held int64
			for _, e := range es {
				ledger += e.AmountMicros
			}
			for _, h := range hs {
				held += h.AmountMicros - h.CapturedMicros
			}
			if bal.LedgerMicros != ledger || bal.HeldMicros != held || bal.ActiveHoldCount != int64(len(hs)) {
				t.Fatalf("%s: balance %+v, sums ledger %d held %d over %d holds", step, bal, ledger, held, len(hs))
			}
		}
	}
	check("empty")
	for i, amt := range []int64{5_000_000, -1_250_000, 7} {
		if _, err := s.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: a.ID,
			EntryType: "beta_credit_grant", AmountMicros: amt, Now: t0.Add(time.Duration(i))}); err != nil {
			t.Fatal(err)
		}
	}
	check("ledger")
	var holds []*store.Hold
	for i := range 3 {
		h, err := s.HoldCreate(ctx(t), &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: a.ID, JobID: fmt.Sprintf("job_t%d", i),
			AmountMicros: int64(100 * (i + 1)), Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, h)
	}
	check("holds")
	for i, st := range []string{store.HoldCaptured, store.HoldPartiallyCaptured, store.HoldReleased} {
		captured := map[string]int64{store.HoldCaptured: holds[i].AmountMicros, store.HoldPartiallyCaptured: 50}[st]
		if _, err := s.HoldCapture(ctx(t), &store.HoldCaptureParams{ID: holds[i].ID, Status: st, CapturedMicros: captured, Now: t0}); err != nil {
			t.Fatal(err)
		}
		check("capture " + st)
	}
	// A transaction that rolls back leaves the totals as they were.
	_ = s.InTx(ctx(t), func(q store.Querier) error {
		_, _ = q.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: a.ID,
			EntryType: "beta_credit_grant", AmountMicros: 99, Now: t0})
		return errors.New("roll back")
	})
	check("rollback")
}
