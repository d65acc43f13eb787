package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
)

type submitInput struct {
	Job apiv1.JobSubmit `json:"job" jsonschema:"the job, as the body of POST /api/v1/jobs: type (structured_runner, map_reduce, sweep, benchmark ...), project, runner_command, payload, fan_out, requirements ... (docs: skiff://docs/jobs and skiff://docs/job-types)"`
	// IdempotencyKey makes a retried submit (after a timeout or a 402 paid)
	// admit the job once.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the Idempotency-Key header: the same key and body admit the job once (default: a fresh key, returned in the answer; reuse it to retry)"`
}

type submitOutput struct {
	Job            *apiv1.Job `json:"job"`
	IdempotencyKey string     `json:"idempotency_key"`
	NextAction     string     `json:"next_action"`
}

type jobInput struct {
	JobID string `json:"job_id" jsonschema:"the job's id (job_...)"`
}

type listTasksInput struct {
	JobID string `json:"job_id" jsonschema:"the job's id (job_...)"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most tasks to return, in index order (default 100)"`
}

type cancelInput struct {
	JobID  string `json:"job_id" jsonschema:"the job's id (job_...)"`
	Reason string `json:"reason,omitempty" jsonschema:"why, kept with the job"`
}

type outputInput struct {
	JobID string `json:"job_id" jsonschema:"the job's id (job_...)"`
}

func (t *Tools) addJobTools(s *sdk.Server, sess Session) {
	c := sess.Client
	add(t, s, retries, "submit_job", "Submit a job",
		"Submit a job of any type to a published project (POST /api/v1/jobs). The funds it may use are held at admission; "+
			"a 402 answer carries a quote to pay first. Follow it with wait_for_job.",
		func(ctx context.Context, _ *sdk.CallToolRequest, in submitInput) (any, error) {
			key := in.IdempotencyKey
			if key == "" {
				key = client.NewIdempotencyKey()
			}
			job, err := c.SubmitJob(ctx, &in.Job, key)
			if err != nil {
				return nil, err
			}
			return submitOutput{Job: job, IdempotencyKey: key,
				NextAction: "Call wait_for_job with job_id " + job.ID + " to follow it and read its result."}, nil
		})
	add(t, s, reads, "show_job", "Show a job",
		"One job: status, task counts, summary (aggregate result once it ended), cost and error (GET /api/v1/jobs/{id}).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in jobInput) (any, error) {
			return c.Job(ctx, in.JobID)
		})
	add(t, s, reads, "list_tasks", "List a job's tasks",
		"A job's tasks in index order with their status, attempts, progress and result presence (GET /api/v1/jobs/{id}/tasks).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in listTasksInput) (any, error) {
			limit := in.Limit
			if limit <= 0 {
				limit = 100
			}
			var tasks []apiv1.Task
			more := false
			for task, err := range c.Tasks(ctx, in.JobID) {
				if err != nil {
					return nil, err
				}
				if len(tasks) == limit {
					more = true
					break
				}
				tasks = append(tasks, task)
			}
			return map[string]any{"tasks": tasks, "count": len(tasks), "more": more}, nil
		})
	add(t, s, retries, "cancel_job", "Cancel a job",
		"Cancel a job that has not ended: running attempts are killed, the hold captured for what ran or released (PUT /api/v1/jobs/{id}/cancel).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in cancelInput) (any, error) {
			return c.CancelJob(ctx, in.JobID, in.Reason)
		})
	add(t, s, reads, "job_output", "A job's output",
		"The tail of a job's output: the tasks' stdout (first 10 KB) and the stderr of the last failed task (GET /api/v1/jobs/{id}/output).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in outputInput) (any, error) {
			return c.JobOutput(ctx, in.JobID)
		})
	t.addWaitTool(s, sess)
}
