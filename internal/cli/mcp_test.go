package cli_test

import (
	"strings"
	"testing"
)

// skiff mcp has its usage, refuses positional arguments and, without a
// login, exits 3 before speaking MCP (stdout stays empty: it belongs to
// the protocol).
func TestMCPCommand(t *testing.T) {
	t.Parallel()
	r := skiff(t, nil, "mcp", "--help")
	if r.code != 0 || !strings.Contains(r.stderr, "Usage: skiff mcp") || !strings.Contains(r.stderr, "-token") ||
		!strings.Contains(r.stderr, "SKIFF_URL") {
		t.Errorf("skiff mcp --help: exit %d\n%s", r.code, r.stderr)
	}
	if r := skiff(t, nil, "mcp", "extra"); r.code != 2 {
		t.Errorf("skiff mcp extra: exit %d, want 2", r.code)
	}
	r = skiff(t, []string{"SKIFF_URL=http://127.0.0.1:1"}, "mcp")
	if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, "not logged in") {
		t.Errorf("skiff mcp without a token: exit %d\nstdout %q\nstderr %s", r.code, r.stdout, r.stderr)
	}
}
