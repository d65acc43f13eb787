// Package job owns jobs: admission of submissions into jobs and tasks and
// their lifecycle (section 3.1 of the spec). It is the write side: the views
// the API shows are read apart, in package jobview, which reads what this
// package writes and is never imported by it.
//
// Execution (the scheduler and the hosts that run attempts) lands on top of
// this: tasks wait in "queued" until a host claims them through the store.
package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job/expand"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

// Service admits jobs and changes them.
type Service struct {
	store   store.Store
	billing *billing.Service
	clock   clock.Clock
	log     *slog.Logger
	limits  submit.Limits
	waker   Notifier
	// requests caches decoded submissions for execution (requestcache.go).
	requests requestCache
	// dequeued are jobs known to have left the queue (ClaimSeveral).
	dequeued jobSet
	// specs caches how each job's tasks run (executor.go).
	specs runSpecs
}

// Config wires a Service.
type Config struct {
	Store store.Store
	// Billing prices and holds admissions; nil means one at the default
	// rates over Store.
	Billing *billing.Service
	Clock   clock.Clock
	Logger  *slog.Logger
	Limits  submit.Limits
	// Wake is told after every change that gives hosts something to do
	// (tasks to run, attempts to kill), so that a host long-polling for work
	// hears of it at once: the wake.Signal the fleet controller waits on.
	// Nil means nobody waits.
	Wake Notifier
}

// Notifier hears that there may be work for hosts.
type Notifier interface {
	Wake()
}

type noWaiters struct{}

func (noWaiters) Wake() {}

func New(cfg Config) *Service {
	b := cfg.Billing
	if b == nil {
		b = billing.New(cfg.Store, cfg.Clock, nil)
	}
	w := cfg.Wake
	if w == nil {
		w = noWaiters{}
	}
	return &Service{store: cfg.Store, billing: b, clock: cfg.Clock, log: cfg.Logger, limits: cfg.Limits, waker: w}
}

// Billing is the billing service that prices and holds admissions.
func (s *Service) Billing() *billing.Service { return s.billing }

// Limits are the operator's limits and presets submissions are held to.
func (s *Service) Limits() submit.Limits { return s.limits }

var priorities = map[string]int{
	apiv1.PriorityHigh: store.PriorityHigh, apiv1.PriorityNormal: store.PriorityNormal, apiv1.PriorityLow: store.PriorityLow,
}

// Submit validates a submission and stores the job, its tasks and its first
// events in one transaction. A job without dependencies is queued at once;
// one with dependencies stays planning until they end.
func (s *Service) Submit(ctx context.Context, accountID string, js *apiv1.JobSubmit) (*store.Job, error) {
	j, _, err := s.submit(ctx, accountID, js, nil)
	return j, err
}

// Idempotency is a request's Idempotency-Key and the hash of its body.
type Idempotency struct {
	Key         string
	RequestHash string
}

// MaxIdempotencyKeyBytes bounds an Idempotency-Key.
const MaxIdempotencyKeyBytes = 255

// SubmitIdempotent is Submit under an Idempotency-Key: the first request
// with a key is admitted as Submit would, and the key is stored in the same
// transaction as the job; a resend with the same key and body returns that
// job (replayed true) and creates nothing; the same key with another body
// is a 409. A refused request (422, 402) stores no key, so resending the
// same request after fixing the cause (funding the account) is admitted.
func (s *Service) SubmitIdempotent(ctx context.Context, accountID string, js *apiv1.JobSubmit, key Idempotency) (*store.Job, bool, error) {
	j, _, replayed, err := s.SubmitHeld(ctx, accountID, js, key)
	return j, replayed, err
}

// SubmitHeld is SubmitIdempotent that also gives the hold of a job it
// admitted queued: with every task queued and nothing metered, the hold is
// all its summary needs besides the job (jobview.AdmittedSummary), and
// reading the summary back cost a tenth of an admission's CPU
// (docs/bench.md). Nil for a replay or a planning job: read its summary
// (jobview.Service.SummaryOf).
func (s *Service) SubmitHeld(ctx context.Context, accountID string, js *apiv1.JobSubmit, key Idempotency) (*store.Job, *store.Hold, bool, error) {
	if key.Key == "" {
		j, hold, err := s.submit(ctx, accountID, js, nil)
		return j, hold, false, err
	}
	if err := checkKey(key.Key); err != nil {
		return nil, nil, false, err
	}
	return s.submitOnce(ctx, accountID, js, key)
}

func checkKey(key string) error {
	if len(key) > MaxIdempotencyKeyBytes {
		return fault.Invalid("invalid_idempotency_key", "Send an Idempotency-Key of at most 255 bytes.",
			"Idempotency-Key is %d bytes; at most %d", len(key), MaxIdempotencyKeyBytes).With("field", "Idempotency-Key")
	}
	return nil
}

func (s *Service) submitOnce(ctx context.Context, accountID string, js *apiv1.JobSubmit, key Idempotency) (*store.Job, *store.Hold, bool, error) {
	if j, replayed, err := s.replay(ctx, accountID, key); replayed || err != nil {
		return j, nil, replayed, err
	}
	j, hold, err := s.submit(ctx, accountID, js, &key)
	if errors.Is(err, store.ErrConflict) {
		// A concurrent request with the same key won the race.
		j, replayed, err := s.replay(ctx, accountID, key)
		return j, nil, replayed, err
	}
	return j, hold, false, err
}

// A batch sent with an Idempotency-Key (POST /jobs/batch) is admitted entry
// by entry, each under its own key: the caller's key and the entry's index
// joined by a unit separator (0x1f), a control character no header value
// can hold, so that an entry's key never meets a key of POST /jobs. Every
// entry's key is stored with the hash of the whole batch body. Each entry
// is then admitted at most once, in the transaction that stores its job,
// even when resends of the batch race; entries that were refused (a 402
// shortfall) store no key and are admitted by a resend after funding, just
// as a single submission is.
func batchEntryKey(key Idempotency, index int) Idempotency {
	return Idempotency{Key: key.Key + "\x1f" + strconv.Itoa(index), RequestHash: key.RequestHash}
}

// CheckBatchKey refuses, before anything is admitted, a batch of n entries
// whose Idempotency-Key was used for a batch with another body: 409 when
// any entry of the earlier batch stored its job under the key; 422 for a
// key over 255 bytes.
func (s *Service) CheckBatchKey(ctx context.Context, accountID string, key Idempotency, n int) error {
	if err := checkKey(key.Key); err != nil {
		return err
	}
	for i := range n {
		if _, _, err := s.replay(ctx, accountID, batchEntryKey(key, i)); err != nil {
			return err
		}
	}
	return nil
}

// SubmitBatchEntry admits entry index of a batch sent with key (its hash
// the whole body's); replayed when an earlier request with the same key
// and body admitted it.
func (s *Service) SubmitBatchEntry(ctx context.Context, accountID string, js *apiv1.JobSubmit, key Idempotency, index int) (*store.Job, bool, error) {
	j, _, replayed, err := s.submitOnce(ctx, accountID, js, batchEntryKey(key, index))
	return j, replayed, err
}

// replay answers a resend of a stored key: the job it created, or a 409
// when the body differs. (nil, false, nil) when the key is new.
func (s *Service) replay(ctx context.Context, accountID string, key Idempotency) (*store.Job, bool, error) {
	k, err := s.store.IdempotencyKeyGet(ctx, accountID, key.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("idempotency key: %w", err)
	}
	if k.RequestHash != key.RequestHash {
		shown, _, _ := strings.Cut(key.Key, "\x1f") // a batch entry's key shows as the batch's
		return nil, false, fault.Conflict("idempotency_key_reused",
			"Use a new Idempotency-Key for a different request, or resend the original body unchanged.",
			"Idempotency-Key %q was first used with a different request body", shown)
	}
	j, err := s.Get(ctx, accountID, k.Response)
	if err != nil {
		return nil, false, err
	}
	return j, true, nil
}

// submit admits a submission; the hold is given only for a job admitted
// queued (see SubmitHeld).
func (s *Service) submit(ctx context.Context, accountID string, js *apiv1.JobSubmit, key *Idempotency) (*store.Job, *store.Hold, error) {
	sub, err := submit.Validate(js, s.limits)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.store.ProjectGetByName(ctx, accountID, sub.Project)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, fault.Invalid("unknown_project", "Create the project (POST /api/v1/projects) and push its code first.",
			"project %q does not exist", sub.Project).With("field", "project")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("project: %w", err)
	}
	rev, err := s.store.PushLatestPublished(ctx, p.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, fault.Invalid("project_not_published",
			"Push the project (POST /api/v1/projects/"+p.Name+"/push) and wait until its push is published, then resend.",
			"project %q has no published revision yet", p.Name).With("field", "project")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("published revision: %w", err)
	}
	for i, dep := range sub.DependsOn {
		if _, err := s.store.JobGet(ctx, accountID, dep); errors.Is(err, store.ErrNotFound) {
			return nil, nil, fault.Invalid("unknown_dependency", "List only job ids of this account in depends_on.",
				"depends_on[%d]: job %q not found", i, dep).With("field", fmt.Sprintf("depends_on[%d]", i))
		} else if err != nil {
			return nil, nil, fmt.Errorf("dependency: %w", err)
		}
	}
	expanded, err := expand.Tasks(&sub.Expand)
	if err != nil {
		var fe *expand.FieldError
		if errors.As(err, &fe) {
			return nil, nil, fault.Invalid("invalid_fan_out", "Fix the field named in details and resend.", "%s", fe.Error()).
				With("field", fe.Field)
		}
		return nil, nil, err
	}
	now := s.clock.Now()
	status := store.JobQueued
	if len(sub.DependsOn) > 0 {
		status = store.JobPlanning
	}
	request, err := json.Marshal(sub)
	if err != nil {
		return nil, nil, err
	}
	requirements, _ := json.Marshal(sub.Requirements.API())
	job := store.Job{
		ID: id.New(id.Job), AccountID: accountID, ProjectID: p.ID, ProjectName: p.Name, PushID: rev.ID,
		Type: string(sub.Type), Status: status, Priority: priorities[sub.Priority], Request: request,
		Payload: sub.Payload, Summary: json.RawMessage(`{}`), ClientRef: sub.ClientRef, Tags: sub.Tags,
		Meta: sub.Meta, Variant: sub.Variant, TaskCount: int64(len(expanded)), SubmittedAt: now, UpdatedAt: now,
	}
	tasks := make([]store.Task, len(expanded))
	for i, t := range expanded {
		meta, _ := json.Marshal(t.Meta)
		tasks[i] = store.Task{
			ID: id.New(id.Task), JobID: job.ID, Index: int64(t.Index), Status: store.TaskQueued, Payload: t.Payload,
			Meta: meta, Requirements: requirements, CPU: sub.Requirements.CPU, MemoryMB: sub.Requirements.MemoryMB,
			GPUs: sub.Requirements.GPUCount, Priority: job.Priority, SubmittedAt: now, UpdatedAt: now,
		}
	}
	// Checked before the transaction for a clear 422, and again inside it
	// so that an input deleted meanwhile is not referenced.
	if _, err := checkArtifactInputs(ctx, s.store, accountID, tasks); err != nil {
		return nil, nil, err
	}
	event, _ := json.Marshal(map[string]any{"status": status, "task_count": len(tasks), "revision": rev.ContentHash})
	quote, rate := s.billing.Quote(billing.JobShape{Tasks: len(tasks), MaxRetries: sub.MaxRetries, TimeoutS: sub.TimeoutS,
		RuntimeHintS: sub.RuntimeHintS, Profile: sub.Requirements.Profile, ReliabilityMode: sub.ReliabilityMode,
		Capacity: CapacityOf(sub.Requirements, sub.PlacementPolicy)})
	holdMicros := int64(quote.Estimate.TotalUSD)
	job.RateMicrosPerHour = rate
	var created *store.Job
	var hold *store.Hold
	// Admissions share commits under load (InGroupTx); the transaction's
	// work is not cut short by this request's cancellation, which could
	// otherwise interrupt the group's shared transaction.
	ctx = context.WithoutCancel(ctx)
	err = s.store.InGroupTx(ctx, func(q store.Querier) error {
		// The job is stored first with the quote as priced; the hold is
		// reserved in the same transaction (both or neither) as its last
		// write, because on PostgreSQL the reservation holds the account's
		// row lock until the commit: concurrent admissions of one account
		// then overlap in everything but that statement and the commit.
		if job.Billing, err = json.Marshal(quote); err != nil {
			return err
		}
		created, err = q.JobCreate(ctx, &store.JobCreateParams{Job: job, Tasks: tasks, DependsOn: sub.DependsOn,
			Event: store.JobEvent{ID: id.New(id.Event), JobID: job.ID, Kind: "job.submitted", Data: event, CreatedAt: now}})
		if err != nil {
			return err
		}
		inputs, err := checkArtifactInputs(ctx, q, accountID, tasks)
		if err != nil {
			return err
		}
		if err := referenceInputs(ctx, q, job.ID, inputs, now); err != nil {
			return err
		}
		if key != nil {
			if err := q.IdempotencyKeyPut(ctx, &store.IdempotencyKey{AccountID: accountID, Key: key.Key,
				RequestHash: key.RequestHash, Response: job.ID, CreatedAt: now}); err != nil {
				return err // ErrConflict: a concurrent resend stored it first
			}
		}
		h, avail, err := s.billing.Reserve(ctx, q, accountID, job.ID, holdMicros, now)
		if err != nil {
			return err
		}
		hold = h
		// The admission shows what was available just before the hold.
		quote.Admission.AvailableUSD, quote.Admission.BalanceSufficient = apiv1.USD(avail), true
		if job.Billing, err = json.Marshal(quote); err != nil {
			return err
		}
		if err := q.JobBillingSet(ctx, job.ID, job.Billing); err != nil {
			return err
		}
		created.Billing = job.Billing
		if status != store.JobPlanning {
			return nil
		}
		// Dependencies that already ended decide at once (after the
		// reservation: a job that fails here captures its hold).
		if _, err := s.resolveWait(ctx, q, job.ID, now); err != nil {
			return err
		}
		created, err = q.JobGet(ctx, accountID, job.ID)
		return err
	})
	if errors.Is(err, billing.ErrInsufficient) {
		// Nothing was stored; the 402 carries a quote for the difference.
		if serr := s.billing.Shortfall(ctx, accountID, holdMicros, "this job's hold"); serr != nil {
			return nil, nil, serr
		}
		// Funds arrived in between: the caller may resend at once.
		return nil, nil, fault.Conflict("balance_changed", "Resend the same request.", "the balance changed during admission")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store job: %w", err)
	}
	s.log.InfoContext(ctx, "job submitted", "job", created.ID, "project", p.ID, "tasks", len(tasks), "status", status)
	s.waker.Wake()
	if created.Status != store.JobQueued {
		return created, nil, nil
	}
	return created, hold, nil
}

// Get finds a job of the account; another account's job is not found.
func (s *Service) Get(ctx context.Context, accountID, jobID string) (*store.Job, error) {
	j, err := s.store.JobGet(ctx, accountID, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NotFound("job", jobID)
	}
	if err != nil {
		return nil, fmt.Errorf("get job: %w", err)
	}
	return j, nil
}

// ProjectActiveJobCount implements project.ActiveJobCounter.
func (s *Service) ProjectActiveJobCount(ctx context.Context, projectID string) (int, error) {
	return s.store.ProjectActiveJobCount(ctx, projectID)
}

// Cancel cancels a job that is not terminal: its open tasks are cancelled in
// the same transaction and their running attempts are returned to be killed.
func (s *Service) Cancel(ctx context.Context, accountID, jobID, reason string) (*store.Job, []string, error) {
	j, err := s.Get(ctx, accountID, jobID)
	if err != nil {
		return nil, nil, err
	}
	now := s.clock.Now()
	var job *store.Job
	var running []string
	err = s.store.InTx(ctx, func(q store.Querier) error {
		var err error
		job, running, err = s.cancelInTx(ctx, q, j, cancelStatuses, reason, "", map[string]any{"reason": reason}, now)
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		cur, gerr := s.Get(ctx, accountID, jobID)
		if gerr != nil {
			return nil, nil, gerr
		}
		return nil, nil, fault.Conflict("job_terminal", "Nothing to cancel; read its results instead.",
			"job %s is already %s", jobID, cur.Status).With("status", string(cur.Status))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cancel job: %w", err)
	}
	if len(running) > 0 {
		s.waker.Wake()
	}
	return job, running, nil
}

// cancelStatuses are the statuses a job can be cancelled from.
var cancelStatuses = []store.JobStatus{store.JobPlanning, store.JobQueued, store.JobRunning}

// cancelInTx cancels job j (when it is in one of from) in q's transaction,
// with reason and action ("" for the default) as its error and
// recommended_action:
// its open tasks first (the store's lock order: task, attempt, job), the
// attempts it stops metered to now, its summary stored once (so reading a
// cancelled job never re-reads its tasks), its hold captured, a
// job.cancelled event with data plus the number of killed attempts, and
// the jobs that depended on it cancelled in turn. It returns the cancelled
// job and the attempts to kill; store.ErrConflict when j is not in from.
func (s *Service) cancelInTx(ctx context.Context, q store.Querier, j *store.Job, from []store.JobStatus, reason, action string,
	data map[string]any, now time.Time) (*store.Job, []string, error) {
	if action == "" {
		action = "Resubmit the job if you still need its results."
	}
	atts, err := q.AttemptList(ctx, j.ID)
	if err != nil {
		return nil, nil, err
	}
	running, err := q.TaskCancelOpen(ctx, j.ID, now)
	if err != nil {
		return nil, nil, err
	}
	if err := s.meterCancelled(ctx, q, j, atts, now); err != nil {
		return nil, nil, err
	}
	tasks, err := q.TaskList(ctx, j.ID)
	if err != nil {
		return nil, nil, err
	}
	summary, err := MarshalSummary(Summarize(j, tasks, atts...))
	if err != nil {
		return nil, nil, err
	}
	job, err := q.JobSetStatus(ctx, &store.JobSetStatusParams{ID: j.ID, From: from, To: store.JobCancelled,
		Error: "cancelled: " + reason, RecommendedAction: action, Summary: summary, Now: now})
	if err != nil {
		return nil, nil, err
	}
	if err := billing.Capture(ctx, q, j.ID, now); err != nil {
		return nil, nil, err
	}
	data["killed_attempts"] = len(running)
	if err := s.event(ctx, q, j.ID, "", "", "job.cancelled", data, now); err != nil {
		return nil, nil, err
	}
	if _, err := s.resolveDependents(ctx, q, j.ID, now); err != nil {
		return nil, nil, err
	}
	return job, running, nil
}

// meterCancelled meters the attempts that a cancel stopped while they ran
// (atts as they were before the cancel): the runner used its sandbox from
// start to the cancel, billed like any attempt. Attempts not yet started
// are free.
func (s *Service) meterCancelled(ctx context.Context, q store.Querier, j *store.Job, atts []*store.Attempt, now time.Time) error {
	var timeoutS int64
	for _, a := range atts {
		if a.Status != store.AttemptRunning || a.StartedAt == nil {
			continue
		}
		if timeoutS == 0 {
			sub, err := s.request(j)
			if err != nil {
				return err
			}
			timeoutS = sub.TimeoutS
		}
		secs, cost := billing.AttemptCost(attemptRate(a, j), now.Sub(*a.StartedAt), timeoutS)
		if err := q.AttemptSetCost(ctx, a.ID, secs, cost); err != nil {
			return fmt.Errorf("meter cancelled attempt %s: %w", a.ID, err)
		}
	}
	return nil
}
