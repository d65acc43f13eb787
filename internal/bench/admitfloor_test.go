package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// The admission floor answers a submission as the API does (201 with the
// job's id), keeps its row in a SQLite database with the store's settings,
// and refuses what is not a submission.
func TestAdmissionFloor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fixed := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f, err := startAdmissionFloor(ctx, filepath.Join(t.TempDir(), "floor", "floor.db"), func() time.Time { return fixed })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.close(); err != nil {
			t.Error(err)
		}
	})
	post := func(body []byte) *http.Response {
		t.Helper()
		resp, err := http.Post(f.URL+"/api/v1/jobs", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post(benchSubmission(benchProjectName, 7))
	var j struct{ ID, Status string }
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&j) != nil || j.ID == "" || j.Status != "queued" {
		t.Fatalf("submission: got %d %+v, want 201 with a queued job's id", resp.StatusCode, j)
	}
	if resp := post([]byte(`{"payload":`)); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("not a submission: got %d, want 400", resp.StatusCode)
	}
	var n int
	var payload string
	var submitted int64
	if err := f.db.QueryRowContext(ctx, "SELECT count(*), max(payload), max(submitted_at) FROM floor_jobs").Scan(&n, &payload, &submitted); err != nil {
		t.Fatal(err)
	}
	if n != 1 || payload != `{"i":7}` || submitted != fixed.UnixNano() {
		t.Errorf("got %d rows, payload %q, submitted_at %d; want the one submission's row", n, payload, submitted)
	}
	// The store's settings: WAL and synchronous NORMAL (1).
	var mode string
	var sync int
	if err := f.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode: got %q (%v), want wal", mode, err)
	}
	if err := f.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 1 {
		t.Errorf("synchronous: got %d (%v), want 1 (NORMAL)", sync, err)
	}
}
