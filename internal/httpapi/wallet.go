package httpapi

import (
	"net/http"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/store"
)

// Default wallet sign-in rate limits (spec 7), per minute.
const (
	DefaultAuthRatePerAddress = 10
	DefaultAuthRatePerIP      = 60
)

// addressKey is the limiter key of a wallet address: its lower-case form,
// so that spellings of one address share a bucket.
func addressKey(a string) string { return strings.ToLower(strings.TrimSpace(a)) }

func (s *Server) walletChallenge(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.WalletChallengeRequest
	if err := s.rateLimit(w, "sign-in", limitCheck{s.limitIP, s.clientKey(r), "client_ip"}); err != nil {
		return err
	}
	if _, err := decodeJSON(w, r, &body, false); err != nil {
		return err
	}
	if err := s.rateLimit(w, "sign-in", limitCheck{s.limitAddress, addressKey(body.WalletAddress), "wallet_address"}); err != nil {
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
	if err := s.rateLimit(w, "sign-in", limitCheck{s.limitIP, s.clientKey(r), "client_ip"}); err != nil {
		return err
	}
	if _, err := decodeJSON(w, r, &body, false); err != nil {
		return err
	}
	if body.WalletAddress != "" {
		if err := s.rateLimit(w, "sign-in", limitCheck{s.limitAddress, addressKey(body.WalletAddress), "wallet_address"}); err != nil {
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

// logout revokes the wallet session that authenticated the request
// (POST /api/v1/auth/logout): 204, and the token is refused from then on.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.auth.Logout(r.Context(), r.Header.Get("Authorization")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
