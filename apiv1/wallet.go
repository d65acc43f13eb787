package apiv1

import "time"

// WalletChallengeRequest is the body of POST /api/v1/auth/wallet/challenge.
type WalletChallengeRequest struct {
	WalletAddress string `json:"wallet_address"`
	Chain         string `json:"chain,omitempty"` // base (default), ethereum or evm
}

// WalletChallenge is a message to sign with personal_sign (spec 2.2).
type WalletChallenge struct {
	ID            string    `json:"id"`
	Chain         string    `json:"chain"`
	WalletAddress string    `json:"wallet_address"`
	Nonce         string    `json:"nonce"`
	Message       string    `json:"message"`
	Status        string    `json:"status"` // open or used
	ExpiresAt     time.Time `json:"expires_at"`
}

// WalletChallengeResponse answers 201 to a challenge request.
type WalletChallengeResponse struct {
	Challenge WalletChallenge `json:"challenge"`
}

// WalletVerifyRequest is the body of POST /api/v1/auth/wallet/verify.
type WalletVerifyRequest struct {
	ChallengeID   string `json:"challenge_id"`
	WalletAddress string `json:"wallet_address"`
	Signature     string `json:"signature"`
}

// Wallet is a signed-in wallet.
type Wallet struct {
	Chain     string    `json:"chain"`
	Address   string    `json:"address"`
	AccountID string    `json:"account_id"`
	CreatedAt time.Time `json:"created_at"`
}

// Session is a wallet session; its token is shown once, beside it.
type Session struct {
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expires_at"`
	CreatedAt time.Time `json:"created_at"`
}

// WalletVerifyResponse answers 201 to a verified challenge.
type WalletVerifyResponse struct {
	Account Account `json:"account"`
	Wallet  Wallet  `json:"wallet"`
	Session Session `json:"session"`
	Token   string  `json:"token"` // fls_..., a bearer token valid 24 hours
}

// Payment is a settled payment of a quote.
type Payment struct {
	Protocol      string    `json:"protocol"` // x402 or mpp
	Status        string    `json:"status"`
	Payer         string    `json:"payer"`
	Transaction   string    `json:"transaction"`
	Network       string    `json:"network"`
	AmountUSD     USD       `json:"amount_usd"`
	LedgerEntryID string    `json:"ledger_entry_id"`
	SettledAt     time.Time `json:"settled_at"`
}

// SettleResponse answers a settled payment: 201 the first time, 200 with
// replay true for the same credential again.
//
// Account and Balance are absent when an MPP credential is replayed
// without the account's bearer token: whoever holds a copy of a credential
// learns again what its first answer said (the settlement), and nothing of
// the account since.
type SettleResponse struct {
	Account *Account `json:"account,omitempty"`
	Quote   Quote    `json:"quote"`
	Payment Payment  `json:"payment"`
	Balance *Balance `json:"balance,omitempty"`
	Replay  bool     `json:"replay"`
}
