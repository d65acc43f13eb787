package httpapi

import (
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
)

func (s *Server) balance(w http.ResponseWriter, r *http.Request) error {
	p := principal(r.Context())
	b, err := s.billing.Balance(r.Context(), p.Account.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.BalanceResponse{
		Account: accountView(p),
		Balance: apiv1.Balance{
			LedgerBalanceUSD: apiv1.USD(b.LedgerMicros), HeldUSD: apiv1.USD(b.HeldMicros),
			AvailableUSD: apiv1.USD(b.AvailableMicros()), ActiveHoldCount: b.ActiveHoldCount, OpenQuoteCount: b.OpenQuoteCount,
		},
	})
	return nil
}
