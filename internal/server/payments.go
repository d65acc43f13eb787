package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/payment/evmrpc"
	"github.com/skiffhq/skiff/internal/payment/facilitatorhttp"
	"github.com/skiffhq/skiff/internal/store"
)

// PaymentConfig configure wallet sign-in and payments (docs/payments.md).
type PaymentConfig struct {
	PublicURL          string
	WalletPolicyFile   string
	RatePerAddress     int
	RatePerIP          int
	FacilitatorURL     string
	FacilitatorHeaders HeaderList
	Network            string
	Asset              string
	AssetName          string
	AssetVersion       string
	PayTo              string
	Realm              string
	QuoteTTL           time.Duration
	RPCURL             string
}

// HeaderList collects repeatable "Name: value" flags. Set never fails
// and String never shows values: they are credentials, and the flag
// package echoes a refused value. They are checked in config.
type HeaderList struct{ Raw []string }

func (f *HeaderList) String() string {
	if f == nil || len(f.Raw) == 0 {
		return ""
	}
	return fmt.Sprintf("(%d headers)", len(f.Raw))
}

// Set adds one header; the environment twin may hold several, one a line.
func (f *HeaderList) Set(v string) error {
	for _, line := range strings.Split(v, "\n") {
		if strings.TrimSpace(line) != "" {
			f.Raw = append(f.Raw, line)
		}
	}
	return nil
}

func (f *HeaderList) header() (http.Header, error) {
	h := http.Header{}
	for _, line := range f.Raw {
		name, value, err := payment.ParseHeaderFlag(line)
		if err != nil {
			return nil, err
		}
		h.Add(name, value)
	}
	return h, nil
}

// config validates the flags and returns the payment configuration and
// the wallet policy (nil without a file).
func (f *PaymentConfig) config(listen string) (payment.Config, *auth.WalletPolicy, error) {
	if f.PublicURL == "" {
		f.PublicURL = "http://" + listen
	}
	f.PublicURL = strings.TrimRight(f.PublicURL, "/")
	headers, err := f.FacilitatorHeaders.header()
	if err != nil {
		return payment.Config{}, nil, err
	}
	cfg := payment.Config{PublicURL: f.PublicURL, FacilitatorURL: f.FacilitatorURL, FacilitatorHeaders: headers,
		Network: f.Network, Asset: f.Asset, AssetName: f.AssetName, AssetVersion: f.AssetVersion, PayTo: f.PayTo, Realm: f.Realm, QuoteTTL: f.QuoteTTL,
		RPCURL: f.RPCURL}
	cfg.Fill()
	if err := cfg.Validate(); err != nil {
		return cfg, nil, fmt.Errorf("payments: %w", err)
	}
	if cfg.Enabled() && cfg.RPCURL == "" {
		// Without a node a crash between the facilitator's settlement and
		// the credit would leave a payer charged and not credited: the
		// facilitator cannot say afterwards that it settled, only the chain.
		return cfg, nil, errors.New("payments: --x402-rpc-url (env SKIFF_X402_RPC_URL) is required when payments are on: " +
			"give a JSON-RPC URL of a node of --x402-network, asked whether a payment went through when the facilitator's answer was lost")
	}
	if f.RatePerAddress < 1 || f.RatePerIP < 1 {
		return cfg, nil, fmt.Errorf("--auth-rate-per-address and --auth-rate-per-ip must be at least 1 per minute")
	}
	var pol *auth.WalletPolicy
	if f.WalletPolicyFile != "" {
		if pol, err = auth.LoadWalletPolicy(f.WalletPolicyFile); err != nil {
			return cfg, nil, fmt.Errorf("--wallet-policy-file: %w", err)
		}
	}
	return cfg, pol, nil
}

// startPayments builds the payment service and finishes the settlements a
// crash or an outage left pending: as a duty, so that with several
// controllers one does it, again whenever the duty changes hands.
func startPayments(ctx context.Context, log *slog.Logger, cfg payment.Config, db store.Store, clk clock.Clock, d *duties) *payment.Service {
	var fac payment.Facilitator
	if cfg.FacilitatorURL != "" {
		fac = facilitatorhttp.New(cfg.FacilitatorURL, cfg.FacilitatorHeaders, cfg.FacilitatorTimeout)
	}
	var chain payment.Chain
	if cfg.RPCURL != "" {
		chain = evmrpc.New(cfg.RPCURL, cfg.FacilitatorTimeout)
	}
	svc := payment.NewService(cfg, db, clk, log.With("component", "payments"), fac, chain)
	if svc.Enabled() {
		log.Info("payments on", "network", cfg.Network, "asset", cfg.Asset, "pay_to", cfg.PayTo, "realm", cfg.Realm,
			"facilitator", redactURL(cfg.FacilitatorURL), "facilitator_headers", len(cfg.FacilitatorHeaders), "chain_rpc", cfg.RPCURL != "")
		// In the background: a slow facilitator must not hold up the start.
		d.run(ctx, dutyPayments, func(ctx context.Context) {
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
