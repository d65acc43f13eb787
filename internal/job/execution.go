package job

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

// This file is the job side of execution: what a claim, an attempt's start,
// its progress and its end do to tasks and jobs. The dispatcher
// (internal/fleet) decides who runs what and calls these.

// Claim assigns the best queued task that fits p's free capacity to p's
// host and moves its job to running (section 3.1: capacity assigned), in
// one transaction. store.ErrNotFound when nothing fits.
func (s *Service) Claim(ctx context.Context, p *store.TaskClaimParams) (*store.Task, *store.Attempt, error) {
	claimed, err := s.ClaimSeveral(ctx, func(prev []Claimed) *store.TaskClaimParams {
		if len(prev) > 0 {
			return nil
		}
		return p
	})
	if err != nil {
		return nil, nil, err
	}
	if len(claimed) == 0 {
		return nil, nil, store.ErrNotFound
	}
	return claimed[0].Task, claimed[0].Attempt, nil
}

// Claimed is a task a claim took and the attempt that runs it.
type Claimed struct {
	Task    *store.Task
	Attempt *store.Attempt
}

// ClaimSeveral assigns several tasks to one host in one transaction, as
// many as next asks for: next gives the parameters of each claim, knowing
// what was claimed so far (so that the caller can take their requirements
// off the host's free capacity), and nil once the host has room for no
// more. It stops at the first claim that finds nothing to fit and returns
// what it took (none: an empty slice, no error). Every claimed task's job
// is moved to running (section 3.1: capacity assigned) in the same
// transaction. One commit serves all the claims: on SQLite the commit cost
// as much as the claim's statements (docs/bench.md, fan-out dispatch).
func (s *Service) ClaimSeveral(ctx context.Context, next func(prev []Claimed) *store.TaskClaimParams) ([]Claimed, error) {
	var claimed []Claimed
	var moved []string
	err := s.store.InTx(ctx, func(q store.Querier) error {
		var now time.Time
		for p := next(nil); p != nil; p = next(claimed) {
			t, a, err := q.TaskClaim(ctx, p)
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			if err != nil {
				return err
			}
			// The task's move to running is an event of its own, so that a
			// stream shows it (docs/streams.md).
			if err := s.event(ctx, q, a.JobID, a.TaskID, a.ID, "attempt.assigned",
				map[string]any{"attempt_number": a.Number, "worker_handle": a.HostID}, p.Now); err != nil {
				return err
			}
			claimed = append(claimed, Claimed{Task: t, Attempt: a})
			now = p.Now
		}
		// The jobs' moves come after the claims: on PostgreSQL a
		// transaction locks tasks before jobs (store.JobStore's lock
		// order). A job is moved only while it may still be queued: a job
		// that left the queue never returns to it (store.JobTransitions),
		// so once this service has seen it leave, the move is not tried
		// again for every task.
		for _, c := range claimed {
			jobID := c.Task.JobID
			if slices.Contains(moved, jobID) || s.dequeued.has(jobID) {
				continue
			}
			moved = append(moved, jobID)
			_, err := q.JobSetStatus(ctx, &store.JobSetStatusParams{ID: jobID, From: []store.JobStatus{store.JobQueued},
				To: store.JobRunning, Now: now})
			if err == nil {
				err = s.event(ctx, q, jobID, "", "", "job.running", nil, now)
			}
			if err != nil && !errors.Is(err, store.ErrConflict) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Only once committed: a rolled-back move left its job queued.
	for _, jobID := range moved {
		s.dequeued.add(jobID)
	}
	if claimed == nil {
		claimed = []Claimed{}
	}
	return claimed, nil
}

// Request decodes the normalised submission stored with a job.
func Request(j *store.Job) (*submit.Submission, error) {
	var sub submit.Submission
	if err := json.Unmarshal(j.Request, &sub); err != nil {
		return nil, fmt.Errorf("job %s: stored request: %w", j.ID, err)
	}
	return &sub, nil
}

// AttemptStarted records that the runner started. store.ErrConflict when the
// attempt is not assigned (a repeated event, or it ended meanwhile).
//
// Hosts report starts and ends in bursts (every slot of a wave of short
// tasks at once): reports share commits (InGroupTx), each still atomic and
// committed before this returns.
func (s *Service) AttemptStarted(ctx context.Context, a *store.Attempt, at time.Time) error {
	ctx = context.WithoutCancel(ctx) // InGroupTx: fn may run in another caller's group
	return s.store.InGroupTx(ctx, func(q store.Querier) error {
		if err := q.AttemptStart(ctx, a.ID, at); err != nil {
			return err
		}
		return s.event(ctx, q, a.JobID, a.TaskID, a.ID, "attempt.started",
			map[string]any{"attempt_number": a.Number, "worker_handle": a.HostID}, at)
	})
}

// AttemptProgress records a running attempt's latest progress and output
// tail. store.ErrConflict when its task no longer runs.
func (s *Service) AttemptProgress(ctx context.Context, a *store.Attempt, progress json.RawMessage, tail string) error {
	p := &store.TaskSetProgressParams{TaskID: a.TaskID, Now: s.clock.Now()}
	if len(progress) > 0 {
		p.Progress = progress
		p.Checkpoint = checkpointOf(progress)
	}
	if tail != "" {
		p.OutputTail = &tail
	}
	ctx = context.WithoutCancel(ctx) // InGroupTx: fn may run in another caller's group
	return s.store.InGroupTx(ctx, func(q store.Querier) error {
		if err := q.TaskSetProgress(ctx, p); err != nil {
			return err
		}
		return s.progressEvent(ctx, q, a, progress, tail, p.Now)
	})
}

// progressEvent records what a running attempt printed (its latest progress
// and output tail) as a task.progress event, the source of a stream's live
// task frames. Nothing to record, no event.
func (s *Service) progressEvent(ctx context.Context, q store.Querier, a *store.Attempt, progress json.RawMessage, tail string, now time.Time) error {
	if len(progress) == 0 && tail == "" {
		return nil
	}
	data := map[string]any{"attempt_number": a.Number}
	if len(progress) > 0 {
		data["progress"] = progress
	}
	if tail != "" {
		data["output_tail"] = tail
	}
	return s.event(ctx, q, a.JobID, a.TaskID, a.ID, "task.progress", data, now)
}

// AttemptLost ends an open attempt that its host no longer runs (the host
// vanished or restarted, or the controller restarted under it): the task is
// requeued without using its retry budget (spec 2.10 rule 2).
func (s *Service) AttemptLost(ctx context.Context, a *store.Attempt, reason string) error {
	return s.AttemptFinished(ctx, a, lostOutcome(reason), nil, "")
}

// AttemptFinished records how an attempt ended, moves its task on (success,
// retry, free requeue or failure, as Classify decides) and, when that was
// the job's last open task, ends the job: completed, partial or failed, with
// its summary. store.ErrConflict when the attempt already ended.
func (s *Service) AttemptFinished(ctx context.Context, a *store.Attempt, o *Outcome, progress json.RawMessage, tail string) error {
	// The job row is read only when something here needs more than its
	// cached submission and the attempt's rate: a big fan-out's row holds
	// every item, and reading it for each finished task was a tenth of the
	// dispatch cost (docs/bench.md).
	var j *store.Job
	var err error
	sub := s.cachedRequest(a.JobID)
	if sub == nil || a.RateMicrosPerHour <= 0 {
		if j, err = s.store.JobGetByID(ctx, a.JobID); err != nil {
			return fmt.Errorf("job of attempt %s: %w", a.ID, err)
		}
		if sub, err = s.request(j); err != nil {
			return err
		}
	}
	t, err := s.store.TaskGet(ctx, a.TaskID)
	if err != nil {
		return fmt.Errorf("task of attempt %s: %w", a.ID, err)
	}
	now := s.clock.Now()
	ran, trusted := meteredRuntime(a, o, now)
	d := Classify(t, sub.MaxRetries, o, ran)
	if d.Billed && !trusted {
		s.log.Warn("host's runtime report not plausible; metered on the controller's observation", "attempt_id", a.ID,
			"job_id", a.JobID, "host_id", a.HostID, "reported", o.EndedAt.Sub(o.StartedAt).String(), "metered", ran.String())
	}
	err = s.recordEnd(ctx, a, t, j, sub, o, d, ran, progress, tail, now)
	var short *holdShortError
	if errors.As(err, &short) {
		// The hold could not grow to cover the requeue: the task fails
		// instead, with the attempt still billed (its transaction was
		// rolled back, so this records the end once).
		d = stopRequeue(d, t, short.Error())
		err = s.recordEnd(ctx, a, t, j, sub, o, d, ran, progress, tail, now)
	}
	if err != nil {
		return err
	}
	if d.Task == store.TaskQueued || d.Task.IsTerminal() {
		// A requeued task waits for a host; a job's end may have queued
		// the jobs that depended on it.
		s.waker.Wake()
	}
	return nil
}

// recordEnd records attempt a's end as decided (d), in one transaction
// shared with other reports: the attempt, its task, its events, the job's
// hold grown when the end may leave it short (coverHold), and the job's end
// when this was its last open task. ran is the attempt's metered runtime; j
// is the job when the caller read it (nil: read here when needed). A
// *holdShortError (nothing recorded) when the hold could not cover a
// requeue.
func (s *Service) recordEnd(ctx context.Context, a *store.Attempt, t *store.Task, j *store.Job, sub *submit.Submission,
	o *Outcome, d Decision, ran time.Duration, progress json.RawMessage, tail string, now time.Time) error {
	var err error
	p := &store.AttemptFinishParams{
		AttemptID: a.ID, Status: d.Attempt, TerminalKind: d.TerminalKind, RetryDecision: d.RetryDecision,
		TaskStatus: d.Task, RetriesUsed: d.RetriesUsed, InfraRequeues: d.InfraRequeues, DeclaredInfra: d.DeclaredInfra,
		Now: now,
	}
	ranRunner := o.HostError == "" && o.SandboxError == ""
	// The GPU share is charged only when the host attached the GPUs.
	rate := s.gpuHonestRate(a, j, o)
	if d.Billed {
		// Metered for the runtime the controller can vouch for
		// (meteredRuntime), at the rate the attempt was claimed at (a
		// later requirements edit does not change it): every end in
		// which the runner ran, whatever it did to the task. Only the
		// platform's losses are free (Classify).
		p.BilledSeconds, p.CostMicros = billing.AttemptCost(rate, ran, sub.TimeoutS)
	}
	cover := needsCover(d, p.CostMicros, rate, sub)
	if ranRunner {
		// The attempt's own output replaces the previous attempt's (spec
		// 3.1: kept between retries until the new attempt emits its own).
		code := int64(o.ExitCode)
		p.ExitCode = &code
		p.Output, p.ErrorText = &o.Stdout, &o.Stderr
	}
	if tail != "" {
		p.OutputTail = &tail
	}
	if len(progress) > 0 {
		p.Progress = progress
		p.Checkpoint = checkpointOf(progress)
	}
	// The attempt's pending checkpoint (its last one, or the task's) is
	// published from what it uploaded, or failed.
	cp := p.Checkpoint
	if cp == nil {
		cp = t.Checkpoint
	}
	if settled, err := s.publishCheckpoint(ctx, a, cp, o.Outputs, now); err != nil {
		return err
	} else if settled != nil {
		p.Checkpoint = settled
	}
	if o.ArtifactError != "" {
		msg := o.ArtifactError
		p.ErrorText = &msg
	}
	switch d.Task {
	case store.TaskSucceeded:
		if len(o.Result) > 0 {
			p.Result = o.Result
		}
		if o.ResultArtifactID != "" {
			// Too large to keep inline (the host protocol's inline limit):
			// the result names the artifact that holds it.
			p.Result, _ = json.Marshal(SpilledResult{Spilled: true, ArtifactID: o.ResultArtifactID, Filename: "result.json"})
		}
	case store.TaskFailed:
		command, cwd := sub.RunnerCommand, ""
		if j == nil {
			if j, err = s.store.JobGetByID(ctx, a.JobID); err != nil {
				return fmt.Errorf("job of attempt %s: %w", a.ID, err)
			}
		}
		if rs, err := s.RunSpec(ctx, j); err == nil {
			command, cwd = rs.Command, rs.Cwd
		}
		p.Result = withFailure(o.Result, failurePayload(d.FailureKind, d.Message, o, command, cwd, sub.TimeoutS))
		if !ranRunner {
			msg := "attempt ended on the platform's side: " + cmp.Or(o.HostError, o.SandboxError)
			if d.TerminalKind == "start_failed" {
				msg = "the runner could not be started: " + o.SandboxError
			}
			p.ErrorText = &msg
		}
		if d.FailureKind == FailureBalance {
			p.ErrorText = &d.Message
		}
	}
	data := map[string]any{"attempt_number": a.Number, "worker_handle": a.HostID, "terminal_kind": d.TerminalKind,
		"retry_decision": d.RetryDecision, "task_status": d.Task}
	if ranRunner {
		data["exit_code"] = o.ExitCode
	} else {
		data["reason"] = cmp.Or(o.HostError, o.SandboxError)
	}
	if d.FailureKind != "" {
		data["failure_kind"] = d.FailureKind
	}
	// Ends share commits with other reports, like starts (AttemptStarted).
	gctx := context.WithoutCancel(ctx)
	return s.store.InGroupTx(gctx, func(q store.Querier) error {
		ctx := gctx
		// Lock order: task and attempt (AttemptFinish), then job, then
		// account (coverHold).
		if _, err := q.AttemptFinish(ctx, p); err != nil {
			return err
		}
		if cover {
			grown, err := s.coverHold(ctx, q, a.JobID, sub, d.Task == store.TaskQueued, now)
			if err != nil {
				return err
			}
			if grown > 0 {
				data["hold_grown_usd"] = apiv1.USD(grown)
			}
		}
		// The last output lines come before the end (spec 6: a stream
		// shows them before the terminal frame).
		if err := s.progressEvent(ctx, q, a, progress, tail, now); err != nil {
			return err
		}
		if err := s.event(ctx, q, a.JobID, a.TaskID, a.ID, d.Event, data, now); err != nil {
			return err
		}
		if !d.Task.IsTerminal() {
			return nil
		}
		if d.Task == store.TaskFailed && sub.ReliabilityMode == apiv1.ReliabilityStrictComplete {
			// j was read above: a failed task reads its job (RunSpec).
			if err := s.abortStrict(ctx, q, j, a.TaskID, now); err != nil {
				return err
			}
		}
		return s.endIfDone(ctx, q, a.JobID, j, now)
	})
}

// SpilledResult is the stored result of a task whose result file was too
// large to keep inline (spec 2.6).
type SpilledResult struct {
	Spilled    bool   `json:"result_spilled"`
	ArtifactID string `json:"result_artifact_id"`
	Filename   string `json:"result_filename"`
}

// endIfDone ends a running job whose tasks have all ended. It runs in the
// transaction that ended a task, after it. j is the job when the caller has
// read it already; nil reads it, only when the job does end.
func (s *Service) endIfDone(ctx context.Context, q store.Querier, jobID string, j *store.Job, now time.Time) error {
	if err := q.JobLock(ctx, jobID); err != nil {
		return err
	}
	if open, err := q.TaskOpenExists(ctx, jobID); err != nil || open {
		return err
	}
	if j == nil {
		var err error
		if j, err = q.JobGetByID(ctx, jobID); err != nil {
			return fmt.Errorf("job %s: %w", jobID, err)
		}
	}
	tasks, err := q.TaskList(ctx, j.ID)
	if err != nil {
		return err
	}
	var atts []*store.Attempt
	if j.Type == string(apiv1.JobTypeBenchmark) {
		if atts, err = q.AttemptList(ctx, j.ID); err != nil {
			return err
		}
	}
	summary := Summarize(j, tasks, atts...)
	raw, err := json.Marshal(summary)
	if err != nil {
		return err
	}
	c := summary.TaskOutcomeCounts
	to, msg, action := store.JobCompleted, "", ""
	strict := false
	if sub, err := s.request(j); err == nil {
		strict = sub.ReliabilityMode == apiv1.ReliabilityStrictComplete
	}
	switch {
	case c.Succeeded == int64(len(tasks)):
	case strict && (c.Succeeded > 0 || c.Cancelled > 0):
		// Cancelled tasks here are the ones the strict abort stopped: saying
		// "all failed" would blame them for the one that did.
		to = store.JobFailed
		msg = fmt.Sprintf("reliability_mode strict_complete: %d of %d tasks did not succeed, so the job failed as a whole", c.Failed+c.Cancelled, len(tasks))
		if first := firstFailure(tasks); first != "" {
			msg += "; first failure: " + first
		}
		action = "Read GET /api/v1/jobs/" + j.ID + "/tasks for the failed task's error and failure payload, fix it, and resubmit the job."
	case c.Succeeded > 0:
		to = store.JobPartial
		msg = fmt.Sprintf("%d of %d tasks did not succeed (%d failed, %d cancelled)", c.Failed+c.Cancelled, len(tasks), c.Failed, c.Cancelled)
		action = "Read GET /api/v1/jobs/" + j.ID + "/tasks for each failed task's error and result, fix the cause, and resubmit the failed part."
	default:
		to = store.JobFailed
		msg = fmt.Sprintf("all %d tasks failed", len(tasks))
		if first := firstFailure(tasks); first != "" {
			msg += ": " + first
		}
		action = "Read GET /api/v1/jobs/" + j.ID + "/tasks for each task's error, output and failure payload, fix the runner, and resubmit."
	}
	if _, err := q.JobSetStatus(ctx, &store.JobSetStatusParams{ID: j.ID, From: []store.JobStatus{store.JobRunning},
		To: to, Error: msg, RecommendedAction: action, Summary: raw, Now: now}); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil // cancelled meanwhile: the cancel decided
		}
		return err
	}
	if err := billing.Capture(ctx, q, j.ID, now); err != nil {
		return err
	}
	if err := s.event(ctx, q, j.ID, "", "", "job."+string(to), map[string]any{"task_outcome_counts": c}, now); err != nil {
		return err
	}
	if to == store.JobCompleted || to == store.JobPartial {
		ended := *j
		ended.Status = to
		if err := s.publish(ctx, q, &ended, summary, now); err != nil {
			return err
		}
	}
	_, err = s.resolveDependents(ctx, q, j.ID, now)
	return err
}

// firstFailure is a short description of the first failed task's failure.
func firstFailure(tasks []*store.Task) string {
	for _, t := range tasks {
		if t.Status != store.TaskFailed {
			continue
		}
		var fp FailurePayload
		if json.Unmarshal(t.Result, &fp) == nil && fp.FailureKind != "" {
			return fmt.Sprintf("task %d: %s", t.Index, fp.Message)
		}
		if t.ExitCode != nil {
			return fmt.Sprintf("task %d: exit code %d", t.Index, *t.ExitCode)
		}
	}
	return ""
}

// event records one job event in q's transaction.
func (s *Service) event(ctx context.Context, q store.Querier, jobID, taskID, attemptID, kind string, data any, at time.Time) error {
	raw := json.RawMessage(`{}`)
	if data != nil {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return err
		}
	}
	return q.JobEventCreate(ctx, &store.JobEvent{ID: id.New(id.Event), JobID: jobID, TaskID: taskID, AttemptID: attemptID,
		Kind: kind, Data: raw, CreatedAt: at})
}

// abortStrict ends a strict_complete job's other work once one of its tasks
// failed for good: the job can no longer complete, so its open tasks are
// cancelled (running ones killed, and metered like any cancel) instead of
// spending more of its hold. The caller then ends the job as failed.
func (s *Service) abortStrict(ctx context.Context, q store.Querier, j *store.Job, failedTask string, now time.Time) error {
	atts, err := q.AttemptList(ctx, j.ID)
	if err != nil {
		return err
	}
	killed, err := q.TaskCancelOpen(ctx, j.ID, now)
	if err != nil {
		return err
	}
	if err := s.meterCancelled(ctx, q, j, atts, now); err != nil {
		return err
	}
	return s.event(ctx, q, j.ID, failedTask, "", "job.strict_abort",
		map[string]any{"reason": "a task failed under reliability_mode strict_complete", "killed_attempts": len(killed)}, now)
}
