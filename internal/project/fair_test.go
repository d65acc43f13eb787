package project_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
)

// The fair shares of docs/security.md on the service: builds take turns
// across accounts, and each per-account cap answers with its envelope and
// leaves nothing behind. The queue's order is what these tests watch, so
// most use stepBuilder, a fake builder; test/security/fair_shares_test.go
// runs the same attack through the real binary and buildah.

// stepBuilder is a FAKE builder: each build reports its push on started and
// then waits until the test ends it (finish) or the queue stops.
type stepBuilder struct {
	started chan string
	mu      sync.Mutex
	gates   map[string]chan struct{}
}

func newStepBuilder() *stepBuilder {
	return &stepBuilder{started: make(chan string, 64), gates: map[string]chan struct{}{}}
}

func (b *stepBuilder) gate(pushID string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.gates[pushID]
	if g == nil {
		g = make(chan struct{})
		b.gates[pushID] = g
	}
	return g
}

func (b *stepBuilder) Build(ctx context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	g := b.gate(req.PushID)
	b.started <- req.PushID
	select {
	case <-g:
		return &project.BuildResult{ImageRef: "localhost/skiff/" + req.Tag, ImageDigest: "sha256:" + strings.Repeat("a", 64)}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// finish lets the build of pushID end (published).
func (b *stepBuilder) finish(pushID string) { close(b.gate(pushID)) }

// next is the push whose build starts next.
func (b *stepBuilder) next(t *testing.T) string {
	t.Helper()
	select {
	case id := <-b.started:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no build started within 30s")
		return ""
	}
}

// fakeProject is a valid tarball; n makes its content, and so its push, distinct.
func fakeProject(t *testing.T, n string) []byte {
	return scratchProject(t, []byte("#!/bin/sh\n"), scratchDockerfile, minimalManifest, entry{name: "n.txt", body: n})
}

// eachEngine runs fn on SQLite and PostgreSQL.
func eachEngine(t *testing.T, fn func(t *testing.T, db store.Store)) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			if eng.Skip != "" {
				t.Skip(eng.Skip)
			}
			fn(t, eng.Open(t))
		})
	}
}

// TestBuildsTakeTurnsAcrossAccounts: account A queues four builds, then B
// pushes one. With one worker, B's build is the next to start once A's
// first ends (not after all of A's); with two workers, where one account
// may hold only one, B's starts at once, beside A's first.
func TestBuildsTakeTurnsAcrossAccounts(t *testing.T) {
	eachEngine(t, func(t *testing.T, db store.Store) {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
				fb := newStepBuilder()
				ts := startServer(t, serverOptions{Store: db, Builder: fb, BuildWorkers: workers})
				a := ts.Client(ts.NewAccount(t, fmt.Sprintf("alice%d", workers)).Member)
				b := ts.Client(ts.NewAccount(t, fmt.Sprintf("bob%d", workers)).Member)
				var aPushes []apiv1.PushRecord
				for i := range 4 {
					name := fmt.Sprintf("a%d", i)
					createProject(t, a, name)
					aPushes = append(aPushes, pushAccepted(t, a, name, fakeProject(t, name)))
				}
				if got := fb.next(t); got != aPushes[0].PushRef {
					t.Fatalf("first build %s, want A's first %s", got, aPushes[0].PushRef)
				}
				createProject(t, b, "b0")
				bPush := pushAccepted(t, b, "b0", fakeProject(t, "b0"))
				if workers == 1 {
					fb.finish(aPushes[0].PushRef)
				}
				if got := fb.next(t); got != bPush.PushRef {
					t.Fatalf("after A's first build, %s started; want B's %s before A's other three", got, bPush.PushRef)
				}
				fb.finish(bPush.PushRef)
				if workers == 2 {
					fb.finish(aPushes[0].PushRef)
				}
				for _, want := range aPushes[1:] {
					if got := fb.next(t); got != want.PushRef {
						t.Fatalf("build %s started, want A's pushes in order (%s)", got, want.PushRef)
					}
					fb.finish(want.PushRef)
				}
				bRec := waitPush(t, b, bPush.StatusURL, 30*time.Second)
				lastA := waitPush(t, a, aPushes[3].StatusURL, 30*time.Second)
				if bRec.Status != "published" || lastA.Status != "published" {
					t.Fatalf("B's push %s, A's last %s; want both published", bRec.Status, lastA.Status)
				}
				if !bRec.FinishedAt.Before(*lastA.StartedAt) {
					t.Errorf("B's build finished at %s, after A's last started (%s)", bRec.FinishedAt, lastA.StartedAt)
				}
			})
		}
	})
}

// TestPushQuotas: an account's queued and building pushes are capped (429
// build_queue_full) and so are its pushes uploading at once (429
// too_many_uploads); both are checked before the body is read, so a
// refused push stages nothing and records nothing. The cap is per account,
// and queued pushes still count after a restart.
func TestPushQuotas(t *testing.T) {
	eachEngine(t, func(t *testing.T, db store.Store) {
		quotas := project.Quotas{QueuedBuilds: 2, Uploads: 1}
		fb := newStepBuilder()
		ts := startServer(t, serverOptions{Store: db, Builder: fb, Quotas: quotas})
		acct := ts.NewAccount(t, "alice")
		a := ts.Client(acct.Member)
		for _, name := range []string{"p1", "p2", "p3", "p4"} {
			createProject(t, a, name)
		}
		p1 := pushAccepted(t, a, "p1", fakeProject(t, "p1"))
		p2 := pushAccepted(t, a, "p2", fakeProject(t, "p2"))
		wantQueueFull := func(ts *testServer, stagedDirs int) {
			t.Helper()
			env := push(t, ts.Client(acct.Member), "p3", fakeProject(t, "p3")).Fail(t, http.StatusTooManyRequests)
			if env.Code != "build_queue_full" || !strings.Contains(env.RecommendedAction, "Wait for one of your queued or running builds") ||
				env.Details["limit"] != float64(2) || env.Details["queued_or_building"] != float64(2) {
				t.Errorf("third push: %v; want build_queue_full, limit 2, 2 queued or building, and what to do", env.Raw)
			}
			ts.Client(acct.Member).Get(t, "/api/v1/projects/p3/push").Fail(t, http.StatusNotFound)
			if dirs := pushDirs(t, ts.DataDir); len(dirs) != stagedDirs {
				t.Errorf("push dirs %v; want only the %d accepted pushes'", dirs, stagedDirs)
			}
		}
		wantQueueFull(ts, 2)

		// Another account is not held by alice's cap.
		bob := ts.NewAccount(t, "bob")
		b := ts.Client(bob.Member)
		createProject(t, b, "q")
		bPush := pushAccepted(t, b, "q", fakeProject(t, "q"))

		// A restart keeps the queue, and the cap with it.
		ts.Stop()
		fb = newStepBuilder()
		ts = startServer(t, serverOptions{Store: db, DataDir: ts.DataDir, Builder: fb, Quotas: quotas})
		a = ts.Client(acct.Member)
		wantQueueFull(ts, 3)
		for range 3 {
			fb.finish(fb.next(t))
		}
		for _, rec := range []apiv1.PushRecord{p1, p2} {
			if got := waitPush(t, a, rec.StatusURL, 30*time.Second); got.Status != "published" {
				t.Fatalf("push %s after the restart: %s", rec.PushRef, got.Status)
			}
		}
		waitPush(t, ts.Client(bob.Member), bPush.StatusURL, 30*time.Second)
		wantNoPushDirs(t, ts.DataDir)

		// One upload at a time: a second push while the first is still
		// being sent is refused before its body is read.
		body := fakeProject(t, "p3")
		pr, pw := io.Pipe()
		first := make(chan *http.Response, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/v1/projects/p3/push", pr)
			req.Header.Set("Authorization", "Bearer "+acct.Member)
			req.Header.Set("Content-Type", "application/gzip")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("first push: %v", err)
				first <- nil
				return
			}
			first <- resp
		}()
		if _, err := pw.Write(body[:len(body)/2]); err != nil {
			t.Fatal(err)
		}
		waitDirs(t, ts.DataDir, 1) // the first upload is being staged
		env := push(t, a, "p4", fakeProject(t, "p4")).Fail(t, http.StatusTooManyRequests)
		if env.Code != "too_many_uploads" || !strings.Contains(env.RecommendedAction, "Wait for your other pushes to finish uploading") ||
			env.Details["limit"] != float64(1) {
			t.Errorf("second concurrent push: %v; want too_many_uploads with what to do", env.Raw)
		}
		if dirs := pushDirs(t, ts.DataDir); len(dirs) != 1 {
			t.Errorf("push dirs %v; want only the first upload's", dirs)
		}
		if _, err := io.Copy(pw, bytes.NewReader(body[len(body)/2:])); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		if resp := <-first; resp == nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("first push answered %v, want 202", resp)
		} else {
			resp.Body.Close()
		}
		// Its upload over, the next push is accepted.
		pushAccepted(t, a, "p4", fakeProject(t, "p4"))
	})
}

// waitDirs waits until <data-dir>/pushes holds n entries.
func waitDirs(t *testing.T, dataDir string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(pushDirs(t, dataDir)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("push dirs %v; want %d", pushDirs(t, dataDir), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProjectQuota: past its project cap an account gets 429
// project_quota_exceeded; deleting one makes room; others are not held.
func TestProjectQuota(t *testing.T) {
	eachEngine(t, func(t *testing.T, db store.Store) {
		ts := startServer(t, serverOptions{Store: db, Builder: newStepBuilder(), Quotas: project.Quotas{Projects: 2}})
		a := ts.Client(ts.NewAccount(t, "alice").Member)
		createProject(t, a, "one")
		createProject(t, a, "two")
		env := a.Post(t, "/api/v1/projects", map[string]any{"name": "three"}).Fail(t, http.StatusTooManyRequests)
		if env.Code != "project_quota_exceeded" || !strings.Contains(env.RecommendedAction, "Delete a project") ||
			env.Details["limit"] != float64(2) || env.Details["used"] != float64(2) {
			t.Errorf("third project: %v; want project_quota_exceeded, limit 2, used 2, what to do", env.Raw)
		}
		a.Get(t, "/api/v1/projects/three").Fail(t, http.StatusNotFound)
		createProject(t, ts.Client(ts.NewAccount(t, "bob").Member), "three")
		a.Delete(t, "/api/v1/projects/one").Want(t, http.StatusOK)
		createProject(t, a, "three")
	})
}

// TestKVQuotas: an account's shared state, over all its projects, is
// capped in keys (429 kv_key_quota_exceeded) and bytes (507
// kv_storage_quota_exceeded); a refused write writes nothing, overwrites
// and deletes still work, and other accounts are not held.
func TestKVQuotas(t *testing.T) {
	eachEngine(t, func(t *testing.T, db store.Store) {
		ts := startServer(t, serverOptions{Store: db, Builder: newStepBuilder(), Quotas: project.Quotas{KVKeys: 3, KVBytes: 40}})
		a := ts.Client(ts.NewAccount(t, "alice").Member)
		createProject(t, a, "x")
		createProject(t, a, "y")
		put := func(project, key string, value any) *apitest.Response {
			return a.Put(t, "/api/v1/projects/"+project+"/kv/"+key, map[string]any{"value": value})
		}
		put("x", "k1", "0123456789").Want(t, http.StatusOK) // 12 bytes of JSON
		put("y", "k2", 1).Want(t, http.StatusOK)
		put("y", "k3", 2).Want(t, http.StatusOK)
		env := put("x", "k4", 3).Fail(t, http.StatusTooManyRequests)
		if env.Code != "kv_key_quota_exceeded" || !strings.Contains(env.RecommendedAction, "Delete keys") ||
			env.Details["limit_keys"] != float64(3) || env.Details["used_keys"] != float64(3) {
			t.Errorf("fourth key: %v; want kv_key_quota_exceeded, limit 3, used 3, what to do", env.Raw)
		}
		a.Get(t, "/api/v1/projects/x/kv/k4").Fail(t, http.StatusNotFound)
		put("x", "k1", "01234567890123456789").Want(t, http.StatusOK) // an overwrite is no new key: 22 bytes
		env = put("x", "k1", strings.Repeat("z", 40)).Fail(t, http.StatusInsufficientStorage)
		if env.Code != "kv_storage_quota_exceeded" || !strings.Contains(env.RecommendedAction, "artifact") ||
			env.Details["limit_bytes"] != float64(40) || env.Details["used_bytes"] != float64(24) {
			t.Errorf("oversized write: %v; want kv_storage_quota_exceeded, limit 40, used 24, what to do", env.Raw)
		}
		if got := a.Get(t, "/api/v1/projects/x/kv/k1").Object(t, http.StatusOK); got["value"] != "01234567890123456789" {
			t.Errorf("after the refused write k1 = %v; want the previous value", got["value"])
		}
		a.Delete(t, "/api/v1/projects/y/kv/k3").Want(t, http.StatusOK)
		put("x", "k4", 3).Want(t, http.StatusOK)
		bob := ts.Client(ts.NewAccount(t, "bob").Member)
		createProject(t, bob, "x")
		bob.Put(t, "/api/v1/projects/x/kv/big", map[string]any{"value": strings.Repeat("b", 30)}).Want(t, http.StatusOK)
	})
}

// TestBuildStopsAtServerLimit: with the real builder, a build whose
// project allows 600 s is stopped at the server's limit, and the push says
// so: setup_timeout_s cannot take a build past the operator's cap.
func TestBuildStopsAtServerLimit(t *testing.T) {
	ts := startServer(t, serverOptions{MaxBuildTime: 4 * time.Second})
	c := ts.Client(ts.NewAccount(t, "slow").Member)
	createProject(t, c, "app")
	acc := pushAccepted(t, c, "app", scratchProject(t, readRunner(t),
		"FROM scratch\nCOPY runner /runner\nRUN [\"/runner\", \"sleep\", \"300\"]\n", minimalManifest))
	rec := waitPush(t, c, acc.StatusURL, buildWithin)
	if rec.Status != "failed" || rec.Error == nil || !strings.Contains(*rec.Error, "timeout of 4s") {
		t.Fatalf("got %s (%v); want failed past a timeout of 4s", rec.Status, deref(rec.Error))
	}
	if !strings.Contains(rec.NextAction, "this server stops every build after 4s") ||
		!strings.Contains(rec.LogTail, "this server stops builds after 4s, less than the project's setup_timeout_s of 600s") {
		t.Errorf("next_action %q, log_tail:\n%s\nwant both to name the server's limit", rec.NextAction, rec.LogTail)
	}
}
