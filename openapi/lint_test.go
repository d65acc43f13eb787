package openapi_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/internal/testenv"
)

// The document passes the Redocly linter with the committed ruleset
// (test/openapi/redocly.yaml) without an error or a warning.
func TestLint(t *testing.T) {
	t.Parallel()
	dir := testenv.NodeProject(t)
	// The ignore file (test/openapi/.redocly.lint-ignore.yaml) names the
	// document by this path, relative to test/openapi.
	cmd := exec.CommandContext(t.Context(), filepath.Join(dir, "node_modules", ".bin", "redocly"), "lint", "../../openapi/openapi.json",
		"--config", filepath.Join(dir, "redocly.yaml"), "--max-problems", "500", "--format", "stylish")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redocly lint openapi.json: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
