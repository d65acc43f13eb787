package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// TestWalletCommands signs in with a wallet key file, tops up over x402
// (a stand-in facilitator approves), and runs a job the balance cannot
// cover: the 402's quote is paid and the same request sent again.
func TestWalletCommands(t *testing.T) {
	forEngines(t, func(t *testing.T, eng apitest.Engine) {
		fac := apitest.NewFacilitator(t)
		e := apitest.Start(t, apitest.Options{Store: eng.Open(t), AuthRatePerAddress: -1, AuthRatePerIP: -1,
			Payments: fac.PaymentsConfig()})
		home := t.TempDir()
		env := []string{"XDG_CONFIG_HOME=" + home, "SKIFF_URL=" + e.URL}
		keyFile := filepath.Join(t.TempDir(), "wallet.key")
		if err := os.WriteFile(keyFile, []byte("0x"+strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		skiff(t, env, "login", "--wallet-key-file", keyFile).want(t, 0, "Logged in to "+e.URL, "The session lasts until")
		b, _ := os.ReadFile(filepath.Join(home, "skiff", "config.json"))
		var cfg map[string]any
		if json.Unmarshal(b, &cfg) != nil || !strings.HasPrefix(cfg["token"].(string), "fls_") || cfg["wallet_key_file"] != keyFile {
			t.Errorf("config after wallet login: %s", b)
		}
		skiff(t, env, "topup", "3", "--quote-only").want(t, 0)
		skiff(t, env, "topup", "3").want(t, 0, "Paid 3 USD", "Available: 3 USD")
		skiff(t, env, "balance").want(t, 0, "available  3 USD")
		skiff(t, env, "ledger").want(t, 0, "x402_topup")

		var who struct {
			Account apiv1.Account `json:"account"`
		}
		decode(t, skiff(t, env, "whoami", "--json").want(t, 0).stdout, &who)
		skiff(t, env, "project", "create", "p").want(t, 0)
		e.Publish(t, who.Account.ID, "p")
		payload := filepath.Join(t.TempDir(), "payload.json")
		if err := os.WriteFile(payload, []byte(`{"project": "p", "runner_command": ["/runner"], "timeout_s": 86400, "fan_out": {"chunks": 50, "total": 50, "range_field": "r"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		// The job's hold is more than 3 USD: paid, resent, admitted once.
		id := strings.TrimSpace(skiff(t, env, "run", "--detach", payload).want(t, 0).stdout)
		if !strings.HasPrefix(id, "job_") {
			t.Fatalf("run --detach: %q", id)
		}
		var jobs []apiv1.JobListEntry
		decode(t, skiff(t, env, "jobs", "ls", "--json").want(t, 0).stdout, &jobs)
		if len(jobs) != 1 || jobs[0].ID != id {
			t.Errorf("jobs after the paid resend: %+v", jobs)
		}
		if fac.Settles() != 2 {
			t.Errorf("settlements: %d, want 2 (the top-up and the shortfall)", fac.Settles())
		}

		// Without a wallet: the quote is shown and the exit code is 4.
		token := cfg["token"].(string)
		noWallet := []string{"XDG_CONFIG_HOME=" + t.TempDir(), "SKIFF_URL=" + e.URL, "SKIFF_TOKEN=" + token}
		r := skiff(t, noWallet, "topup", "2").want(t, 4)
		if !strings.Contains(r.stderr, "Quote qt_") || !strings.Contains(r.stderr, "SKIFF_WALLET_KEY") {
			t.Errorf("topup without a wallet: %s", r.stderr)
		}
		r = skiff(t, noWallet, "run", "--detach", payload).want(t, 4)
		if !strings.Contains(r.stderr, "402") {
			t.Errorf("run without a wallet: %s", r.stderr)
		}
		// SKIFF_WALLET_KEY pays as well.
		skiff(t, append(noWallet, "SKIFF_WALLET_KEY="+strings.Repeat("5a", 32)), "topup", "1").want(t, 0, "Paid 1 USD")
	})
}
