// Package auth issues API keys and resolves bearer tokens to principals.
package auth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// Service issues keys and authenticates tokens.
type Service struct {
	store  store.Store
	clock  clock.Clock
	wallet WalletConfig
	keys   keyCache
}

func New(s store.Store, c clock.Clock, wallet WalletConfig) *Service {
	return &Service{store: s, clock: c, wallet: wallet}
}

var accountNameRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._@-]{0,127}$`)

// CreateKey makes a new API key for the named account, creating the account
// when it does not exist yet. The returned secret is shown once.
func (s *Service) CreateKey(ctx context.Context, accountName string, role store.Role) (secret string, acct *store.Account, err error) {
	if !accountNameRe.MatchString(accountName) {
		return "", nil, fault.Invalid("invalid_account_name", "Use 1-128 characters: letters, digits, '.', '_', '@', '-'.",
			"account name %q is not valid", accountName)
	}
	if !role.Valid() {
		return "", nil, fault.Invalid("invalid_role", "Use one of member, viewer, admin.", "role %q is not valid", role)
	}
	secret = id.Secret(id.APISecret)
	now := s.clock.Now()
	err = s.store.InTx(ctx, func(q store.Querier) error {
		acct, err = accountGetOrCreate(ctx, q, accountName, now)
		if err != nil {
			return err
		}
		_, err = q.APIKeyCreate(ctx, &store.APIKeyCreateParams{
			ID: id.New(id.APIKey), AccountID: acct.ID, Role: role,
			SecretHash: id.Hash(secret), Hint: secret[:len(id.APISecret)+4], Now: now,
		})
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("create key: %w", err)
	}
	return secret, acct, nil
}

// AccountGetOrCreate returns the named account, creating it if needed.
func (s *Service) AccountGetOrCreate(ctx context.Context, name string) (*store.Account, error) {
	if !accountNameRe.MatchString(name) {
		return nil, fault.Invalid("invalid_account_name", "Use 1-128 characters: letters, digits, '.', '_', '@', '-'.",
			"account name %q is not valid", name)
	}
	var acct *store.Account
	err := s.store.InTx(ctx, func(q store.Querier) (err error) {
		acct, err = accountGetOrCreate(ctx, q, name, s.clock.Now())
		return err
	})
	return acct, err
}

func accountGetOrCreate(ctx context.Context, q store.Querier, name string, now time.Time) (*store.Account, error) {
	a, err := q.AccountGetByName(ctx, name)
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return q.AccountCreate(ctx, &store.AccountCreateParams{ID: id.New(id.Account), Name: name, Now: now})
}

// Authenticate resolves an Authorization header value to a principal.
func (s *Service) Authenticate(ctx context.Context, header string) (*store.Principal, error) {
	if header == "" {
		return nil, fault.Unauthenticated("missing credentials")
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, fault.Unauthenticated("the Authorization header must be 'Bearer <token>'")
	}
	token = strings.TrimSpace(token)
	if !strings.HasPrefix(token, id.APISecret) && !strings.HasPrefix(token, id.Session) {
		return nil, fault.Unauthenticated("invalid credentials")
	}
	var p *store.Principal
	var err error
	if strings.HasPrefix(token, id.Session) {
		p, err = s.store.PrincipalGetBySessionHash(ctx, id.Hash(token), s.clock.Now())
	} else {
		p, err = s.principalByKey(ctx, id.Hash(token))
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Unauthenticated("invalid credentials")
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return p, nil
}

// Logout revokes the wallet session whose token the Authorization header
// carries, so that it is refused from now on (sessions are not cached, so
// on every controller at once). An API key is not a session: operators
// revoke keys.
func (s *Service) Logout(ctx context.Context, header string) error {
	_, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !strings.HasPrefix(token, id.Session) {
		return fault.Invalid("not_a_session", "Only wallet sessions (fls_...) log out; to stop using an API key, forget it, "+
			"and ask the operator to revoke it if it leaked.", "the bearer is not a wallet session token")
	}
	err := s.store.WalletSessionRevoke(ctx, id.Hash(token))
	if errors.Is(err, store.ErrNotFound) {
		return fault.Unauthenticated("invalid credentials")
	}
	if err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	return nil
}

// PurgeExpired deletes up to batch expired wallet challenges and up to
// batch expired sessions (a sweep task): strangers create both for free,
// and neither is worth anything once expired.
func (s *Service) PurgeExpired(ctx context.Context, batch int) (int, error) {
	now := s.clock.Now()
	n, err := s.store.WalletChallengePurgeExpired(ctx, now, batch)
	if err != nil {
		return n, fmt.Errorf("purge expired challenges: %w", err)
	}
	m, err := s.store.WalletSessionPurgeExpired(ctx, now, batch)
	if err != nil {
		return n + m, fmt.Errorf("purge expired sessions: %w", err)
	}
	return n + m, nil
}
