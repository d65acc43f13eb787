package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/payment"
)

// paymentFlags configure wallet sign-in and payments (docs/payments.md).
type paymentFlags struct {
	publicURL          string
	walletPolicyFile   string
	ratePerAddress     int
	ratePerIP          int
	facilitatorURL     string
	facilitatorHeaders headerFlags
	network            string
	asset              string
	assetName          string
	assetVersion       string
	payTo              string
	realm              string
	quoteTTL           time.Duration
	rpcURL             string
}

// headerFlags collects repeatable "Name: value" flags. Set never fails
// and String never shows values: they are credentials, and the flag
// package echoes a refused value. They are checked in config.
type headerFlags struct{ raw []string }

func (f *headerFlags) String() string {
	if f == nil || len(f.raw) == 0 {
		return ""
	}
	return fmt.Sprintf("(%d headers)", len(f.raw))
}

// Set adds one header; the environment twin may hold several, one a line.
func (f *headerFlags) Set(v string) error {
	for _, line := range strings.Split(v, "\n") {
		if strings.TrimSpace(line) != "" {
			f.raw = append(f.raw, line)
		}
	}
	return nil
}

func (f *headerFlags) header() (http.Header, error) {
	h := http.Header{}
	for _, line := range f.raw {
		name, value, err := payment.ParseHeaderFlag(line)
		if err != nil {
			return nil, err
		}
		h.Add(name, value)
	}
	return h, nil
}

func (f *paymentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.publicURL, "public-url", "", "the service's external base URL, e.g. https://skiff.example.com: named in wallet sign-in messages and payment resource URLs; default http://<listen> (env SKIFF_PUBLIC_URL)")
	fs.StringVar(&f.walletPolicyFile, "wallet-policy-file", "", "JSON file {\"allow\": [addresses], \"deny\": [addresses]} restricting wallet sign-in; none: every well-formed wallet is accepted (env SKIFF_WALLET_POLICY_FILE)")
	fs.IntVar(&f.ratePerAddress, "auth-rate-per-address", httpapi.DefaultAuthRatePerAddress, "wallet challenge and verify requests per minute per wallet address (env SKIFF_AUTH_RATE_PER_ADDRESS)")
	fs.IntVar(&f.ratePerIP, "auth-rate-per-ip", httpapi.DefaultAuthRatePerIP, "wallet challenge and verify requests per minute per client IP (env SKIFF_AUTH_RATE_PER_IP)")
	fs.StringVar(&f.facilitatorURL, "x402-facilitator-url", "", "x402 facilitator base URL (/verify, /settle); payments are on when this and --x402-pay-to are set (env SKIFF_X402_FACILITATOR_URL)")
	fs.Var(&f.facilitatorHeaders, "x402-facilitator-header", "'Name: value' header sent to the facilitator, e.g. an API key; repeatable; never logged (env SKIFF_X402_FACILITATOR_HEADER, one a line)")
	fs.StringVar(&f.network, "x402-network", payment.DefaultNetwork, "CAIP-2 chain payments are made on (env SKIFF_X402_NETWORK)")
	fs.StringVar(&f.asset, "x402-asset", payment.DefaultAsset, "EIP-3009 token address (default: USDC on Base) (env SKIFF_X402_ASSET)")
	fs.StringVar(&f.assetName, "x402-asset-name", payment.DefaultAssetName, "the token's EIP-712 domain name (env SKIFF_X402_ASSET_NAME)")
	fs.StringVar(&f.assetVersion, "x402-asset-version", payment.DefaultAssetVersion, "the token's EIP-712 domain version (env SKIFF_X402_ASSET_VERSION)")
	fs.StringVar(&f.payTo, "x402-pay-to", "", "address that receives payments (env SKIFF_X402_PAY_TO)")
	fs.DurationVar(&f.quoteTTL, "quote-ttl", payment.DefaultQuoteTTL, "how long a top-up quote can be paid, 10s to 24h (env SKIFF_QUOTE_TTL)")
	fs.StringVar(&f.rpcURL, "x402-rpc-url", "", "JSON-RPC URL of a node of --x402-network, asked whether a payment went through when the facilitator's answer was lost (a crash between its settlement and the credit); required when payments are on; never logged (env SKIFF_X402_RPC_URL)")
	fs.StringVar(&f.realm, "mpp-realm", "", "MPP realm, bound into every MPP payment; default the host of --public-url (env SKIFF_MPP_REALM)")
}

// config validates the flags and returns the payment configuration and
// the wallet policy (nil without a file).
func (f *paymentFlags) config(listen string) (payment.Config, *auth.WalletPolicy, error) {
	if f.publicURL == "" {
		f.publicURL = "http://" + listen
	}
	f.publicURL = strings.TrimRight(f.publicURL, "/")
	headers, err := f.facilitatorHeaders.header()
	if err != nil {
		return payment.Config{}, nil, err
	}
	cfg := payment.Config{PublicURL: f.publicURL, FacilitatorURL: f.facilitatorURL, FacilitatorHeaders: headers,
		Network: f.network, Asset: f.asset, AssetName: f.assetName, AssetVersion: f.assetVersion, PayTo: f.payTo, Realm: f.realm, QuoteTTL: f.quoteTTL,
		RPCURL: f.rpcURL}
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
	if f.ratePerAddress < 1 || f.ratePerIP < 1 {
		return cfg, nil, fmt.Errorf("--auth-rate-per-address and --auth-rate-per-ip must be at least 1 per minute")
	}
	var pol *auth.WalletPolicy
	if f.walletPolicyFile != "" {
		if pol, err = auth.LoadWalletPolicy(f.walletPolicyFile); err != nil {
			return cfg, nil, fmt.Errorf("--wallet-policy-file: %w", err)
		}
	}
	return cfg, pol, nil
}
