package payment

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/paywire"
)

// Protocols a quote is paid over, and their ledger entry types.
const (
	ProtocolX402 = "x402"
	ProtocolMPP  = "mpp"

	EntryX402Topup = "x402_topup"
	EntryMPPTopup  = "mpp_topup"
)

// MaxTimeoutSeconds is the life of an x402 authorization the 402 asks for.
// It is a constant, so that the requirements of one quote are the same in
// every 402 and every check.
const MaxTimeoutSeconds = 300

// validBeforeMargin is how far ahead an authorization must still be valid
// when it is checked (the reference facilitator asks for 6 s).
const validBeforeMargin = 6 * time.Second

// Service settles quotes over x402 and MPP.
type Service struct {
	cfg   Config
	store store.Store
	clock clock.Clock
	log   *slog.Logger
	fac   Facilitator
	chain Chain // nil: no node to ask (--x402-rpc-url unset)

	mu    sync.Mutex
	locks map[string]*quoteLock
}

// NewService returns the payment service, settling through fac (the
// composition root passes facilitatorhttp's client for
// cfg.FacilitatorURL).
func NewService(cfg Config, s store.Store, c clock.Clock, log *slog.Logger, fac Facilitator, chain Chain) *Service {
	cfg.Fill()
	return &Service{cfg: cfg, store: s, clock: c, log: log, fac: fac, chain: chain, locks: map[string]*quoteLock{}}
}

// Enabled reports whether payments are configured.
func (s *Service) Enabled() bool { return s != nil && s.cfg.Enabled() }

// Config is the service's configuration (defaults filled).
func (s *Service) Config() Config { return s.cfg }

// NotConfigured is the 503 of every payment endpoint without payments.
func NotConfigured() error {
	return fault.New(fault.KindUnavailable, "payments_not_configured",
		"Ask the operator for credit; this service accepts no x402 or MPP payments (no facilitator and payee configured).",
		"x402 not configured")
}

// PayURL is the pay endpoint of a quote.
func (s *Service) PayURL(quoteID string) string {
	return strings.TrimRight(s.cfg.PublicURL, "/") + "/api/v1/account/quotes/" + quoteID + "/pay/x402"
}

// Requirements is what paying quote q takes over x402.
func (s *Service) Requirements(q *store.Quote) paywire.Requirements {
	return paywire.Requirements{
		Scheme: "exact", Network: s.cfg.Network, Amount: strconv.FormatInt(q.AmountMicros, 10),
		Asset: s.cfg.Asset, PayTo: s.cfg.PayTo, MaxTimeoutSeconds: MaxTimeoutSeconds,
		Extra: map[string]any{"name": s.cfg.AssetName, "version": s.cfg.AssetVersion, "assetTransferMethod": "eip3009"},
	}
}

// PaymentRequired is the x402 v2 PaymentRequired of q.
func (s *Service) PaymentRequired(q *store.Quote, reason string) *paywire.PaymentRequired {
	return &paywire.PaymentRequired{X402Version: 2, Error: reason,
		Resource: paywire.Resource{URL: s.PayURL(q.ID), Description: q.Description, MimeType: "application/json"},
		Accepts:  []paywire.Requirements{s.Requirements(q)}}
}

// mppRequest is the decoded MPP request of q (evm method, charge intent).
func (s *Service) mppRequest(q *store.Quote) map[string]any {
	payTo, _ := paywire.ParseAddress(s.cfg.PayTo)
	asset, _ := paywire.ParseAddress(s.cfg.Asset)
	return map[string]any{
		"amount":    strconv.FormatInt(q.AmountMicros, 10),
		"currency":  asset.Checksum(),
		"recipient": payTo.Checksum(),
		"methodDetails": map[string]any{
			"chainId":         s.cfg.ChainID(),
			"credentialTypes": []any{"authorization"},
			"decimals":        6,
		},
	}
}

// MPPChallenge is the MPP challenge of q; its id is the quote id.
func (s *Service) MPPChallenge(q *store.Quote) paywire.MPPChallenge {
	return paywire.MPPChallenge{
		ID: q.ID, Realm: s.cfg.Realm, Method: "evm", Intent: "charge",
		Request: base64URL(paywire.JCS(s.mppRequest(q))),
		Expires: q.ExpiresAt.UTC().Truncate(time.Second).Format(time.RFC3339), Description: q.Description,
	}
}

// Challenges are the two ways to pay a quote.
type Challenges struct {
	PaymentRequired *paywire.PaymentRequired
	MPP             paywire.MPPChallenge
	// MPPView is the challenge for a JSON body: its parameters and the
	// decoded request.
	MPPView map[string]any
}

// ChallengesFor builds both challenges of q.
func (s *Service) ChallengesFor(q *store.Quote, reason string) *Challenges {
	c := s.MPPChallenge(q)
	return &Challenges{
		PaymentRequired: s.PaymentRequired(q, reason),
		MPP:             c,
		MPPView: map[string]any{
			"protocol": "payment", "id": c.ID, "realm": c.Realm, "method": c.Method, "intent": c.Intent,
			"expires": c.Expires, "request": s.mppRequest(q), "encoded_request": c.Request,
			"www_authenticate": c.WWWAuthenticate(),
		},
	}
}

// Attrs is what a payable quote records in attrs: its x402 requirements.
func (s *Service) Attrs(q *store.Quote) []byte {
	b, _ := json.Marshal(map[string]any{"x402_payment_required": s.PaymentRequired(q, "")})
	return b
}

// PayParams is one request to pay a quote.
type PayParams struct {
	// QuoteID is the quote of the URL; "" when an MPP credential names it
	// (POST /topup).
	QuoteID string
	// AccountID is the bearer's account, "" without a bearer token.
	AccountID string
	// X402 is the PAYMENT-SIGNATURE header; MPP the Payment credential.
	X402, MPP string
}

// Paid is a settled payment.
type Paid struct {
	Quote      *store.Quote
	Settlement *store.Settlement
	Replay     bool
	// Header and HeaderValue are the receipt: PAYMENT-RESPONSE for x402,
	// Payment-Receipt for MPP.
	Header, HeaderValue string
}

// Declined is a payment the facilitator refused: a 402 with fresh
// challenges and the facilitator's answer.
type Declined struct {
	Quote    *store.Quote
	Response *paywire.SettleResponse
	Reason   string
}

func (d *Declined) Error() string { return "payment declined: " + d.Reason }

// NoCredential is a pay request without a credential: a 402 with fresh
// challenges.
type NoCredential struct{ Quote *store.Quote }

func (e *NoCredential) Error() string { return "payment credential required" }

func invalid(code, format string, args ...any) error {
	return fault.Invalid(code, "Pay with a fresh credential for this quote's requirements (the 402 of the pay endpoint lists them); nothing was charged.",
		format, args...)
}

// credential is a decoded payment, either protocol.
type credential struct {
	protocol  string
	quoteID   string // the MPP challenge id; "" for x402
	auth      paywire.Authorization
	raw       paywire.EVMAuthorization
	signature string
	payload   json.RawMessage // the x402 PaymentPayload sent to the facilitator
	x402      *paywire.PaymentPayload
	mpp       *paywire.MPPCredential
}

// key identifies the exact credential: the same authorization and
// signature always give the same key.
func (c *credential) key() string {
	h := sha256.Sum256([]byte(c.protocol + "|" + c.auth.From.Hex() + "|" + hex.EncodeToString(c.auth.Nonce[:]) + "|" +
		strings.ToLower(c.signature)))
	return hex.EncodeToString(h[:])
}

func decodeCredential(p PayParams) (*credential, error) {
	switch {
	case p.MPP != "":
		m, err := paywire.DecodeMPPCredential(p.MPP)
		if err != nil {
			return nil, invalid("malformed_mpp_credential", "malformed MPP credential: %v", err)
		}
		if m.Payload.Type != "authorization" {
			return nil, invalid("unsupported_credential_type", "MPP credential type %q is not supported; use authorization (EIP-3009)", m.Payload.Type)
		}
		c := &credential{protocol: ProtocolMPP, quoteID: m.Challenge.ID, signature: m.Payload.Signature, mpp: m,
			raw: paywire.EVMAuthorization{From: m.Payload.From, To: m.Payload.To, Value: m.Payload.Value,
				ValidAfter: m.Payload.ValidAfter, ValidBefore: m.Payload.ValidBefore, Nonce: m.Payload.Nonce}}
		if c.auth, err = c.raw.Decode(); err != nil {
			return nil, invalid("invalid_payment_payload", "MPP authorization: %v", err)
		}
		return c, nil
	case p.X402 != "":
		x, err := paywire.DecodePaymentSignature(p.X402)
		if err != nil {
			return nil, invalid("invalid_payment_payload", "malformed PAYMENT-SIGNATURE: %v", err)
		}
		c := &credential{protocol: ProtocolX402, signature: x.Payload.Signature, raw: x.Payload.Authorization, x402: x}
		if c.auth, err = c.raw.Decode(); err != nil {
			return nil, invalid("invalid_payment_payload", "x402 authorization: %v", err)
		}
		return c, nil
	}
	return nil, nil
}

// QuoteForPayment finds the quote a pay request names, as the caller may
// see it: with a bearer token only that account's quotes.
func (s *Service) quote(ctx context.Context, quoteID, accountID string) (*store.Quote, error) {
	q, err := s.store.QuoteGetByID(ctx, quoteID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && accountID != "" && q.AccountID != accountID) {
		return nil, fault.NotFound("quote", quoteID)
	}
	if err != nil {
		return nil, fmt.Errorf("get quote: %w", err)
	}
	return q, nil
}

// Pay settles a quote with a credential: checked locally, then by the
// facilitator's /verify and /settle, then credited once. Errors are faults
// (422, 404, 409, 410, 503), *NoCredential or *Declined.
func (s *Service) Pay(ctx context.Context, p PayParams) (*Paid, error) {
	if !s.Enabled() {
		return nil, NotConfigured()
	}
	cred, err := decodeCredential(p)
	if err != nil {
		return nil, err
	}
	quoteID := p.QuoteID
	if cred != nil && cred.protocol == ProtocolMPP {
		if quoteID == "" {
			quoteID = cred.quoteID
		} else if cred.quoteID != quoteID {
			return nil, invalid("challenge_mismatch", "the MPP credential answers challenge %q, not quote %s", cred.quoteID, quoteID)
		}
	}
	if cred != nil && cred.protocol == ProtocolX402 && p.AccountID == "" {
		return nil, fault.Unauthenticated("a PAYMENT-SIGNATURE payment needs 'Authorization: Bearer <token>' of the quote's account")
	}
	// An MPP credential names its quote and needs no bearer; with one, the
	// quote must still be the bearer's.
	q, err := s.quote(ctx, quoteID, p.AccountID)
	if err != nil {
		return nil, err
	}
	if cred == nil {
		if err := s.payable(q); err != nil {
			return nil, err
		}
		return nil, &NoCredential{Quote: q}
	}
	// Requests for one quote take turns in this process, so that a twin
	// finds its sibling's settlement finished and answers a replay. Across
	// controllers the store's unique indexes and guarded updates decide.
	unlock := s.lockQuote(q.ID)
	defer unlock()
	key := cred.key()
	live, err := s.store.SettlementGetLive(ctx, q.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("get settlement: %w", err)
	}
	if live != nil && live.Status == store.SettlementSettled {
		if live.CredentialKey == key {
			return s.paid(live, q, true), nil
		}
		return nil, alreadyPaid(q.ID)
	}
	if err := s.payable(q); err != nil {
		return nil, err
	}
	if live != nil {
		if live.CredentialKey != key {
			return nil, fault.Conflict("settlement_in_progress", "Retry with the credential already being settled, or wait for it to finish.",
				"quote %s is being settled with another credential", q.ID)
		}
		// The same credential again after an outage: settle what was
		// recorded (the facilitator re-verifies).
		return s.settle(ctx, q, live)
	}
	if err := s.check(q, cred); err != nil {
		return nil, err
	}
	// Record the intent before the facilitator hears of the payment.
	req := s.facilitatorRequest(q, cred)
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	st := &store.Settlement{ID: id.New("stl_"), QuoteID: q.ID, AccountID: q.AccountID, Protocol: cred.protocol,
		Payer: cred.auth.From.Hex(), Nonce: "0x" + hex.EncodeToString(cred.auth.Nonce[:]), CredentialKey: key,
		Request: reqJSON, CreatedAt: s.clock.Now()}
	if err := s.store.SettlementCreate(ctx, st); err != nil {
		if !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("record settlement intent: %w", err)
		}
		if live, lerr := s.store.SettlementGetLive(ctx, q.ID); lerr == nil && live.CredentialKey == key {
			// Another controller recorded the same credential first.
			return s.settle(ctx, q, live)
		}
		return nil, invalid("nonce_already_used", "this authorization (payer and nonce) was already used for another payment")
	}
	v, err := s.fac.Verify(ctx, req)
	if err != nil || !v.IsValid {
		// Nothing was settled: give the quote back to other credentials.
		if _, ferr := s.store.SettlementFinish(ctx, &store.SettlementFinishParams{ID: st.ID, Status: store.SettlementFailed,
			Response: []byte("{}"), Now: s.clock.Now()}); ferr != nil {
			return nil, fmt.Errorf("record refused settlement: %w", ferr)
		}
		if err != nil {
			return nil, unavailable(err)
		}
		return nil, &Declined{Quote: q, Reason: reasonOf(v.InvalidReason, v.InvalidMessage),
			Response: &paywire.SettleResponse{Success: false, ErrorReason: v.InvalidReason, ErrorMessage: v.InvalidMessage,
				Payer: v.Payer, Network: s.cfg.Network}}
	}
	return s.settle(ctx, q, st)
}

// lockQuote serialises this process's requests for one quote.
func (s *Service) lockQuote(quoteID string) func() {
	s.mu.Lock()
	l := s.locks[quoteID]
	if l == nil {
		l = &quoteLock{}
		s.locks[quoteID] = l
	}
	l.users++
	s.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.users--; l.users == 0 {
			delete(s.locks, quoteID)
		}
		s.mu.Unlock()
	}
}

type quoteLock struct {
	mu    sync.Mutex
	users int
}

func reasonOf(code, msg string) string {
	if msg != "" {
		return code + ": " + msg
	}
	return code
}

func unavailable(err error) error {
	return &fault.Error{Kind: fault.KindUnavailable, Code: "facilitator_unavailable",
		Action:  "Retry with backoff using the same credential; the quote stays payable and is credited once.",
		Message: "the payment facilitator is unavailable", Cause: err}
}

func alreadyPaid(quoteID string) error {
	return fault.Conflict("quote_already_paid", "Nothing to do: this quote is paid. Request a new quote to add more credit.",
		"quote %s is already paid with another credential", quoteID)
}

// payable refuses a quote that can no longer be paid.
func (s *Service) payable(q *store.Quote) error {
	switch {
	case q.Status == "paid" || q.Status == "consumed":
		return alreadyPaid(q.ID)
	case q.Status == "expired" || (q.Status == "open" && !q.ExpiresAt.After(s.clock.Now())):
		return fault.New(fault.KindGone, "quote_expired", "Request a new quote (POST /api/v1/account/quotes/topup, or resend the request that needed funds).",
			"quote %s expired at %s", q.ID, q.ExpiresAt.UTC().Format(time.RFC3339))
	case q.Status != "open":
		return fault.Conflict("quote_not_payable", "Request a new quote.", "quote %s is %s", q.ID, q.Status)
	}
	return nil
}

// check verifies a credential locally against the quote: everything the
// facilitator would refuse is refused here first, with a 422.
func (s *Service) check(q *store.Quote, c *credential) error {
	req := s.Requirements(q)
	payTo, _ := paywire.ParseAddress(s.cfg.PayTo)
	asset, _ := paywire.ParseAddress(s.cfg.Asset)
	amount := big.NewInt(q.AmountMicros)
	if c.protocol == ProtocolX402 {
		a := c.x402.Accepted
		if a.Scheme != "exact" {
			return invalid("scheme_mismatch", "scheme %q is not accepted; use exact", a.Scheme)
		}
		if a.Network != req.Network {
			return invalid("network_mismatch", "network %q is not %s", a.Network, req.Network)
		}
		if a.Amount != req.Amount {
			return invalid("amount_mismatch", "accepted amount %q is not the quote's %s", a.Amount, req.Amount)
		}
		if got, err := paywire.ParseAddress(a.Asset); err != nil || got != asset {
			return invalid("asset_mismatch", "asset %q is not %s", a.Asset, s.cfg.Asset)
		}
		if got, err := paywire.ParseAddress(a.PayTo); err != nil || got != payTo {
			return invalid("payee_mismatch", "payTo %q is not %s", a.PayTo, s.cfg.PayTo)
		}
	} else {
		m := c.mpp.Challenge
		if m.Realm != s.cfg.Realm || m.Method != "evm" || m.Intent != "charge" {
			return invalid("challenge_mismatch", "the credential's challenge (realm %q, method %q, intent %q) is not this service's", m.Realm, m.Method, m.Intent)
		}
		got, err := paywire.DecodeMPPRequest(m.Request)
		if err != nil {
			return invalid("challenge_mismatch", "the credential's challenge request: %v", err)
		}
		var want any
		_ = json.Unmarshal(paywire.JCS(s.mppRequest(q)), &want)
		if !reflect.DeepEqual(got, want) {
			return invalid("challenge_mismatch", "the credential's challenge request is not quote %s's", q.ID)
		}
		if c.auth.Nonce != paywire.ChallengeHash(q.ID, s.cfg.Realm) {
			return invalid("nonce_mismatch", "the authorization nonce is not keccak256(challenge id || realm)")
		}
		if src := c.mpp.Source; src != "" {
			want := fmt.Sprintf("did:pkh:eip155:%d:", s.cfg.ChainID())
			addr, err := paywire.ParseAddress(strings.TrimPrefix(src, want))
			if !strings.HasPrefix(src, want) || err != nil || addr != c.auth.From {
				return invalid("source_mismatch", "source %q is not the payer on chain %d", src, s.cfg.ChainID())
			}
		}
	}
	if c.auth.To != payTo {
		return invalid("payee_mismatch", "the authorization pays %s, not %s", c.auth.To.Checksum(), payTo.Checksum())
	}
	if c.auth.Value.Cmp(amount) != 0 {
		return invalid("amount_mismatch", "the authorization moves %s, not the quote's %s", c.auth.Value, amount)
	}
	now := s.clock.Now()
	if c.auth.ValidAfter.Cmp(big.NewInt(now.Unix())) > 0 {
		return invalid("authorization_not_yet_valid", "the authorization is valid only after %s", c.auth.ValidAfter)
	}
	if c.auth.ValidBefore.Cmp(big.NewInt(now.Add(validBeforeMargin).Unix())) < 0 {
		return invalid("authorization_expired", "the authorization expired (validBefore %s)", c.auth.ValidBefore)
	}
	d := paywire.Domain{Name: s.cfg.AssetName, Version: s.cfg.AssetVersion, ChainID: s.cfg.ChainID(), VerifyingContract: asset}
	if err := d.VerifyAuthorization(&c.auth, c.signature); err != nil {
		return invalid("invalid_signature", "the authorization's EIP-712 signature is invalid: %v", err)
	}
	return nil
}

// facilitatorRequest is what /verify and /settle are sent: the payer's
// payload (for MPP built as mppx does) with our own requirements.
func (s *Service) facilitatorRequest(q *store.Quote, c *credential) *FacilitatorRequest {
	req := s.Requirements(q)
	var payload any
	if c.protocol == ProtocolX402 {
		x := *c.x402
		payload = x
	} else {
		payload = paywire.PaymentPayload{X402Version: 2, Resource: &paywire.Resource{URL: s.PayURL(q.ID), Description: q.Description,
			MimeType: "application/json"}, Accepted: req, Payload: paywire.ExactPayload{Signature: c.signature, Authorization: c.raw}}
	}
	b, _ := json.Marshal(payload)
	return &FacilitatorRequest{X402Version: 2, PaymentPayload: b, PaymentRequirements: req}
}

// settle asks the facilitator to settle a recorded intent and, on
// success, credits the quote's account once.
func (s *Service) settle(ctx context.Context, q *store.Quote, st *store.Settlement) (*Paid, error) {
	var req FacilitatorRequest
	if err := json.Unmarshal(st.Request, &req); err != nil {
		return nil, fmt.Errorf("settlement %s request: %w", st.ID, err)
	}
	// Only a settlement this service sent before can have been spent by
	// that earlier try; a fresh one that the facilitator calls spent was
	// spent elsewhere, and asking the chain about it would let anyone make
	// the service search the chain's history for an authorization of
	// their choosing.
	sentBefore := st.SentAt != nil
	if err := s.store.SettlementMarkSent(ctx, st.ID, s.clock.Now()); err != nil {
		return nil, fmt.Errorf("record settlement %s sent: %w", st.ID, err)
	}
	res, raw, err := s.fac.Settle(ctx, &req)
	if err != nil {
		return nil, unavailable(err)
	}
	if !res.Success && nonceUsed(res) && sentBefore {
		// Spent already: by this settlement when an earlier try's answer
		// was lost (a crash, a timeout), which the chain can tell.
		if s.chain == nil {
			s.log.ErrorContext(ctx, "the facilitator says this payment's authorization is already used, and without --x402-rpc-url "+
				"the service cannot tell whether it paid this quote: declined; check the chain and credit by hand if it did",
				"quote_id", q.ID, "settlement_id", st.ID, "reason", res.ErrorReason)
		} else {
			done, err := s.usedOnChain(ctx, st.Request)
			if err != nil {
				return nil, unavailable(fmt.Errorf("read the chain: %w", err))
			}
			if done != nil {
				s.log.InfoContext(ctx, "payment found on the chain after its settle answer was lost", "quote_id", q.ID,
					"settlement_id", st.ID, "transaction", done.Transaction)
				b, err := json.Marshal(done)
				if err != nil {
					return nil, err
				}
				return s.credit(ctx, st, done, b)
			}
		}
	}
	if !res.Success {
		_, ferr := s.store.SettlementFinish(ctx, &store.SettlementFinishParams{ID: st.ID, Status: store.SettlementFailed,
			Response: raw, Now: s.clock.Now()})
		if errors.Is(ferr, store.ErrConflict) {
			// Another controller settled it meanwhile.
			if live, err := s.store.SettlementGetLive(ctx, q.ID); err == nil && live.Status == store.SettlementSettled &&
				live.CredentialKey == st.CredentialKey {
				return s.paid(live, q, true), nil
			}
		} else if ferr != nil {
			return nil, fmt.Errorf("record declined settlement: %w", ferr)
		}
		return nil, &Declined{Quote: q, Response: res, Reason: reasonOf(res.ErrorReason, res.ErrorMessage)}
	}
	return s.credit(ctx, st, res, raw)
}

// credit finishes a settlement, writes its ledger entry and marks the quote
// paid, in one transaction; a settlement already finished by a twin is a
// replay.
func (s *Service) credit(ctx context.Context, st *store.Settlement, res *paywire.SettleResponse, raw []byte) (*Paid, error) {
	now := s.clock.Now()
	entryType := EntryX402Topup
	if st.Protocol == ProtocolMPP {
		entryType = EntryMPPTopup
	}
	var out *Paid
	err := s.store.InTx(ctx, func(tx store.Querier) error {
		if err := tx.AccountLock(ctx, st.AccountID); err != nil {
			return err
		}
		q, err := tx.QuoteGetByID(ctx, st.QuoteID)
		if err != nil {
			return err
		}
		ledgerID := id.New(id.Ledger)
		fin, err := tx.SettlementFinish(ctx, &store.SettlementFinishParams{ID: st.ID, Status: store.SettlementSettled,
			Response: raw, TransactionHash: res.Transaction, LedgerEntryID: ledgerID, Now: now})
		if errors.Is(err, store.ErrConflict) {
			live, err := tx.SettlementGetLive(ctx, st.QuoteID)
			if err != nil {
				return fmt.Errorf("settlement %s finished elsewhere: %w", st.ID, err)
			}
			out = s.paid(live, q, true)
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.LedgerEntryCreate(ctx, &store.LedgerEntryCreateParams{ID: ledgerID, AccountID: st.AccountID,
			EntryType: entryType, AmountMicros: q.AmountMicros, Reference: q.ID,
			Description: fmt.Sprintf("%s payment, transaction %s", st.Protocol, res.Transaction), Now: now}); err != nil {
			return err
		}
		if q.Status == "open" {
			if q, err = tx.QuotePay(ctx, &store.QuotePayParams{ID: q.ID, Now: now}); err != nil {
				return err
			}
		}
		out = s.paid(fin, q, false)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("credit settlement %s: %w", st.ID, err)
	}
	if !out.Replay {
		s.log.InfoContext(ctx, "payment settled", "quote_id", st.QuoteID, "account_id", st.AccountID, "protocol", st.Protocol,
			"transaction", res.Transaction)
	}
	return out, nil
}

// paid renders a settled settlement with its receipt header.
func (s *Service) paid(st *store.Settlement, q *store.Quote, replay bool) *Paid {
	out := &Paid{Quote: q, Settlement: st, Replay: replay}
	if st.Protocol == ProtocolX402 {
		out.Header, out.HeaderValue = paywire.HeaderPaymentResponse, base64Std(st.Response)
		return out
	}
	out.Header = paywire.HeaderPaymentReceipt
	out.HeaderValue = paywire.EncodeURL(paywire.MPPReceipt{Status: "success", Method: "evm", Timestamp: st.UpdatedAt.UTC().Format(time.RFC3339),
		Reference: st.TransactionHash, ChallengeID: st.QuoteID, ChainID: s.cfg.ChainID()})
	return out
}

// Reconcile finishes settlements left pending by a crash or an outage: each
// is settled again (the facilitator answers a settled payment's repeat with
// its transaction) and credited once. Call it at start.
func (s *Service) Reconcile(ctx context.Context) (settled, failed int, err error) {
	if !s.Enabled() {
		return 0, 0, nil
	}
	pending, err := s.store.SettlementListPending(ctx, 1000)
	if err != nil {
		return 0, 0, fmt.Errorf("list pending settlements: %w", err)
	}
	for _, st := range pending {
		q, err := s.store.QuoteGetByID(ctx, st.QuoteID)
		if err != nil {
			return settled, failed, fmt.Errorf("reconcile %s: %w", st.ID, err)
		}
		_, err = s.settle(ctx, q, st)
		var d *Declined
		switch {
		case err == nil:
			settled++
		case errors.As(err, &d):
			failed++
			s.log.WarnContext(ctx, "pending payment declined on reconcile", "quote_id", st.QuoteID, "reason", d.Reason)
		default:
			s.log.WarnContext(ctx, "pending payment not reconciled; will retry at next start or on the payer's retry",
				"quote_id", st.QuoteID, "err", err)
		}
	}
	return settled, failed, nil
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Top-up bounds (spec 4.3).
const (
	MinTopupMicros       = 10_000             // 0.01 USD
	MaxTopupMicros       = 10_000 * 1_000_000 // 10000 USD
	MaxDescriptionLength = 500
)

// DefaultQuoteTTL is how long a top-up quote can be paid (documented in
// docs/payments.md; --quote-ttl).
const DefaultQuoteTTL = 30 * time.Minute

// CreateTopup stores an x402_topup quote for amountUSD (a JSON number) and
// returns it; the caller answers 402 with its challenges.
func (s *Service) CreateTopup(ctx context.Context, accountID string, amountUSD json.RawMessage, description string) (*store.Quote, error) {
	if !s.Enabled() {
		return nil, NotConfigured()
	}
	action := "Send amount_usd as a JSON number of USD between 0.01 and 10000 with at most 6 decimals."
	raw := strings.TrimSpace(string(amountUSD))
	if raw == "" || raw == "null" {
		return nil, fault.Invalid("invalid_amount", action, "amount_usd is required").With("field", "amount_usd")
	}
	micros, err := parseUSDNumber(raw)
	if err != nil {
		return nil, fault.Invalid("invalid_amount", action, "amount_usd %s is not a number of USD with at most 6 decimals", raw).With("field", "amount_usd")
	}
	if micros < MinTopupMicros || micros > MaxTopupMicros {
		return nil, fault.Invalid("invalid_amount", action, "amount_usd %s is outside 0.01 to 10000", raw).With("field", "amount_usd")
	}
	if len([]rune(description)) > MaxDescriptionLength {
		return nil, fault.Invalid("description_too_long", "Send a description of at most 500 characters.",
			"description has %d characters, more than 500", len([]rune(description))).With("field", "description")
	}
	if description == "" {
		description = "Skiff account top-up"
	}
	now := s.clock.Now()
	q := &store.Quote{ID: id.New(id.Quote), AccountID: accountID, AmountMicros: micros, Description: description,
		ExpiresAt: now.Add(s.cfg.QuoteTTL).UTC().Truncate(time.Second)}
	created, err := s.store.QuoteCreate(ctx, &store.QuoteCreateParams{ID: q.ID, AccountID: accountID, QuoteType: "x402_topup",
		AmountMicros: micros, Description: description, Attrs: s.Attrs(q), ExpiresAt: q.ExpiresAt, Now: now})
	if err != nil {
		return nil, fmt.Errorf("create top-up quote: %w", err)
	}
	return created, nil
}

// parseUSDNumber reads a JSON number of USD into micro-USD exactly.
func parseUSDNumber(s string) (int64, error) {
	if s == "" || s[0] == '"' || strings.ContainsAny(s, "eE+") {
		return 0, errors.New("not a plain decimal number")
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if len(frac) > 6 || intPart == "" || len(intPart) > 12 || strings.TrimLeft(intPart, "0123456789") != "" ||
		strings.TrimLeft(frac, "0123456789") != "" || (strings.Contains(s, ".") && frac == "") {
		return 0, errors.New("not a plain decimal number")
	}
	whole, _ := strconv.ParseInt(intPart, 10, 64)
	for len(frac) < 6 {
		frac += "0"
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	return whole*1_000_000 + f, nil
}

// QuoteIDFromPayload is the quote a PAYMENT-SIGNATURE pays, read from the
// resource URL the client echoes (POST /topup retried by a stock client).
func QuoteIDFromPayload(h string) (string, error) {
	p, err := paywire.DecodePaymentSignature(h)
	if err != nil {
		return "", invalid("invalid_payment_payload", "malformed PAYMENT-SIGNATURE: %v", err)
	}
	if p.Resource != nil {
		path := p.Resource.URL
		if i := strings.Index(path, "/api/v1/account/quotes/"); i >= 0 {
			rest := strings.TrimPrefix(path[i:], "/api/v1/account/quotes/")
			if id, tail, ok := strings.Cut(rest, "/"); ok && tail == "pay/x402" && strings.HasPrefix(id, "qt_") {
				return id, nil
			}
		}
	}
	return "", invalid("invalid_payment_payload", "the payment's resource.url names no quote; pay at /api/v1/account/quotes/{quote_id}/pay/x402")
}
