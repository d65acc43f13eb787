package build_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/build/buildtest"
)

// These tests build real images with buildah, RUN steps in runsc. They do not
// call t.Parallel: on 2 cores parallel builds only slow each other, and the
// timeout test counts processes.

func newBuilder(t testing.TB, edit func(*build.Config)) (*build.Builder, build.Config) {
	t.Helper()
	cfg := buildtest.Config(t)
	if edit != nil {
		edit(&cfg)
	}
	b, err := build.New(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b, b.Config()
}

// readImageFile returns one file's content from the image in a layout,
// flattened the way a host unpacks it.
func readImageFile(t *testing.T, layoutDir, name string) (string, bool) {
	t.Helper()
	p, err := layout.FromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("index manifest: %v, %d manifests, want 1", err, len(im.Manifests))
	}
	img, err := p.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", false
		}
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Clean("/"+hdr.Name) == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(b), true
		}
	}
}

func wantUserError(t *testing.T, err error, kind build.FailureKind) *build.UserError {
	t.Helper()
	ue, ok := build.AsUserError(err)
	if !ok {
		t.Fatalf("got error %v, want a user error of kind %s", err, kind)
	}
	if ue.Kind != kind {
		t.Fatalf("got user error kind %s (%v), want %s", ue.Kind, ue, kind)
	}
	return ue
}

func TestBuildScratchProject(t *testing.T) {
	b, _ := newBuilder(t, nil)
	ctxDir := buildtest.ScratchProject(t, "")
	req := build.Request{
		ContextDir:          ctxDir,
		Tag:                 "scratch-1",
		Timeout:             2 * time.Minute,
		ValidateExecutables: []string{"/usr/local/bin/runner", "runner"},
		ValidateFiles:       []string{"/usr/local/bin/runner"},
	}
	res, err := b.Build(t.Context(), req)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if !strings.HasPrefix(res.ImageDigest, "sha256:") || len(res.ImageDigest) != 71 {
		t.Errorf("got digest %q, want sha256:<64 hex>", res.ImageDigest)
	}
	if want := filepath.Join(b.Config().ImagesDir, strings.TrimPrefix(res.ImageDigest, "sha256:")); res.LayoutDir != want {
		t.Errorf("got layout dir %q, want %q", res.LayoutDir, want)
	}
	if res.Reused {
		t.Error("first build reported Reused")
	}
	runner, ok := readImageFile(t, res.LayoutDir, "/usr/local/bin/runner")
	if want, _ := os.ReadFile(filepath.Join(ctxDir, "runner")); !ok || runner != string(want) {
		t.Errorf("unpacked /usr/local/bin/runner: found %v, %d bytes; want the %d-byte runner", ok, len(runner), len(want))
	}

	t.Run("rebuild keeps the digest", func(t *testing.T) {
		again, err := b.Build(t.Context(), req)
		if err != nil {
			t.Fatalf("rebuild: %v", err)
		}
		if again.ImageDigest != res.ImageDigest || !again.Reused {
			t.Errorf("got digest %s reused=%v, want %s reused=true", again.ImageDigest, again.Reused, res.ImageDigest)
		}
	})

	t.Run("validation names every missing path", func(t *testing.T) {
		bad := req
		bad.ValidateExecutables = []string{"/usr/local/bin/runner", "/usr/bin/python3"}
		bad.ValidateFiles = []string{"/app/model.bin"}
		_, err := b.Build(t.Context(), bad)
		ue := wantUserError(t, err, build.FailureValidation)
		for _, want := range []string{"/usr/bin/python3", "/app/model.bin"} {
			if !strings.Contains(ue.Error(), want) {
				t.Errorf("got %q, want it to name %s", ue, want)
			}
		}
		if strings.Contains(ue.Error(), "runner") {
			t.Errorf("got %q, which names the runner that does exist", ue)
		}
	})

	t.Run("reset layer cache", func(t *testing.T) {
		if err := b.ResetLayerCache(t.Context()); err != nil {
			t.Fatalf("ResetLayerCache: %v", err)
		}
		log := build.NewTailWriter(build.DefaultLogTailBytes)
		again := req
		again.Log = log
		if _, err := b.Build(t.Context(), again); err != nil {
			t.Fatalf("build after reset: %v", err)
		}
		if strings.Contains(log.String(), "Using cache") {
			t.Errorf("build after a reset used the cache:\n%s", log)
		}
	})

	t.Run("policy refuses another image before building", func(t *testing.T) {
		dir := buildtest.ScratchProject(t, "FROM scratch\nCOPY --from=0123abcd / /\n")
		_, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: "evil"})
		ue := wantUserError(t, err, build.FailureRejected)
		if !strings.Contains(ue.Error(), "looks like an image ID") {
			t.Errorf("got %q, want it to say why", ue)
		}
	})
}

func TestBuildFailingRunStep(t *testing.T) {
	b, _ := newBuilder(t, nil)
	dir := buildtest.ScratchProject(t, `FROM scratch
COPY runner /usr/local/bin/runner
RUN ["/usr/local/bin/runner", "fail", "the-step-said-no"]
`)
	log := build.NewTailWriter(build.DefaultLogTailBytes)
	_, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: "fails", Log: log})
	ue := wantUserError(t, err, build.FailureBuild)
	if !strings.Contains(ue.Error(), "exit status") || !strings.Contains(ue.Error(), "RUN") {
		t.Errorf("got message %q, want the failing step and its exit status", ue)
	}
	if !strings.Contains(log.String(), "the-step-said-no") {
		t.Errorf("log tail %q lacks the failing command's output", log.String())
	}
}

func TestRunStepsAreSandboxed(t *testing.T) {
	b, cfg := newBuilder(t, nil)
	dataDir := filepath.Dir(filepath.Dir(cfg.StorageRoot))
	secret := filepath.Join(dataDir, "secret.txt")
	if err := os.WriteFile(secret, []byte("controller-secret-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := buildtest.ScratchProject(t, `FROM scratch
COPY runner /usr/local/bin/runner
RUN ["/usr/local/bin/runner", "copy", "/proc/version", "/kernel.txt"]
RUN ["/usr/local/bin/runner", "cat", "`+secret+`"]
RUN ["/usr/local/bin/runner", "ls", "`+cfg.StorageRoot+`", "`+cfg.ImagesDir+`"]
`)
	log := build.NewTailWriter(build.DefaultLogTailBytes)
	res, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: "sandboxed", Log: log})
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, log)
	}
	kernel, ok := readImageFile(t, res.LayoutDir, "/kernel.txt")
	if !ok || !strings.Contains(strings.ToLower(kernel), "gvisor") {
		t.Errorf("RUN saw kernel %q, want gVisor's", kernel)
	}
	out := log.String()
	if strings.Contains(out, "controller-secret-value") {
		t.Fatalf("a RUN step read the controller's secret:\n%s", out)
	}
	for _, want := range []string{
		"cat " + secret + ": open " + secret + ": no such file or directory",
		"ls " + cfg.StorageRoot + ": err=open " + cfg.StorageRoot + ": no such file or directory",
		"ls " + cfg.ImagesDir + ": err=open " + cfg.ImagesDir + ": no such file or directory",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("build log lacks %q:\n%s", want, out)
		}
	}
}

func TestBuildTimeoutKillsEverything(t *testing.T) {
	b, cfg := newBuilder(t, nil)
	dir := buildtest.ScratchProject(t, `FROM scratch
COPY runner /usr/local/bin/runner
RUN ["/usr/local/bin/runner", "sleep", "600"]
`)
	dataDir := filepath.Dir(filepath.Dir(cfg.StorageRoot))

	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: "sleeps", Timeout: 3 * time.Second})
		ue := wantUserError(t, err, build.FailureTimeout)
		if !strings.Contains(ue.Error(), "timeout of 3s") {
			t.Errorf("got %q, want it to say it ran past its timeout", ue)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("Build took %s to give up, want a few seconds", took)
		}
		buildtest.WantNothingLeft(t, dataDir)
	})

	t.Run("shutdown", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(3*time.Second, cancel)
		_, err := b.Build(ctx, build.Request{ContextDir: dir, Tag: "sleeps"})
		if _, ok := build.AsUserError(err); ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want an infrastructure error wrapping context.Canceled", err)
		}
		buildtest.WantNothingLeft(t, dataDir)
	})
}

func TestBuildRealisticPythonProject(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the Debian + apt-get build in -short mode")
	}
	b, cfg := newBuilder(t, func(c *build.Config) {
		c.AllowedBaseImages = []string{buildtest.DebianImage}
	})
	buildtest.DebianBase(t, cfg)
	dir := t.TempDir()
	buildtest.WriteFile(t, dir, "Dockerfile", `FROM `+buildtest.DebianImage+`
RUN apt-get update && apt-get install -y --no-install-recommends python3 && rm -rf /var/lib/apt/lists/*
COPY main.py /app/main.py
WORKDIR /app
CMD ["python3", "/app/main.py"]
`, 0o644)
	buildtest.WriteFile(t, dir, "main.py", "print('hello, v1')\n", 0o644)
	req := build.Request{
		ContextDir:          dir,
		Tag:                 "python-1",
		Timeout:             5 * time.Minute,
		ValidateExecutables: []string{"python3", "/usr/bin/python3"},
		ValidateFiles:       []string{"main.py"},
	}
	log := build.NewTailWriter(build.DefaultLogTailBytes)
	req.Log = log
	first, err := b.Build(t.Context(), req)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, log)
	}
	t.Logf("cold build %s (buildah %s, export %s, validate %s)", first.Duration,
		first.Timings.Build, first.Timings.Export, first.Timings.Validate)
	if main, ok := readImageFile(t, first.LayoutDir, "/app/main.py"); !ok || !strings.Contains(main, "v1") {
		t.Errorf("got /app/main.py %q, want v1", main)
	}

	buildtest.WriteFile(t, dir, "main.py", "print('hello, v2')\n", 0o644)
	req.Tag = "python-2"
	relog := build.NewTailWriter(build.DefaultLogTailBytes)
	req.Log = relog
	second, err := b.Build(t.Context(), req)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	t.Logf("code-only rebuild %s (buildah %s, export %s, validate %s)", second.Duration,
		second.Timings.Build, second.Timings.Export, second.Timings.Validate)
	if second.ImageDigest == first.ImageDigest {
		t.Error("a code change kept the digest")
	}
	// The steps before the code's COPY come from the layer cache (buildah
	// says so), which is what makes a code-only rebuild fast; the time is
	// logged above, not asserted (these machines are noisy).
	if !strings.Contains(relog.String(), "Using cache") {
		t.Errorf("the code-only rebuild used no cached layer; its log:\n%s", relog)
	}
	// Layers the two revisions share are stored once.
	if shared := sharedBlobs(t, first.LayoutDir, second.LayoutDir); shared < 2 {
		t.Errorf("got %d blobs shared by hard link between the revisions, want the base and apt layers", shared)
	}
}

// sharedBlobs counts the blobs two layouts share as one inode.
func sharedBlobs(t *testing.T, a, b string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(a, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		ia, errA := os.Stat(filepath.Join(a, "blobs", "sha256", e.Name()))
		ib, errB := os.Stat(filepath.Join(b, "blobs", "sha256", e.Name()))
		if errA == nil && errB == nil && os.SameFile(ia, ib) {
			n++
		}
	}
	return n
}

// Chroot isolation is the trusted-development escape hatch; it must still
// build, and it is not gVisor.
func TestBuildChrootIsolation(t *testing.T) {
	b, _ := newBuilder(t, func(c *build.Config) { c.Isolation = build.IsolationChroot })
	dir := buildtest.ScratchProject(t, `FROM scratch
COPY runner /usr/local/bin/runner
RUN ["/usr/local/bin/runner", "write", "/ran.txt", "ok"]
`)
	res, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: "chroot", ValidateFiles: []string{"/ran.txt"}})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if got, _ := readImageFile(t, res.LayoutDir, "/ran.txt"); got != "ok" {
		t.Errorf("got /ran.txt %q, want ok", got)
	}
}

// TestBuildTarget: build.target selects the stage that becomes the image.
func TestBuildTarget(t *testing.T) {
	b, _ := newBuilder(t, nil)
	dir := buildtest.ScratchProject(t, `FROM scratch AS tools
COPY runner /usr/local/bin/runner

FROM scratch AS app
COPY runner /other/runner
`)
	res, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: "target-tools", Target: "tools", Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if _, ok := readImageFile(t, res.LayoutDir, "/usr/local/bin/runner"); !ok {
		t.Error("target tools: /usr/local/bin/runner missing")
	}
	if _, ok := readImageFile(t, res.LayoutDir, "/other/runner"); ok {
		t.Error("target tools: the later stage's /other/runner is in the image")
	}
	if _, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: "target-none", Target: "nope", Timeout: 2 * time.Minute}); err == nil {
		t.Error("an unknown target built")
	} else if _, ok := build.AsUserError(err); !ok {
		t.Errorf("unknown target: %v, want a user error", err)
	}
}
