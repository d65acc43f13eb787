package payment

import (
	"errors"
	"fmt"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/paywire"
)

// Defaults: USDC on Base mainnet.
const (
	DefaultNetwork      = "eip155:8453"
	DefaultAsset        = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	DefaultAssetName    = "USD Coin"
	DefaultAssetVersion = "2"
	// DefaultFacilitatorTimeout bounds each /verify and /settle call; a
	// settle waits for the transaction's receipt.
	DefaultFacilitatorTimeout = 60 * time.Second
)

// Config configures payments. Payments are on when FacilitatorURL and PayTo
// are both set.
type Config struct {
	// PublicURL is the service's external base URL (resource URLs, realm).
	PublicURL string
	// FacilitatorURL is the x402 facilitator's base URL (/verify, /settle).
	FacilitatorURL string
	// FacilitatorHeaders are sent on every facilitator request (API keys);
	// never logged.
	FacilitatorHeaders map[string][]string
	// FacilitatorTimeout bounds one facilitator call.
	FacilitatorTimeout time.Duration
	// Network is the CAIP-2 chain, eip155:<chain id>.
	Network string
	// Asset is the EIP-3009 token (USDC) address; AssetName and
	// AssetVersion are its EIP-712 domain name and version.
	Asset, AssetName, AssetVersion string
	// PayTo is the address that receives payments.
	PayTo string
	// Realm is the MPP realm, bound into every MPP authorization's nonce;
	// default the host of PublicURL.
	Realm string
	// QuoteTTL is how long a top-up quote can be paid.
	QuoteTTL time.Duration
	// RPCURL is a JSON-RPC node of Network, asked whether a payment whose
	// settle answer was lost went through (Chain); empty: not asked.
	RPCURL string
}

// Enabled reports whether payments are configured.
func (c *Config) Enabled() bool { return c.FacilitatorURL != "" && c.PayTo != "" }

// Fill sets the defaults of unset fields.
func (c *Config) Fill() {
	if c.Network == "" {
		c.Network = DefaultNetwork
	}
	if c.Asset == "" {
		c.Asset = DefaultAsset
	}
	if c.AssetName == "" {
		c.AssetName = DefaultAssetName
	}
	if c.AssetVersion == "" {
		c.AssetVersion = DefaultAssetVersion
	}
	if c.QuoteTTL == 0 {
		c.QuoteTTL = DefaultQuoteTTL
	}
	if c.FacilitatorTimeout == 0 {
		c.FacilitatorTimeout = DefaultFacilitatorTimeout
	}
	if c.Realm == "" && c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err == nil {
			c.Realm = u.Host
		}
	}
}

// ChainID is the numeric chain id of Network.
func (c *Config) ChainID() int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(c.Network, "eip155:"), 10, 64)
	return n
}

// Validate checks the configuration after Fill; the messages name flags.
func (c *Config) Validate() error {
	var errs []error
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--public-url %q: want an absolute http(s) URL such as https://skiff.example.com", c.PublicURL))
		}
	}
	if (c.FacilitatorURL == "") != (c.PayTo == "") {
		errs = append(errs, errors.New("--x402-facilitator-url and --x402-pay-to turn payments on together: set both or neither"))
	}
	if c.RPCURL != "" {
		// Never echoed: a provider's URL often carries its key.
		u, err := url.Parse(c.RPCURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New("--x402-rpc-url: want an absolute http(s) URL"))
		}
	}
	if c.FacilitatorURL != "" {
		u, err := url.Parse(c.FacilitatorURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--x402-facilitator-url %q: want an absolute http(s) URL", c.FacilitatorURL))
		}
		if c.PublicURL == "" {
			errs = append(errs, errors.New("--public-url is needed when payments are on (it names the paid resource)"))
		}
	}
	if c.PayTo != "" {
		if _, err := paywire.ParseAddress(c.PayTo); err != nil {
			errs = append(errs, fmt.Errorf("--x402-pay-to: %v", err))
		}
	}
	if _, err := paywire.ParseAddress(c.Asset); err != nil {
		errs = append(errs, fmt.Errorf("--x402-asset: %v", err))
	}
	if !strings.HasPrefix(c.Network, "eip155:") || c.ChainID() <= 0 {
		errs = append(errs, fmt.Errorf("--x402-network %q: want a CAIP-2 EVM chain such as eip155:8453", c.Network))
	}
	if c.AssetName == "" || c.AssetVersion == "" {
		errs = append(errs, errors.New("--x402-asset-name and --x402-asset-version must not be empty"))
	}
	if c.QuoteTTL < 10*time.Second || c.QuoteTTL > 24*time.Hour {
		errs = append(errs, fmt.Errorf("--quote-ttl %s: want 10s to 24h", c.QuoteTTL))
	}
	if c.Enabled() && c.Realm == "" {
		errs = append(errs, errors.New("--mpp-realm is empty and --public-url names no host"))
	}
	return errors.Join(errs...)
}

// ParseHeaderFlag reads one "Name: value" facilitator header.
func ParseHeaderFlag(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
		// The value may be a secret: never echo it.
		return "", "", errors.New("--x402-facilitator-header (SKIFF_X402_FACILITATOR_HEADER): want 'Name: value', one a line")
	}
	return textproto.CanonicalMIMEHeaderKey(name), value, nil
}
