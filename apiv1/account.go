package apiv1

import "time"

// Account is who a token acts as.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"` // the role of the credential used
	CreatedAt time.Time `json:"created_at"`
}

// Balance is derived from the ledger and active holds (spec 2.1).
type Balance struct {
	LedgerBalanceUSD USD   `json:"ledger_balance_usd"`
	HeldUSD          USD   `json:"held_usd"`
	AvailableUSD     USD   `json:"available_usd"`
	ActiveHoldCount  int64 `json:"active_hold_count"`
	OpenQuoteCount   int64 `json:"open_quote_count"`
}

// BalanceResponse answers GET /api/v1/account/balance.
type BalanceResponse struct {
	Account Account `json:"account"`
	Balance Balance `json:"balance"`
}
