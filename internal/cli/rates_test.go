package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// Every bad rate flag stops the server before it opens anything, naming
// the flag.
func TestServerRateFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"negative cpu rate", []string{"--rate-cpu-core-hour-usd", "-1"}, nil, "rate-cpu-core-hour-usd"},
		{"zero cpu rate", []string{"--rate-cpu-core-hour-usd", "0"}, nil, "cpu and gpu rates must be positive"},
		{"NaN cpu rate", []string{"--rate-cpu-core-hour-usd", "NaN"}, nil, "rate-cpu-core-hour-usd"},
		{"infinite cpu rate", []string{"--rate-cpu-core-hour-usd", "Inf"}, nil, "rate-cpu-core-hour-usd"},
		{"exponent cpu rate", []string{"--rate-cpu-core-hour-usd", "1e3"}, nil, "rate-cpu-core-hour-usd"},
		{"words", []string{"--rate-memory-gb-hour-usd", "cheap"}, nil, "rate-memory-gb-hour-usd"},
		{"7 decimals", []string{"--rate-memory-gb-hour-usd", "0.0000001"}, nil, "rate-memory-gb-hour-usd"},
		{"negative memory rate", []string{"--rate-memory-gb-hour-usd", "-0.5"}, nil, "rate-memory-gb-hour-usd"},
		{"huge gpu rate", []string{"--rate-gpu-hour-usd", "5000"}, nil, "above 1000 USD per hour"},
		{"far too many digits", []string{"--rate-gpu-hour-usd", "99999999999999999999"}, nil, "rate-gpu-hour-usd"},
		{"zero gpu rate", []string{"--rate-gpu-hour-usd", "0"}, nil, "must be positive"},
		{"dedicated below shared", []string{"--rate-dedicated-percent", "50"}, nil, "dedicated_percent"},
		{"not a feed URL", []string{"--price-feed-url", "ftp://rates.example/x"}, nil, "--price-feed-url"},
		{"feed without host", []string{"--price-feed-url", "http://"}, nil, "--price-feed-url"},
		{"feed interval too short", []string{"--price-feed-url", "http://127.0.0.1:1/rates", "--price-feed-interval", "1s"}, nil, "--price-feed-interval"},
		{"bad environment twin", nil, []string{"SKIFF_RATE_CPU_CORE_HOUR_USD", "-3"}, "SKIFF_RATE_CPU_CORE_HOUR_USD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"server", "--data-dir", dir, "--listen", "127.0.0.1:0"}, tc.args...)
			r := skiff(t, envList(tc.env...), args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("got exit %d, stderr %q; want a failure mentioning %q", r.code, r.stderr, tc.want)
			}
			if strings.Contains(r.stderr, "skiff server started") {
				t.Error("the server started despite a bad rate")
			}
		})
	}
}

// More bad amounts for grant-credit (TestAdminErrors has the first ones):
// nothing is granted.
func TestGrantCreditBadAmounts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, usd := range []string{"NaN", "Inf", "-0.000001", "1000000.000001", "99999999999999", "ten", "1,5", "0x10", " 5", "5 USD"} {
		r := skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "a", "--usd", usd)
		if r.code != 1 || r.stdout != "" || !(strings.Contains(r.stderr, "decimal") || strings.Contains(r.stderr, "positive")) {
			t.Errorf("--usd %q: got exit %d, stdout %q, stderr %q; want exit 1 refusing the amount", usd, r.code, r.stdout, r.stderr)
		}
	}
	// Nothing was granted: the first grant that works shows only itself.
	r := skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "a", "--usd", "1000000")
	if r.code != 0 || r.stdout != "1000000\n" {
		t.Errorf("the largest grant: got exit %d, stdout %q, stderr %q; want 1000000", r.code, r.stdout, r.stderr)
	}
}
