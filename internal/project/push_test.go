package project_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
)

// buildWithin bounds how long a FROM scratch build may take in these tests;
// it takes a few seconds.
const buildWithin = 2 * time.Minute

// TestPushPublishesAndPrepares walks a project through its first push, the
// build, init (refused under the 5 USD floor, then done), invalidation, a
// second push of changed code and a push of identical content, checking
// readiness at each step (spec 2.3, 3.2, 4.4).
func TestPushPublishesAndPrepares(t *testing.T) {
	ts := startServer(t, serverOptions{})
	acct := ts.NewAccount(t, "alice")
	c := ts.Client(acct.Member)
	runner := readRunner(t)
	createProject(t, c, "hello")

	rd := status(t, c, "hello")
	if rd.InitState != "not_initialized" || rd.CanAcceptNewJobs || rd.ReadyForJobs || rd.ContentHash != nil {
		t.Errorf("before any push: got init_state %s, can_accept_new_jobs %v, ready_for_jobs %v, content_hash %v; want not_initialized, false, false, null",
			rd.InitState, rd.CanAcceptNewJobs, rd.ReadyForJobs, rd.ContentHash)
	}
	c.Get(t, "/api/v1/projects/hello/push").Fail(t, http.StatusNotFound)

	v1 := scratchProject(t, runner, scratchDockerfile, minimalManifest, entry{name: "data.txt", body: "one\n"})
	release := ts.Builder.Hold()
	resp := push(t, c, "hello", v1)
	var first apiv1.PushRecord
	resp.JSON(t, http.StatusAccepted, &first)
	t.Run("accepted", func(t *testing.T) {
		if !strings.HasPrefix(first.PushRef, id.Push) {
			t.Errorf("got push_ref %q, want the %s prefix", first.PushRef, id.Push)
		}
		if first.Status != "queued" && first.Status != "building" {
			t.Errorf("got status %q, want queued or building", first.Status)
		}
		if want := "/api/v1/projects/hello/pushes/" + first.PushRef; first.StatusURL != want {
			t.Errorf("got status_url %q, want %q", first.StatusURL, want)
		}
		if !strings.HasPrefix(first.ContentHash, "sha256:") || len(first.ContentHash) != len("sha256:")+64 {
			t.Errorf("got content_hash %q, want sha256:<64 hex>", first.ContentHash)
		}
		if first.SizeBytes != int64(len(v1)) {
			t.Errorf("got size_bytes %d, want the body's %d", first.SizeBytes, len(v1))
		}
		if first.Terminal || first.NextAction == "" {
			t.Errorf("got terminal %v, next_action %q; want false and a next action", first.Terminal, first.NextAction)
		}
		// The first revision has nothing to be compared with.
		if d := jsonField(t, resp.Body, "tarball_diff"); d != nil {
			t.Errorf("got tarball_diff %s on the first push, want none", d)
		}
	})

	t.Run("building", func(t *testing.T) {
		rd := status(t, c, "hello")
		if rd.InitState != "initializing" || rd.ReadyForJobs || rd.CanAcceptNewJobs || rd.ProjectReady {
			t.Errorf("while the first build runs: got init_state %s, ready_for_jobs %v, can_accept_new_jobs %v, project_ready %v; want initializing, false, false, false",
				rd.InitState, rd.ReadyForJobs, rd.CanAcceptNewJobs, rd.ProjectReady)
		}
		if rd.ProgressPhase != "queued" && rd.ProgressPhase != "running" {
			t.Errorf("got progress_phase %q, want queued or running", rd.ProgressPhase)
		}
		// A second push while the first is in progress: 409 with the
		// active push, and nothing kept of it.
		v1b := scratchProject(t, runner, scratchDockerfile, minimalManifest, entry{name: "data.txt", body: "other\n"})
		env := push(t, c, "hello", v1b).Fail(t, http.StatusConflict)
		for _, k := range []string{"init_state", "ready_for_jobs", "next_action", "active_push"} {
			if _, ok := env.Raw[k]; !ok {
				t.Errorf("409 body lacks %q: %v", k, env.Raw)
			}
		}
		if env.Raw["init_state"] != "initializing" || env.Raw["ready_for_jobs"] != false {
			t.Errorf("409: got init_state %v, ready_for_jobs %v; want initializing, false", env.Raw["init_state"], env.Raw["ready_for_jobs"])
		}
		if ap, _ := env.Raw["active_push"].(map[string]any); ap["push_ref"] != first.PushRef {
			t.Errorf("409: got active_push %v, want push_ref %s", env.Raw["active_push"], first.PushRef)
		}
		if got := pushDirs(t, ts.DataDir); !slices.Equal(got, []string{first.PushRef}) {
			t.Errorf("got %v under pushes/, want only the active push's context %s", got, first.PushRef)
		}
	})
	release()

	pub := waitPush(t, c, first.StatusURL, buildWithin)
	t.Run("published", func(t *testing.T) {
		if pub.Status != "published" {
			t.Fatalf("got status %s (error %v), want published; log:\n%s", pub.Status, deref(pub.Error), pub.LogTail)
		}
		if pub.ImageRef == nil || !strings.Contains(*pub.ImageRef, "@sha256:") {
			t.Errorf("got image_ref %v, want a reference by digest", deref(pub.ImageRef))
		}
		if pub.ImageDigest == nil || !strings.HasPrefix(*pub.ImageDigest, "sha256:") {
			t.Errorf("got image_digest %v, want sha256:...", deref(pub.ImageDigest))
		}
		if !strings.Contains(pub.LogTail, "COPY runner /runner") || !strings.Contains(pub.LogTail, "skiff: published") {
			t.Errorf("log_tail lacks the build's steps:\n%s", pub.LogTail)
		}
		if pub.Error != nil || pub.StartedAt == nil || pub.FinishedAt == nil || pub.Attempts != 1 {
			t.Errorf("got error %v, started_at %v, finished_at %v, attempts %d; want none, set, set, 1",
				deref(pub.Error), pub.StartedAt, pub.FinishedAt, pub.Attempts)
		}
		var latest apiv1.PushRecord
		c.Get(t, "/api/v1/projects/hello/push").JSON(t, http.StatusOK, &latest)
		if latest.PushRef != first.PushRef {
			t.Errorf("GET push: got %s, want the latest push %s", latest.PushRef, first.PushRef)
		}
		// The image is in the data dir's image store, addressed by digest.
		if _, err := os.Stat(filepath.Join(ts.DataDir, "images", strings.TrimPrefix(*pub.ImageDigest, "sha256:"), "index.json")); err != nil {
			t.Errorf("published image layout: %v", err)
		}
		wantNoPushDirs(t, ts.DataDir)

		rd := status(t, c, "hello")
		if rd.InitState != "refreshing" || rd.ReadyForJobs || !rd.CanAcceptNewJobs || !rd.ProjectReady {
			t.Errorf("published, not prepared: got init_state %s, ready_for_jobs %v, can_accept_new_jobs %v, project_ready %v; want refreshing, false, true, true",
				rd.InitState, rd.ReadyForJobs, rd.CanAcceptNewJobs, rd.ProjectReady)
		}
		if rd.ContentHash == nil || *rd.ContentHash != first.ContentHash {
			t.Errorf("got content_hash %v, want %s", deref(rd.ContentHash), first.ContentHash)
		}
		var p apiv1.Project
		c.Get(t, "/api/v1/projects/hello").JSON(t, http.StatusOK, &p)
		if p.ContentHash == nil || *p.ContentHash != first.ContentHash || p.InitStatus == nil || p.InitStatus.InitState != "refreshing" {
			t.Errorf("GET project: got content_hash %v, init_status %+v; want %s and refreshing", deref(p.ContentHash), p.InitStatus, first.ContentHash)
		}
	})

	t.Run("init under the floor", func(t *testing.T) {
		if _, err := ts.Billing.GrantCredit(t.Context(), acct.ID, 4_990_000, "almost enough"); err != nil {
			t.Fatal(err)
		}
		env := c.Post(t, "/api/v1/projects/hello/init", map[string]any{}).Fail(t, http.StatusPaymentRequired)
		q, _ := env.Details["quote"].(map[string]any)
		if q["quote_type"] != "job_shortfall" || q["amount_usd"] == nil {
			t.Errorf("402: got details.quote %v, want a job_shortfall quote with amount_usd", env.Details["quote"])
		}
		rd := status(t, c, "hello")
		if rd.TotalReplicas != 0 || rd.PendingInit {
			t.Errorf("after a refused init: got total_replicas %d, pending_init %v; want nothing prepared", rd.TotalReplicas, rd.PendingInit)
		}
		if entries, _ := os.ReadDir(filepath.Join(ts.DataDir, "host", "images")); len(entries) > 0 {
			t.Errorf("after a refused init the host's image cache holds %d entries, want none", len(entries))
		}
	})

	t.Run("init", func(t *testing.T) {
		if _, err := ts.Billing.GrantCredit(t.Context(), acct.ID, 10_000, "the rest"); err != nil {
			t.Fatal(err)
		}
		var ir apiv1.InitResponse
		c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/projects/hello/init"}).JSON(t, http.StatusOK, &ir)
		if ir.Status != "initializing" || ir.StatusMessage == "" || ir.NextAction == "" || ir.InitStatus == nil {
			t.Errorf("init: got %+v, want status initializing with a message, a next action and init_status", ir)
		}
		rd := waitStatus(t, c, "hello", time.Minute, func(rd *apiv1.Readiness) bool { return rd.ReadyForJobs })
		if rd.InitState != "ready" || rd.ReadyReplicas != 1 || rd.TotalReplicas != 1 || rd.LastReadyAt == nil || rd.AvailabilityStatus != "ready" {
			t.Errorf("after init: got init_state %s, ready %d/%d, last_ready_at %v, availability %s; want ready, 1/1, set, ready",
				rd.InitState, rd.ReadyReplicas, rd.TotalReplicas, rd.LastReadyAt, rd.AvailabilityStatus)
		}
		// The local host unpacked the image: the runner is in its rootfs.
		hex := strings.TrimPrefix(*pub.ImageDigest, "sha256:")
		if fi, err := os.Stat(filepath.Join(ts.DataDir, "host", "images", hex, "rootfs", "runner")); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("prepared rootfs: runner %v, %v; want an executable", fi, err)
		}
	})

	t.Run("invalidate", func(t *testing.T) {
		var ir apiv1.InitResponse
		c.Post(t, "/api/v1/projects/hello/invalidate", nil).JSON(t, http.StatusOK, &ir)
		if ir.Status != "invalidated" || ir.ReadyForJobs || ir.InitStatus == nil || ir.InitStatus.StaleReplicas != 1 || ir.InitStatus.ReadyReplicas != 0 {
			t.Fatalf("invalidate: got %+v, want invalidated, not ready, 1 stale replica", ir)
		}
		rd := status(t, c, "hello")
		if rd.InitState != "published" || rd.ProgressPhase != "refresh_pending" || !rd.CanAcceptNewJobs || rd.ReadyForJobs {
			t.Errorf("after invalidate: got init_state %s, progress_phase %s, can_accept_new_jobs %v, ready_for_jobs %v; want published, refresh_pending, true, false",
				rd.InitState, rd.ProgressPhase, rd.CanAcceptNewJobs, rd.ReadyForJobs)
		}
	})

	t.Run("diagnostics", func(t *testing.T) {
		var details struct {
			apiv1.Readiness
			Diagnostics []apiv1.Diagnostic `json:"diagnostics"`
		}
		c.Get(t, "/api/v1/projects/hello/status/details").JSON(t, http.StatusOK, &details)
		if len(details.Diagnostics) != 1 {
			t.Fatalf("got %d diagnostics, want 1 (the build)", len(details.Diagnostics))
		}
		d := details.Diagnostics[0]
		if d.ID != first.PushRef || d.Status != "published" || d.Phase != "build" || d.ContentHash != first.ContentHash || d.InitializedAt == nil || d.LogTail == "" {
			t.Errorf("got diagnostic %+v, want the published build %s with its log tail", d, first.PushRef)
		}
	})

	v2 := scratchProject(t, runner, scratchDockerfile, minimalManifest,
		entry{name: "data.txt", body: "two\n"}, entry{name: "notes/readme.md", body: "new\n"})
	var second apiv1.PushRecord
	t.Run("second push", func(t *testing.T) {
		release := ts.Builder.Hold()
		defer release()
		resp := push(t, c, "hello", v2)
		resp.JSON(t, http.StatusAccepted, &second)
		var diff struct {
			Added   []string `json:"added_files"`
			Removed []string `json:"removed_files"`
			Changed []string `json:"changed_files"`
		}
		if err := json.Unmarshal(jsonField(t, resp.Body, "tarball_diff"), &diff); err != nil {
			t.Fatalf("tarball_diff: %v in %s", err, resp.Body)
		}
		if !slices.Contains(diff.Changed, "data.txt") || !slices.Contains(diff.Added, "notes/readme.md") ||
			len(diff.Removed) != 0 || slices.Contains(diff.Changed, "runner") {
			t.Errorf("got tarball_diff %+v, want data.txt changed, notes/readme.md added, nothing removed", diff)
		}
		if second.ContentHash == first.ContentHash {
			t.Errorf("changed content kept content_hash %s", second.ContentHash)
		}
		// No init while a build is in progress.
		c.Post(t, "/api/v1/projects/hello/init", nil).Fail(t, http.StatusConflict)
		// The previous revision stays active while the new one builds.
		rd := status(t, c, "hello")
		if rd.InitState != "refreshing" || !rd.CanAcceptNewJobs || rd.ContentHash == nil || *rd.ContentHash != first.ContentHash {
			t.Errorf("while the second build runs: got init_state %s, can_accept_new_jobs %v, content_hash %v; want refreshing, true, %s",
				rd.InitState, rd.CanAcceptNewJobs, deref(rd.ContentHash), first.ContentHash)
		}
	})
	if second.PushRef == "" {
		t.FailNow()
	}
	pub2 := waitPush(t, c, second.StatusURL, buildWithin)
	if pub2.Status != "published" {
		t.Fatalf("second push: got %s (%v), want published; log:\n%s", pub2.Status, deref(pub2.Error), pub2.LogTail)
	}
	rd = status(t, c, "hello")
	// A new revision not yet prepared: refreshing (spec 3.2), even though the
	// host still holds the previous revision.
	if rd.InitState != "refreshing" || rd.ReadyForJobs || rd.ContentHash == nil || *rd.ContentHash != second.ContentHash {
		t.Errorf("second revision published: got init_state %s, ready_for_jobs %v, content_hash %v; want refreshing, false, %s",
			rd.InitState, rd.ReadyForJobs, deref(rd.ContentHash), second.ContentHash)
	}

	t.Run("identical content", func(t *testing.T) {
		var un apiv1.PushUnchanged
		push(t, c, "hello", v2).JSON(t, http.StatusOK, &un)
		if un.Status != "unchanged" || un.ContentHash != second.ContentHash || un.PushRef != second.PushRef ||
			un.SizeBytes != int64(len(v2)) || !un.ManifestPresent || un.InitStatus == nil || un.NextAction == "" {
			t.Errorf("got %+v, want status unchanged naming %s", un, second.PushRef)
		}
		if n := ts.Builder.Calls(); n != 2 {
			t.Errorf("got %d builds, want 2: identical content needs no build", n)
		}
		wantNoPushDirs(t, ts.DataDir)
	})
}

// TestPushBuildFailuresKeepPreviousRevision: a failing RUN step, a missing
// validation path and a build past setup_timeout_s each fail the push with
// an error, a log tail and a next action, put readiness in
// attention_required, and leave the published revision active.
func TestPushBuildFailuresKeepPreviousRevision(t *testing.T) {
	ts := startServer(t, serverOptions{})
	acct := ts.NewAccount(t, "bob")
	c := ts.Client(acct.Member)
	runner := readRunner(t)
	createProject(t, c, "app")
	good := pushAccepted(t, c, "app", scratchProject(t, runner, scratchDockerfile, minimalManifest))
	if pub := waitPush(t, c, good.StatusURL, buildWithin); pub.Status != "published" {
		t.Fatalf("first push: got %s (%v), want published; log:\n%s", pub.Status, deref(pub.Error), pub.LogTail)
	}
	// Prepare it, so that a failed build is seen to leave it prepared too.
	if _, err := ts.Billing.GrantCredit(t.Context(), acct.ID, 5_000_000, "init"); err != nil {
		t.Fatal(err)
	}
	c.Post(t, "/api/v1/projects/app/init", nil).Want(t, http.StatusOK)
	waitStatus(t, c, "app", time.Minute, func(rd *apiv1.Readiness) bool { return rd.InitState == "ready" })

	cases := []struct {
		name       string
		dockerfile string
		manifest   string
		timeoutS   int
		wantError  []string // substrings of the push's error
		wantLog    string   // substring of its log tail
		wantNext   string   // substring of its next action, per kind of failure
	}{{
		name:       "failing RUN step",
		dockerfile: "FROM scratch\nCOPY runner /runner\nRUN [\"/runner\", \"fail\", \"the step failed on purpose\"]\nWORKDIR /app\n",
		manifest:   minimalManifest,
		wantError:  []string{"exit status 3"},
		wantLog:    "the step failed on purpose",
		wantNext:   "Read log_tail",
	}, {
		name:       "validation names a missing executable",
		dockerfile: scratchDockerfile,
		manifest: `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
			"entrypoint": {"command": ["/runner"]},
			"validation": {"executables": ["/runner", "/usr/bin/python3"], "files": ["/runner"]}}`,
		wantError: []string{"/usr/bin/python3"},
		wantLog:   "/usr/bin/python3",
		wantNext:  "produce the paths listed in validation",
	}, {
		name:       "past setup_timeout_s",
		dockerfile: "FROM scratch\nCOPY runner /runner\nRUN [\"/runner\", \"sleep\", \"300\"]\nWORKDIR /app\n",
		manifest:   minimalManifest,
		timeoutS:   5,
		wantError:  []string{"timeout", "5s"},
		wantNext:   "raise setup_timeout_s",
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.timeoutS > 0 {
				c.Put(t, "/api/v1/projects/app", map[string]any{"setup_timeout_s": tc.timeoutS}).Want(t, http.StatusOK)
				defer func() {
					c.Put(t, "/api/v1/projects/app", map[string]any{"setup_timeout_s": 600}).Want(t, http.StatusOK)
				}()
			}
			body := scratchProject(t, runner, tc.dockerfile, tc.manifest, entry{name: "case.txt", body: fmt.Sprint(i)})
			start := time.Now()
			acc := pushAccepted(t, c, "app", body)
			rec := waitPush(t, c, acc.StatusURL, buildWithin)
			took := time.Since(start)
			if rec.Status != "failed" || rec.Error == nil {
				t.Fatalf("got status %s, error %v; want failed with an error", rec.Status, deref(rec.Error))
			}
			for _, want := range tc.wantError {
				if !strings.Contains(*rec.Error, want) {
					t.Errorf("got error %q, want it to name %q", *rec.Error, want)
				}
			}
			if !strings.Contains(rec.LogTail, tc.wantLog) || rec.LogTail == "" {
				t.Errorf("log_tail lacks %q:\n%s", tc.wantLog, rec.LogTail)
			}
			if !strings.Contains(rec.NextAction, tc.wantNext) || rec.ImageDigest != nil || rec.FinishedAt == nil {
				t.Errorf("got next_action %q, image_digest %v, finished_at %v; want one saying %q, no image, finished",
					rec.NextAction, deref(rec.ImageDigest), rec.FinishedAt, tc.wantNext)
			}
			if tc.timeoutS > 0 {
				if took > time.Duration(tc.timeoutS)*time.Second+45*time.Second {
					t.Errorf("the build ran %s past a %ds timeout before failing", took, tc.timeoutS)
				}
				buildtest.WantNothingLeft(t, ts.DataDir)
			}

			rd := status(t, c, "app")
			if rd.InitState != "attention_required" || rd.ProgressPhase != "failed" || rd.LatestIssue == nil ||
				*rd.LatestIssue != *rec.Error || rd.LatestFailureAt == nil || rd.NextAction == "" {
				t.Errorf("after a failed build: got init_state %s, progress_phase %s, latest_issue %v, latest_failure_at %v, next_action %q; want attention_required, failed, the error, set, set",
					rd.InitState, rd.ProgressPhase, deref(rd.LatestIssue), rd.LatestFailureAt, rd.NextAction)
			}
			// The published revision stays active, and prepared.
			if !rd.CanAcceptNewJobs || !rd.ProjectReady || !rd.ReadyForJobs || rd.ContentHash == nil || *rd.ContentHash != good.ContentHash {
				t.Errorf("after a failed build: got can_accept_new_jobs %v, project_ready %v, ready_for_jobs %v, content_hash %v; want true, true, true, %s",
					rd.CanAcceptNewJobs, rd.ProjectReady, rd.ReadyForJobs, deref(rd.ContentHash), good.ContentHash)
			}
			var p apiv1.Project
			c.Get(t, "/api/v1/projects/app").JSON(t, http.StatusOK, &p)
			if p.ContentHash == nil || *p.ContentHash != good.ContentHash {
				t.Errorf("GET project: got content_hash %v, want %s", deref(p.ContentHash), good.ContentHash)
			}
			var details struct {
				Diagnostics []apiv1.Diagnostic `json:"diagnostics"`
			}
			c.Get(t, "/api/v1/projects/app/status/details").JSON(t, http.StatusOK, &details)
			if len(details.Diagnostics) == 0 || details.Diagnostics[0].ID != rec.PushRef ||
				details.Diagnostics[0].Status != "failed" || details.Diagnostics[0].Message != *rec.Error ||
				details.Diagnostics[0].RecommendedAction == "" {
				t.Errorf("got diagnostics %+v, want the failed build first with its error and a recommended action", details.Diagnostics)
			}
			wantNoPushDirs(t, ts.DataDir)
		})
	}

	// Pushing the published content again after a failure rebuilds it (from
	// the layer cache) so that readiness leaves attention_required.
	t.Run("revert to the published content", func(t *testing.T) {
		acc := pushAccepted(t, c, "app", scratchProject(t, runner, scratchDockerfile, minimalManifest))
		if acc.ContentHash != good.ContentHash {
			t.Fatalf("got content_hash %s, want the published %s", acc.ContentHash, good.ContentHash)
		}
		if rec := waitPush(t, c, acc.StatusURL, buildWithin); rec.Status != "published" {
			t.Fatalf("got %s (%v), want published", rec.Status, deref(rec.Error))
		}
		// The hosts still hold that revision: ready again.
		if rd := status(t, c, "app"); rd.InitState != "ready" || !rd.ReadyForJobs || rd.LatestIssue != nil {
			t.Errorf("got init_state %s, ready_for_jobs %v, latest_issue %v; want ready, true and no issue",
				rd.InitState, rd.ReadyForJobs, deref(rd.LatestIssue))
		}
	})
}

// TestPushResumesAfterRestart stops the server while a build runs (as
// SIGTERM does: RunBuilds' context is cancelled) and starts a new one on
// the same store and data dir: the push is resumed and published.
func TestPushResumesAfterRestart(t *testing.T) {
	buildtest.RequireTools(t)
	dataDir := buildtest.DataDir(t)
	db := openStore(t, dataDir)
	runner := readRunner(t)

	first := startServer(t, serverOptions{DataDir: dataDir, Store: db})
	acct := first.NewAccount(t, "carol")
	c := first.Client(acct.Member)
	createProject(t, c, "slow")
	dockerfile := "FROM scratch\nCOPY runner /runner\nRUN [\"/runner\", \"sleep\", \"4\"]\nWORKDIR /app\n"
	acc := pushAccepted(t, c, "slow", scratchProject(t, runner, dockerfile, minimalManifest))
	// Wait until the RUN step is running in its sandbox.
	deadline := time.Now().Add(time.Minute)
	for {
		var rec apiv1.PushRecord
		c.Get(t, acc.StatusURL).JSON(t, http.StatusOK, &rec)
		if rec.Status == "building" && strings.Contains(rec.LogTail, "RUN") {
			break
		}
		if rec.Terminal || time.Now().After(deadline) {
			t.Fatalf("got push %s %s, want it building its RUN step; log:\n%s", rec.PushRef, rec.Status, rec.LogTail)
		}
		time.Sleep(50 * time.Millisecond)
	}
	first.Stop()

	p, err := db.ProjectGetByName(t.Context(), acct.ID, "slow")
	if err != nil {
		t.Fatal(err)
	}
	pu, err := db.PushGet(t.Context(), p.ID, acc.PushRef)
	if err != nil {
		t.Fatal(err)
	}
	if pu.Status != store.PushBuilding || pu.Attempts != 1 {
		t.Fatalf("after shutdown: got status %s, attempts %d; want building, 1 (left for the next start)", pu.Status, pu.Attempts)
	}
	buildtest.WantNothingLeft(t, dataDir)
	if left := pushDirs(t, dataDir); !slices.Equal(left, []string{acc.PushRef}) {
		t.Fatalf("after shutdown: got %v under pushes/, want the interrupted push's context kept", left)
	}

	second := startServer(t, serverOptions{DataDir: dataDir, Store: db})
	c = second.Client(acct.Member)
	rec := waitPush(t, c, acc.StatusURL, buildWithin)
	if rec.Status != "published" || rec.Attempts != 2 {
		t.Fatalf("after restart: got %s (%v), attempts %d; want published on the second start; log:\n%s",
			rec.Status, deref(rec.Error), rec.Attempts, rec.LogTail)
	}
	if rd := status(t, c, "slow"); !rd.CanAcceptNewJobs || rd.ContentHash == nil || *rd.ContentHash != acc.ContentHash {
		t.Errorf("after restart: got can_accept_new_jobs %v, content_hash %v; want the resumed revision", rd.CanAcceptNewJobs, deref(rd.ContentHash))
	}
	wantNoPushDirs(t, dataDir)
}

// TestPushInterruptedTooOftenFails: a push whose stored attempts reached
// project.MaxBuildStarts (it kept being interrupted, say by a build that
// crashes the server) is failed at the next start instead of resumed.
func TestPushInterruptedTooOftenFails(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	db := openStore(t, dataDir)
	never := builderFunc(func(context.Context, project.BuildRequest) (*project.BuildResult, error) {
		t.Error("a push interrupted MaxBuildStarts times was built again")
		return nil, fmt.Errorf("unexpected build")
	})

	// Record the push as three interrupted starts would have left it.
	first := startServer(t, serverOptions{DataDir: dataDir, Store: db, Builder: never})
	acct := first.NewAccount(t, "dave")
	c := first.Client(acct.Member)
	createProject(t, c, "crashy")
	first.Stop()
	p, err := db.ProjectGetByName(t.Context(), acct.ID, "crashy")
	if err != nil {
		t.Fatal(err)
	}
	pushID := id.New(id.Push)
	ctxDir := filepath.Join(dataDir, "pushes", pushID, "context")
	if err := os.MkdirAll(ctxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := db.PushCreate(t.Context(), &store.PushCreateParams{ID: pushID, ProjectID: p.ID, AccountID: acct.ID,
		ContentHash: "sha256:" + strings.Repeat("ab", 32), SizeBytes: 10, TarballDiff: json.RawMessage("null"),
		FileIndex: json.RawMessage("{}"), Manifest: json.RawMessage(`{}`), ContextDir: ctxDir, Now: now}); err != nil {
		t.Fatal(err)
	}
	for i := range project.MaxBuildStarts {
		if i > 0 {
			if err := db.PushRequeue(t.Context(), pushID, now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.PushStart(t.Context(), pushID, now); err != nil {
			t.Fatal(err)
		}
	}

	second := startServer(t, serverOptions{DataDir: dataDir, Store: db, Builder: never})
	c = second.Client(acct.Member)
	rec := waitPush(t, c, "/api/v1/projects/crashy/pushes/"+pushID, 30*time.Second)
	if rec.Status != "failed" || rec.Error == nil || !strings.Contains(*rec.Error, fmt.Sprintf("interrupted by a server restart %d times", project.MaxBuildStarts)) {
		t.Errorf("got status %s, error %v; want failed, saying it was interrupted %d times", rec.Status, deref(rec.Error), project.MaxBuildStarts)
	}
	if rec.NextAction == "" || rec.Attempts != int64(project.MaxBuildStarts) {
		t.Errorf("got next_action %q, attempts %d; want a next action and %d", rec.NextAction, rec.Attempts, project.MaxBuildStarts)
	}
	if rd := status(t, c, "crashy"); rd.InitState != "attention_required" || rd.LatestIssue == nil {
		t.Errorf("got init_state %s, latest_issue %v; want attention_required with the issue", rd.InitState, deref(rd.LatestIssue))
	}
	wantNoPushDirs(t, dataDir)
}

// TestPushRealisticDebianProject builds a project FROM a Debian base image
// (made with debootstrap, cached between runs) that installs python3 with
// apt-get in a RUN step, inside gVisor, with the network the default policy
// gives builds.
func TestPushRealisticDebianProject(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the Debian + apt-get build in -short mode")
	}
	ts := startServer(t, serverOptions{AllowedBaseImages: []string{buildtest.DebianImage}})
	buildtest.DebianBase(t, ts.BuildCfg)
	acct := ts.NewAccount(t, "erin")
	c := ts.Client(acct.Member)
	createProject(t, c, "py")
	body := tgz(t,
		entry{name: "Dockerfile", body: "FROM " + buildtest.DebianImage + "\n" +
			"RUN apt-get update && apt-get install -y --no-install-recommends python3 && rm -rf /var/lib/apt/lists/*\n" +
			"COPY main.py /app/main.py\nWORKDIR /app\n"},
		entry{name: "main.py", body: "print('hello from python')\n"},
		entry{name: project.ManifestFile, body: `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
			"entrypoint": {"command": ["python3", "/app/main.py"]},
			"validation": {"executables": ["/usr/bin/python3"], "files": ["/app/main.py"]}}`},
	)
	acc := pushAccepted(t, c, "py", body)
	rec := waitPush(t, c, acc.StatusURL, 10*time.Minute)
	if rec.Status != "published" {
		t.Fatalf("got %s (%v), want published; log:\n%s", rec.Status, deref(rec.Error), rec.LogTail)
	}
	if !strings.Contains(rec.LogTail, "skiff: published") {
		t.Errorf("log_tail lacks the publish line:\n%s", rec.LogTail)
	}
	if _, err := ts.Billing.GrantCredit(t.Context(), acct.ID, 5_000_000, "init"); err != nil {
		t.Fatal(err)
	}
	c.Post(t, "/api/v1/projects/py/init", map[string]any{"max_nodes": 1}).Want(t, http.StatusOK)
	waitStatus(t, c, "py", 2*time.Minute, func(rd *apiv1.Readiness) bool { return rd.InitState == "ready" })
	hex := strings.TrimPrefix(*rec.ImageDigest, "sha256:")
	rootfs := filepath.Join(ts.DataDir, "host", "images", hex, "rootfs")
	for _, p := range []string{"usr/bin/python3", "app/main.py"} {
		if _, err := os.Stat(filepath.Join(rootfs, p)); err != nil {
			t.Errorf("prepared rootfs lacks /%s: %v", p, err)
		}
	}
}

// TestConcurrentPushesOneWins sends pushes of different content at once:
// the database lets one through (202) and the others get the 409 of a push
// in progress, with nothing of theirs kept. It needs no buildah.
func TestConcurrentPushesOneWins(t *testing.T) {
	t.Parallel()
	published := builderFunc(func(context.Context, project.BuildRequest) (*project.BuildResult, error) {
		d := "sha256:" + strings.Repeat("1", 64)
		return &project.BuildResult{ImageRef: "localhost/skiff/x@" + d, ImageDigest: d}, nil
	})
	const n = 6
	// The account may send all n at once: the race under test is the
	// database's one active push per project, not the upload cap.
	ts := startServer(t, serverOptions{DataDir: t.TempDir(), Builder: published, Quotas: project.Quotas{Uploads: n}})
	release := ts.Builder.Hold()
	defer release()
	c := ts.Client(ts.NewAccount(t, "frank").Member)
	createProject(t, c, "race")
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = scratchProject(t, []byte("not a real runner"), scratchDockerfile, minimalManifest, entry{name: "i.txt", body: fmt.Sprint(i)})
	}
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses[i] = push(t, c, "race", bodies[i]).Status })
	}
	wg.Wait()
	accepted := 0
	for _, s := range statuses {
		switch s {
		case http.StatusAccepted:
			accepted++
		case http.StatusConflict:
		default:
			t.Errorf("got status %d, want 202 or 409", s)
		}
	}
	if accepted != 1 {
		t.Fatalf("got statuses %v, want exactly one 202", statuses)
	}
	if left := pushDirs(t, ts.DataDir); len(left) != 1 {
		t.Errorf("got %v under pushes/, want only the accepted push's context", left)
	}
	release()
	var latest apiv1.PushRecord
	c.Get(t, "/api/v1/projects/race/push").JSON(t, http.StatusOK, &latest)
	if rec := waitPush(t, c, latest.StatusURL, 30*time.Second); rec.Status != "published" {
		t.Errorf("got %s, want published", rec.Status)
	}
	wantNoPushDirs(t, ts.DataDir)
}

type builderFunc func(context.Context, project.BuildRequest) (*project.BuildResult, error)

func (f builderFunc) Build(ctx context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	return f(ctx, req)
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestPushBuildTarget: the manifest's build.target reaches buildah through
// the server's own builder adapter. The last stage lacks the runner, so
// only a build of the named stage passes validation.
func TestPushBuildTarget(t *testing.T) {
	ts := startServer(t, serverOptions{})
	acct := ts.NewAccount(t, "tara")
	c := ts.Client(acct.Member)
	runner := readRunner(t)
	createProject(t, c, "staged")
	dockerfile := "FROM scratch AS runtime\nCOPY runner /runner\nWORKDIR /app\n\nFROM scratch AS docs\nCOPY runner /docs/runner\n"
	manifest := `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
		"entrypoint": {"command": ["/runner"]}, "build": {"target": "%s"},
		"validation": {"executables": ["/runner"]}}`
	rec := waitPush(t, c, pushAccepted(t, c, "staged", scratchProject(t, runner, dockerfile, fmt.Sprintf(manifest, "runtime"))).StatusURL, buildWithin)
	if rec.Status != "published" {
		t.Fatalf("target runtime: got %s (%v), want published; log:\n%s", rec.Status, deref(rec.Error), rec.LogTail)
	}
	rec = waitPush(t, c, pushAccepted(t, c, "staged", scratchProject(t, runner, dockerfile, fmt.Sprintf(manifest, "docs"))).StatusURL, buildWithin)
	if rec.Status != "failed" || rec.Error == nil || !strings.Contains(*rec.Error, "/runner") {
		t.Fatalf("target docs: got %s (%v), want failed validation naming /runner", rec.Status, deref(rec.Error))
	}
}
