// Package buildtest holds fixtures for tests that build real images with
// buildah and runsc: a tool check that skips cleanly, a throwaway data
// directory, a static Go program to put in FROM scratch images, and a local
// Debian base image made with debootstrap (no registry is reachable here).
package buildtest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/testenv"
)

// RequireTools skips t (testenv.Skip) unless the process is root and the
// pinned buildah (build.DefaultBuildahPath, or $SKIFF_BUILDAH) and the pinned
// runsc (build.DefaultRunscPath, or $SKIFF_RUNSC) are installed. `make setup`
// installs them. Debian's buildah on PATH does not count: it has
// CVE-2024-1753 open. It returns the runsc path; Buildah returns buildah's.
func RequireTools(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "skipping: building images with buildah and runsc needs root")
	}
	if _, err := os.Stat(Buildah()); err != nil {
		testenv.Skipf(t, "skipping: the pinned buildah is not at %s (run make setup)", Buildah())
	}
	runsc := os.Getenv("SKIFF_RUNSC")
	if runsc == "" {
		runsc = build.DefaultRunscPath
	}
	if _, err := os.Stat(runsc); err != nil {
		testenv.Skipf(t, "skipping: the pinned runsc is not at %s (run make setup)", runsc)
	}
	return runsc
}

// Buildah is the pinned buildah the tests build with: $SKIFF_BUILDAH, or
// build.DefaultBuildahPath.
func Buildah() string {
	if p := os.Getenv("SKIFF_BUILDAH"); p != "" {
		return p
	}
	return build.DefaultBuildahPath
}

// DataDir returns a fresh data directory that is unmounted and removed when
// the test ends. Its path is short on purpose: runsc's sockets live under it
// and unix socket paths must fit in 108 bytes.
func DataDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "skb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := removeDataDir(dir); err != nil {
			t.Errorf("removing data dir: %v", err)
		}
		// A server started on dir keeps buildah's and runsc's run state
		// in the default run root of its storage (under /run/skiff).
		if err := removeDataDir(build.DefaultRunRoot(filepath.Join(dir, "buildah", "storage"))); err != nil {
			t.Errorf("removing the data dir's run root: %v", err)
		}
	})
	return dir
}

// Config returns a builder configuration rooted in a fresh DataDir, with
// gVisor isolation and the runsc RequireTools found.
func Config(t testing.TB) build.Config {
	t.Helper()
	runsc := RequireTools(t)
	data := DataDir(t)
	return build.Config{
		BuildahPath: Buildah(),
		RunscPath:   runsc,
		StorageRoot: filepath.Join(data, "buildah", "storage"),
		RunRoot:     filepath.Join(data, "run"),
		ImagesDir:   filepath.Join(data, "images"),
	}
}

// removeDataDir unmounts whatever buildah and runsc left mounted under dir
// (containers/storage bind-mounts its overlay directory onto itself, runsc
// keeps a network namespace mount), deepest first, then removes it.
// Removing through a live mount would reach into other file systems.
func removeDataDir(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	return os.RemoveAll(dir)
}

func mountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	prefix := filepath.Clean(dir) + "/"
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.HasPrefix(fields[4], prefix) {
			out = append(out, fields[4])
		}
	}
	return out, nil
}
