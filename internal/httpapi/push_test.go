package httpapi_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/server"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/sqlite"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/internal/testlog"
	"github.com/skiffhq/skiff/openapi"
)

// TestPushRejectsBadInput pushes every kind of bad body the issue lists to
// a project that has a published revision, over real HTTP. Each is answered
// as spec 4.4 and 7 say, and each leaves the published revision active and
// nothing behind: no push record, no file under <data-dir>/pushes.
//
// The server is the assembly `skiff server` runs (internal/server). With root, buildah
// and the pinned runsc the first revision is built for real; without them a
// stand-in builder publishes it, since no bad push ever reaches a builder.
func TestPushRejectsBadInput(t *testing.T) {
	ts := startPushServer(t)
	alice := ts.NewAccount(t, "alice")
	bob := ts.NewAccount(t, "bob")
	c := ts.Client(alice.Member)
	c.Post(t, "/api/v1/projects", map[string]any{"name": "app"}).Want(t, http.StatusCreated)
	ts.Client(bob.Member).Post(t, "/api/v1/projects", map[string]any{"name": "bobs"}).Want(t, http.StatusCreated)

	var good apiv1.PushRecord
	pushReq(t, c, "app", ts.project(t, minimalManifest)).JSON(t, http.StatusAccepted, &good)
	pub := waitPushed(t, c, good.StatusURL)
	if pub.Status != "published" {
		t.Fatalf("first push: got %s (%v), want published; log:\n%s", pub.Status, pub.Error, pub.LogTail)
	}
	// The build queue removes the build context just after recording the
	// end of the build; wait for that before counting leftovers.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if entries, _ := os.ReadDir(filepath.Join(ts.dataDir, "pushes")); len(entries) == 0 {
			break
		}
	}

	// stillActive checks what every refused push must leave as it was.
	stillActive := func(t *testing.T) {
		t.Helper()
		var rd apiv1.Readiness
		c.Get(t, "/api/v1/projects/app/status").JSON(t, http.StatusOK, &rd)
		if !rd.CanAcceptNewJobs || rd.ContentHash == nil || *rd.ContentHash != good.ContentHash || rd.InitState != "refreshing" {
			t.Errorf("got can_accept_new_jobs %v, content_hash %v, init_state %s; want the published revision %s still active (refreshing)",
				rd.CanAcceptNewJobs, rd.ContentHash, rd.InitState, good.ContentHash)
		}
		var latest apiv1.PushRecord
		c.Get(t, "/api/v1/projects/app/push").JSON(t, http.StatusOK, &latest)
		if latest.PushRef != good.PushRef {
			t.Errorf("GET push: got %s, want %s: a refused push left a record", latest.PushRef, good.PushRef)
		}
		entries, err := os.ReadDir(filepath.Join(ts.dataDir, "pushes"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("got %s under <data-dir>/pushes, want nothing left", e.Name())
		}
	}

	dockerfile := entry{name: "Dockerfile", body: "FROM scratch\nCOPY runner /runner\nWORKDIR /app\n"}
	runner := entry{name: "runner", body: string(ts.runner), mode: 0o755}
	manifestWith := func(m string) []entry {
		return []entry{dockerfile, runner, {name: project.ManifestFile, body: m}}
	}
	withMinimal := func(extra ...entry) []byte {
		return tgz(t, append(manifestWith(minimalManifest), extra...)...)
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	manyEntries := manifestWith(minimalManifest)
	for i := range tarballMaxEntries {
		manyEntries = append(manyEntries, entry{name: fmt.Sprintf("f/%05d", i), body: "x"})
	}

	cases := []struct {
		name        string
		body        []byte
		status      int
		wantError   string   // exact error text, when the spec fixes it
		wantDetails []string // substrings that details.problems must hold
		check       apitest.Check
	}{
		{name: "not gzip", body: []byte("PK\x03\x04 this is a zip, not a gzip stream"), status: http.StatusBadRequest,
			wantDetails: []string{"not a gzip stream"}},
		// The document requires a body, so it refuses this one as well.
		{name: "empty body", body: []byte{}, status: http.StatusBadRequest, wantDetails: []string{"empty"}, check: apitest.MustViolate},
		{name: "truncated gzip", body: withMinimal()[:200], status: http.StatusBadRequest},
		{name: "gzip of not a tar", body: gz(bytes.Repeat([]byte("not a tar archive\n"), 100)),
			status: http.StatusUnprocessableEntity, wantError: "invalid tarball"},
		{name: "gzip of a short non-tar", body: gz([]byte("hello")),
			status: http.StatusUnprocessableEntity, wantError: "invalid tarball"},
		{name: "empty tarball", body: tgz(t), status: http.StatusUnprocessableEntity,
			wantDetails: []string{"no regular files"}},
		{name: "gzip of nothing", body: gz(nil), status: http.StatusUnprocessableEntity,
			wantDetails: []string{"no regular files"}},
		{name: "no Dockerfile", body: tgz(t, runner, entry{name: project.ManifestFile, body: minimalManifest}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"build.dockerfile", "Dockerfile"}},
		{name: "no manifest", body: tgz(t, dockerfile, runner),
			status: http.StatusUnprocessableEntity, wantDetails: []string{project.ManifestFile + " is missing"}},
		{name: "manifest is not JSON", body: tgz(t, manifestWith(`{"version": 1,`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"JSON"}},
		{name: "manifest unknown field", body: tgz(t, manifestWith(strings.Replace(minimalManifest, `"version": 1`, `"version": 1, "entrypiont": {}`, 1))...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"entrypiont", "unknown field"}},
		{name: "manifest version 2", body: tgz(t, manifestWith(strings.Replace(minimalManifest, `"version": 1`, `"version": 2`, 1))...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"version"}},
		{name: "manifest runtime.kind docker", body: tgz(t, manifestWith(strings.Replace(minimalManifest, `"oci"`, `"docker"`, 1))...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"runtime.kind", "docker"}},
		{name: "manifest sandbox runc", body: tgz(t, manifestWith(strings.Replace(minimalManifest, `"gvisor"`, `"runc"`, 1))...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"runtime.sandbox", "runc"}},
		{name: "manifest relative workdir", body: tgz(t, manifestWith(strings.Replace(minimalManifest, `"/app"`, `"app"`, 1))...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"runtime.workdir"}},
		{name: "manifest without entrypoint", body: tgz(t, manifestWith(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}}`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"entrypoint"}},
		{name: "manifest runtime.init.commands", body: tgz(t, manifestWith(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app",
			"init": {"commands": ["pip install -r requirements.txt"]}}, "entrypoint": {"command": ["/runner"]}}`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"runtime.init"}},
		{name: "manifest runtime.services", body: tgz(t, manifestWith(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app",
			"services": [{"name": "db"}]}, "entrypoint": {"command": ["/runner"]}}`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"runtime.services"}},
		{name: "manifest validation.commands", body: tgz(t, manifestWith(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
			"entrypoint": {"command": ["/runner"]}, "validation": {"commands": ["/runner --check"]}}`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"validation.commands"}},
		{name: "manifest build input missing", body: tgz(t, manifestWith(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
			"entrypoint": {"command": ["/runner"]}, "build": {"inputs": ["runner", "weights/model.bin"]}}`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"build.inputs[1]", "weights/model.bin"}},
		{name: "manifest build context missing", body: tgz(t, manifestWith(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
			"entrypoint": {"command": ["/runner"]}, "build": {"context": "src"}}`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"build.context", "src"}},
		{name: "manifest cache mount seed missing", body: tgz(t, manifestWith(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
			"entrypoint": {"command": ["/runner"]}, "cache_mounts": [{"name": "pip", "path": "/cache/pip", "seed": "cache-seed"}]}`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"cache_mounts[0].seed", "cache-seed"}},
		{name: "manifest with every problem at once", body: tgz(t, manifestWith(`{"version": 1, "runtime": {"kind": "docker", "sandbox": "runc", "workdir": "app"}}`)...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"runtime.kind", "runtime.sandbox", "runtime.workdir", "entrypoint"}},
		{name: "path traversal", body: withMinimal(entry{name: "../x", body: "escape"}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"../x", ".."}},
		{name: "nested path traversal", body: withMinimal(entry{name: "a/../../x", body: "escape"}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"a/../../x"}},
		{name: "absolute path", body: withMinimal(entry{name: "/etc/cron.d/x", body: "escape"}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"/etc/cron.d/x", "absolute"}},
		{name: "symlink escaping the root", body: withMinimal(entry{name: "link", typ: tar.TypeSymlink, linkname: "../../etc/passwd"}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"link", "outside"}},
		{name: "absolute symlink", body: withMinimal(entry{name: "link", typ: tar.TypeSymlink, linkname: "/etc/passwd"}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"link", "absolute"}},
		{name: "symlink escaping through another symlink", body: withMinimal(
			entry{name: "up", typ: tar.TypeSymlink, linkname: "."},
			entry{name: "d/link", typ: tar.TypeSymlink, linkname: "../up/../up/.."}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"d/link"}},
		{name: "write through a symlink", body: withMinimal(
			entry{name: "dir", typ: tar.TypeSymlink, linkname: "."},
			entry{name: "dir/x", body: "through the link"}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"dir/x", "symlink"}},
		{name: "hard link escaping the root", body: withMinimal(entry{name: "hl", typ: tar.TypeLink, linkname: "../../etc/shadow"}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"hl"}},
		{name: "character device", body: withMinimal(entry{name: "null", typ: tar.TypeChar}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"null", "device"}},
		{name: "fifo", body: withMinimal(entry{name: "pipe", typ: tar.TypeFifo}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"pipe", "FIFO"}},
		{name: "duplicate path", body: withMinimal(entry{name: "runner", body: "second copy"}),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"duplicate", "runner"}},
		{name: "too many entries", body: tgz(t, manyEntries...),
			status: http.StatusUnprocessableEntity, wantDetails: []string{"entries"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/app/push", Body: tc.body,
				Header: http.Header{"Content-Type": {"application/octet-stream"}}, Check: tc.check}).Fail(t, tc.status)
			if tc.wantError != "" && env.Error != tc.wantError {
				t.Errorf("got error %q, want exactly %q", env.Error, tc.wantError)
			}
			if env.RecommendedAction == "" {
				t.Errorf("got no recommended_action in %v", env.Raw)
			}
			problems := fmt.Sprint(env.Details["problems"])
			for _, want := range tc.wantDetails {
				if !strings.Contains(problems, want) {
					t.Errorf("details.problems %s does not name %q", problems, want)
				}
			}
			stillActive(t)
		})
	}

	t.Run("gzip bomb", func(t *testing.T) {
		// A 1 MiB or so gzip stream that decompresses past the 1 GiB bound,
		// generated as it is sent. The first form declares its size in the
		// file header; the second hides the bytes after the end of the
		// archive, where only the decompressed-size meter can see them.
		bombs := []struct {
			name string
			gen  func(w io.Writer) error
		}{
			{"one huge file", func(w io.Writer) error {
				return tarStream(w, manifestWith(minimalManifest), "big.bin", 2<<30, zeros{})
			}},
			{"zeros after the archive", func(w io.Writer) error {
				if err := tarStream(w, manifestWith(minimalManifest), "", 0, nil); err != nil {
					return err
				}
				_, err := io.CopyN(w, zeros{}, 1<<30+1<<20)
				return err
			}},
		}
		for _, bomb := range bombs {
			t.Run(bomb.name, func(t *testing.T) {
				var sent countWriter
				var status int
				var body []byte
				peak := peakHeap(func() {
					status, body = ts.streamPush(t, alice.Member, "app", -1, gzipStream(bomb.gen, gzip.BestCompression, &sent))
				})
				if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "1 GiB") {
					t.Errorf("got %d %s, want 422 naming the 1 GiB bound", status, body)
				}
				t.Logf("sent %d compressed bytes; peak heap growth %d MiB", sent.n.Load(), peak>>20)
				if sent.n.Load() > 16<<20 {
					t.Errorf("the bomb took %d compressed bytes; the test wants a small one", sent.n.Load())
				}
				if peak > 64<<20 {
					t.Errorf("peak heap grew by %d MiB while refusing a gzip bomb, want it bounded (< 64 MiB)", peak>>20)
				}
				stillActive(t)
			})
		}
	})

	t.Run("body over 100 MB", func(t *testing.T) {
		for _, tc := range []struct {
			name          string
			contentLength int64 // -1: chunked, no Content-Length
		}{{"with Content-Length", project.MaxPushBytes + 1}, {"chunked", -1}} {
			t.Run(tc.name, func(t *testing.T) {
				// A valid gzip tarball of incompressible bytes, so that the
				// server must read past 100 MB to find it too large.
				var sent countWriter
				gen := func(w io.Writer) error {
					return tarStream(w, manifestWith(minimalManifest), "big.bin", project.MaxPushBytes+(8<<20), randomBytes())
				}
				var status int
				var body []byte
				peak := peakHeap(func() {
					r := gzipStream(gen, gzip.NoCompression, &sent)
					if tc.contentLength > 0 {
						r = io.LimitReader(r, tc.contentLength)
					}
					status, body = ts.streamPush(t, alice.Member, "app", tc.contentLength, r)
				})
				if status != http.StatusRequestEntityTooLarge {
					t.Errorf("got %d %s, want 413", status, body)
				}
				t.Logf("sent %d bytes; peak heap growth %d MiB", sent.n.Load(), peak>>20)
				if peak > 64<<20 {
					t.Errorf("peak heap grew by %d MiB during a 100 MB push, want it streamed (< 64 MiB)", peak>>20)
				}
				stillActive(t)
			})
		}
	})

	t.Run("who may push", func(t *testing.T) {
		body := withMinimal(entry{name: "v2.txt", body: "2"})
		pushReq(t, ts.Client(alice.Viewer), "app", body).Fail(t, http.StatusForbidden)
		pushReq(t, ts.Client(bob.Member), "app", body).Fail(t, http.StatusNotFound)
		pushReq(t, c, "bobs", body).Fail(t, http.StatusNotFound)
		pushReq(t, c, "nope", body).Fail(t, http.StatusNotFound)
		noToken := ts.Client("")
		noToken.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/app/push", Body: body,
			Header: http.Header{"Content-Type": {"application/octet-stream"}}, Check: apitest.MustViolate}).Fail(t, http.StatusUnauthorized)
		ts.Client("flk_not-a-real-key").Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/app/push", Body: body,
			Header: http.Header{"Content-Type": {"application/octet-stream"}}}).Fail(t, http.StatusUnauthorized)
		// Bob's project is untouched too.
		ts.Client(bob.Member).Get(t, "/api/v1/projects/bobs/push").Fail(t, http.StatusNotFound)
		stillActive(t)
	})
}

// tarballMaxEntries is tarball.DefaultMaxEntries.
const tarballMaxEntries = 10_000

// pushServer is the assembly `skiff server` runs (internal/server), with
// the test's builder at its builder seam and no local host.
type pushServer struct {
	*apitest.Env
	dataDir string
	runner  []byte
}

// project is a valid FROM scratch project with the given manifest.
func (ts *pushServer) project(t *testing.T, manifest string) []byte {
	return tgz(t,
		entry{name: "Dockerfile", body: "FROM scratch\nCOPY runner /runner\nWORKDIR /app\n"},
		entry{name: "runner", body: string(ts.runner), mode: 0o755},
		entry{name: project.ManifestFile, body: manifest})
}

const minimalManifest = `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`

func startPushServer(t *testing.T) *pushServer {
	t.Helper()
	var dataDir string
	var inner project.ImageBuilder
	ts := &pushServer{}
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.Tail(400))
		}
	})
	if toolsPresent() {
		dataDir = buildtest.DataDir(t)
		b, err := build.New(t.Context(), build.Config{
			RunscPath: runscPath(), StorageRoot: filepath.Join(dataDir, "buildah", "storage"),
			RunRoot: filepath.Join(dataDir, "run"), ImagesDir: filepath.Join(dataDir, "images"),
		}, log.With("component", "builder"))
		if err != nil {
			t.Fatalf("build.New: %v", err)
		}
		inner = build.ProjectBuilder{B: b}
		runner, err := os.ReadFile(buildtest.StaticRunner(t))
		if err != nil {
			t.Fatal(err)
		}
		ts.runner = runner
	} else {
		testenv.Partial(t, "buildah, the pinned runsc or root is missing: a stand-in builder publishes the first revision")
		dataDir = t.TempDir()
		inner = fakeBuilder{}
		ts.runner = []byte("#!/bin/false\n")
	}
	ts.dataDir = dataDir

	db, err := sqlite.Open(t.Context(), filepath.Join(dataDir, "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context(), time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(t.Context(), server.Config{DataDir: dataDir, DB: db, Listen: "127.0.0.1:0", Logger: log,
		Version: "test", DrainTimeout: 5 * time.Second, Builder: inner, Host: server.HostConfig{Disabled: true}})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	select {
	case <-srv.Ready():
	case err := <-runErr:
		t.Fatalf("server.Run: %v", err)
	}
	ts.Env = &apitest.Env{URL: srv.URL(), Server: srv.API(), Store: db, Auth: srv.Auth(), Billing: srv.Billing(),
		Projects: srv.Projects(), Jobs: srv.Jobs(), Blob: srv.Blob(), Artifacts: srv.Artifacts(), Payments: srv.Payments(),
		Broker: srv.Broker(), Metrics: srv.Metrics(), Controller: srv}
	if ts.Contract, err = apitest.LoadContract(openapi.Document, srv.API().Routes()); err != nil {
		t.Fatal(err)
	}
	return ts
}

func runscPath() string {
	if p := os.Getenv("SKIFF_RUNSC"); p != "" {
		return p
	}
	return build.DefaultRunscPath
}

// toolsPresent is buildtest.RequireTools without the skip.
func toolsPresent() bool {
	if os.Geteuid() != 0 {
		return false
	}
	if _, err := os.Stat(runscPath()); err != nil {
		return false
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "buildah")); err == nil {
			return true
		}
	}
	return false
}

// fakeBuilder publishes without building.
type fakeBuilder struct{}

func (fakeBuilder) Build(_ context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	fmt.Fprintln(req.Log, "stand-in build")
	d := "sha256:" + strings.Repeat("0", 64)
	return &project.BuildResult{ImageRef: "localhost/skiff/" + req.Tag + "@" + d, ImageDigest: d}, nil
}

func pushReq(t *testing.T, c *apitest.Client, name string, body []byte) *apitest.Response {
	t.Helper()
	return c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/" + name + "/push", Body: body,
		Header: http.Header{"Content-Type": {"application/octet-stream"}}})
}

func waitPushed(t *testing.T, c *apitest.Client, statusURL string) apiv1.PushRecord {
	t.Helper()
	return apitest.WaitPush(t, c, statusURL, 2*time.Minute, 100*time.Millisecond)
}

// streamPush sends body to the push endpoint as it is generated, without
// holding it, and checks the answer against the document.
// contentLength -1 sends it chunked.
func (ts *pushServer) streamPush(t *testing.T, token, name string, contentLength int64, body io.Reader) (int, []byte) {
	t.Helper()
	path := "/api/v1/projects/" + name + "/push"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = contentLength
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	vreq, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+path, http.NoBody)
	if err := ts.Contract.ValidateResponse(t.Context(), vreq, resp.StatusCode, resp.Header, rb); err != nil {
		t.Errorf("response does not match openapi.json: %v", err)
	}
	return resp.StatusCode, rb
}

// gzipStream runs gen into a gzip writer on the far side of a pipe: the
// body exists only as it is read. sent counts the compressed bytes.
func gzipStream(gen func(io.Writer) error, level int, sent *countWriter) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(io.MultiWriter(pw, sent), level)
		err := gen(zw)
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// tarStream writes the entries and then, when bigName is set, one file of
// bigSize bytes read from content.
func tarStream(w io.Writer, entries []entry, bigName string, bigSize int64, content io.Reader) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if err := writeEntry(tw, e); err != nil {
			return err
		}
	}
	if bigName != "" {
		if err := tw.WriteHeader(&tar.Header{Name: bigName, Mode: 0o644, Size: bigSize, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, content, bigSize); err != nil {
			return err
		}
	}
	return tw.Close()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// randomBytes is a fast source of incompressible bytes.
func randomBytes() io.Reader {
	return rand.NewChaCha8([32]byte{1, 2, 3})
}

type countWriter struct{ n atomic.Int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// peakHeap runs fn and returns how far the live heap grew above where it
// was before, sampled every few milliseconds.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
					peak.Store(ms.HeapAlloc - base)
				}
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// entry is one tar entry of a test tarball.
type entry struct {
	name     string
	body     string
	mode     int64
	typ      byte
	linkname string
}

func writeEntry(tw *tar.Writer, e entry) error {
	hdr := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.typ, Linkname: e.linkname,
		Size: int64(len(e.body)), ModTime: time.Unix(1_700_000_000, 0)}
	if hdr.Typeflag == 0 {
		hdr.Typeflag = tar.TypeReg
	}
	if hdr.Typeflag != tar.TypeReg {
		hdr.Size = 0
	}
	if hdr.Mode == 0 {
		hdr.Mode = 0o644
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeReg {
		_, err := tw.Write([]byte(e.body))
		return err
	}
	return nil
}

func tgz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := writeEntry(tw, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPushDuringInit: a push while an init prepares the runtime on a host
// answers 409 with the readiness fields and no active push, and keeps
// nothing; a preparation abandoned longer than setup_timeout_s ago (a crash)
// does not block pushes.
func TestPushDuringInit(t *testing.T) {
	ts := startPushServer(t)
	alice := ts.NewAccount(t, "alice")
	c := ts.Client(alice.Member)
	c.Post(t, "/api/v1/projects", map[string]any{"name": "app", "setup_timeout_s": 60}).Want(t, http.StatusCreated)
	p, err := ts.Store.ProjectGetByName(t.Context(), alice.ID, "app")
	if err != nil {
		t.Fatal(err)
	}
	prep := func(at time.Time) {
		t.Helper()
		if _, err := ts.Store.RuntimePrepPut(t.Context(), &store.RuntimePrepPutParams{ProjectID: p.ID, HostID: "wkr_test",
			ContentHash: "sha256:x", ImageDigest: "sha256:y", Status: store.RuntimePreparing, Now: at}); err != nil {
			t.Fatal(err)
		}
	}
	prep(time.Now())
	env := pushReq(t, c, "app", ts.project(t, minimalManifest)).Fail(t, http.StatusConflict)
	for _, k := range []string{"init_state", "ready_for_jobs", "next_action", "active_push"} {
		if _, ok := env.Raw[k]; !ok {
			t.Errorf("409 body lacks %s: %v", k, env.Raw)
		}
	}
	if env.Raw["active_push"] != nil || env.Raw["code"] != "init_in_progress" {
		t.Errorf("409 body: %v, want code init_in_progress and active_push null", env.Raw)
	}
	if entries, _ := os.ReadDir(filepath.Join(ts.dataDir, "pushes")); len(entries) != 0 {
		t.Errorf("a refused push left %d push dirs", len(entries))
	}
	prep(time.Now().Add(-2 * time.Minute))
	pushReq(t, c, "app", ts.project(t, minimalManifest)).Want(t, http.StatusAccepted)
}

// TestPushInterruptedUpload: a client that stops sending before the end of
// its declared body gets a 400 upload_interrupted (not a 500, not "invalid
// tarball"), and nothing of the push is kept.
func TestPushInterruptedUpload(t *testing.T) {
	ts := startPushServer(t)
	alice := ts.NewAccount(t, "alice")
	ts.Client(alice.Member).Post(t, "/api/v1/projects", map[string]any{"name": "app"}).Want(t, http.StatusCreated)
	body := ts.project(t, minimalManifest)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/projects/app/push HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/gzip\r\nContent-Length: %d\r\n\r\n", alice.Member, len(body))
	if _, err := conn.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), "upload_interrupted") {
		t.Errorf("got %d %s, want 400 upload_interrupted", resp.StatusCode, got)
	}
	if entries, _ := os.ReadDir(filepath.Join(ts.dataDir, "pushes")); len(entries) != 0 {
		t.Errorf("an interrupted push left %d push dirs", len(entries))
	}
}
