package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
)

// Terminal job statuses.
var terminalJob = map[string]bool{"completed": true, "partial": true, "failed": true, "cancelled": true}

// IsTerminal says whether a job status is final.
func IsTerminal(status string) bool { return terminalJob[status] }

// SubmitJob submits one job (POST /api/v1/jobs). The request carries an
// Idempotency-Key (idemKey, or a fresh one when ""), so the retries and the
// resend after a payment admit it once.
func (c *Client) SubmitJob(ctx context.Context, s *apiv1.JobSubmit, idemKey string) (*apiv1.Job, error) {
	return c.SubmitJobRaw(ctx, s, idemKey)
}

// SubmitJobRaw is SubmitJob with any JSON body (a map or json.RawMessage
// read from a file).
func (c *Client) SubmitJobRaw(ctx context.Context, body any, idemKey string) (*apiv1.Job, error) {
	if idemKey == "" {
		idemKey = NewIdempotencyKey()
	}
	var out apiv1.Job
	return &out, c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/jobs", body: body,
		header: http.Header{"Idempotency-Key": {idemKey}}}, &out)
}

// SubmitBatch submits up to 200 jobs at once; refused ones are in
// Errors by index (a 207 is not an error).
func (c *Client) SubmitBatch(ctx context.Context, jobs []any, idemKey string) (*apiv1.JobBatchResult, error) {
	if idemKey == "" {
		idemKey = NewIdempotencyKey()
	}
	raw := make([]json.RawMessage, len(jobs))
	for i, j := range jobs {
		b, err := json.Marshal(j)
		if err != nil {
			return nil, err
		}
		raw[i] = b
	}
	var out apiv1.JobBatchResult
	return &out, c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/jobs/batch", body: apiv1.JobBatchSubmit{Jobs: raw},
		header: http.Header{"Idempotency-Key": {idemKey}}}, &out)
}

// Job reads a job.
func (c *Client) Job(ctx context.Context, id string) (*apiv1.Job, error) {
	var out apiv1.Job
	return &out, c.get(ctx, "/api/v1/jobs/"+esc(id), nil, &out)
}

// JobFilter narrows the job list; empty fields do not filter.
type JobFilter struct {
	Status, Type, Tag, Project, ClientRef string
	Since                                 string // RFC 3339
}

func (f JobFilter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "type": f.Type, "tag": f.Tag, "project": f.Project,
		"client_ref": f.ClientRef, "since": f.Since} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// Jobs walks the account's jobs, newest first, a page at a time.
func (c *Client) Jobs(ctx context.Context, f JobFilter) iter.Seq2[apiv1.JobListEntry, error] {
	return pages(ctx, c, f.query(), 200, func(ctx context.Context, q url.Values) ([]apiv1.JobListEntry, int, error) {
		var out apiv1.JobList
		err := c.get(ctx, "/api/v1/jobs", q, &out)
		return out.Jobs, out.Total, err
	})
}

// JobsPage reads one page of the job list.
func (c *Client) JobsPage(ctx context.Context, f JobFilter, limit, offset int) (*apiv1.JobList, error) {
	q := f.query()
	q.Set("limit", strconv.Itoa(limit))
	q.Set("offset", strconv.Itoa(offset))
	var out apiv1.JobList
	return &out, c.get(ctx, "/api/v1/jobs", q, &out)
}

// Tasks walks a job's tasks in index order.
func (c *Client) Tasks(ctx context.Context, jobID string) iter.Seq2[apiv1.Task, error] {
	return pages(ctx, c, nil, apiv1.TaskPageMaxLimit, func(ctx context.Context, q url.Values) ([]apiv1.Task, int, error) {
		var out apiv1.TaskList
		err := c.get(ctx, "/api/v1/jobs/"+esc(jobID)+"/tasks", q, &out)
		return out.Tasks, int(out.Total), err
	})
}

// JobOutput is the tasks' stdout (first 10 KB) and the last failure's stderr.
func (c *Client) JobOutput(ctx context.Context, id string) (*apiv1.JobOutput, error) {
	var out apiv1.JobOutput
	return &out, c.get(ctx, "/api/v1/jobs/"+esc(id)+"/output", nil, &out)
}

// EventQuery selects a page of a job's events: oldest first after After,
// or newest first (Newest) before Before; Limit 0 is the server's default.
type EventQuery struct {
	After, Before int64
	Newest        bool
	Limit         int
}

// JobEventPage reads one page of a job's lifecycle events; its NextCursor
// (0 on the last page) is the next page's After (Before when Newest).
func (c *Client) JobEventPage(ctx context.Context, id string, q EventQuery) (*apiv1.JobEventList, error) {
	v := url.Values{}
	if q.After > 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if q.Before > 0 {
		v.Set("before", strconv.FormatInt(q.Before, 10))
	}
	if q.Newest {
		v.Set("order", apiv1.EventsNewest)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out apiv1.JobEventList
	return &out, c.get(ctx, "/api/v1/jobs/"+esc(id)+"/events", v, &out)
}

// Events yields a job's lifecycle events in q's order, page after page,
// from q's cursor to the end.
func (c *Client) Events(ctx context.Context, id string, q EventQuery) iter.Seq2[apiv1.JobEvent, error] {
	return func(yield func(apiv1.JobEvent, error) bool) {
		if q.Limit == 0 {
			q.Limit = apiv1.EventPageMaxLimit
		}
		for {
			page, err := c.JobEventPage(ctx, id, q)
			if err != nil {
				yield(apiv1.JobEvent{}, err)
				return
			}
			for _, e := range page.Events {
				if !yield(e, nil) {
					return
				}
			}
			if page.NextCursor == 0 {
				return
			}
			if q.Newest {
				q.Before = page.NextCursor
			} else {
				q.After = page.NextCursor
			}
		}
	}
}

// JobEvents lists all of a job's lifecycle events, oldest first.
func (c *Client) JobEvents(ctx context.Context, id string) ([]apiv1.JobEvent, error) {
	return Collect(c.Events(ctx, id, EventQuery{}))
}

// JobMetrics reads a job's timing figures.
func (c *Client) JobMetrics(ctx context.Context, id string) (*apiv1.JobMetrics, error) {
	var out apiv1.JobMetrics
	return &out, c.get(ctx, "/api/v1/jobs/"+esc(id)+"/metrics", nil, &out)
}

// CancelJob cancels a job; reason may be "".
func (c *Client) CancelJob(ctx context.Context, id, reason string) (*apiv1.Job, error) {
	var body apiv1.JobCancelRequest
	if reason != "" {
		body.Reason = &reason
	}
	var out apiv1.Job
	return &out, c.call(ctx, &request{method: http.MethodPut, path: "/api/v1/jobs/" + esc(id) + "/cancel", body: body}, &out)
}

// EditRequirements changes a queued job's requirements.
func (c *Client) EditRequirements(ctx context.Context, id string, r *apiv1.JobRequirements) (*apiv1.Job, error) {
	var out apiv1.Job
	return &out, c.call(ctx, &request{method: http.MethodPatch, path: "/api/v1/jobs/" + esc(id) + "/requirements", body: r}, &out)
}

// Presets lists the resource presets and what they cost now.
func (c *Client) Presets(ctx context.Context) (*apiv1.PresetList, error) {
	var out apiv1.PresetList
	return &out, c.get(ctx, "/api/v1/presets", nil, &out)
}

// Result reads a job's result with the first page of its tasks.
func (c *Client) Result(ctx context.Context, jobID string) (*apiv1.JobResult, error) {
	var out apiv1.JobResult
	return &out, c.get(ctx, "/api/v1/results/"+esc(jobID), nil, &out)
}

// ResultTasks walks every task of a job's result.
func (c *Client) ResultTasks(ctx context.Context, jobID string) iter.Seq2[apiv1.ResultTask, error] {
	return pages(ctx, c, nil, 1000, func(ctx context.Context, q url.Values) ([]apiv1.ResultTask, int, error) {
		var out apiv1.JobResult
		err := c.get(ctx, "/api/v1/results/"+esc(jobID), q, &out)
		return out.Results, int(out.TaskCount), err
	})
}

// ResultFilter narrows the result list.
type ResultFilter struct {
	Status  []string // default (server): the terminal statuses
	Project string
	Tag     string
}

// Results walks the results of the account's jobs.
func (c *Client) Results(ctx context.Context, f ResultFilter) iter.Seq2[apiv1.ResultListEntry, error] {
	q := url.Values{}
	if len(f.Status) > 0 {
		q.Set("status", strings.Join(f.Status, ","))
	}
	if f.Project != "" {
		q.Set("project", f.Project)
	}
	if f.Tag != "" {
		q.Set("tag", f.Tag)
	}
	return pages(ctx, c, q, 100, func(ctx context.Context, q url.Values) ([]apiv1.ResultListEntry, int, error) {
		var out apiv1.ResultList
		err := c.get(ctx, "/api/v1/results", q, &out)
		return out.Results, out.Total, err
	})
}
