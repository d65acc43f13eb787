package buildtest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/skiffhq/skiff/internal/build"
)

// PythonImage is the base image PythonBase provides, under the name that
// `FROM python:3.12-slim` resolves to (containers' short-name alias).
const PythonImage = "docker.io/library/python:3.12-slim"

// PythonBase makes PythonImage in cfg's buildah storage (cfg as from Config
// or a build.Builder's Config): DebianImage with Debian's python3 (3.11,
// close enough for a stand-in) and a `python` command, as the official
// image has. No registry is reachable here, so examples written
// `FROM python:3.12-slim` build from it. Installing python3 reaches
// Debian's mirror and takes about 15 s; the Debian rootfs is cached.
func PythonBase(t testing.TB, cfg build.Config) {
	t.Helper()
	storage := []string{"--root", cfg.StorageRoot, "--runroot", cfg.RunRoot, "--storage-driver", "overlay"}
	if exec.Command(Buildah(), append(storage, "inspect", "--type", "image", PythonImage)...).Run() == nil {
		return
	}
	DebianBase(t, cfg)
	ctxDir := t.TempDir()
	WriteFile(t, ctxDir, "Dockerfile", "FROM "+DebianImage+"\n"+
		"RUN apt-get update && apt-get install -y --no-install-recommends python3 && rm -rf /var/lib/apt/lists/* && "+
		"ln -s /usr/bin/python3 /usr/local/bin/python\n"+
		"CMD [\"python3\"]\n", 0o644)
	// Our own trusted content, like DebianBase: chroot isolation.
	args := append(append(storage, "bud", "--isolation", "chroot", "--pull=never"), build.ChrootUlimits()...)
	args = append(args, "-t", PythonImage, ctxDir)
	cmd := exec.Command(Buildah(), args...)
	if cfg.TmpDir != "" {
		cmd.Env = append(os.Environ(), "TMPDIR="+cfg.TmpDir)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", PythonImage, err, tail(out))
	}
}
