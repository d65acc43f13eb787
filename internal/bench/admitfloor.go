package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/store/sqlite"
)

// The floor of an admission: what answering a submission costs when all
// the service does is one durable insert of a job-sized row. An HTTP
// handler in the bench's own process, on a SQLite database opened with the
// store's own writer settings (sqlite.OpenWriter: WAL, synchronous NORMAL,
// BEGIN IMMEDIATE, one connection, cached statements), one autocommit
// INSERT per request: no auth, no credit, no queue, no log line.

// admissionFloorSchema is a job row's shape: the columns an admission
// writes into jobs (005_jobs.sql), with the index the account's list uses.
const admissionFloorSchema = `
CREATE TABLE IF NOT EXISTS floor_jobs (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL,
    project_id   TEXT NOT NULL,
    project_name TEXT NOT NULL,
    type         TEXT NOT NULL,
    status       TEXT NOT NULL,
    priority     BIGINT NOT NULL,
    request      TEXT NOT NULL,
    payload      TEXT NOT NULL,
    tags         TEXT NOT NULL,
    task_count   BIGINT NOT NULL,
    submitted_at BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS floor_jobs_account_submitted ON floor_jobs (account_id, submitted_at, id);`

const admissionFloorInsert = `INSERT INTO floor_jobs (id, account_id, project_id, project_name, type, status, priority,
 request, payload, tags, task_count, submitted_at, updated_at) VALUES ($1, $2, $3, $4, 'single', 'queued', 1, $5, $6, '[]', 1, $7, $7)`

// admissionFloor is the floor's server.
type admissionFloor struct {
	URL string
	db  *sql.DB
	srv *http.Server
	seq atomic.Int64
	now func() time.Time
}

// startAdmissionFloor opens the floor's database at path and serves the
// handler on a free port of 127.0.0.1.
func startAdmissionFloor(ctx context.Context, path string, now func() time.Time) (*admissionFloor, error) {
	db, err := sqlite.OpenWriter(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("admission floor: %w", err)
	}
	if _, err := db.ExecContext(ctx, admissionFloorSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("admission floor: schema: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("admission floor: %w", err)
	}
	f := &admissionFloor{URL: "http://" + ln.Addr().String(), db: db, now: now}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.admit), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// admit is the whole handler: read and decode the submission as the API
// would, insert its row, answer 201 with the job's id.
func (f *admissionFloor) admit(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var sub struct {
		Project string          `json:"project"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(body, &sub); err != nil || sub.Project == "" {
		http.Error(w, "not a submission", http.StatusBadRequest)
		return
	}
	id := "job_" + strconv.FormatInt(f.seq.Add(1), 10)
	if _, err := f.db.ExecContext(r.Context(), admissionFloorInsert, id, benchAccountName, "prj_"+sub.Project,
		sub.Project, string(body), string(sub.Payload), f.now().UnixNano()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"id":"`+id+`","status":"queued"}`+"\n")
}

// close stops the server and closes the database.
func (f *admissionFloor) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := f.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, f.db.Close())
}
