package build_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/build/buildtest"
)

// The CVE-2024-1753 project (issue 28): a first stage plants the symlink
// /rootdir -> /, and a RUN step binds that path from the stage. buildah before
// 1.35 resolved the symlink on the build host and bound the host's own root.

// escapeLinkSource makes the symlink /rootdir -> / in its stage.
const escapeLinkSource = `package main

import "os"

func main() {
	if err := os.Symlink("/", "/rootdir"); err != nil {
		panic(err)
	}
}
`

// escapeReaderSource lists /host and prints /host/etc/os-release between
// markers.
const escapeReaderSource = `package main

import (
	"fmt"
	"os"
)

func main() {
	entries, err := os.ReadDir("/host")
	fmt.Println("HOSTLIST-BEGIN")
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	fmt.Println("HOSTLIST-END", err)
	b, err := os.ReadFile("/host/etc/os-release")
	fmt.Printf("OSRELEASE-BEGIN\n%s\nOSRELEASE-END %v\n", b, err)
}
`

// escapeDockerfile is the Dockerfile.
const escapeDockerfile = `FROM scratch AS s
COPY mklink /mklink
RUN ["/mklink"]
FROM scratch
COPY reader /reader
RUN --mount=type=bind,from=s,source=/rootdir,target=/host ["/reader"]
COPY reader /runner
`

// TestPinnedBuildahClosesCVE20241753 runs the pinned buildah by hand, with the
// builder's own flags but without the builder's policy (which refuses from=
// before buildah ever sees it), on the escape project: /host must show the
// stage's own root, never the build host's.
func TestPinnedBuildahClosesCVE20241753(t *testing.T) {
	// No network: the steps need none, and the command then runs the same
	// under any buildah (SKIFF_BUILDAH=/usr/bin/buildah shows 1.28 failing
	// this test).
	b, cfg := newBuilder(t, func(c *build.Config) { c.Network = build.NetworkNone })
	dir := t.TempDir()
	for name, src := range map[string]string{"mklink": escapeLinkSource, "reader": escapeReaderSource} {
		bin, err := os.ReadFile(buildtest.StaticProgram(t, name, src))
		if err != nil {
			t.Fatal(err)
		}
		buildtest.WriteFile(t, dir, name, string(bin), 0o755)
	}
	buildtest.WriteFile(t, dir, "Dockerfile", escapeDockerfile, 0o644)

	path, args, env := b.BareBudCommand(build.Request{ContextDir: dir, Tag: "cve-2024-1753"}, filepath.Join(cfg.TmpDir, "iid-cve"))
	if path != buildtest.Buildah() {
		t.Fatalf("the builder runs %s, want the pinned %s", path, buildtest.Buildah())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	log := string(out)
	if err != nil {
		t.Fatalf("buildah bud: %v\n%s", err, log)
	}
	hostOS, err := os.ReadFile("/etc/os-release")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log, strings.SplitN(string(hostOS), "\n", 2)[0]) {
		t.Fatalf("the RUN step read the build host's /etc/os-release:\n%s", log)
	}
	listing := between(log, "HOSTLIST-BEGIN\n", "HOSTLIST-END")
	got := strings.Fields(listing)
	for _, name := range got {
		if name == "usr" || name == "etc" || name == "var" || name == "home" {
			t.Fatalf("/host lists %q of the build host's root: %v\n%s", name, got, log)
		}
	}
	if !strings.Contains(listing, "mklink") || !strings.Contains(listing, "rootdir") {
		t.Fatalf("/host lists %v, want the stage's own root (mklink, rootdir)\n%s", got, log)
	}
}

func between(s, begin, end string) string {
	_, after, ok := strings.Cut(s, begin)
	if !ok {
		return ""
	}
	before, _, _ := strings.Cut(after, end)
	return before
}
