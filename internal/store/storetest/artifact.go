package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

var artifactTests = map[string]func(*testing.T, store.Store){
	"ArtifactQuotaCountsContentOnce": testArtifactQuotaCountsContentOnce,
	"ArtifactScopingAndList":         testArtifactScopingAndList,
	"ArtifactReferencesAndHide":      testArtifactReferencesAndHide,
	"ArtifactGraceAndPurge":          testArtifactGraceAndPurge,
	"ArtifactSchemaChecks":           testArtifactSchemaChecks,
	"JobRetentionPurge":              testJobRetentionPurge,
}

func sha(c byte) string { return strings.Repeat(string(c), 64) }

func mustArtifact(t *testing.T, q store.Querier, p *store.ArtifactCreateParams) *store.Artifact {
	t.Helper()
	if p.ID == "" {
		p.ID = id.New(id.Artifact)
	}
	if p.Source == "" {
		p.Source = store.ArtifactLocal
	}
	a, err := q.ArtifactCreate(ctx(t), p)
	if err != nil {
		t.Fatalf("ArtifactCreate: %v", err)
	}
	return a
}

func wantQuota(t *testing.T, q store.Querier, accountID string, want int64) {
	t.Helper()
	got, err := q.ArtifactQuotaUsed(ctx(t), accountID)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("quota used: got %d, want %d", got, want)
	}
}

func testArtifactQuotaCountsContentOnce(t *testing.T, s store.Store) {
	a := mustAccount(t, s, "alice")
	b := mustAccount(t, s, "bob")
	wantQuota(t, s, a.ID, 0)
	x1 := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: a.ID, SHA256: sha('a'), SizeBytes: 100, Filename: "x", Now: t0})
	mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: a.ID, SHA256: sha('a'), SizeBytes: 100, Filename: "y", Now: t0})
	mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: a.ID, SHA256: sha('b'), SizeBytes: 7, Now: t0})
	mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: a.ID, Source: store.ArtifactExternal, URL: "https://e.example/f", Now: t0})
	mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: b.ID, SHA256: sha('a'), SizeBytes: 100, Now: t0})
	wantQuota(t, s, a.ID, 107)
	wantQuota(t, s, b.ID, 100)
	if ok, _ := s.ArtifactContentCounted(ctx(t), a.ID, sha('a')); !ok {
		t.Error("content a: got not counted, want counted")
	}
	if ok, _ := s.ArtifactContentCounted(ctx(t), a.ID, sha('c')); ok {
		t.Error("content c: got counted, want not")
	}
	// Hiding one of two rows with the same content keeps it counted once.
	if err := s.ArtifactHide(ctx(t), a.ID, x1.ID, t0); err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, a.ID, 107)
	if _, err := s.ArtifactGet(ctx(t), a.ID, x1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get hidden: got %v, want ErrNotFound", err)
	}
}

func testArtifactScopingAndList(t *testing.T, s store.Store) {
	a := mustAccount(t, s, "alice")
	b := mustAccount(t, s, "bob")
	var ids []string
	for i := range 5 {
		ar := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: a.ID, SHA256: sha('a' + byte(i)), SizeBytes: int64(i),
			Filename: "f", Now: t0.Add(time.Duration(i) * time.Second)})
		ids = append(ids, ar.ID)
	}
	if _, err := s.ArtifactGet(ctx(t), b.ID, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's get: got %v, want ErrNotFound", err)
	}
	if err := s.ArtifactHide(ctx(t), b.ID, ids[0], t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's hide: got %v, want ErrNotFound", err)
	}
	page, total, err := s.ArtifactList(ctx(t), &store.ArtifactListParams{AccountID: a.ID, Limit: 2, Offset: 1})
	if err != nil {
		t.Fatal(err)
	}
	if total != 5 || len(page) != 2 || page[0].ID != ids[3] || page[1].ID != ids[2] {
		t.Errorf("page: got total %d, %d items, want 5 and ids %s, %s (newest first)", total, len(page), ids[3], ids[2])
	}
	if _, total, _ := s.ArtifactList(ctx(t), &store.ArtifactListParams{AccountID: b.ID, Limit: 10}); total != 0 {
		t.Errorf("bob's list: got total %d, want 0", total)
	}
}

func testArtifactReferencesAndHide(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	j := mustJob(t, s, f.jobParams(1, t0))
	in := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: f.acct.ID, SHA256: sha('a'), SizeBytes: 1, Now: t0})
	out := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: f.acct.ID, SHA256: sha('b'), SizeBytes: 1,
		JobID: j.ID, Kind: store.ArtifactOutput, Now: t0})
	if out.ReferenceCount != 1 || out.ActiveReferenceCount != 1 || out.LastReferencedAt == nil || out.JobID != j.ID {
		t.Errorf("output artifact: got %+v, want one active reference to %s", out, j.ID)
	}
	for range 2 { // twice: the second is a no-op
		if err := s.ArtifactRefAdd(ctx(t), &store.ArtifactRefParams{ArtifactID: in.ID, JobID: j.ID,
			Role: store.ArtifactRoleInput, Now: t0.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ArtifactGet(ctx(t), f.acct.ID, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReferenceCount != 1 || got.ActiveReferenceCount != 1 || got.TerminalReferenceCount != 0 ||
		got.LastReferencedAt == nil || !got.LastReferencedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("input artifact: got %+v, want 1 active reference at %v", got, t0.Add(time.Minute))
	}
	for _, ar := range []*store.Artifact{in, out} {
		if err := s.ArtifactHide(ctx(t), f.acct.ID, ar.ID, t0); !errors.Is(err, store.ErrConflict) {
			t.Errorf("hide %s while its job is queued: got %v, want ErrConflict", ar.ID, err)
		}
	}
	mustSetStatus(t, s, j.ID, store.JobCancelled, t0.Add(time.Hour))
	got, _ = s.ArtifactGet(ctx(t), f.acct.ID, in.ID)
	if got.ActiveReferenceCount != 0 || got.TerminalReferenceCount != 1 {
		t.Errorf("after the job ended: got active %d terminal %d, want 0 and 1", got.ActiveReferenceCount, got.TerminalReferenceCount)
	}
	if err := s.ArtifactHide(ctx(t), f.acct.ID, in.ID, t0.Add(time.Hour)); err != nil {
		t.Errorf("hide after the job ended: %v", err)
	}
	if err := s.ArtifactHide(ctx(t), f.acct.ID, in.ID, t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("hide twice: got %v, want ErrNotFound", err)
	}
}

func testArtifactGraceAndPurge(t *testing.T, s store.Store) {
	a := mustAccount(t, s, "alice")
	b := mustAccount(t, s, "bob")
	shared := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: a.ID, SHA256: sha('a'), SizeBytes: 5, Now: t0})
	mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: b.ID, SHA256: sha('a'), SizeBytes: 5, Now: t0})
	alone := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: a.ID, SHA256: sha('c'), SizeBytes: 5, Now: t0})
	for i, ar := range []*store.Artifact{shared, alone} {
		if err := s.ArtifactHide(ctx(t), a.ID, ar.ID, t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	wantQuota(t, s, a.ID, 0)
	due, err := s.ArtifactListHiddenBefore(ctx(t), t0.Add(30*time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].ID != shared.ID {
		t.Fatalf("due at +30m: got %d rows, want only %s", len(due), shared.ID)
	}
	if err := s.ArtifactPurge(ctx(t), shared.ID); err != nil {
		t.Fatal(err)
	}
	if held, _ := s.ArtifactContentHeld(ctx(t), sha('a')); !held {
		t.Error("content a: got not held, want held by bob's artifact")
	}
	if held, _ := s.ArtifactContentHeld(ctx(t), sha('c')); !held {
		t.Error("content c: got not held, want held by the hidden artifact in its grace")
	}
	if err := s.ArtifactPurge(ctx(t), alone.ID); err != nil {
		t.Fatal(err)
	}
	if held, _ := s.ArtifactContentHeld(ctx(t), sha('c')); held {
		t.Error("content c after purge: got held, want not")
	}
	// A visible artifact is never purged.
	vis := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: a.ID, SHA256: sha('d'), SizeBytes: 1, Now: t0})
	if err := s.ArtifactPurge(ctx(t), vis.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArtifactGet(ctx(t), a.ID, vis.ID); err != nil {
		t.Errorf("visible artifact after a purge attempt: %v", err)
	}
}

func testArtifactSchemaChecks(t *testing.T, s store.Store) {
	a := mustAccount(t, s, "alice")
	for name, q := range map[string]string{
		"negative size":  `INSERT INTO artifacts (id, account_id, sha256, size_bytes, source, created_at) VALUES ('art_1', $1, '` + sha('a') + `', -1, 'local', 0)`,
		"local with url": `INSERT INTO artifacts (id, account_id, sha256, source, url, created_at) VALUES ('art_2', $1, '` + sha('a') + `', 'local', 'http://x', 0)`,
		"local no sha":   `INSERT INTO artifacts (id, account_id, sha256, source, created_at) VALUES ('art_3', $1, '', 'local', 0)`,
		"bad source":     `INSERT INTO artifacts (id, account_id, sha256, source, created_at) VALUES ('art_4', $1, '` + sha('a') + `', 'ftp', 0)`,
	} {
		if err := rawExec(t, s, q, a.ID); err == nil {
			t.Errorf("%s: the database accepted it, want a CHECK to refuse it", name)
		}
	}
}

func testJobRetentionPurge(t *testing.T, s store.Store) {
	f := setupJobs(t, s)
	old := mustJob(t, s, f.jobParams(2, t0))
	recent := mustJob(t, s, f.jobParams(1, t0))
	open := mustJob(t, s, f.jobParams(1, t0))
	in := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: f.acct.ID, SHA256: sha('a'), SizeBytes: 1, Now: t0})
	out := mustArtifact(t, s, &store.ArtifactCreateParams{AccountID: f.acct.ID, SHA256: sha('b'), SizeBytes: 1, JobID: old.ID, Now: t0})
	for _, j := range []*store.Job{old, recent} {
		if err := s.ArtifactRefAdd(ctx(t), &store.ArtifactRefParams{ArtifactID: in.ID, JobID: j.ID, Role: store.ArtifactRoleInput, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	mustSetStatus(t, s, old.ID, store.JobCancelled, t0.Add(time.Hour))
	mustSetStatus(t, s, recent.ID, store.JobCancelled, t0.Add(40*24*time.Hour))
	cutoff := t0.Add(31 * 24 * time.Hour)
	n, err := s.JobPurgeFinishedBefore(ctx(t), cutoff, 10)
	if err != nil || n != 1 {
		t.Fatalf("purge: got %d, %v; want 1", n, err)
	}
	if _, err := s.JobGetByID(ctx(t), old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("purged job: got %v, want ErrNotFound", err)
	}
	if tasks, err := s.TaskList(ctx(t), old.ID); err != nil || len(tasks) != 0 {
		t.Errorf("purged job's tasks: got %d, %v; want none", len(tasks), err)
	}
	if evs, err := s.JobEventList(ctx(t), old.ID, 0); err != nil || len(evs) != 0 {
		t.Errorf("purged job's events: got %d, %v; want none", len(evs), err)
	}
	for _, j := range []*store.Job{recent, open} {
		if _, err := s.JobGetByID(ctx(t), j.ID); err != nil {
			t.Errorf("job %s (recent or open): got %v, want kept", j.ID, err)
		}
	}
	gotIn, _ := s.ArtifactGet(ctx(t), f.acct.ID, in.ID)
	gotOut, _ := s.ArtifactGet(ctx(t), f.acct.ID, out.ID)
	if gotIn == nil || gotIn.ReferenceCount != 1 || gotOut == nil || gotOut.ReferenceCount != 0 || gotOut.JobID != old.ID {
		t.Errorf("artifacts after the purge: got %+v and %+v, want both kept, one reference fewer", gotIn, gotOut)
	}
	if n, _ := s.JobPurgeFinishedBefore(ctx(t), cutoff, 10); n != 0 {
		t.Errorf("second purge: got %d, want 0", n)
	}
}
