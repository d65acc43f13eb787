package buildtest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/testenv"
)

// DebianImage is the base image DebianBase provides.
const DebianImage = "localhost/debian:bookworm"

const (
	debianMirror   = "http://deb.debian.org/debian"
	debianTarball  = "debian-bookworm-minbase.tar"
	debianLockFile = "debian-bookworm-minbase.lock"
)

// CacheDir is where slow fixtures are kept between test runs:
// $SKIFF_TEST_CACHE, else /var/cache/skiff-test for root, else
// $XDG_CACHE_HOME/skiff-test.
func CacheDir() (string, error) {
	if dir := os.Getenv("SKIFF_TEST_CACHE"); dir != "" {
		return dir, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/skiff-test", nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "skiff-test"), nil
}

// DebianBase makes DebianImage in cfg's buildah storage (cfg as from Config).
// The rootfs comes from `debootstrap --variant=minbase bookworm` (about a
// minute, network to the Debian mirror needed), cached as a tarball in
// CacheDir so that later runs only import it (a few seconds). The import is
// our own trusted content, so it uses chroot isolation.
func DebianBase(t testing.TB, cfg build.Config) {
	t.Helper()
	storage := []string{"--root", cfg.StorageRoot, "--runroot", cfg.RunRoot, "--storage-driver", "overlay"}
	if exec.Command(Buildah(), append(storage, "inspect", "--type", "image", DebianImage)...).Run() == nil {
		return
	}
	tarball := debianRootfs(t)

	ctxDir := t.TempDir()
	if err := linkOrCopy(tarball, filepath.Join(ctxDir, "rootfs.tar")); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, ctxDir, "Dockerfile", "FROM scratch\nADD rootfs.tar /\nCMD [\"/bin/bash\"]\n", 0o644)
	args := append(storage, "bud", "--isolation", "chroot", "-t", DebianImage, ctxDir)
	cmd := exec.Command(Buildah(), args...)
	if cfg.TmpDir != "" {
		cmd.Env = append(os.Environ(), "TMPDIR="+cfg.TmpDir)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("importing %s: %v\n%s", DebianImage, err, out)
	}
}

// debianRootfs returns the cached rootfs tarball, making it first if needed.
// A file lock keeps parallel test binaries from bootstrapping it twice.
func debianRootfs(t testing.TB) string {
	t.Helper()
	cache, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(cache, debianTarball)
	lock, err := os.OpenFile(filepath.Join(cache, debianLockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(tarball); err == nil {
		return tarball
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		testenv.Skip(t, "skipping: debootstrap is not installed (run make setup)")
	}

	work, err := os.MkdirTemp(cache, "bootstrap-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	rootfs := filepath.Join(work, "rootfs")
	t.Logf("bootstrapping a Debian rootfs into the test cache %s (about a minute, once)", cache)
	steps := [][]string{
		{"debootstrap", "--variant=minbase", "bookworm", rootfs, debianMirror},
		{"chroot", rootfs, "apt-get", "clean"},
		{"tar", "-C", rootfs, "--numeric-owner", "-cf", filepath.Join(work, debianTarball), "."},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", s, err, tail(out))
		}
	}
	if err := os.Rename(filepath.Join(work, debianTarball), tarball); err != nil {
		t.Fatal(err)
	}
	return tarball
}

func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}

func tail(b []byte) []byte {
	const n = 4096
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
