package mcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
)

// Waits longer than this come back with the job still running: an agent
// host may give up on a call long before a job ends, and calling again is
// free.
const (
	defaultWait = 5 * time.Minute
	maxWait     = 30 * time.Minute
)

type waitInput struct {
	JobID    string `json:"job_id" jsonschema:"the job's id (job_...)"`
	TimeoutS int    `json:"timeout_s,omitempty" jsonschema:"the longest wait in seconds (default 300, at most 1800); the job keeps running past it"`
}

type waitOutput struct {
	Job *apiv1.Job `json:"job"`
	// Done says the job ended; Result is its result then (completed or
	// partial jobs), Output the output tail of a failed one.
	Done       bool             `json:"done"`
	Result     *apiv1.JobResult `json:"result,omitempty"`
	Output     *apiv1.JobOutput `json:"output,omitempty"`
	NextAction string           `json:"next_action"`
	TaskCounts map[string]int64 `json:"task_counts,omitempty"`
}

func (t *Tools) addWaitTool(s *sdk.Server, sess Session) {
	c := sess.Client
	add(t, s, reads, "wait_for_job", "Wait for a job",
		"Follow a job's stream until it ends (or timeout_s passes), sending progress notifications as its tasks "+
			"run and end, then return the job with its result (or, when it failed, its output tail).",
		func(ctx context.Context, req *sdk.CallToolRequest, in waitInput) (any, error) {
			wait := defaultWait
			if in.TimeoutS > 0 {
				wait = min(time.Duration(in.TimeoutS)*time.Second, maxWait)
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			p := newProgress()
			notify := progressNotifier(req)
			job, err := c.WaitJob(wctx, in.JobID, func(f client.Frame) {
				if p.frame(f) {
					notify(wctx, p)
				}
			})
			if err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
				// The wait is over, the job is not: say where it stands.
				job, err = c.Job(ctx, in.JobID)
				if err != nil {
					return nil, err
				}
				return waitOutput{Job: job, TaskCounts: p.counts,
					NextAction: fmt.Sprintf("The job is still %s after %s: call wait_for_job again to go on waiting.", job.Status, wait)}, nil
			}
			if err != nil {
				return nil, err
			}
			return finished(ctx, c, job, p)
		})
}

// finished is the answer about a job that ended: its result, or what went
// wrong.
func finished(ctx context.Context, c *client.Client, job *apiv1.Job, p *progress) (waitOutput, error) {
	out := waitOutput{Job: job, Done: client.IsTerminal(job.Status), TaskCounts: p.counts}
	switch job.Status {
	case "completed", "partial":
		res, err := c.Result(ctx, job.ID)
		if err != nil {
			return out, err
		}
		out.Result = res
		out.NextAction = "Read more of the result with get_result, the tasks with list_tasks, files with list_artifacts."
	default:
		o, err := c.JobOutput(ctx, job.ID)
		if err != nil {
			return out, err
		}
		out.Output = o
		out.NextAction = "The job " + job.Status + ". Read its error and output above"
		if job.RecommendedAction != nil {
			out.NextAction += "; " + *job.RecommendedAction
		}
		out.NextAction += "."
	}
	return out, nil
}

// progressNotifier sends a progress notification to the host when the call
// asked for them (a progress token); it is a no-op otherwise.
func progressNotifier(req *sdk.CallToolRequest) func(ctx context.Context, p *progress) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func(context.Context, *progress) {}
	}
	return func(ctx context.Context, p *progress) {
		done, total := p.done()
		// A failed notification (the host went away) must not end the
		// wait: the call's own context says when it is over.
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token,
			Progress: float64(done), Total: float64(total), Message: p.message()})
	}
}

// progress follows a job's task counts from its stream: the snapshot's
// counts, then each task frame moves one task from its old status to its
// new one.
type progress struct {
	job    string
	total  int64
	counts map[string]int64
	tasks  map[string]string // task id -> status, for the tasks seen
}

func newProgress() *progress {
	return &progress{counts: map[string]int64{}, tasks: map[string]string{}}
}

var terminalTask = map[string]bool{"succeeded": true, "failed": true, "cancelled": true}

// frame reads one stream frame and says whether the progress changed.
func (p *progress) frame(f client.Frame) bool {
	switch f.Event {
	case apiv1.FrameSnapshot:
		var s apiv1.JobStreamSnapshot
		if f.Decode(&s) != nil || s.Job == nil {
			return false
		}
		p.job, p.total = s.Job.Status, s.TaskCount
		p.counts = map[string]int64{}
		for k, v := range s.TaskCounts {
			p.counts[k] = v
		}
		for _, t := range s.Tasks {
			p.tasks[t.ID] = t.Status
		}
		return true
	case apiv1.FrameTask:
		var tf apiv1.TaskFrame
		if f.Decode(&tf) != nil {
			return false
		}
		old, seen := p.tasks[tf.Task.ID]
		if !seen {
			// A task past the snapshot's first page: it was counted, but
			// not named; it can only have left queued.
			old = "queued"
		}
		if old == tf.Task.Status {
			return false
		}
		if p.counts[old] > 0 {
			p.counts[old]--
		}
		p.counts[tf.Task.Status]++
		p.tasks[tf.Task.ID] = tf.Task.Status
		return true
	case apiv1.FrameJob:
		var jf apiv1.JobFrame
		if f.Decode(&jf) != nil || jf.Job == nil || jf.Job.Status == p.job {
			return false
		}
		p.job = jf.Job.Status
		if jf.Job.TaskCount > p.total {
			p.total = jf.Job.TaskCount
		}
		return true
	}
	return false
}

// done is the tasks that ended, of all.
func (p *progress) done() (done, total int64) {
	for st, n := range p.counts {
		if terminalTask[st] {
			done += n
		}
	}
	return done, p.total
}

// message reads "job running: 3 of 10 tasks ended (running 2, succeeded 3)".
func (p *progress) message() string {
	done, total := p.done()
	var parts []string
	for st, n := range p.counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("job %s: %d of %d tasks ended (%s)", p.job, done, total, strings.Join(parts, ", "))
}
