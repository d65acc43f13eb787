package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/cli"
)

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		code  int
		flags []string // each must be explained with its environment twin
		words []string // other things the help must name
	}{
		{[]string{"--help"}, 0, nil, []string{"server", "admin", "version", "--help"}},
		{[]string{"help"}, 0, nil, []string{"server", "admin", "version"}},
		{[]string{}, 2, nil, []string{"server", "admin"}},
		{[]string{"server", "--help"}, 0, []string{"data-dir", "database-url", "listen", "drain-timeout", "log-level", "trusted-proxy", "waitlist-rate", "feedback-rate"},
			[]string{"SIGTERM", "migrate"}},
		{[]string{"server", "-h"}, 0, []string{"data-dir", "database-url", "listen", "drain-timeout", "log-level"}, nil},
		{[]string{"server", "migrate", "--help"}, 0, []string{"data-dir", "database-url"}, nil},
		{[]string{"admin", "--help"}, 0, nil, []string{"create-key", "grant-credit", "waitlist", "feedback", "skiff admin <command> --help"}},
		{[]string{"admin"}, 2, nil, []string{"create-key", "grant-credit"}},
		{[]string{"admin", "create-key", "--help"}, 0, []string{"data-dir", "database-url", "account", "role"}, []string{"member", "viewer", "admin"}},
		{[]string{"admin", "grant-credit", "--help"}, 0, []string{"data-dir", "database-url", "account", "usd", "note"}, nil},
		{[]string{"admin", "waitlist", "--help"}, 0, []string{"data-dir", "database-url", "json", "limit", "offset"}, nil},
		{[]string{"admin", "feedback", "--help"}, 0, []string{"data-dir", "database-url", "json", "limit", "offset"}, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runMain(tc.args...)
			if code != tc.code {
				t.Errorf("got exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			if stdout != "" {
				t.Errorf("got stdout %q, want help on stderr only", stdout)
			}
			for _, w := range tc.words {
				if !strings.Contains(stderr, w) {
					t.Errorf("help does not mention %q:\n%s", w, stderr)
				}
			}
			for _, f := range tc.flags {
				if !explains(stderr, f) {
					t.Errorf("help does not explain -%s with its environment twin:\n%s", f, stderr)
				}
			}
			if tc.flags != nil {
				// No flag goes unexplained: every "-name" entry has a
				// description and names its environment twin.
				for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(stderr, -1) {
					if !explains(stderr, m[1]) {
						t.Errorf("help lists -%s without explaining it and its environment twin:\n%s", m[1], stderr)
					}
				}
			}
		})
	}
	code, _, stderr := runMain("frobnicate")
	if code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: got exit %d, stderr %q; want 2 naming it", code, stderr)
	}
	code, stdout, _ := runMain("version")
	if code != 0 || strings.TrimSpace(stdout) != cli.Version {
		t.Errorf("version: got exit %d, stdout %q; want 0 and %q", code, stdout, cli.Version)
	}
}

// explains reports whether help has an entry for flag -name: the flag line
// and an indented description naming the environment twin.
func explains(help, name string) bool {
	twin := "SKIFF_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		if !regexp.MustCompile(`^  -` + regexp.QuoteMeta(name) + `(\s|$)`).MatchString(l) {
			continue
		}
		desc := strings.TrimSpace(strings.TrimPrefix(l, "  -"+name))
		for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], "    "); j++ {
			desc += " " + strings.TrimSpace(lines[j])
		}
		return strings.Contains(desc, twin) && len(desc) > len(twin)+10
	}
	return false
}

func TestAdminErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no account", []string{"create-key", "--data-dir", dir}, 1, "--account is required"},
		{"unknown role", []string{"create-key", "--data-dir", dir, "--account", "a", "--role", "owner"}, 1, "role"},
		{"bad account name", []string{"create-key", "--data-dir", dir, "--account", "bad name!"}, 1, "account name"},
		{"unknown flag", []string{"create-key", "--bogus"}, 2, "flag provided but not defined"},
		{"no amount", []string{"grant-credit", "--data-dir", dir, "--account", "a"}, 1, "--usd"},
		{"exponent amount", []string{"grant-credit", "--data-dir", dir, "--account", "a", "--usd", "1e3"}, 1, "decimal"},
		{"negative amount", []string{"grant-credit", "--data-dir", dir, "--account", "a", "--usd", "-5"}, 1, "positive"},
		{"zero amount", []string{"grant-credit", "--data-dir", dir, "--account", "a", "--usd", "0"}, 1, "positive"},
		{"7 decimals", []string{"grant-credit", "--data-dir", dir, "--account", "a", "--usd", "0.0000001"}, 1, "decimal"},
		{"unknown command", []string{"nope"}, 2, "create-key"},
		{"not a postgres URL", []string{"create-key", "--database-url", "mysql://x", "--account", "a"}, 1, "postgres://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := skiff(t, nil, append([]string{"admin"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("got exit %d, stderr %q; want %d mentioning %q", r.code, r.stderr, tc.code, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("got stdout %q, want nothing on a failure", r.stdout)
			}
		})
	}
}
