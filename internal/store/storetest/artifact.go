package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

var artifactTests = map[string]func(*testing.T, store.Store){
	"ArtifactQuotaCountsContentOnce": testArtifactQuotaCountsContentOnce,
	"ArtifactScopingAndList":         testArtifactScopingAndList,
	"ArtifactReferencesAndHide":      testArtifactReferencesAndHide,
	"ArtifactGraceAndPurge":          testArtifactGraceAndPurge,
	"ArtifactSchemaChecks":           testArtifactSchemaChecks,
	"JobRetentionPurge":              testJobRetentionPurge,
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
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	wantQuota(t, s, a.ID, 0)
	x1 := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: a.ID, SHA256: tf.SHA('a'), SizeBytes: 100, Filename: "x"})
	tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: a.ID, SHA256: tf.SHA('a'), SizeBytes: 100, Filename: "y"})
	tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: a.ID, SHA256: tf.SHA('b'), SizeBytes: 7})
	tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: a.ID, Source: store.ArtifactExternal, URL: "https://e.example/f"})
	tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: b.ID, SHA256: tf.SHA('a'), SizeBytes: 100})
	wantQuota(t, s, a.ID, 107)
	wantQuota(t, s, b.ID, 100)
	if ok, _ := s.ArtifactContentCounted(ctx(t), a.ID, tf.SHA('a')); !ok {
		t.Error("content a: got not counted, want counted")
	}
	if ok, _ := s.ArtifactContentCounted(ctx(t), a.ID, tf.SHA('c')); ok {
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
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	var ids []string
	for i := range 5 {
		ar := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: a.ID, SHA256: tf.SHA('a' + byte(i)), SizeBytes: int64(i),
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
	f := tf.Project(t, s, nil)
	j := tf.Job(t, s, &tf.JobOpts{Project: f})
	in := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: f.AccountID, SHA256: tf.SHA('a'), SizeBytes: 1})
	out := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: f.AccountID, SHA256: tf.SHA('b'), SizeBytes: 1,
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
	got, err := s.ArtifactGet(ctx(t), f.AccountID, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReferenceCount != 1 || got.ActiveReferenceCount != 1 || got.TerminalReferenceCount != 0 ||
		got.LastReferencedAt == nil || !got.LastReferencedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("input artifact: got %+v, want 1 active reference at %v", got, t0.Add(time.Minute))
	}
	for _, ar := range []*store.Artifact{in, out} {
		if err := s.ArtifactHide(ctx(t), f.AccountID, ar.ID, t0); !errors.Is(err, store.ErrConflict) {
			t.Errorf("hide %s while its job is queued: got %v, want ErrConflict", ar.ID, err)
		}
	}
	mustSetStatus(t, s, j.ID, store.JobCancelled, t0.Add(time.Hour))
	got, _ = s.ArtifactGet(ctx(t), f.AccountID, in.ID)
	if got.ActiveReferenceCount != 0 || got.TerminalReferenceCount != 1 {
		t.Errorf("after the job ended: got active %d terminal %d, want 0 and 1", got.ActiveReferenceCount, got.TerminalReferenceCount)
	}
	if err := s.ArtifactHide(ctx(t), f.AccountID, in.ID, t0.Add(time.Hour)); err != nil {
		t.Errorf("hide after the job ended: %v", err)
	}
	if err := s.ArtifactHide(ctx(t), f.AccountID, in.ID, t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("hide twice: got %v, want ErrNotFound", err)
	}
}

func testArtifactGraceAndPurge(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	shared := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: a.ID, SHA256: tf.SHA('a'), SizeBytes: 5})
	tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: b.ID, SHA256: tf.SHA('a'), SizeBytes: 5})
	alone := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: a.ID, SHA256: tf.SHA('c'), SizeBytes: 5})
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
	if held, _ := s.ArtifactContentHeld(ctx(t), tf.SHA('a')); !held {
		t.Error("content a: got not held, want held by bob's artifact")
	}
	if held, _ := s.ArtifactContentHeld(ctx(t), tf.SHA('c')); !held {
		t.Error("content c: got not held, want held by the hidden artifact in its grace")
	}
	if err := s.ArtifactPurge(ctx(t), alone.ID); err != nil {
		t.Fatal(err)
	}
	if held, _ := s.ArtifactContentHeld(ctx(t), tf.SHA('c')); held {
		t.Error("content c after purge: got held, want not")
	}
	// A visible artifact is never purged.
	vis := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: a.ID, SHA256: tf.SHA('d'), SizeBytes: 1})
	if err := s.ArtifactPurge(ctx(t), vis.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArtifactGet(ctx(t), a.ID, vis.ID); err != nil {
		t.Errorf("visible artifact after a purge attempt: %v", err)
	}
}

func testArtifactSchemaChecks(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	for name, q := range map[string]string{
		"negative size":  `INSERT INTO artifacts (id, account_id, sha256, size_bytes, source, created_at) VALUES ('art_1', $1, '` + tf.SHA('a') + `', -1, 'local', 0)`,
		"local with url": `INSERT INTO artifacts (id, account_id, sha256, source, url, created_at) VALUES ('art_2', $1, '` + tf.SHA('a') + `', 'local', 'http://x', 0)`,
		"local no sha":   `INSERT INTO artifacts (id, account_id, sha256, source, created_at) VALUES ('art_3', $1, '', 'local', 0)`,
		"bad source":     `INSERT INTO artifacts (id, account_id, sha256, source, created_at) VALUES ('art_4', $1, '` + tf.SHA('a') + `', 'ftp', 0)`,
	} {
		if err := rawExec(t, s, q, a.ID); err == nil {
			t.Errorf("%s: the database accepted it, want a CHECK to refuse it", name)
		}
	}
}

func testJobRetentionPurge(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	old := tf.Job(t, s, &tf.JobOpts{Project: f, Tasks: 2})
	recent := tf.Job(t, s, &tf.JobOpts{Project: f})
	open := tf.Job(t, s, &tf.JobOpts{Project: f})
	in := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: f.AccountID, SHA256: tf.SHA('a'), SizeBytes: 1})
	out := tf.Artifact(t, s, &tf.ArtifactOpts{AccountID: f.AccountID, SHA256: tf.SHA('b'), SizeBytes: 1, JobID: old.ID})
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
	gotIn, _ := s.ArtifactGet(ctx(t), f.AccountID, in.ID)
	gotOut, _ := s.ArtifactGet(ctx(t), f.AccountID, out.ID)
	if gotIn == nil || gotIn.ReferenceCount != 1 || gotOut == nil || gotOut.ReferenceCount != 0 || gotOut.JobID != old.ID {
		t.Errorf("artifacts after the purge: got %+v and %+v, want both kept, one reference fewer", gotIn, gotOut)
	}
	if n, _ := s.JobPurgeFinishedBefore(ctx(t), cutoff, 10); n != 0 {
		t.Errorf("second purge: got %d, want 0", n)
	}
}
