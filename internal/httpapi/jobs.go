package httpapi

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
)

// Bounds of the job endpoints' query parameters.
const (
	jobListDefaultLimit = 50
	jobListMaxLimit     = 200
	maxListIDs          = 200
	maxCancelReason     = 500
	maxOffset           = math.MaxInt32
)

var jobTypes = []string{string(apiv1.JobTypeStructuredRunner), string(apiv1.JobTypeSweep),
	string(apiv1.JobTypeMapReduce), string(apiv1.JobTypeBenchmark)}

// jobFor finds {id} among the caller's jobs; another account's is not found.
func (s *Server) jobFor(r *http.Request, param string) (*store.Job, error) {
	return s.jobs.Get(r.Context(), principal(r.Context()).Account.ID, r.PathValue(param))
}

// jobObject renders the job object with its summary.
func (s *Server) jobObject(ctx context.Context, j *store.Job) (*apiv1.Job, error) {
	v, err := s.views.JobObject(ctx, j)
	if err != nil {
		return nil, err
	}
	if v.RecommendedAction == nil {
		advice, err := s.views.PlacementAdvice(ctx, j)
		if err != nil {
			return nil, err
		}
		if advice != "" {
			v.RecommendedAction = &advice
		}
	}
	return v, nil
}

// admittedJobObject renders a job just submitted: as admitted when its
// admission gave its hold (no need to read its summary back), else read.
func (s *Server) admittedJobObject(ctx context.Context, j *store.Job, hold *store.Hold) (*apiv1.Job, error) {
	if hold != nil {
		if summary, err := jobview.AdmittedSummary(j, hold); err == nil {
			v := jobview.JobView(j, summary)
			// Just admitted: no task has checkpointed yet.
			v.CheckpointSummary = jobview.CheckpointSummaryView(j, store.CheckpointCounts{})
			return v, nil
		}
		// Admitted all the same: read the summary.
	}
	return s.jobObject(ctx, j)
}

// Idempotent submission (see docs/jobs.md): the caller's key, and the
// header that marks an answer as a replay of an earlier request's.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

// decodeSubmission is what POST /jobs and POST /jobs/batch read first: the
// body, a JSON object, as raw fields for each route's own decoder, and the
// request's Idempotency-Key with the hash (sha256, hex) of the exact body it
// came with: a resend must send the same bytes. No header, or an empty one,
// is no key.
func decodeSubmission(w http.ResponseWriter, r *http.Request, maxBytes int64) (map[string]json.RawMessage, job.Idempotency, error) {
	var raw map[string]json.RawMessage
	_, body, err := decodeJSONLimit(w, r, &raw, false, maxBytes)
	if err != nil {
		return nil, job.Idempotency{}, err
	}
	values := r.Header.Values(headerIdempotencyKey)
	if len(values) > 1 {
		return nil, job.Idempotency{}, fault.Invalid("invalid_idempotency_key", "Send one Idempotency-Key header.",
			"%d Idempotency-Key headers were sent", len(values)).With("field", headerIdempotencyKey)
	}
	if len(values) == 0 || values[0] == "" {
		return raw, job.Idempotency{}, nil
	}
	sum := sha256.Sum256(body)
	return raw, job.Idempotency{Key: values[0], RequestHash: hex.EncodeToString(sum[:])}, nil
}

// jobSubmit admits one job. With an Idempotency-Key, a resend of the same
// body answers the job the first request created (201, Idempotent-Replayed:
// true) and another body with the same key a 409.
func (s *Server) jobSubmit(w http.ResponseWriter, r *http.Request) error {
	release, err := s.largeBodies.reserve(w, r, submit.MaxSubmitBodyBytes)
	if err != nil {
		return err
	}
	defer release()
	raw, key, err := decodeSubmission(w, r, submit.MaxSubmitBodyBytes)
	if err != nil {
		return err
	}
	js, err := submit.DecodeFields(raw)
	if err != nil {
		return err
	}
	j, hold, replayed, err := s.jobs.SubmitHeld(r.Context(), principal(r.Context()).Account.ID, js, key)
	if err != nil {
		return err
	}
	v, err := s.admittedJobObject(r.Context(), j, hold)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set(headerReplayed, "true")
	}
	writeJSON(w, http.StatusCreated, v)
	return nil
}

// jobBatch admits each submission of the batch on its own, exactly as POST
// /jobs would: 201 when all were admitted, 207 when any was refused (each
// refusal in errors under its index, in the error envelope's terms). With
// an Idempotency-Key the key covers the whole body: a batch resent with
// the same key and body admits nothing twice (entries admitted before are
// answered as they are now, marked replayed; entries refused before are
// tried again), and another body with the same key is a 409 that admits
// nothing (job.Service.CheckBatchKey).
func (s *Server) jobBatch(w http.ResponseWriter, r *http.Request) error {
	release, err := s.largeBodies.reserve(w, r, submit.MaxBatchBodyBytes)
	if err != nil {
		return err
	}
	defer release()
	raw, key, err := decodeSubmission(w, r, submit.MaxBatchBodyBytes)
	if err != nil {
		return err
	}
	entries, err := submit.BatchJobs(raw)
	if err != nil {
		return err
	}
	ctx := r.Context()
	account := principal(ctx).Account.ID
	if key.Key != "" {
		if err := s.jobs.CheckBatchKey(ctx, account, key, len(entries)); err != nil {
			return err
		}
	}
	out := apiv1.JobBatchResult{Jobs: []apiv1.JobBatchEntry{}, Errors: []apiv1.JobBatchError{}}
	allReplayed := true
	for i, entry := range entries {
		js, err := submit.DecodeBatchEntry(entry)
		var j *store.Job
		replayed := false
		if err == nil {
			if key.Key != "" {
				j, replayed, err = s.jobs.SubmitBatchEntry(ctx, account, js, key, i)
			} else {
				j, err = s.jobs.Submit(ctx, account, js)
			}
		}
		if err != nil {
			fe, ok := fault.As(err)
			if !ok {
				// One entry's internal failure must not hide the jobs
				// already admitted: log it and answer it on its index.
				s.log.ErrorContext(ctx, "batch submission failed", "request_id", requestID(ctx), "index", i, "err", err)
				fe = fault.Internal(err)
			}
			out.Errors = append(out.Errors, apiv1.JobBatchError{Index: i, Error: fe.Message, Code: fe.Code,
				RecommendedAction: fe.Action, Details: fe.Details})
			continue
		}
		allReplayed = allReplayed && replayed
		meta := j.Meta
		if len(meta) == 0 {
			meta = json.RawMessage("null")
		}
		out.Jobs = append(out.Jobs, apiv1.JobBatchEntry{Index: i, ID: j.ID, Status: string(j.Status), Payload: j.Payload,
			Meta: meta, Variant: j.Variant, Replayed: replayed})
	}
	out.Submitted, out.ErrorCount = len(out.Jobs), len(out.Errors)
	status := http.StatusCreated
	if out.ErrorCount > 0 {
		status = http.StatusMultiStatus
	}
	if len(out.Jobs) > 0 && allReplayed {
		w.Header().Set(headerReplayed, "true")
	}
	writeJSON(w, status, out)
	return nil
}

func (s *Server) jobGet(w http.ResponseWriter, r *http.Request) error {
	j, err := s.jobFor(r, "id")
	if err != nil {
		return err
	}
	v, err := s.jobObject(r.Context(), j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// jobFilters are the filters GET /jobs and GET /results share.
type jobFilters struct {
	params  store.JobListParams
	project string // as asked, "" for none
	since   string // as parsed, RFC 3339
	userID  string // the account user_id named, "" without one
	// noMatch is set when a filter can match nothing (an unknown project):
	// the answer is an empty page without asking the store.
	noMatch bool
}

// parseJobFilters reads status, project, type, tag, since and ids (and
// job_id, client_ref and user_id when extended: user_id names the account
// whose jobs are listed, another account's only for an admin key). Statuses default to defStatuses.
func (s *Server) parseJobFilters(r *http.Request, defStatuses []store.JobStatus, extended bool) (*jobFilters, error) {
	q := r.URL.Query()
	f := &jobFilters{params: store.JobListParams{AccountID: principal(r.Context()).Account.ID}}
	if v := q.Get("status"); v != "" {
		for _, st := range splitList(v) {
			if !slices.Contains(store.JobStatuses, store.JobStatus(st)) {
				return nil, fault.Invalid("invalid_status",
					"Use a comma-separated list of planning, queued, running, completed, partial, failed, cancelled.",
					"unknown job status %q", st).With("field", "status")
			}
			if !slices.Contains(f.params.Statuses, store.JobStatus(st)) {
				f.params.Statuses = append(f.params.Statuses, store.JobStatus(st))
			}
		}
	}
	if len(f.params.Statuses) == 0 {
		f.params.Statuses = slices.Clone(defStatuses)
	}
	if v := q.Get("type"); v != "" {
		if !slices.Contains(jobTypes, v) {
			return nil, fault.Invalid("invalid_type", "Use one of structured_runner, sweep, map_reduce, benchmark.",
				"unknown job type %q", v).With("field", "type")
		}
		f.params.Type = v
	}
	f.params.Tag = q.Get("tag")
	if v := q.Get("since"); v != "" {
		t, ok := parseSince(v)
		if !ok {
			return nil, fault.Invalid("invalid_since",
				"Give since as an ISO 8601 time, e.g. 2026-01-02T15:04:05Z (or a date, 2026-01-02, meaning its start in UTC).",
				"since %q is not an ISO 8601 time", v).With("field", "since")
		}
		f.params.Since = &t
		f.since = t.Format(time.RFC3339Nano)
	}
	var ids []string
	if extended {
		if v := q.Get("job_id"); v != "" {
			ids = append(ids, v)
		}
		f.params.ClientRef = q.Get("client_ref")
		if q.Get("user_id") != "" {
			acct, err := s.namedAccount(r, "user_id",
				"Leave out user_id, or give your own account's id: only admin keys list other accounts' results.")
			if err != nil {
				return nil, err
			}
			f.params.AccountID, f.userID = acct, acct
		}
	}
	for _, id := range splitList(q.Get("ids")) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) > maxListIDs {
		return nil, fault.Invalid("too_many_ids", "Ask for at most 200 ids at a time.",
			"%d ids given; at most %d", len(ids), maxListIDs).With("field", "ids")
	}
	f.params.IDs = ids
	if f.project = q.Get("project"); f.project != "" {
		p, err := s.projects.Get(r.Context(), f.params.AccountID, f.project)
		switch {
		case fault.Is(err, fault.KindNotFound):
			f.noMatch = true // an unknown project has no jobs
		case err != nil:
			return nil, err
		default:
			f.params.ProjectID = p.ID
		}
	}
	return f, nil
}

// splitList splits a comma-separated query value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseSince reads an ISO 8601 time: RFC 3339 with or without fractions, a
// time without a zone (UTC), or a date (its start, UTC). A '+' of an offset
// that arrived unescaped in the query (and so as a space) is taken as '+'.
func parseSince(v string) (time.Time, bool) {
	v = strings.ReplaceAll(strings.TrimSpace(v), " ", "+")
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func (s *Server) jobList(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", jobListDefaultLimit, 1, jobListMaxLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, maxOffset)
	if err != nil {
		return err
	}
	f, err := s.parseJobFilters(r, nil, false)
	if err != nil {
		return err
	}
	out := apiv1.JobList{Jobs: []apiv1.JobListEntry{}, Limit: limit, Offset: offset}
	if !f.noMatch {
		f.params.Limit, f.params.Offset = limit, offset
		jobs, total, err := s.views.List(r.Context(), &f.params)
		if err != nil {
			return err
		}
		withOutput, err := s.views.JobIDsWithOutput(r.Context(), jobs)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			out.Jobs = append(out.Jobs, jobview.JobListEntryView(j, withOutput[j.ID]))
		}
		out.Total = total
	}
	out.Count = len(out.Jobs)
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) jobOutput(w http.ResponseWriter, r *http.Request) error {
	j, err := s.jobFor(r, "id")
	if err != nil {
		return err
	}
	out, err := s.views.Output(r.Context(), j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) jobTasks(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", apiv1.TaskPageDefaultLimit, 1, apiv1.TaskPageMaxLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, maxOffset)
	if err != nil {
		return err
	}
	j, err := s.jobFor(r, "id")
	if err != nil {
		return err
	}
	tasks, attempts, err := s.views.TaskPage(r.Context(), j, offset, limit)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	out := apiv1.TaskList{Tasks: make([]apiv1.Task, 0, len(tasks)), Count: int(j.TaskCount), Total: j.TaskCount,
		Limit: limit, Offset: offset}
	arts, err := s.views.Artifacts(r.Context(), j.ID)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		v := jobview.TaskView(t, attempts[t.ID], now)
		jobview.WithArtifacts(&v, arts)
		out.Tasks = append(out.Tasks, v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// jobEvents pages a job's lifecycle events by position: oldest first
// (after=), or newest first (order=newest, before=). The answer's next is
// the following page's address.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", apiv1.EventPageDefaultLimit, 1, apiv1.EventPageMaxLimit)
	if err != nil {
		return err
	}
	after, err := queryPosition(r, "after")
	if err != nil {
		return err
	}
	before, err := queryPosition(r, "before")
	if err != nil {
		return err
	}
	order := cmp.Or(r.URL.Query().Get("order"), apiv1.EventsOldest)
	if order != apiv1.EventsOldest && order != apiv1.EventsNewest {
		return fault.Invalid("invalid_order", "Use order=oldest (the default, with after=) or order=newest (with before=).",
			"order must be oldest or newest").With("field", "order")
	}
	j, err := s.jobFor(r, "id")
	if err != nil {
		return err
	}
	newest := order == apiv1.EventsNewest
	page, err := s.views.Events(r.Context(), j, store.JobEventPageParams{After: after, Before: before, Newest: newest, Limit: limit})
	if err != nil {
		return err
	}
	out := apiv1.JobEventList{Events: make([]apiv1.JobEvent, 0, len(page.Events)), Count: len(page.Events),
		Limit: limit, Order: order}
	for _, e := range page.Events {
		out.Events = append(out.Events, jobview.EventView(e))
	}
	if page.Next > 0 {
		q := r.URL.Query()
		cursor := "after"
		if newest {
			cursor = "before"
		}
		q.Set(cursor, strconv.FormatInt(page.Next, 10))
		out.Next = r.URL.Path + "?" + q.Encode()
		out.NextCursor = page.Next
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// queryPosition reads an event position cursor: absent is 0 (no bound).
func queryPosition(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fault.Invalid("invalid_cursor", "Pass an event's position (a non-negative integer), as the last page's next_cursor gives it.",
			"%s must be a non-negative integer event position", name).With("field", name)
	}
	return n, nil
}

func (s *Server) jobCancel(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.JobCancelRequest
	if _, err := decodeJSON(w, r, &body, true); err != nil {
		return err
	}
	reason, err := cancelReason(body.Reason)
	if err != nil {
		return err
	}
	j, _, err := s.jobs.Cancel(r.Context(), principal(r.Context()).Account.ID, r.PathValue("id"),
		cmp.Or(reason, "requested through the API"))
	if err != nil {
		return err
	}
	v, err := s.jobObject(r.Context(), j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) projectCancelQueued(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	var body apiv1.CancelQueuedRequest
	if _, err := decodeJSON(w, r, &body, true); err != nil {
		return err
	}
	tag := r.URL.Query().Get("tag")
	if body.Tag != nil && *body.Tag != "" {
		if tag != "" && tag != *body.Tag {
			return fault.Invalid("conflicting_tag", "Give the tag once, in the body or in the query.",
				"the body's tag %q and the query's tag %q differ", *body.Tag, tag).With("field", "tag")
		}
		tag = *body.Tag
	}
	reason, err := cancelReason(body.Reason)
	if err != nil {
		return err
	}
	// An empty reason lets CancelQueued name the call, project and tag.
	res, err := s.jobs.CancelQueued(r.Context(), principal(r.Context()).Account.ID, p, tag, reason)
	if err != nil {
		return err
	}
	out := apiv1.CancelQueuedResult{Status: "cancelled", Project: p.Name, QueuedBefore: res.QueuedBefore,
		CancelledJobs: res.Cancelled, Count: len(res.Cancelled)}
	if tag != "" {
		out.Tag = &tag
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// cancelReason checks the optional reason of a cancel body; "" when none
// was given.
func cancelReason(given *string) (string, error) {
	if given == nil {
		return "", nil
	}
	reason := strings.TrimSpace(*given)
	if len([]rune(reason)) > maxCancelReason {
		return "", fault.Invalid("invalid_reason", "Give a reason of at most 500 characters.",
			"reason is longer than %d characters", maxCancelReason).With("field", "reason")
	}
	return reason, nil
}

// jobEditRequirements takes the requirement fields at the top level of the
// body, or inside {"requirements": {...}}.
func (s *Server) jobEditRequirements(w http.ResponseWriter, r *http.Request) error {
	var patch map[string]json.RawMessage
	if _, err := decodeJSON(w, r, &patch, false); err != nil {
		return err
	}
	if inner, ok := patch["requirements"]; ok && len(patch) == 1 {
		patch = nil
		if err := json.Unmarshal(inner, &patch); err != nil || patch == nil {
			return fault.Invalid("invalid_job", `Send the fields to change, e.g. {"cpu": 4, "memory_mb": null}.`,
				"requirements must be an object").With("field", "requirements")
		}
	}
	j, err := s.jobs.EditRequirements(r.Context(), principal(r.Context()).Account.ID, r.PathValue("id"), patch)
	if err != nil {
		return err
	}
	v, err := s.jobObject(r.Context(), j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) jobMetrics(w http.ResponseWriter, r *http.Request) error {
	j, err := s.jobFor(r, "id")
	if err != nil {
		return err
	}
	m, err := s.views.Metrics(r.Context(), j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (s *Server) leaseGet(w http.ResponseWriter, r *http.Request) error {
	j, err := s.jobFor(r, "job_id")
	if err != nil {
		return err
	}
	l, err := s.views.Leases(r.Context(), j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}
