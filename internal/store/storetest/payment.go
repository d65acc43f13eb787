package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

var paymentTests = map[string]func(*testing.T, store.Store){
	"WalletChallengesAndSessions": testWalletChallengesAndSessions,
	"Settlements":                 testSettlements,
	"SessionRevoke":               testSessionRevoke,
	"ExpiredPurge":                testExpiredPurge,
	"SettlementSent":              testSettlementSent,
}

func testWalletChallengesAndSessions(t *testing.T, s store.Store) {
	addr := "0x" + strings.Repeat("ab", 20)
	c := &store.WalletChallenge{ID: id.New(id.Challenge), Chain: "base", Address: addr, Nonce: "n", Message: "m",
		Status: store.ChallengeOpen, ExpiresAt: t0.Add(5 * time.Minute), CreatedAt: t0}
	if err := s.WalletChallengeCreate(ctx(t), c); err != nil {
		t.Fatal(err)
	}
	got, err := s.WalletChallengeGet(ctx(t), c.ID)
	if err != nil || got.Status != store.ChallengeOpen || got.Address != addr || !got.ExpiresAt.Equal(c.ExpiresAt) || got.UsedAt != nil {
		t.Fatalf("get challenge: got %+v, %v", got, err)
	}
	if err := s.WalletChallengeUse(ctx(t), &store.WalletChallengeUseParams{ID: c.ID, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.WalletChallengeUse(ctx(t), &store.WalletChallengeUseParams{ID: c.ID, Now: t0}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second use: got %v, want ErrConflict", err)
	}
	if _, err := s.WalletChallengeGet(ctx(t), "wch_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown challenge: got %v, want ErrNotFound", err)
	}

	a := tf.Account(t, s, &tf.AccountOpts{Name: "wallet-owner"})
	w := &store.Wallet{Chain: "base", Address: addr, AccountID: a.ID, CreatedAt: t0}
	if err := s.WalletCreate(ctx(t), w); err != nil {
		t.Fatal(err)
	}
	if err := s.WalletCreate(ctx(t), w); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second wallet row: got %v, want ErrConflict", err)
	}
	if got, err := s.WalletGet(ctx(t), "base", addr); err != nil || got.AccountID != a.ID {
		t.Errorf("wallet: got %+v, %v", got, err)
	}
	if _, err := s.WalletGet(ctx(t), "ethereum", addr); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another chain: got %v, want ErrNotFound", err)
	}
	// The address is stored in lower case only.
	if err := s.WalletCreate(ctx(t), &store.Wallet{Chain: "evm", Address: strings.ToUpper(addr), AccountID: a.ID, CreatedAt: t0}); err == nil {
		t.Error("an upper-case address was stored")
	}

	ses := &store.WalletSession{ID: id.New("ses_"), AccountID: a.ID, Chain: "base", Address: addr, SecretHash: id.Hash("fls_x"),
		ExpiresAt: t0.Add(24 * time.Hour), CreatedAt: t0}
	if err := s.WalletSessionCreate(ctx(t), ses); err != nil {
		t.Fatal(err)
	}
	p, err := s.PrincipalGetBySessionHash(ctx(t), id.Hash("fls_x"), t0.Add(time.Hour))
	if err != nil || p.Account.ID != a.ID || p.Key.Role != store.RoleMember {
		t.Errorf("session principal: got %+v, %v", p, err)
	}
	if _, err := s.PrincipalGetBySessionHash(ctx(t), id.Hash("fls_x"), t0.Add(24*time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired session: got %v, want ErrNotFound", err)
	}
}

func testSettlements(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "payer"})
	newQuote := func() *store.Quote {
		q, err := s.QuoteCreate(ctx(t), &store.QuoteCreateParams{ID: id.New(id.Quote), AccountID: a.ID, QuoteType: "x402_topup",
			AmountMicros: 1_000_000, ExpiresAt: t0.Add(time.Hour), Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	q := newQuote()
	if got, err := s.QuoteGetByID(ctx(t), q.ID); err != nil || got.AccountID != a.ID {
		t.Fatalf("quote by id: got %+v, %v", got, err)
	}
	st := func(quoteID, nonce string) *store.Settlement {
		return &store.Settlement{ID: id.New("stl_"), QuoteID: quoteID, AccountID: a.ID, Protocol: "x402", Payer: "0xp",
			Nonce: nonce, CredentialKey: "k" + nonce, Request: []byte(`{"x402Version":2}`), CreatedAt: t0}
	}
	first := st(q.ID, "0x1")
	if err := s.SettlementCreate(ctx(t), first); err != nil {
		t.Fatal(err)
	}
	// One live settlement per quote, and per authorization.
	if err := s.SettlementCreate(ctx(t), st(q.ID, "0x2")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second live settlement of a quote: got %v, want ErrConflict", err)
	}
	q2 := newQuote()
	if err := s.SettlementCreate(ctx(t), st(q2.ID, "0x1")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a used authorization on another quote: got %v, want ErrConflict", err)
	}
	pending, err := s.SettlementListPending(ctx(t), 10)
	if err != nil || len(pending) != 1 || pending[0].ID != first.ID {
		t.Fatalf("pending: got %v, %v", pending, err)
	}
	// Failed frees the quote for another credential.
	if _, err := s.SettlementFinish(ctx(t), &store.SettlementFinishParams{ID: first.ID, Status: store.SettlementFailed, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettlementFinish(ctx(t), &store.SettlementFinishParams{ID: first.ID, Status: store.SettlementFailed, Now: t0}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("failing twice: got %v, want ErrConflict", err)
	}
	if _, err := s.SettlementGetLive(ctx(t), q.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("live after failure: got %v, want ErrNotFound", err)
	}
	second := st(q.ID, "0x2")
	if err := s.SettlementCreate(ctx(t), second); err != nil {
		t.Fatal(err)
	}
	done, err := s.SettlementFinish(ctx(t), &store.SettlementFinishParams{ID: second.ID, Status: store.SettlementSettled,
		Response: []byte(`{"success":true}`), TransactionHash: "0xtx", LedgerEntryID: "led_1", Now: t0.Add(time.Second)})
	if err != nil || done.Status != store.SettlementSettled || done.TransactionHash != "0xtx" || string(done.Response) != `{"success":true}` {
		t.Fatalf("settle: got %+v, %v", done, err)
	}
	if _, err := s.SettlementFinish(ctx(t), &store.SettlementFinishParams{ID: second.ID, Status: store.SettlementSettled, Now: t0}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("settling twice: got %v, want ErrConflict", err)
	}
	if live, err := s.SettlementGetLive(ctx(t), q.ID); err != nil || live.ID != second.ID {
		t.Errorf("live: got %+v, %v", live, err)
	}
	paid, err := s.QuotePay(ctx(t), &store.QuotePayParams{ID: q.ID, Now: t0})
	if err != nil || paid.Status != "paid" || paid.PaidAt == nil {
		t.Fatalf("pay quote: got %+v, %v", paid, err)
	}
	if _, err := s.QuotePay(ctx(t), &store.QuotePayParams{ID: q.ID, Now: t0}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("paying twice: got %v, want ErrConflict", err)
	}
}

func testSessionRevoke(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "logout"})
	addr := "0x" + strings.Repeat("cd", 20)
	for _, secret := range []string{"fls_keep", "fls_gone"} {
		if err := s.WalletSessionCreate(ctx(t), &store.WalletSession{ID: id.New("ses_"), AccountID: a.ID, Chain: "base", Address: addr,
			SecretHash: id.Hash(secret), ExpiresAt: t0.Add(24 * time.Hour), CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WalletSessionRevoke(ctx(t), id.Hash("fls_gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PrincipalGetBySessionHash(ctx(t), id.Hash("fls_gone"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoked session: got %v, want ErrNotFound", err)
	}
	if _, err := s.PrincipalGetBySessionHash(ctx(t), id.Hash("fls_keep"), t0); err != nil {
		t.Errorf("the account's other session: got %v, want it to still work", err)
	}
	if err := s.WalletSessionRevoke(ctx(t), id.Hash("fls_gone")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking twice: got %v, want ErrNotFound", err)
	}
}

func testExpiredPurge(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "purged"})
	addr := "0x" + strings.Repeat("ef", 20)
	// Challenges: two expired (one used), one live.
	var challenges []string
	for i, exp := range []time.Duration{-time.Minute, -time.Second, time.Minute} {
		c := &store.WalletChallenge{ID: id.New(id.Challenge), Chain: "base", Address: addr, Nonce: "n", Message: "m",
			Status: store.ChallengeOpen, ExpiresAt: t0.Add(exp), CreatedAt: t0.Add(exp - 5*time.Minute)}
		if err := s.WalletChallengeCreate(ctx(t), c); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := s.WalletChallengeUse(ctx(t), &store.WalletChallengeUseParams{ID: c.ID, Now: t0.Add(-2 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		challenges = append(challenges, c.ID)
	}
	// A batch of one takes the oldest; the next batch the other expired.
	if n, err := s.WalletChallengePurgeExpired(ctx(t), t0, 1); err != nil || n != 1 {
		t.Fatalf("first batch: got %d, %v; want 1", n, err)
	}
	if _, err := s.WalletChallengeGet(ctx(t), challenges[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("oldest expired challenge after the first batch: got %v, want ErrNotFound", err)
	}
	if n, err := s.WalletChallengePurgeExpired(ctx(t), t0, 10); err != nil || n != 1 {
		t.Errorf("second batch: got %d, %v; want 1", n, err)
	}
	if _, err := s.WalletChallengeGet(ctx(t), challenges[2]); err != nil {
		t.Errorf("live challenge: got %v, want it kept", err)
	}

	// Sessions: one expired, one live.
	for secret, exp := range map[string]time.Duration{"fls_old": -time.Hour, "fls_new": time.Hour} {
		if err := s.WalletSessionCreate(ctx(t), &store.WalletSession{ID: id.New("ses_"), AccountID: a.ID, Chain: "base", Address: addr,
			SecretHash: id.Hash(secret), ExpiresAt: t0.Add(exp), CreatedAt: t0.Add(exp - 24*time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.WalletSessionPurgeExpired(ctx(t), t0, 10); err != nil || n != 1 {
		t.Errorf("sessions: got %d, %v; want 1 purged", n, err)
	}
	if _, err := s.PrincipalGetBySessionHash(ctx(t), id.Hash("fls_new"), t0); err != nil {
		t.Errorf("live session: got %v, want it kept", err)
	}

	// Quotes: expired unpaid ones go, unless a settlement names them; paid
	// ones and live ones stay.
	quote := func(exp time.Duration) *store.Quote {
		q, err := s.QuoteCreate(ctx(t), &store.QuoteCreateParams{ID: id.New(id.Quote), AccountID: a.ID, QuoteType: "x402_topup",
			AmountMicros: 1_000_000, ExpiresAt: t0.Add(exp), Now: t0.Add(exp - time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	stale, live, paid, tried := quote(-time.Hour), quote(time.Hour), quote(-time.Hour), quote(-time.Hour)
	if _, err := s.QuotePay(ctx(t), &store.QuotePayParams{ID: paid.ID, Now: t0.Add(-90 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	stl := &store.Settlement{ID: id.New("stl_"), QuoteID: tried.ID, AccountID: a.ID, Protocol: "x402", Payer: "0xp",
		Nonce: "0xpurge", CredentialKey: "kpurge", Request: []byte(`{}`), CreatedAt: t0.Add(-2 * time.Hour)}
	if err := s.SettlementCreate(ctx(t), stl); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettlementFinish(ctx(t), &store.SettlementFinishParams{ID: stl.ID, Status: store.SettlementFailed, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.QuotePurgeExpired(ctx(t), t0, 10); err != nil || n != 1 {
		t.Errorf("quotes: got %d, %v; want 1 purged", n, err)
	}
	if _, err := s.QuoteGetByID(ctx(t), stale.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired unpaid quote: got %v, want ErrNotFound", err)
	}
	for name, q := range map[string]*store.Quote{"live": live, "paid": paid, "settlement-named": tried} {
		if _, err := s.QuoteGetByID(ctx(t), q.ID); err != nil {
			t.Errorf("%s quote: got %v, want it kept", name, err)
		}
	}
}

func testSettlementSent(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "sent"})
	q, err := s.QuoteCreate(ctx(t), &store.QuoteCreateParams{ID: id.New(id.Quote), AccountID: a.ID, QuoteType: "x402_topup",
		AmountMicros: 1_000_000, ExpiresAt: t0.Add(time.Hour), Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	st := &store.Settlement{ID: id.New("stl_"), QuoteID: q.ID, AccountID: a.ID, Protocol: "mpp", Payer: "0xp",
		Nonce: "0xsent", CredentialKey: "ksent", Request: []byte(`{}`), CreatedAt: t0}
	if err := s.SettlementCreate(ctx(t), st); err != nil {
		t.Fatal(err)
	}
	if live, err := s.SettlementGetLive(ctx(t), q.ID); err != nil || live.SentAt != nil {
		t.Fatalf("fresh settlement: got %+v, %v; want never sent", live, err)
	}
	for _, at := range []time.Time{t0.Add(time.Second), t0.Add(time.Minute)} {
		if err := s.SettlementMarkSent(ctx(t), st.ID, at); err != nil {
			t.Fatal(err)
		}
	}
	pending, err := s.SettlementListPending(ctx(t), 10)
	if err != nil || len(pending) != 1 || pending[0].SentAt == nil || !pending[0].SentAt.Equal(t0.Add(time.Second)) {
		t.Errorf("after two marks: got %+v, %v; want sent at the first", pending, err)
	}
}
