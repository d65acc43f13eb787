package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// batchRows is how many rows one multi-row INSERT carries. Measured on a
// 10,000-task job: PostgreSQL takes about the same time from 100 to 1,000
// rows a statement (one statement a row is ten times slower: a round trip
// each), while SQLite slows down above a few hundred, since binding a
// "$N" parameter looks its name up in a list as long as the statement's
// parameters. At 8 parameters a task row, 100 rows bind 803 parameters.
const batchRows = 100

// atomic runs fn inside the caller's transaction when q is in one, else in a
// transaction of its own, so a multi-statement write is whole either way.
func (q *queries) atomic(ctx context.Context, fn func(q *queries) error) error {
	if _, inTx := q.write.(*sql.Tx); inTx {
		return fn(q)
	}
	return q.db.InTx(ctx, func(tq store.Querier) error { return fn(tq.(*queries)) })
}

// exists reports whether the row named by the count query name exists; it
// tells "not there" from "the guard refused" after a guarded write.
func (q *queries) exists(ctx context.Context, name, id string) (bool, error) {
	var n int
	if err := q.read.QueryRowContext(ctx, q.sql(name), id).Scan(&n); err != nil {
		return false, q.mapErr(err)
	}
	return n > 0, nil
}

// refused is the error of a guarded write that changed nothing.
func (q *queries) refused(ctx context.Context, existsQuery, id string) error {
	ok, err := q.exists(ctx, existsQuery, id)
	switch {
	case err != nil:
		return err
	case ok:
		return store.ErrConflict
	}
	return store.ErrNotFound
}

// insertBatches inserts n rows with the *Batch query name, batchRows rows a
// statement, in q's transaction (callers run it inside atomic). shared are
// the parameters every row uses; row appends row i's own. The statement for a
// batch size is built and prepared once, so a full-size batch is parsed once
// however many there are.
func (q *queries) insertBatches(ctx context.Context, name string, shared []any, n int, row func(args []any, i int) []any) error {
	tx, ok := q.write.(*sql.Tx)
	if !ok {
		return fmt.Errorf("sqldb: %s outside a transaction", name)
	}
	var stmt *sql.Stmt
	stmtRows, perRow := 0, 0
	defer func() {
		if stmt != nil {
			stmt.Close()
		}
	}()
	for start := 0; start < n; start += batchRows {
		rows := min(batchRows, n-start)
		if rows != stmtRows {
			text, pr, err := repeatValues(q.sql(name), len(shared), rows)
			if err != nil {
				return err
			}
			if stmt != nil {
				stmt.Close()
			}
			if stmt, err = tx.PrepareContext(ctx, text); err != nil {
				return fmt.Errorf("%s: prepare: %w", name, q.mapErr(err))
			}
			stmtRows, perRow = rows, pr
		}
		args := make([]any, 0, len(shared)+rows*perRow)
		args = append(args, shared...)
		for i := start; i < start+rows; i++ {
			args = row(args, i)
		}
		if want := len(shared) + rows*perRow; len(args) != want {
			return fmt.Errorf("sqldb: %s: %d parameters for %d rows, want %d", name, len(args), rows, want)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("%s: %w", name, q.mapErr(err))
		}
	}
	return nil
}

func nullString(p *string) sql.NullString {
	if p == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *p, Valid: true}
}

func fromNullString(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}

// nullJSON stores absent JSON as NULL.
func nullJSON(raw json.RawMessage) sql.NullString {
	if len(raw) == 0 {
		return sql.NullString{}
	}
	return sql.NullString{String: string(raw), Valid: true}
}

func fromNullJSON(v sql.NullString) json.RawMessage {
	if !v.Valid {
		return nil
	}
	return json.RawMessage(v.String)
}

// nullIfEmpty binds "" as NULL, for COALESCE($n, column): keep the column.
func nullIfEmpty(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// --- jobs

func scanJob(s scanner) (*store.Job, error) {
	var j store.Job
	var status, request, payload, summary, tags, meta, billing string
	var clientRef, variant sql.NullString
	var submitted, updated int64
	var started, finished sql.NullInt64
	if err := s.Scan(&j.ID, &j.AccountID, &j.ProjectID, &j.ProjectName, &j.PushID, &j.Type, &status, &j.Priority,
		&request, &payload, &summary, &j.Error, &j.RecommendedAction, &clientRef, &tags, &meta, &variant,
		&j.TaskCount, &submitted, &started, &finished, &updated, &j.RateMicrosPerHour, &billing); err != nil {
		return nil, err
	}
	j.Billing = []byte(billing)
	if err := json.Unmarshal([]byte(tags), &j.Tags); err != nil {
		return nil, fmt.Errorf("job %s: tags: %w", j.ID, err)
	}
	j.Status = store.JobStatus(status)
	j.Request, j.Payload, j.Summary, j.Meta = []byte(request), []byte(payload), []byte(summary), []byte(meta)
	j.ClientRef, j.Variant = fromNullString(clientRef), fromNullString(variant)
	j.SubmittedAt, j.UpdatedAt = fromMicros(submitted), fromMicros(updated)
	j.StartedAt, j.FinishedAt = fromNullMicros(started), fromNullMicros(finished)
	return &j, nil
}

func (q *queries) JobCreate(ctx context.Context, p *store.JobCreateParams) (*store.Job, error) {
	j := &p.Job
	tags := j.Tags
	if tags == nil {
		tags = []string{}
	}
	tagsJSON, err := json.Marshal(tags)
	if err != nil {
		return nil, err
	}
	// job_tags has one row per distinct tag; the JSON keeps them as given.
	distinct := slices.Clone(tags)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)

	ev := p.Event
	if ev.ID == "" || ev.Kind == "" {
		return nil, errors.New("sqldb: JobCreate needs its first event's id and kind")
	}
	if ev.JobID == "" {
		ev.JobID = j.ID
	}
	now := micros(j.SubmittedAt)
	var out *store.Job
	err = q.atomic(ctx, func(q *queries) error {
		job, err := scanJob(q.write.QueryRowContext(ctx, q.sql("JobCreate"),
			j.ID, j.AccountID, j.ProjectID, j.ProjectName, j.PushID, j.Type, string(j.Status), j.Priority,
			jsonText(j.Request, "{}"), jsonText(j.Payload, "null"), jsonText(j.Summary, "{}"), j.Error,
			j.RecommendedAction, nullString(j.ClientRef), string(tagsJSON), jsonText(j.Meta, "null"),
			nullString(j.Variant), int64(len(p.Tasks)), now, j.RateMicrosPerHour, jsonText(j.Billing, "{}")))
		if err != nil {
			return fmt.Errorf("insert job: %w", q.mapErr(err))
		}
		if err := q.insertBatches(ctx, "JobTagCreateBatch", []any{j.ID, j.AccountID}, len(distinct),
			func(args []any, i int) []any { return append(args, distinct[i]) }); err != nil {
			return err
		}
		if err := q.insertBatches(ctx, "TaskCreateBatch", []any{j.ID, j.Priority, now}, len(p.Tasks),
			func(args []any, i int) []any {
				t := &p.Tasks[i]
				return append(args, t.ID, t.Index, jsonText(t.Payload, "{}"), jsonText(t.Meta, "{}"),
					jsonText(t.Requirements, "{}"), t.CPU, t.MemoryMB, t.GPUs)
			}); err != nil {
			return err
		}
		deps := slices.Clone(p.DependsOn)
		slices.Sort(deps)
		deps = slices.Compact(deps)
		if err := q.insertBatches(ctx, "JobDepCreateBatch", []any{j.ID}, len(deps),
			func(args []any, i int) []any { return append(args, deps[i]) }); err != nil {
			return err
		}
		if err := q.JobEventCreate(ctx, &ev); err != nil {
			return err
		}
		out = job
		return nil
	})
	return out, err
}

func (q *queries) JobGet(ctx context.Context, accountID, id string) (*store.Job, error) {
	j, err := scanJob(q.read.QueryRowContext(ctx, q.sql("JobGet"), accountID, id))
	return j, q.mapErr(err)
}

func (q *queries) JobGetByID(ctx context.Context, id string) (*store.Job, error) {
	j, err := scanJob(q.read.QueryRowContext(ctx, q.sql("JobGetByID"), id))
	return j, q.mapErr(err)
}

func (q *queries) JobList(ctx context.Context, p *store.JobListParams) ([]*store.Job, int, error) {
	var list, count sqlBuilder
	list.add(q.sql("JobListSelect"), p.AccountID)
	count.add(q.sql("JobListCount"), p.AccountID)
	if err := q.jobFilters(p, &list, &count); err != nil {
		return nil, 0, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = math.MaxInt32
	}
	list.add(q.sql("JobListOrder"))
	list.add(q.sql("JobListPage"), limit, max(p.Offset, 0))

	var total int
	if err := q.read.QueryRowContext(ctx, count.String(), count.args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count jobs: %w", q.mapErr(err))
	}
	rows, err := q.read.QueryContext(ctx, list.String(), list.args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list jobs: %w", q.mapErr(err))
	}
	jobs, err := collect(rows, scanJob)
	return jobs, total, err
}

// jobFilters appends the JobList* fragments p asks for to every builder,
// each already holding a statement that ends in "WHERE ... account_id = $1".
func (q *queries) jobFilters(p *store.JobListParams, bs ...*sqlBuilder) error {
	filter := func(name string, args ...any) {
		for _, b := range bs {
			b.add(q.sql(name), args...)
		}
	}
	filterList := func(name string, values []any) error {
		for _, b := range bs {
			if err := b.addList(q.sql(name), values); err != nil {
				return err
			}
		}
		return nil
	}
	if len(p.Statuses) > 0 {
		vs := make([]any, len(p.Statuses))
		for i, s := range p.Statuses {
			vs[i] = string(s)
		}
		if err := filterList("JobListByStatus", vs); err != nil {
			return err
		}
	}
	if p.ProjectID != "" {
		filter("JobListByProject", p.ProjectID)
	}
	if p.Type != "" {
		filter("JobListByType", p.Type)
	}
	if p.Tag != "" {
		filter("JobListByTag", p.AccountID, p.Tag)
	}
	if p.ClientRef != "" {
		filter("JobListByClientRef", p.ClientRef)
	}
	if p.Since != nil {
		filter("JobListSince", micros(*p.Since))
	}
	if len(p.IDs) > 0 {
		vs := make([]any, len(p.IDs))
		for i, id := range p.IDs {
			vs[i] = id
		}
		if err := filterList("JobListByID", vs); err != nil {
			return err
		}
	}
	return nil
}

// jobGroupRows names the query listing one row per (group key, job) for
// each key; JobGroups wraps it to count and add up per key and status.
var jobGroupRows = map[store.JobGroupKey]string{
	store.JobGroupStatus:    "JobGroupRowsByStatus",
	store.JobGroupProject:   "JobGroupRowsByProject",
	store.JobGroupType:      "JobGroupRowsByType",
	store.JobGroupTag:       "JobGroupRowsByTag",
	store.JobGroupClientRef: "JobGroupRowsByClientRef",
}

func (q *queries) JobGroups(ctx context.Context, p *store.JobListParams, by store.JobGroupKey) ([]store.JobGroup, error) {
	rowsQuery, ok := jobGroupRows[by]
	if !ok {
		return nil, fmt.Errorf("group jobs: unknown key %q", by)
	}
	var b sqlBuilder
	b.add(q.sql("JobGroupsOpen"))
	b.add(q.sql(rowsQuery), p.AccountID)
	if err := q.jobFilters(p, &b); err != nil {
		return nil, err
	}
	b.add(q.sql("JobGroupsClose"))
	rows, err := q.read.QueryContext(ctx, b.String(), b.args...)
	if err != nil {
		return nil, fmt.Errorf("group jobs: %w", q.mapErr(err))
	}
	defer rows.Close()
	var groups []store.JobGroup
	index := map[string]int{} // key ("\x00" for nil) -> position in groups
	for rows.Next() {
		var (
			key         sql.NullString
			status      string
			n           int
			cost, first int64
			last        sql.NullInt64
		)
		if err := rows.Scan(&key, &status, &n, &cost, &first, &last); err != nil {
			return nil, fmt.Errorf("group jobs: %w", q.mapErr(err))
		}
		k := "\x00"
		if key.Valid {
			k = key.String
		}
		i, seen := index[k]
		if !seen {
			g := store.JobGroup{StatusCounts: map[store.JobStatus]int{}, FirstSubmittedAt: fromMicros(first)}
			if key.Valid {
				g.Key = &key.String
			}
			i = len(groups)
			index[k] = i
			groups = append(groups, g)
		}
		g := &groups[i]
		g.Count += n
		g.StatusCounts[store.JobStatus(status)] += n
		g.CostMicros += cost
		if t := fromMicros(first); t.Before(g.FirstSubmittedAt) {
			g.FirstSubmittedAt = t
		}
		if t := fromNullMicros(last); t != nil && (g.LastCompletedAt == nil || t.After(*g.LastCompletedAt)) {
			g.LastCompletedAt = t
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("group jobs: %w", q.mapErr(err))
	}
	// Sorted here rather than in SQL: the engines order NULL and text
	// differently (collation), and the API promises one order.
	slices.SortStableFunc(groups, func(a, b store.JobGroup) int {
		switch {
		case a.Key == nil && b.Key == nil:
			return 0
		case a.Key == nil:
			return 1
		case b.Key == nil:
			return -1
		}
		return strings.Compare(*a.Key, *b.Key)
	})
	return groups, nil
}

func (q *queries) JobSetStatus(ctx context.Context, p *store.JobSetStatusParams) (*store.Job, error) {
	from := p.From
	if from == nil {
		from = store.JobStatuses
	}
	// The guard is the caller's From narrowed by the transition table, so a
	// caller cannot make a move the table forbids.
	var allowed []any
	for _, s := range from {
		if s.CanTransition(p.To) {
			allowed = append(allowed, string(s))
		}
	}
	if len(allowed) == 0 {
		return nil, q.refused(ctx, "JobExists", p.ID)
	}
	text, err := expandList(q.sql("JobSetStatus"), len(allowed))
	if err != nil {
		return nil, err
	}
	var started, finished sql.NullInt64
	if p.To == store.JobRunning {
		started = sql.NullInt64{Int64: micros(p.Now), Valid: true}
	}
	if p.To.IsTerminal() {
		finished = sql.NullInt64{Int64: micros(p.Now), Valid: true}
	}
	args := append([]any{p.ID, string(p.To), nullIfEmpty(p.Error), nullIfEmpty(p.RecommendedAction),
		nullJSON(p.Summary), started, finished, micros(p.Now)}, allowed...)
	j, err := scanJob(q.write.QueryRowContext(ctx, text, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, q.refused(ctx, "JobExists", p.ID)
	}
	return j, q.mapErr(err)
}

func (q *queries) ProjectActiveJobCount(ctx context.Context, projectID string) (int, error) {
	var n int
	err := q.read.QueryRowContext(ctx, q.sql("ProjectActiveJobCount"), projectID).Scan(&n)
	return n, q.mapErr(err)
}

// --- tasks

func scanTask(s scanner) (*store.Task, error) {
	var t store.Task
	var status, payload, meta, reqs string
	var result, progress, checkpoint, resume sql.NullString
	var exit, started, completed sql.NullInt64
	var submitted, updated int64
	if err := s.Scan(&t.ID, &t.JobID, &t.Index, &status, &payload, &meta, &reqs, &t.Priority, &t.RetriesUsed,
		&t.InfraRequeues, &t.DeclaredInfra, &t.Attempts, &result, &t.Output, &t.ErrorText, &progress, &exit,
		&t.LastHostID, &submitted, &started, &completed, &updated, &t.CPU, &t.MemoryMB, &t.GPUs,
		&t.OutputTail, &checkpoint, &resume); err != nil {
		return nil, err
	}
	t.Status = store.TaskStatus(status)
	t.Payload, t.Meta, t.Requirements = []byte(payload), []byte(meta), []byte(reqs)
	t.Result, t.LatestProgress = fromNullJSON(result), fromNullJSON(progress)
	t.Checkpoint, t.ResumeState = fromNullJSON(checkpoint), fromNullJSON(resume)
	t.ExitCode = fromNullInt(exit)
	t.SubmittedAt, t.UpdatedAt = fromMicros(submitted), fromMicros(updated)
	t.StartedAt, t.CompletedAt = fromNullMicros(started), fromNullMicros(completed)
	return &t, nil
}

func (q *queries) TaskList(ctx context.Context, jobID string) ([]*store.Task, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("TaskList"), jobID)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanTask)
}

func (q *queries) TaskGet(ctx context.Context, id string) (*store.Task, error) {
	t, err := scanTask(q.read.QueryRowContext(ctx, q.sql("TaskGet"), id))
	return t, q.mapErr(err)
}

func (q *queries) TaskSetResumeState(ctx context.Context, taskID string, state json.RawMessage) error {
	return q.execOne(ctx, "TaskSetResumeState", taskID, nullJSON(state))
}

func (q *queries) TaskOpenExists(ctx context.Context, jobID string) (bool, error) {
	var n int
	err := q.read.QueryRowContext(ctx, q.sql("TaskOpenExists"), jobID).Scan(&n)
	return n > 0, q.mapErr(err)
}

func (q *queries) TaskCountByStatus(ctx context.Context, jobID string) (map[store.TaskStatus]int64, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("TaskCountByStatus"), jobID)
	if err != nil {
		return nil, q.mapErr(err)
	}
	defer rows.Close()
	out := map[store.TaskStatus]int64{}
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return nil, err
		}
		out[store.TaskStatus(status)] = n
	}
	return out, rows.Err()
}

func (q *queries) TaskClaim(ctx context.Context, p *store.TaskClaimParams) (*store.Task, *store.Attempt, error) {
	var task *store.Task
	var att *store.Attempt
	err := q.atomic(ctx, func(q *queries) error {
		avoid := int64(math.MaxInt64) // no task is requeued that late: avoid none
		if !p.AvoidRequeuedSince.IsZero() {
			avoid = micros(p.AvoidRequeuedSince)
		}
		t, err := scanTask(q.write.QueryRowContext(ctx, q.sql("TaskClaim"), p.HostID, micros(p.Now),
			p.FreeCPU, p.FreeMemoryMB, p.FreeGPUs, avoid, p.MinGPUs, p.GPUMemoryMB, p.StorageGB, p.SingleCoreScore))
		if err != nil {
			return q.mapErr(err) // no row: nothing queued
		}
		a, err := scanAttempt(q.write.QueryRowContext(ctx, q.sql("AttemptCreate"), p.AttemptID, t.ID, t.JobID,
			t.Attempts, p.HostID, jsonText(p.ResourceProfile, "{}"), micros(t.UpdatedAt), t.CPU, t.MemoryMB, t.GPUs))
		if err != nil {
			return fmt.Errorf("create attempt: %w", q.mapErr(err))
		}
		task, att = t, a
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return task, att, nil
}

func (q *queries) TaskSetProgress(ctx context.Context, p *store.TaskSetProgressParams) error {
	res, err := q.write.ExecContext(ctx, q.sql("TaskSetProgress"), p.TaskID, nullJSON(p.Progress),
		nullString(p.Output), micros(p.Now), nullString(p.OutputTail), nullJSON(p.Checkpoint))
	if err != nil {
		return q.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	return q.refused(ctx, "TaskExists", p.TaskID)
}

func (q *queries) TaskCancelOpen(ctx context.Context, jobID string, now time.Time) ([]string, error) {
	var ids []string
	err := q.atomic(ctx, func(q *queries) error {
		if _, err := q.write.ExecContext(ctx, q.sql("TaskCancelOpen"), jobID, micros(now)); err != nil {
			return fmt.Errorf("cancel tasks: %w", q.mapErr(err))
		}
		rows, err := q.write.QueryContext(ctx, q.sql("AttemptCancelOpen"), jobID, micros(now))
		if err != nil {
			return fmt.Errorf("cancel attempts: %w", q.mapErr(err))
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	slices.Sort(ids)
	return ids, err
}

// --- attempts

func scanAttempt(s scanner) (*store.Attempt, error) {
	var a store.Attempt
	var status, profile string
	var exit, started, ended sql.NullInt64
	var assigned, updated int64
	if err := s.Scan(&a.ID, &a.TaskID, &a.JobID, &a.Number, &status, &a.HostID, &profile, &exit, &a.TerminalKind,
		&a.RetryDecision, &assigned, &started, &ended, &updated, &a.BilledSeconds, &a.CostMicros,
		&a.CPU, &a.MemoryMB, &a.GPUs, &a.RateMicrosPerHour); err != nil {
		return nil, err
	}
	a.Status = store.AttemptStatus(status)
	a.ResourceProfile = []byte(profile)
	a.ExitCode = fromNullInt(exit)
	a.AssignedAt, a.UpdatedAt = fromMicros(assigned), fromMicros(updated)
	a.StartedAt, a.EndedAt = fromNullMicros(started), fromNullMicros(ended)
	return &a, nil
}

func (q *queries) AttemptList(ctx context.Context, jobID string) ([]*store.Attempt, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("AttemptList"), jobID)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanAttempt)
}

func (q *queries) AttemptGet(ctx context.Context, id string) (*store.Attempt, error) {
	a, err := scanAttempt(q.read.QueryRowContext(ctx, q.sql("AttemptGet"), id))
	return a, q.mapErr(err)
}

func (q *queries) JobDependents(ctx context.Context, jobID string) ([]string, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("JobDependents"), jobID)
	if err != nil {
		return nil, q.mapErr(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func (q *queries) JobDependencyStatuses(ctx context.Context, jobID string) (map[string]store.JobStatus, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("JobDependencyStatuses"), jobID)
	if err != nil {
		return nil, q.mapErr(err)
	}
	defer rows.Close()
	out := map[string]store.JobStatus{}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return nil, err
		}
		out[id] = store.JobStatus(status)
	}
	return out, rows.Err()
}

func (q *queries) JobLock(ctx context.Context, id string) error {
	var one int
	return q.mapErr(q.write.QueryRowContext(ctx, q.sql("JobLock"), id).Scan(&one))
}

func (q *queries) AttemptListOpen(ctx context.Context, hostID string) ([]*store.Attempt, error) {
	var rows *sql.Rows
	var err error
	if hostID == "" {
		rows, err = q.read.QueryContext(ctx, q.sql("AttemptListOpen"))
	} else {
		rows, err = q.read.QueryContext(ctx, q.sql("AttemptListOpenByHost"), hostID)
	}
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanAttempt)
}

func (q *queries) AttemptStart(ctx context.Context, attemptID string, now time.Time) error {
	res, err := q.write.ExecContext(ctx, q.sql("AttemptStart"), attemptID, micros(now))
	if err != nil {
		return q.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	return q.refused(ctx, "AttemptExists", attemptID)
}

func (q *queries) AttemptFinish(ctx context.Context, p *store.AttemptFinishParams) (*store.Attempt, error) {
	// The guards below (open attempt, running task) are the from side of
	// the transition tables; these are the to side.
	if !store.AttemptRunning.CanTransition(p.Status) {
		return nil, fmt.Errorf("sqldb: AttemptFinish needs an ended attempt status, got %q", p.Status)
	}
	if !store.TaskRunning.CanTransition(p.TaskStatus) {
		return nil, fmt.Errorf("sqldb: AttemptFinish needs a queued or terminal task status, got %q", p.TaskStatus)
	}
	var completed sql.NullInt64
	if p.TaskStatus.IsTerminal() {
		completed = sql.NullInt64{Int64: micros(p.Now), Valid: true}
	}
	var out *store.Attempt
	err := q.atomic(ctx, func(q *queries) error {
		res, err := q.write.ExecContext(ctx, q.sql("TaskFinishAttempt"), p.AttemptID, string(p.TaskStatus),
			p.RetriesUsed, p.InfraRequeues, p.DeclaredInfra, nullJSON(p.Result), nullString(p.Output),
			nullString(p.ErrorText), nullInt(p.ExitCode), completed, micros(p.Now), nullString(p.OutputTail),
			nullJSON(p.Progress), nullJSON(p.Checkpoint))
		if err != nil {
			return fmt.Errorf("finish task: %w", q.mapErr(err))
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			// The attempt is missing or ended, or its task is not running.
			return q.refused(ctx, "AttemptExists", p.AttemptID)
		}
		a, err := scanAttempt(q.write.QueryRowContext(ctx, q.sql("AttemptFinish"), p.AttemptID, string(p.Status),
			p.TerminalKind, p.RetryDecision, nullInt(p.ExitCode), micros(p.Now), p.BilledSeconds, p.CostMicros))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrConflict // ended between the two statements (PostgreSQL)
		}
		if err != nil {
			return fmt.Errorf("finish attempt: %w", q.mapErr(err))
		}
		out = a
		return nil
	})
	return out, err
}

// --- events

func scanJobEvent(s scanner) (*store.JobEvent, error) {
	var e store.JobEvent
	var data string
	var created int64
	var position sql.NullInt64
	if err := s.Scan(&e.ID, &e.JobID, &e.TaskID, &e.AttemptID, &e.Kind, &data, &created, &position); err != nil {
		return nil, err
	}
	e.Position = position.Int64
	e.Data = []byte(data)
	e.CreatedAt = fromMicros(created)
	return &e, nil
}

func (q *queries) JobEventCreate(ctx context.Context, e *store.JobEvent) error {
	insert := func(q *queries, position sql.NullInt64) error {
		if _, err := q.write.ExecContext(ctx, q.sql("JobEventCreate"), e.ID, e.JobID, e.TaskID, e.AttemptID, e.Kind,
			jsonText(e.Data, "{}"), micros(e.CreatedAt), position); err != nil {
			return fmt.Errorf("insert job event: %w", q.mapErr(err))
		}
		return nil
	}
	next, ok := q.db.sqlText["JobEventPositionNext"]
	if !ok {
		return insert(q, sql.NullInt64{}) // numbered by the engine's migration 015
	}
	// Numbered at insert (SQLite), in the event's transaction, so that a
	// rolled-back event gives its number back.
	return q.atomic(ctx, func(q *queries) error {
		var position sql.NullInt64
		if err := q.write.QueryRowContext(ctx, next).Scan(&position); err != nil {
			return fmt.Errorf("event position: %w", q.mapErr(err))
		}
		return insert(q, position)
	})
}

func (q *queries) JobEventList(ctx context.Context, jobID string, limit int) ([]*store.JobEvent, error) {
	if limit <= 0 {
		limit = math.MaxInt32
	}
	rows, err := q.read.QueryContext(ctx, q.sql("JobEventList"), jobID, limit)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanJobEvent)
}

func (q *queries) JobEventPage(ctx context.Context, p *store.JobEventPageParams) ([]*store.JobEvent, error) {
	before := p.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	name := "JobEventPageOldest"
	if p.Newest {
		name = "JobEventPageNewest"
	}
	rows, err := q.read.QueryContext(ctx, q.sql(name), p.JobID, p.After, before, max(p.Limit, 1))
	if err != nil {
		return nil, fmt.Errorf("job event page: %w", q.mapErr(err))
	}
	return collect(rows, scanJobEvent)
}

func (q *queries) JobEventFeed(ctx context.Context, p *store.JobEventFeedParams) ([]*store.JobEvent, error) {
	var b sqlBuilder
	b.add(q.sql("JobEventFeedSelect"), p.After)
	if len(p.JobIDs) > 0 {
		vs := make([]any, len(p.JobIDs))
		for i, id := range p.JobIDs {
			vs[i] = id
		}
		if err := b.addList(q.sql("JobEventFeedByJob"), vs); err != nil {
			return nil, err
		}
	}
	if p.AccountID != "" {
		b.add(q.sql("JobEventFeedByAccount"), p.AccountID)
	}
	if p.ProjectID != "" {
		b.add(q.sql("JobEventFeedByProject"), p.ProjectID)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = math.MaxInt32
	}
	b.add(q.sql("JobEventFeedPage"), limit)
	rows, err := q.read.QueryContext(ctx, b.String(), b.args...)
	if err != nil {
		return nil, fmt.Errorf("job event feed: %w", q.mapErr(err))
	}
	return collect(rows, func(s scanner) (*store.JobEvent, error) {
		var e store.JobEvent
		var data string
		var created int64
		if err := s.Scan(&e.ID, &e.JobID, &e.TaskID, &e.AttemptID, &e.Kind, &data, &created, &e.Position,
			&e.AccountID, &e.ProjectID); err != nil {
			return nil, err
		}
		e.Data = []byte(data)
		e.CreatedAt = fromMicros(created)
		return &e, nil
	})
}

func (q *queries) JobEventLastPosition(ctx context.Context) (int64, error) {
	var n int64
	if err := q.read.QueryRowContext(ctx, q.sql("JobEventLastPosition")).Scan(&n); err != nil {
		return 0, fmt.Errorf("last job event position: %w", q.mapErr(err))
	}
	return n, nil
}

func (q *queries) TaskQueuedCount(ctx context.Context) (int64, error) {
	var n int64
	if err := q.read.QueryRowContext(ctx, q.sql("TaskQueuedCount")).Scan(&n); err != nil {
		return 0, fmt.Errorf("count queued tasks: %w", q.mapErr(err))
	}
	return n, nil
}
