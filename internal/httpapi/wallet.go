package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/ratelimit"
	"github.com/skiffhq/skiff/internal/store"
)

// Default wallet sign-in rate limits (spec 7), per minute.
const (
	DefaultAuthRatePerAddress = 10
	DefaultAuthRatePerIP      = 60
)

// clientIP is the peer address of the connection. Forwarding headers are
// not trusted: a client could name any address in them.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// rateLimit takes one event from each key's limiter and answers 429 with
// Retry-After when any is exhausted.
func (s *Server) rateLimit(w http.ResponseWriter, checks ...limitCheck) error {
	now := s.clock.Now()
	for _, c := range checks {
		if ok, wait := c.lim.Allow(c.key, now); !ok {
			secs := ratelimit.RetryAfterSeconds(wait)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			return fault.New(fault.KindRateLimited, "rate_limited",
				"Wait "+strconv.Itoa(secs)+" seconds (the Retry-After header) before trying again.",
				"too many sign-in requests for this %s", c.by).With("retry_after_seconds", secs).With("limited_by", c.by)
		}
	}
	return nil
}

// limitCheck is one limiter and the key a request takes from it; by names
// the key's kind in the 429.
type limitCheck struct {
	lim *ratelimit.Keyed
	key string
	by  string
}

// addressKey is the limiter key of a wallet address: its lower-case form,
// so that spellings of one address share a bucket.
func addressKey(a string) string { return strings.ToLower(strings.TrimSpace(a)) }

func (s *Server) walletChallenge(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.WalletChallengeRequest
	if err := s.rateLimit(w, limitCheck{s.limitIP, clientIP(r), "client_ip"}); err != nil {
		return err
	}
	if _, err := decodeJSON(w, r, &body, false); err != nil {
		return err
	}
	if err := s.rateLimit(w, limitCheck{s.limitAddress, addressKey(body.WalletAddress), "wallet_address"}); err != nil {
		return err
	}
	c, err := s.auth.WalletChallenge(r.Context(), auth.WalletChallengeParams{WalletAddress: body.WalletAddress, Chain: body.Chain})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apiv1.WalletChallengeResponse{Challenge: challengeView(c)})
	return nil
}

func challengeView(c *store.WalletChallenge) apiv1.WalletChallenge {
	return apiv1.WalletChallenge{ID: c.ID, Chain: c.Chain, WalletAddress: c.Address, Nonce: c.Nonce, Message: c.Message,
		Status: c.Status, ExpiresAt: c.ExpiresAt}
}

func (s *Server) walletVerify(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.WalletVerifyRequest
	if err := s.rateLimit(w, limitCheck{s.limitIP, clientIP(r), "client_ip"}); err != nil {
		return err
	}
	if _, err := decodeJSON(w, r, &body, false); err != nil {
		return err
	}
	if body.WalletAddress != "" {
		if err := s.rateLimit(w, limitCheck{s.limitAddress, addressKey(body.WalletAddress), "wallet_address"}); err != nil {
			return err
		}
	}
	in, err := s.auth.WalletVerify(r.Context(), auth.WalletVerifyParams{ChallengeID: body.ChallengeID,
		WalletAddress: body.WalletAddress, Signature: body.Signature})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apiv1.WalletVerifyResponse{
		Account: apiv1.Account{ID: in.Account.ID, Name: in.Account.Name, Role: string(store.RoleMember), CreatedAt: in.Account.CreatedAt},
		Wallet:  apiv1.Wallet{Chain: in.Wallet.Chain, Address: in.Wallet.Address, AccountID: in.Wallet.AccountID, CreatedAt: in.Wallet.CreatedAt},
		Session: apiv1.Session{ID: in.Session.ID, ExpiresAt: in.Session.ExpiresAt, CreatedAt: in.Session.CreatedAt},
		Token:   in.Token,
	})
	return nil
}
