package cli

import (
	"flag"

	"github.com/skiffhq/skiff/internal/server"
)

func registerPayments(fs *flag.FlagSet, f *server.PaymentConfig) {
	fs.StringVar(&f.PublicURL, "public-url", f.PublicURL, "the service's external base URL, e.g. https://skiff.example.com: named in wallet sign-in messages and payment resource URLs; default http://<listen> (env SKIFF_PUBLIC_URL)")
	fs.StringVar(&f.WalletPolicyFile, "wallet-policy-file", f.WalletPolicyFile, "JSON file {\"allow\": [addresses], \"deny\": [addresses]} restricting wallet sign-in; none: every well-formed wallet is accepted (env SKIFF_WALLET_POLICY_FILE)")
	fs.IntVar(&f.RatePerAddress, "auth-rate-per-address", f.RatePerAddress, "wallet challenge and verify requests per minute per wallet address (env SKIFF_AUTH_RATE_PER_ADDRESS)")
	fs.IntVar(&f.RatePerIP, "auth-rate-per-ip", f.RatePerIP, "wallet challenge and verify requests per minute per client IP (env SKIFF_AUTH_RATE_PER_IP)")
	fs.StringVar(&f.FacilitatorURL, "x402-facilitator-url", f.FacilitatorURL, "x402 facilitator base URL (/verify, /settle); payments are on when this and --x402-pay-to are set (env SKIFF_X402_FACILITATOR_URL)")
	fs.Var(&f.FacilitatorHeaders, "x402-facilitator-header", "'Name: value' header sent to the facilitator, e.g. an API key; repeatable; never logged (env SKIFF_X402_FACILITATOR_HEADER, one a line)")
	fs.StringVar(&f.Network, "x402-network", f.Network, "CAIP-2 chain payments are made on (env SKIFF_X402_NETWORK)")
	fs.StringVar(&f.Asset, "x402-asset", f.Asset, "EIP-3009 token address (default: USDC on Base) (env SKIFF_X402_ASSET)")
	fs.StringVar(&f.AssetName, "x402-asset-name", f.AssetName, "the token's EIP-712 domain name (env SKIFF_X402_ASSET_NAME)")
	fs.StringVar(&f.AssetVersion, "x402-asset-version", f.AssetVersion, "the token's EIP-712 domain version (env SKIFF_X402_ASSET_VERSION)")
	fs.StringVar(&f.PayTo, "x402-pay-to", f.PayTo, "address that receives payments (env SKIFF_X402_PAY_TO)")
	fs.DurationVar(&f.QuoteTTL, "quote-ttl", f.QuoteTTL, "how long a top-up quote can be paid, 10s to 24h (env SKIFF_QUOTE_TTL)")
	fs.StringVar(&f.RPCURL, "x402-rpc-url", f.RPCURL, "JSON-RPC URL of a node of --x402-network, asked whether a payment went through when the facilitator's answer was lost (a crash between its settlement and the credit); required when payments are on; never logged (env SKIFF_X402_RPC_URL)")
	fs.StringVar(&f.Realm, "mpp-realm", f.Realm, "MPP realm, bound into every MPP payment; default the host of --public-url (env SKIFF_MPP_REALM)")
}
