package server

import (
	"context"
	"net/url"

	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/payment/evmrpc"
	"github.com/skiffhq/skiff/internal/payment/facilitatorhttp"
)

// startPayments builds the payment service and finishes the settlements a
// crash or an outage left pending: as a duty, so that with several
// controllers one does it, again whenever the duty changes hands.
func (s *Server) startPayments(cfg payment.Config) *payment.Service {
	log := s.log
	fac := s.cfg.Facilitator
	if fac == nil && cfg.FacilitatorURL != "" {
		fac = facilitatorhttp.New(cfg.FacilitatorURL, cfg.FacilitatorHeaders, cfg.FacilitatorTimeout)
	}
	chain := s.cfg.Chain
	if chain == nil && cfg.RPCURL != "" {
		chain = evmrpc.New(cfg.RPCURL, cfg.FacilitatorTimeout)
	}
	svc := payment.NewService(cfg, s.db, s.clk, log.With("component", "payments"), fac, chain)
	if svc.Enabled() {
		log.Info("payments on", "network", cfg.Network, "asset", cfg.Asset, "pay_to", cfg.PayTo, "realm", cfg.Realm,
			"facilitator", redactURL(cfg.FacilitatorURL), "facilitator_headers", len(cfg.FacilitatorHeaders), "chain_rpc", cfg.RPCURL != "")
		// In the background: a slow facilitator must not hold up the start.
		s.runDuty(dutyPayments, func(ctx context.Context) {
			settled, failed, err := svc.Reconcile(ctx)
			if err != nil {
				log.Warn("reconcile pending payments", "err", err)
			} else if settled+failed > 0 {
				log.Info("reconciled pending payments", "settled", settled, "declined", failed)
			}
			<-ctx.Done() // held until shutdown: the next holder reconciles again
		})
	}
	return svc
}

// redactURL hides a password in a URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
