package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodeProject returns the directory of the repository's Node tooling
// (test/openapi: the OpenAPI linter, the client generator, the HTML
// validator), found from the test's working directory upwards. When node
// or the installed packages (npm ci, run by scripts/setup.sh) are missing,
// the test is skipped, and fails under SKIFF_TEST_REQUIRE_ALL=1.
func NodeProject(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		Skip(t, "node is not installed (scripts/setup.sh installs it)")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "test", "openapi")
		if _, err := os.Stat(filepath.Join(p, "package.json")); err == nil {
			if _, err := os.Stat(filepath.Join(p, "node_modules", ".package-lock.json")); err != nil {
				Skip(t, "test/openapi/node_modules is missing: run scripts/setup.sh (npm ci in test/openapi)")
			}
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("test/openapi/package.json not found above the test's directory")
		}
		dir = parent
	}
}
