// Package storetest is the conformance suite every store engine runs. Each
// test gets a fresh, migrated store from the engine's factory.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// Factory returns a fresh, migrated, empty store; the factory arranges its
// cleanup with t.Cleanup.
type Factory func(t *testing.T) store.Store

// t0 is the suite's fixed "now"; tests move it by hand.
var t0 = tf.Epoch()

// Run runs every conformance test against the engine.
func Run(t *testing.T, newStore Factory) {
	tests := map[string]func(*testing.T, store.Store){
		"Accounts":         testAccounts,
		"APIKeys":          testAPIKeys,
		"LedgerAndBalance": testLedgerAndBalance,
		"LedgerAppendOnly": testLedgerAppendOnly,
		"Projects":         testProjects,
		"ProjectScoping":   testProjectScoping,
		"KV":               testKV,
		"Pushes":           testPushes,
		"TxRollback":       testTxRollback,
		"ConcurrentWrites": testConcurrentWrites,
		"GroupTx":          testGroupTx,
		"RuntimePreps":     testRuntimePreps,
		"Quotes":           testQuotes,
	}
	for name, fn := range jobTests {
		tests[name] = fn
	}
	for name, fn := range jobEditTests {
		tests[name] = fn
	}
	for name, fn := range billingTests {
		tests[name] = fn
	}
	for name, fn := range contactTests {
		tests[name] = fn
	}
	for name, fn := range artifactTests {
		tests[name] = fn
	}
	for name, fn := range taskPageTests {
		tests[name] = fn
	}
	for name, fn := range leaseTests {
		tests[name] = fn
	}
	for name, fn := range sharedValueTests {
		tests[name] = fn
	}
	for name, fn := range imageTests {
		tests[name] = fn
	}
	for name, fn := range hostTests {
		tests[name] = fn
	}
	for name, fn := range paymentTests {
		tests[name] = fn
	}
	for name, fn := range quotaTests {
		tests[name] = fn
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, newStore(t))
		})
	}
}

// RawExecer is implemented by engines so the suite can try writes that no
// store method offers, such as rewriting the ledger.
type RawExecer interface {
	ExecForTest(ctx context.Context, query string, args ...any) error
}

func rawExec(t *testing.T, s store.Store, query string, args ...any) error {
	t.Helper()
	r, ok := s.(RawExecer)
	if !ok {
		t.Fatalf("%T does not implement storetest.RawExecer", s)
	}
	return r.ExecForTest(ctx(t), query, args...)
}

func ctx(t *testing.T) context.Context { return t.Context() }

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func testAPIKeys(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	k, err := s.APIKeyCreate(ctx(t), &store.APIKeyCreateParams{
		ID: id.New(id.APIKey), AccountID: a.ID, Role: store.RoleViewer, SecretHash: "h1", Hint: "flk_AB", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if k.Role != store.RoleViewer || k.RevokedAt != nil {
		t.Errorf("key = %+v", k)
	}
	p, err := s.PrincipalGetByKeyHash(ctx(t), "h1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Account.Name != "alice" || p.Key.ID != k.ID || p.Key.Role != store.RoleViewer {
		t.Errorf("principal = %+v", p)
	}
	_, err = s.PrincipalGetByKeyHash(ctx(t), "nope")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.APIKeyCreate(ctx(t), &store.APIKeyCreateParams{
		ID: id.New(id.APIKey), AccountID: a.ID, Role: store.RoleMember, SecretHash: "h1", Hint: "x", Now: t0})
	wantErr(t, err, store.ErrConflict)
}

func testLedgerAndBalance(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	for _, amt := range []int64{5_000_000, 1_234_567, -234_567} {
		if _, err := s.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{
			ID: id.New(id.Ledger), AccountID: a.ID, EntryType: "beta_credit_grant", AmountMicros: amt, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	bal, err := s.BalanceGet(ctx(t), a.ID, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := store.Balance{LedgerMicros: 6_000_000}
	if *bal != want || bal.AvailableMicros() != 6_000_000 {
		t.Errorf("balance = %+v, want %+v", *bal, want)
	}
	other, err := s.BalanceGet(ctx(t), b.ID, t0)
	if err != nil || *other != (store.Balance{}) {
		t.Errorf("other account balance = %+v, %v; want zero", other, err)
	}
}

func testLedgerAppendOnly(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	e, err := s.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{
		ID: id.New(id.Ledger), AccountID: a.ID, EntryType: "beta_credit_grant", AmountMicros: 1, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := rawExec(t, s, "UPDATE ledger_entries SET amount_micros = 2 WHERE id = $1", e.ID); err == nil {
		t.Error("UPDATE of a ledger entry succeeded; the ledger must be append-only")
	}
	if err := rawExec(t, s, "DELETE FROM ledger_entries WHERE id = $1", e.ID); err == nil {
		t.Error("DELETE of a ledger entry succeeded; the ledger must be append-only")
	}
	bal, _ := s.BalanceGet(ctx(t), a.ID, t0)
	if bal.LedgerMicros != 1 {
		t.Errorf("ledger = %d, want 1", bal.LedgerMicros)
	}
}

func testProjectScoping(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	tf.Project(t, s, &tf.ProjectOpts{AccountID: a.ID, Name: "shared-name"})
	tf.Project(t, s, &tf.ProjectOpts{AccountID: b.ID, Name: "shared-name"}) // names are per account
	_, err := s.ProjectGetByName(ctx(t), b.ID, "shared-name")
	if err != nil {
		t.Fatal(err)
	}
	tf.Project(t, s, &tf.ProjectOpts{AccountID: a.ID, Name: "only-alice"})
	_, err = s.ProjectGetByName(ctx(t), b.ID, "only-alice")
	wantErr(t, err, store.ErrNotFound)
	list, _ := s.ProjectList(ctx(t), b.ID)
	if len(list) != 1 {
		t.Errorf("bob sees %d projects, want 1", len(list))
	}
}

func testKV(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	p := tf.Project(t, s, &tf.ProjectOpts{AccountID: a.ID, Name: "p"})
	put := func(key, value string, ttl *int64, now time.Time) *store.KVEntry {
		t.Helper()
		var exp *time.Time
		if ttl != nil {
			e := now.Add(time.Duration(*ttl) * time.Second)
			exp = &e
		}
		e, err := s.KVPut(ctx(t), &store.KVPutParams{ProjectID: p.ID, Key: key, Value: json.RawMessage(value), TTLS: ttl, ExpiresAt: exp, Now: now})
		if err != nil {
			t.Fatalf("KVPut(%s): %v", key, err)
		}
		return e
	}
	ten := int64(10)
	put("model/best", `{"acc":0.9}`, nil, t0)
	put("model/%_odd", `[1,2]`, nil, t0)
	put("model/tmp", `"x"`, &ten, t0)
	put("other", `null`, nil, t0)
	e := put("model/best", `{"acc":0.95}`, nil, t0.Add(time.Second))
	if string(e.Value) != `{"acc":0.95}` || !e.CreatedAt.Equal(t0) || !e.UpdatedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("overwritten entry = %+v", e)
	}
	list, err := s.KVList(ctx(t), &store.KVListParams{ProjectID: p.ID, Prefix: "model/", Limit: 10, Now: t0.Add(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if keys := kvKeys(list); fmt.Sprint(keys) != "[model/%_odd model/best model/tmp]" {
		t.Errorf("keys = %v", keys)
	}
	later := t0.Add(11 * time.Second)
	list, _ = s.KVList(ctx(t), &store.KVListParams{ProjectID: p.ID, Prefix: "model/", Limit: 10, Now: later})
	if keys := kvKeys(list); fmt.Sprint(keys) != "[model/%_odd model/best]" {
		t.Errorf("after expiry keys = %v", keys)
	}
	_, err = s.KVGet(ctx(t), p.ID, "model/tmp", later)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.KVDelete(ctx(t), p.ID, "model/tmp", later), store.ErrNotFound)
	list, _ = s.KVList(ctx(t), &store.KVListParams{ProjectID: p.ID, Prefix: "", Limit: 2, Now: t0})
	if len(list) != 2 {
		t.Errorf("limit 2 gave %d entries", len(list))
	}
	if err := s.KVDelete(ctx(t), p.ID, "other", t0); err != nil {
		t.Fatal(err)
	}
	_, err = s.KVGet(ctx(t), p.ID, "other", t0)
	wantErr(t, err, store.ErrNotFound)
	got, err := s.KVGet(ctx(t), p.ID, "model/%_odd", t0)
	if err != nil || string(got.Value) != `[1,2]` {
		t.Errorf("KVGet = %+v, %v", got, err)
	}
	// Deleting the project removes its state.
	if err := s.ProjectDelete(ctx(t), p.ID); err != nil {
		t.Fatal(err)
	}
	list, _ = s.KVList(ctx(t), &store.KVListParams{ProjectID: p.ID, Limit: 10, Now: t0})
	if len(list) != 0 {
		t.Errorf("state survived project deletion: %v", kvKeys(list))
	}
}

func kvKeys(es []*store.KVEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key)
	}
	return out
}

func testTxRollback(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	boom := errors.New("boom")
	err := s.InTx(ctx(t), func(q store.Querier) error {
		tf.Project(t, q, &tf.ProjectOpts{AccountID: a.ID, Name: "in-tx"})
		if _, err := q.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: a.ID,
			EntryType: "beta_credit_grant", AmountMicros: 7, Now: t0}); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, err, boom)
	_, err = s.ProjectGetByName(ctx(t), a.ID, "in-tx")
	wantErr(t, err, store.ErrNotFound)
	bal, _ := s.BalanceGet(ctx(t), a.ID, t0)
	if bal.LedgerMicros != 0 {
		t.Errorf("rolled-back credit is visible: %d", bal.LedgerMicros)
	}
	if err := s.InTx(ctx(t), func(q store.Querier) error {
		tf.Project(t, q, &tf.ProjectOpts{AccountID: a.ID, Name: "committed"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ProjectGetByName(ctx(t), a.ID, "committed"); err != nil {
		t.Errorf("committed project missing: %v", err)
	}
}

// testConcurrentWrites checks that concurrent transactions neither fail on
// lock contention nor lose writes.
func testConcurrentWrites(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.InTx(ctx(t), func(q store.Querier) error {
				if _, err := q.BalanceGet(ctx(t), a.ID, t0); err != nil {
					return err
				}
				_, err := q.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: a.ID,
					EntryType: "beta_credit_grant", AmountMicros: int64(i + 1), Now: t0})
				return err
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent tx: %v", err)
		}
	}
	bal, _ := s.BalanceGet(ctx(t), a.ID, t0)
	if want := int64(n * (n + 1) / 2); bal.LedgerMicros != want {
		t.Errorf("ledger = %d, want %d", bal.LedgerMicros, want)
	}
}
