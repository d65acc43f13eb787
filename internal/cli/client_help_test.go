package cli_test

import (
	"strings"
	"testing"
)

// TestClientHelp: every client command and subcommand answers --help with
// its usage (exit 0), and a bad flag with exit 2.
func TestClientHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"login"}, {"logout"}, {"whoami"}, {"init"}, {"push"}, {"status"}, {"run"},
		{"results"}, {"balance"}, {"ledger"}, {"topup"}, {"project", "create"}, {"project", "ls"}, {"project", "show"},
		{"project", "rm"}, {"project", "prepare"}, {"kv", "get"}, {"kv", "put"}, {"kv", "ls"}, {"kv", "rm"},
		{"jobs", "ls"}, {"jobs", "show"}, {"jobs", "cancel"}, {"jobs", "watch"}, {"jobs", "logs"}, {"jobs", "tasks"}, {"jobs", "events"},
		{"artifacts", "put"}, {"artifacts", "get"}, {"artifacts", "ls"}, {"artifacts", "rm"}} {
		r := skiff(t, nil, append(args, "--help")...)
		if r.code != 0 || !strings.Contains(r.stderr, "Usage: skiff "+strings.Join(args, " ")) || !strings.Contains(r.stderr, "-json") {
			t.Errorf("skiff %v --help: exit %d\n%s", args, r.code, r.stderr)
		}
		if r := skiff(t, nil, append(args, "--no-such-flag")...); r.code != 2 {
			t.Errorf("skiff %v --no-such-flag: exit %d, want 2", args, r.code)
		}
	}
	for _, group := range []string{"project", "kv", "jobs", "artifacts"} {
		if r := skiff(t, nil, group); r.code != 2 || !strings.Contains(r.stderr, "Commands:") {
			t.Errorf("skiff %s: exit %d\n%s", group, r.code, r.stderr)
		}
	}
}
