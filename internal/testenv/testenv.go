// Package testenv decides what a test does when a real part it needs (a
// PostgreSQL server, root, runsc, buildah, debootstrap, a Go toolchain) is
// missing here.
//
// Locally such a test skips, so that `go test ./...` works on a laptop. In
// CI a skip would hide a broken install behind a green run, so with
// SKIFF_TEST_REQUIRE_ALL=1 (set by .ci/run) every such skip, every stand-in
// used in place of the real part and every check left out for want of it
// fails the test instead.
//
// Skips that -short asks for are not missing parts: they stay skips under
// the switch (CI does not pass -short), and tests call t.Skip for them
// directly.
package testenv

import (
	"os"
	"testing"
)

// EnvRequireAll names the switch.
const EnvRequireAll = "SKIFF_TEST_REQUIRE_ALL"

// RequireAll reports whether every real part must be present.
func RequireAll() bool {
	return os.Getenv(EnvRequireAll) == "1"
}

// Skip skips t for want of a real part, or fails it under RequireAll.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if RequireAll() {
		t.Fatalf("%s=1 but a part this test needs is missing: %s", EnvRequireAll, reason)
	}
	t.Skip(reason)
}

// Skipf is Skip with a format.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	if RequireAll() {
		t.Fatalf(EnvRequireAll+"=1 but a part this test needs is missing: "+format, args...)
	}
	t.Skipf(format, args...)
}

// Partial is called where a test goes on without a missing part: with a
// stand-in for it (a fake builder for buildah, say), or with the checks that
// need it left out. Under RequireAll it fails t; otherwise it logs what the
// test leaves out and returns.
func Partial(t testing.TB, reason string) {
	t.Helper()
	if RequireAll() {
		t.Fatalf("%s=1 but a part this test needs is missing, so it would check less: %s", EnvRequireAll, reason)
	}
	t.Logf("checking less: %s", reason)
}
