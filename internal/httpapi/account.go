package httpapi

import (
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/store"
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

// Bounds of the account lists (ledger, holds, quotes): the jobs list's.
const (
	accountListDefaultLimit = 50
	accountListMaxLimit     = 200
)

// pageParams reads limit and offset of an account list.
func pageParams(r *http.Request) (limit, offset int, err error) {
	if limit, err = queryInt(r, "limit", accountListDefaultLimit, 1, accountListMaxLimit); err != nil {
		return 0, 0, err
	}
	if offset, err = queryInt(r, "offset", 0, 0, maxOffset); err != nil {
		return 0, 0, err
	}
	return limit, offset, nil
}

func (s *Server) ledger(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := pageParams(r)
	if err != nil {
		return err
	}
	es, total, err := s.billing.Ledger(r.Context(), &store.LedgerListParams{AccountID: principal(r.Context()).Account.ID,
		EntryType: r.URL.Query().Get("entry_type"), Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	out := apiv1.LedgerPage{Entries: make([]apiv1.LedgerEntry, 0, len(es)),
		PageInfo: apiv1.PageInfo{Total: total, Count: len(es), Limit: limit, Offset: offset}}
	for _, e := range es {
		out.Entries = append(out.Entries, billing.LedgerEntryView(e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) holds(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := pageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	hs, total, err := s.billing.Holds(r.Context(), &store.HoldListParams{AccountID: principal(r.Context()).Account.ID,
		Status: q.Get("status"), JobID: q.Get("job_id"), Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	out := apiv1.HoldPage{Holds: make([]apiv1.Hold, 0, len(hs)),
		PageInfo: apiv1.PageInfo{Total: total, Count: len(hs), Limit: limit, Offset: offset}}
	for _, h := range hs {
		out.Holds = append(out.Holds, billing.HoldView(h))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) quotes(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := pageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	qs, total, err := s.billing.Quotes(r.Context(), &store.QuoteListParams{AccountID: principal(r.Context()).Account.ID,
		Status: q.Get("status"), QuoteType: q.Get("quote_type"), Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	out := apiv1.QuotePage{Quotes: make([]apiv1.Quote, 0, len(qs)),
		PageInfo: apiv1.PageInfo{Total: total, Count: len(qs), Limit: limit, Offset: offset}}
	for _, qt := range qs {
		out.Quotes = append(out.Quotes, billing.QuoteView(qt))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) quoteGet(w http.ResponseWriter, r *http.Request) error {
	p := principal(r.Context())
	q, err := s.billing.QuoteGet(r.Context(), p.Account.ID, r.PathValue("quote_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.QuoteResponse{Account: accountView(p), Quote: billing.QuoteView(q)})
	return nil
}
