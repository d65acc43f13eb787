package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad payment and wallet flags stop the server at start with a message
// naming the flag; a facilitator header's value is never echoed.
func TestServerPaymentFlagErrors(t *testing.T) {
	t.Parallel()
	const payTo = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
	badPolicy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(badPolicy, []byte(`{"allow": ["0x12"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"pay-to without facilitator", []string{"--x402-pay-to", payTo}, nil, "set both or neither"},
		{"facilitator without pay-to", []string{"--x402-facilitator-url", "http://127.0.0.1:1"}, nil, "set both or neither"},
		{"bad pay-to", []string{"--x402-facilitator-url", "http://127.0.0.1:1", "--x402-pay-to", "0x12"}, nil, "--x402-pay-to"},
		{"bad facilitator url", []string{"--x402-facilitator-url", "ftp://x", "--x402-pay-to", payTo}, nil, "--x402-facilitator-url"},
		{"payments without a chain node", []string{"--x402-facilitator-url", "http://127.0.0.1:1", "--x402-pay-to", payTo}, nil, "--x402-rpc-url (env SKIFF_X402_RPC_URL) is required"},
		{"bad chain node url", []string{"--x402-facilitator-url", "http://127.0.0.1:1", "--x402-pay-to", payTo, "--x402-rpc-url", "ftp://sekrit"}, nil, "--x402-rpc-url"},
		{"bad network", []string{"--x402-network", "solana:1"}, nil, "--x402-network"},
		{"bad asset", []string{"--x402-asset", "USDC"}, nil, "--x402-asset"},
		{"bad public url", []string{"--public-url", "skiff.example.com"}, nil, "--public-url"},
		{"short quote ttl", []string{"--quote-ttl", "1s"}, nil, "--quote-ttl"},
		{"zero rate", []string{"--auth-rate-per-ip", "0"}, nil, "--auth-rate-per-ip"},
		{"bad policy", []string{"--wallet-policy-file", badPolicy}, nil, "--wallet-policy-file"},
		{"missing policy", []string{"--wallet-policy-file", filepath.Join(t.TempDir(), "none.json")}, nil, "--wallet-policy-file"},
		{"secret header without colon", []string{"--x402-facilitator-header", "Bearer-sekrit-value"}, nil, "--x402-facilitator-header"},
		{"bad header twin", nil, []string{"SKIFF_X402_FACILITATOR_HEADER", "sekrit-value"}, "SKIFF_X402_FACILITATOR_HEADER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"server", "--data-dir", dir, "--listen", "127.0.0.1:0"}, tc.args...)
			r := skiff(t, envList(tc.env...), args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("got exit %d, stderr %q; want a failure mentioning %q", r.code, r.stderr, tc.want)
			}
			if strings.Contains(r.stderr, "sekrit") {
				t.Errorf("stderr shows the header value: %q", r.stderr)
			}
			if strings.Contains(r.stderr, "skiff server started") {
				t.Error("the server started despite a bad flag")
			}
		})
	}
}
