package httpapi_test

import (
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/paywire"
)

// testWallet is a key that signs like a wallet: personal_sign and EIP-712.
type testWallet struct {
	key  *secp256k1.PrivateKey
	addr paywire.Address
}

func newTestWallet(t testing.TB, seed byte) *testWallet {
	t.Helper()
	var b [32]byte
	b[31], b[0] = seed, 0x42
	k := secp256k1.PrivKeyFromBytes(b[:])
	return &testWallet{key: k, addr: paywire.PubkeyAddress(k.PubKey())}
}

// sign returns r||s||v (v 27/28) over hash, as wallets send it.
func (w *testWallet) sign(hash []byte) string {
	c := ecdsa.SignCompact(w.key, hash, false) // [27+recid] r s
	sig := append(append([]byte{}, c[1:]...), c[0])
	return "0x" + hex.EncodeToString(sig)
}

func (w *testWallet) personalSign(msg string) string {
	return w.sign(paywire.PersonalMessageHash([]byte(msg)))
}

// signIn runs the wallet flow and returns the session token.
func signIn(t *testing.T, e *apitest.Env, w *testWallet) apiv1.WalletVerifyResponse {
	t.Helper()
	anon := e.Client("")
	var ch apiv1.WalletChallengeResponse
	anon.Post(t, "/api/v1/auth/wallet/challenge", map[string]any{"wallet_address": w.addr.Checksum()}).JSON(t, http.StatusCreated, &ch)
	var v apiv1.WalletVerifyResponse
	anon.Post(t, "/api/v1/auth/wallet/verify", map[string]any{"challenge_id": ch.Challenge.ID,
		"wallet_address": w.addr.Checksum(), "signature": w.personalSign(ch.Challenge.Message)}).JSON(t, http.StatusCreated, &v)
	return v
}

// forEngine runs fn against every store engine.
func forEngine(t *testing.T, fn func(t *testing.T, eng apitest.Engine)) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			fn(t, eng)
		})
	}
}

func TestWalletSignIn(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		e := apitest.Start(t, apitest.Options{Store: eng.Open(t), AuthRatePerAddress: -1, AuthRatePerIP: -1})
		w := newTestWallet(t, 1)
		anon := e.Client("")
		var ch apiv1.WalletChallengeResponse
		anon.Post(t, "/api/v1/auth/wallet/challenge", map[string]any{"wallet_address": w.addr.Checksum()}).JSON(t, http.StatusCreated, &ch)
		c := ch.Challenge
		if !strings.HasPrefix(c.ID, "wch_") || c.Chain != "base" || c.WalletAddress != w.addr.Hex() || c.Status != "open" ||
			!c.ExpiresAt.Equal(apitest.Epoch.Add(5*time.Minute).Truncate(time.Second)) {
			t.Errorf("challenge: got %+v, want wch_, base, the lower-case wallet, open, 5 minutes", c)
		}
		for _, part := range []string{w.addr.Checksum(), "Chain: base", "Nonce: " + c.Nonce, c.ID, e.URL,
			"Issued At: 2026-01-02T03:04:05Z", "Expiration Time: 2026-01-02T03:09:05Z"} {
			if !strings.Contains(c.Message, part) {
				t.Errorf("message %q does not name %q", c.Message, part)
			}
		}
		verify := func(body map[string]any) *apitest.Response {
			return anon.Post(t, "/api/v1/auth/wallet/verify", body)
		}
		good := map[string]any{"challenge_id": c.ID, "wallet_address": w.addr.Hex(), "signature": w.personalSign(c.Message)}

		// Wrong signer, then a mismatched wallet: 401, the challenge stays usable.
		other := newTestWallet(t, 2)
		if env := verify(map[string]any{"challenge_id": c.ID, "wallet_address": w.addr.Hex(),
			"signature": other.personalSign(c.Message)}).Fail(t, http.StatusUnauthorized); env.Code != "invalid_wallet_signature" {
			t.Errorf("wrong signer: got code %q, want invalid_wallet_signature", env.Code)
		}
		verify(map[string]any{"challenge_id": c.ID, "wallet_address": other.addr.Hex(),
			"signature": other.personalSign(c.Message)}).Fail(t, http.StatusUnauthorized)

		var v apiv1.WalletVerifyResponse
		verify(good).JSON(t, http.StatusCreated, &v)
		if !strings.HasPrefix(v.Token, "fls_") || v.Account.Role != "member" || v.Wallet.Address != w.addr.Hex() ||
			v.Wallet.Chain != "base" || !v.Session.ExpiresAt.Equal(apitest.Epoch.Add(24*time.Hour)) {
			t.Errorf("verify: got %+v, want an fls_ member session of 24 hours", v)
		}
		// Single use.
		if env := verify(good).Fail(t, http.StatusConflict); env.Code != "challenge_used" {
			t.Errorf("reuse: got %q, want challenge_used", env.Code)
		}
		// The session works wherever a key works, and starts at zero.
		sess := e.Client(v.Token)
		if bal := balanceOf(t, sess); bal.LedgerBalanceUSD != 0 || bal.AvailableUSD != 0 {
			t.Errorf("new wallet account balance: got %+v, want zero", bal)
		}
		sess.Post(t, "/api/v1/projects", map[string]any{"name": "mine"}).Want(t, http.StatusCreated)

		// The same wallet again reaches the same account.
		again := signIn(t, e, w)
		if again.Account.ID != v.Account.ID || again.Token == v.Token {
			t.Errorf("second sign-in: got account %s token reuse %v, want %s and a new token", again.Account.ID, again.Token == v.Token, v.Account.ID)
		}
		// Another chain is another account.
		var ch2 apiv1.WalletChallengeResponse
		anon.Post(t, "/api/v1/auth/wallet/challenge", map[string]any{"wallet_address": w.addr.Hex(), "chain": "ethereum"}).JSON(t, http.StatusCreated, &ch2)
		var v2 apiv1.WalletVerifyResponse
		verify(map[string]any{"challenge_id": ch2.Challenge.ID, "wallet_address": w.addr.Hex(),
			"signature": w.personalSign(ch2.Challenge.Message)}).JSON(t, http.StatusCreated, &v2)
		if v2.Account.ID == v.Account.ID {
			t.Error("ethereum and base sign-ins reached the same account")
		}

		// Expired: 410. Sessions expire after 24 hours: 401.
		var ch3 apiv1.WalletChallengeResponse
		anon.Post(t, "/api/v1/auth/wallet/challenge", map[string]any{"wallet_address": w.addr.Hex()}).JSON(t, http.StatusCreated, &ch3)
		e.Clock.Advance(5 * time.Minute)
		if env := verify(map[string]any{"challenge_id": ch3.Challenge.ID, "wallet_address": w.addr.Hex(),
			"signature": w.personalSign(ch3.Challenge.Message)}).Fail(t, http.StatusGone); env.Code != "challenge_expired" {
			t.Errorf("expired: got %q, want challenge_expired", env.Code)
		}
		e.Clock.Advance(24 * time.Hour)
		sess.Get(t, "/api/v1/account/balance").Fail(t, http.StatusUnauthorized)
	})
}

func TestWalletBadInput(t *testing.T) {
	forEngine(t, func(t *testing.T, eng apitest.Engine) {
		e := apitest.Start(t, apitest.Options{Store: eng.Open(t), AuthRatePerAddress: -1, AuthRatePerIP: -1})
		anon := e.Client("")
		w := newTestWallet(t, 3)
		for name, body := range map[string]any{
			"short address": map[string]any{"wallet_address": "0x1234"},
			"no 0x":         map[string]any{"wallet_address": strings.Repeat("a", 40)},
			"bad chain":     map[string]any{"wallet_address": w.addr.Hex(), "chain": "solana"},
			"missing":       map[string]any{},
			"wrong type":    map[string]any{"wallet_address": 5},
		} {
			t.Run(name, func(t *testing.T) {
				anon.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/auth/wallet/challenge", Body: body, Check: apitest.Unchecked}).
					Fail(t, http.StatusUnprocessableEntity)
			})
		}
		var ch apiv1.WalletChallengeResponse
		anon.Post(t, "/api/v1/auth/wallet/challenge", map[string]any{"wallet_address": w.addr.Hex()}).JSON(t, http.StatusCreated, &ch)
		for name, body := range map[string]any{
			"missing signature": map[string]any{"challenge_id": ch.Challenge.ID, "wallet_address": w.addr.Hex()},
			"short signature":   map[string]any{"challenge_id": ch.Challenge.ID, "wallet_address": w.addr.Hex(), "signature": "0x1234"},
			"bad address":       map[string]any{"challenge_id": ch.Challenge.ID, "wallet_address": "0xzz", "signature": w.personalSign("x")},
		} {
			t.Run(name, func(t *testing.T) {
				anon.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/auth/wallet/verify", Body: body, Check: apitest.Unchecked}).
					Fail(t, http.StatusUnprocessableEntity)
			})
		}
		// A high-s signature (the malleable twin of a valid one) is refused.
		sig := w.personalSign(ch.Challenge.Message)
		var s secp256k1.ModNScalar
		raw, _ := hex.DecodeString(sig[2:])
		s.SetByteSlice(raw[32:64])
		s.Negate()
		sb := s.Bytes()
		copy(raw[32:64], sb[:])
		raw[64] ^= 1 // 27 <-> 28
		anon.Post(t, "/api/v1/auth/wallet/verify", map[string]any{"challenge_id": ch.Challenge.ID, "wallet_address": w.addr.Hex(),
			"signature": "0x" + hex.EncodeToString(raw)}).Fail(t, http.StatusUnauthorized)
		// The refusals used nothing up.
		anon.Post(t, "/api/v1/auth/wallet/verify", map[string]any{"challenge_id": ch.Challenge.ID, "wallet_address": w.addr.Hex(),
			"signature": sig}).Want(t, http.StatusCreated)
	})
}

func TestWalletPolicy(t *testing.T) {
	t.Parallel()
	allowed, denied, stranger := newTestWallet(t, 4), newTestWallet(t, 5), newTestWallet(t, 6)
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(`{"deny": ["not-an-address"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.LoadWalletPolicy(path); err == nil {
		t.Fatal("a policy with a malformed address loaded")
	}
	// The deny entry is spelled in upper case: addresses compare as bytes.
	if err := os.WriteFile(path, []byte(`{"allow": ["`+allowed.addr.Checksum()+`", "`+denied.addr.Hex()+`"], "deny": ["0x`+
		strings.ToUpper(denied.addr.Hex()[2:])+`"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := auth.LoadWalletPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	e := apitest.Start(t, apitest.Options{WalletPolicy: pol, AuthRatePerAddress: -1, AuthRatePerIP: -1})
	signIn(t, e, allowed)
	for _, w := range []*testWallet{denied, stranger} {
		env := e.Client("").Post(t, "/api/v1/auth/wallet/challenge", map[string]any{"wallet_address": w.addr.Hex()}).Fail(t, http.StatusForbidden)
		if env.Code != "wallet_not_permitted" {
			t.Errorf("%s: got %q, want wallet_not_permitted", w.addr.Hex(), env.Code)
		}
	}
}

func TestWalletRateLimits(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{AuthRatePerAddress: 2, AuthRatePerIP: 3})
	anon := e.Client("")
	a, b := newTestWallet(t, 7), newTestWallet(t, 8)
	challenge := func(w *testWallet) *apitest.Response {
		return anon.Post(t, "/api/v1/auth/wallet/challenge", map[string]any{"wallet_address": w.addr.Hex()})
	}
	challenge(a).Want(t, http.StatusCreated)
	challenge(a).Want(t, http.StatusCreated)
	r := challenge(a)
	env := r.Fail(t, http.StatusTooManyRequests)
	if env.Code != "rate_limited" || env.Details["limited_by"] != "wallet_address" || r.Header.Get("Retry-After") == "" {
		t.Errorf("per address: got %q %v Retry-After %q, want rate_limited by wallet_address with Retry-After", env.Code, env.Details, r.Header.Get("Retry-After"))
	}
	// The IP's third request was the refused one; a fourth from another
	// wallet hits the IP limit.
	r = challenge(b)
	if env := r.Fail(t, http.StatusTooManyRequests); env.Details["limited_by"] != "client_ip" || r.Header.Get("Retry-After") == "" {
		t.Errorf("per IP: got %v, want limited by client_ip", env.Details)
	}
	// A minute later both refill.
	e.Clock.Advance(time.Minute)
	challenge(b).Want(t, http.StatusCreated)
	anon.Post(t, "/api/v1/auth/wallet/verify", map[string]any{"challenge_id": "wch_x", "wallet_address": a.addr.Hex(),
		"signature": a.personalSign("x")}).Fail(t, http.StatusUnauthorized)
}
