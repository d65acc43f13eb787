package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/paywire"
)

// Wallet sign-in lifetimes (spec 2.2, 3.3, 5).
const (
	ChallengeTTL = 5 * time.Minute
	SessionTTL   = 24 * time.Hour
)

// Chains a wallet may sign in on; base is the default.
var Chains = []string{"base", "ethereum", "evm"}

// WalletPolicy is an operator's optional access policy: a denied address is
// refused; when Allow is not empty only its addresses are accepted.
type WalletPolicy struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`

	allow, deny map[paywire.Address]bool
}

// LoadWalletPolicy reads a JSON policy file {"allow": [...], "deny": [...]}.
func LoadWalletPolicy(path string) (*WalletPolicy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wallet policy: %w", err)
	}
	var p WalletPolicy
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("wallet policy %s: want {\"allow\": [addresses], \"deny\": [addresses]}: %w", path, err)
	}
	if err := p.compile(); err != nil {
		return nil, fmt.Errorf("wallet policy %s: %w", path, err)
	}
	return &p, nil
}

func (p *WalletPolicy) compile() error {
	p.allow, p.deny = map[paywire.Address]bool{}, map[paywire.Address]bool{}
	for _, l := range []struct {
		in  []string
		out map[paywire.Address]bool
	}{{p.Allow, p.allow}, {p.Deny, p.deny}} {
		for _, s := range l.in {
			a, err := paywire.ParseAddress(s)
			if err != nil {
				return err
			}
			l.out[a] = true
		}
	}
	return nil
}

// Permits reports whether the policy accepts a; a nil policy accepts all.
func (p *WalletPolicy) Permits(a paywire.Address) bool {
	if p == nil {
		return true
	}
	if p.allow == nil {
		_ = p.compile()
	}
	if p.deny[a] {
		return false
	}
	return len(p.allow) == 0 || p.allow[a]
}

// WalletConfig configures wallet sign-in.
type WalletConfig struct {
	// PublicURL is the service's external base URL, named in the message.
	PublicURL string
	// Policy refuses wallets; nil accepts every well-formed wallet.
	Policy *WalletPolicy
}

var walletAddressRe = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)

// WalletChallengeParams is a sign-in request.
type WalletChallengeParams struct {
	WalletAddress string
	Chain         string
}

func parseWallet(addr string) (paywire.Address, error) {
	if !walletAddressRe.MatchString(addr) {
		return paywire.Address{}, fault.Invalid("invalid_wallet_address", "Send wallet_address as 0x followed by 40 hex digits.",
			"wallet_address %q is not 0x followed by 40 hex digits", addr).With("field", "wallet_address")
	}
	a, err := paywire.ParseAddress(addr)
	if err != nil {
		return a, fault.Invalid("invalid_wallet_address", "Send wallet_address as 0x followed by 40 hex digits.", "%v", err)
	}
	return a, nil
}

func (s *Service) checkPolicy(a paywire.Address) error {
	if !s.wallet.Policy.Permits(a) {
		return fault.Forbidden("wallet_not_permitted", "Ask the operator of this service to admit your wallet.",
			"wallet %s is not permitted by this service's access policy", a.Checksum())
	}
	return nil
}

// WalletChallenge makes a single-use sign-in message for a wallet.
func (s *Service) WalletChallenge(ctx context.Context, p WalletChallengeParams) (*store.WalletChallenge, error) {
	chain := p.Chain
	if chain == "" {
		chain = "base"
	}
	if !isChain(chain) {
		return nil, fault.Invalid("invalid_chain", "Use chain base (the default), ethereum or evm.",
			"chain %q is not supported", chain).With("field", "chain")
	}
	addr, err := parseWallet(p.WalletAddress)
	if err != nil {
		return nil, err
	}
	if err := s.checkPolicy(addr); err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC().Truncate(time.Second)
	var nb [16]byte
	_, _ = rand.Read(nb[:])
	c := &store.WalletChallenge{
		ID: id.New(id.Challenge), Chain: chain, Address: addr.Hex(), Nonce: hex.EncodeToString(nb[:]),
		Status: store.ChallengeOpen, ExpiresAt: now.Add(ChallengeTTL), CreatedAt: now,
	}
	c.Message = s.challengeMessage(c, addr)
	if err := s.store.WalletChallengeCreate(ctx, c); err != nil {
		return nil, fmt.Errorf("create wallet challenge: %w", err)
	}
	return c, nil
}

// challengeMessage is the text the wallet signs: an EIP-4361-like message
// naming the service, the wallet, the chain, the nonce and the times.
func (s *Service) challengeMessage(c *store.WalletChallenge, addr paywire.Address) string {
	host := s.wallet.PublicURL
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	host = strings.TrimRight(host, "/")
	if host == "" {
		host = "skiff"
	}
	return fmt.Sprintf("%s wants you to sign in with your wallet:\n%s\n\n"+
		"Sign in to Skiff at %s. This request will not trigger a blockchain transaction or cost any fees.\n\n"+
		"URI: %s\nChain: %s\nNonce: %s\nChallenge: %s\nIssued At: %s\nExpiration Time: %s",
		host, addr.Checksum(), host, s.wallet.PublicURL, c.Chain, c.Nonce, c.ID,
		c.CreatedAt.Format(time.RFC3339), c.ExpiresAt.Format(time.RFC3339))
}

func isChain(c string) bool {
	for _, k := range Chains {
		if c == k {
			return true
		}
	}
	return false
}

// WalletVerifyParams is a signed challenge.
type WalletVerifyParams struct {
	ChallengeID, WalletAddress, Signature string
}

// WalletSignIn is the outcome of a verified challenge.
type WalletSignIn struct {
	Account *store.Account
	Wallet  *store.Wallet
	Session *store.WalletSession
	Token   string // fls_..., shown once
}

// WalletVerify checks a signed challenge and opens a session for the
// wallet's account, creating the account at the wallet's first sign-in.
func (s *Service) WalletVerify(ctx context.Context, p WalletVerifyParams) (*WalletSignIn, error) {
	var missing []string
	for _, f := range []struct{ name, v string }{{"challenge_id", p.ChallengeID}, {"wallet_address", p.WalletAddress}, {"signature", p.Signature}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fault.Invalid("missing_fields", "Send challenge_id, wallet_address and signature.",
			"missing %s", strings.Join(missing, ", ")).With("fields", missing)
	}
	addr, err := parseWallet(p.WalletAddress)
	if err != nil {
		return nil, err
	}
	sig, err := paywire.ParseSignature(p.Signature)
	if err != nil {
		return nil, fault.Invalid("invalid_signature_format", "Send the 65-byte personal_sign signature as 0x and 130 hex digits.",
			"%v", err).With("field", "signature")
	}
	if err := s.checkPolicy(addr); err != nil {
		return nil, err
	}
	c, err := s.store.WalletChallengeGet(ctx, p.ChallengeID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Unauthenticated("challenge %q is unknown", p.ChallengeID)
	}
	if err != nil {
		return nil, fmt.Errorf("get wallet challenge: %w", err)
	}
	now := s.clock.Now()
	if c.Status == store.ChallengeUsed {
		return nil, challengeUsed(c.ID)
	}
	if !now.Before(c.ExpiresAt) {
		return nil, fault.New(fault.KindGone, "challenge_expired", "Request a new challenge and sign it within 5 minutes.",
			"challenge %s expired at %s", c.ID, c.ExpiresAt.Format(time.RFC3339))
	}
	want, err := paywire.ParseAddress(c.Address)
	if err != nil {
		return nil, fmt.Errorf("stored challenge address: %w", err)
	}
	if want != addr {
		return nil, walletMismatch("wallet_address does not match the challenge's wallet")
	}
	got, err := paywire.Recover(paywire.PersonalMessageHash([]byte(c.Message)), sig)
	if err != nil || got != addr {
		return nil, walletMismatch("the signature was not made by this wallet over challenge.message")
	}
	out := &WalletSignIn{Token: id.Secret(id.Session)}
	err = s.store.InTx(ctx, func(q store.Querier) error {
		if err := q.WalletChallengeUse(ctx, &store.WalletChallengeUseParams{ID: c.ID, Now: now}); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return challengeUsed(c.ID)
			}
			return err
		}
		w, err := q.WalletGet(ctx, c.Chain, c.Address)
		if errors.Is(err, store.ErrNotFound) {
			acct, err := q.AccountCreate(ctx, &store.AccountCreateParams{ID: id.New(id.Account), Name: c.Address + "@" + c.Chain, Now: now})
			if err != nil {
				return err
			}
			w = &store.Wallet{Chain: c.Chain, Address: c.Address, AccountID: acct.ID, CreatedAt: now}
			if err := q.WalletCreate(ctx, w); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		out.Wallet = w
		if out.Account, err = q.AccountGetByID(ctx, w.AccountID); err != nil {
			return err
		}
		out.Session = &store.WalletSession{ID: id.New("ses_"), AccountID: w.AccountID, Chain: c.Chain, Address: c.Address,
			SecretHash: id.Hash(out.Token), ExpiresAt: now.Add(SessionTTL), CreatedAt: now}
		return q.WalletSessionCreate(ctx, out.Session)
	})
	if err != nil {
		if _, ok := fault.As(err); ok {
			return nil, err
		}
		return nil, fmt.Errorf("wallet sign-in: %w", err)
	}
	return out, nil
}

func challengeUsed(id string) error {
	return fault.Conflict("challenge_used", "Request a new challenge; each one signs in once.", "challenge %s was used already", id)
}

func walletMismatch(msg string) error {
	return &fault.Error{Kind: fault.KindUnauthenticated, Code: "invalid_wallet_signature",
		Action:  "Sign challenge.message exactly as given with personal_sign from the wallet named in the challenge.",
		Message: msg}
}
