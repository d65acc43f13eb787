package event

import (
	"context"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
)

// The frames of the three streams (docs/streams.md): what each shows of
// the events it follows, as a Spec for the engine (stream.go).

const (
	streamSnapshotTasks = 100 // tasks in a job stream's snapshot
	projectRecentJobs   = 20  // terminal jobs in a project stream's snapshot
	projectOpenJobs     = 200 // running, and queued, jobs in a project stream's snapshot (newest)
)

// terminalStatuses are the statuses of the jobs a project stream's
// snapshot shows as recent.
var terminalStatuses = []store.JobStatus{store.JobCompleted, store.JobPartial, store.JobFailed, store.JobCancelled}

// isJobEvent reports whether an event kind is about the job as a whole:
// its frame is a job frame.
func isJobEvent(kind string) bool { return strings.HasPrefix(kind, "job.") }

// JobStream is the stream of job j (GET /api/v1/jobs/{id}/stream): a
// snapshot of the job and its first tasks, then a frame per event, and
// done once the job ended. ctx is the stream's.
func (s *Streams) JobStream(ctx context.Context, j *store.Job) *Spec {
	feed := store.JobEventFeedParams{JobIDs: []string{j.ID}}
	return &Spec{
		Filter: Filter{JobIDs: map[string]bool{j.ID: true}},
		Feed:   feed,
		Ended:  j.Status.IsTerminal,
		Emit: func(sink Sink, evs []*store.JobEvent) (bool, error) {
			terminal := false
			for _, e := range evs {
				if err := s.jobEventFrame(ctx, sink, e); err != nil {
					return true, err
				}
				terminal = terminal || jobview.TerminalEvent(e.Kind)
			}
			if !terminal {
				return false, nil
			}
			// Events committed with the job's end (state published, ...)
			// come before done.
			last := evs[len(evs)-1].Position
			for {
				rest, err := s.eventsAfter(ctx, &store.JobEventFeedParams{JobIDs: feed.JobIDs, After: last, Limit: feedBatch})
				if err != nil || len(rest) == 0 {
					break
				}
				for _, e := range rest {
					if err := s.jobEventFrame(ctx, sink, e); err != nil {
						return true, err
					}
				}
				last = rest[len(rest)-1].Position
			}
			return true, s.jobDone(ctx, sink, j.ID)
		},
		Snapshot: func(sink Sink, pos int64, resync *string) (bool, error) {
			snap, err := s.jobSnapshot(ctx, j.ID, pos, resync)
			if err != nil {
				return true, err
			}
			if err := sink.Frame(apiv1.FrameSnapshot, PosID(pos), snap); err != nil {
				return true, err
			}
			if st := store.JobStatus(snap.Job.Status); st.IsTerminal() {
				return true, sink.Frame(apiv1.FrameDone, "", apiv1.DoneFrame{JobID: j.ID, Status: string(st)})
			}
			return false, nil
		},
		Resumed: func(sink Sink) (bool, error) {
			if !j.Status.IsTerminal() {
				return false, nil
			}
			// The client had seen the end but not what was committed
			// with it.
			return true, s.jobDone(ctx, sink, j.ID)
		},
	}
}

// jobObject is the job object with its summary.
func (s *Streams) jobObject(ctx context.Context, j *store.Job) (*apiv1.Job, error) {
	return s.cfg.Views.JobObject(ctx, j)
}

// jobSnapshot reads a job stream's snapshot.
func (s *Streams) jobSnapshot(ctx context.Context, jobID string, pos int64, resync *string) (*apiv1.JobStreamSnapshot, error) {
	j, err := s.cfg.Store.JobGetByID(ctx, jobID)
	if err != nil {
		return nil, err
	}
	jv, err := s.jobObject(ctx, j)
	if err != nil {
		return nil, err
	}
	views := s.cfg.Views
	tasks, attempts, err := views.TaskPage(ctx, j, 0, streamSnapshotTasks)
	if err != nil {
		return nil, err
	}
	counts, err := views.TaskCounts(ctx, j)
	if err != nil {
		return nil, err
	}
	arts, err := views.Artifacts(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now()
	snap := &apiv1.JobStreamSnapshot{Job: jv, Tasks: make([]apiv1.Task, 0, len(tasks)), TaskCount: j.TaskCount,
		TasksShown: len(tasks), TasksTruncated: int64(len(tasks)) < j.TaskCount, TaskCounts: counts, Position: pos, Resync: resync}
	for _, t := range tasks {
		v := jobview.TaskView(t, attempts[t.ID], now)
		jobview.WithArtifacts(&v, arts)
		snap.Tasks = append(snap.Tasks, v)
	}
	return snap, nil
}

// jobEventFrame sends the frame of one event of a job stream: a job frame
// for job.* events, a task frame for the task's own (attempt.*,
// task.progress), an event frame otherwise.
func (s *Streams) jobEventFrame(ctx context.Context, sink Sink, e *store.JobEvent) error {
	ev := jobview.EventView(e)
	id := PosID(e.Position)
	switch kind := e.Kind; {
	case isJobEvent(kind):
		jv, err := s.currentJob(ctx, e.JobID)
		if err != nil {
			return err
		}
		return sink.Frame(apiv1.FrameJob, id, apiv1.JobFrame{Event: ev, Job: jv})
	case e.TaskID != "":
		t, err := s.cfg.Views.EventTask(ctx, e)
		if err != nil {
			return err
		}
		return sink.Frame(apiv1.FrameTask, id, apiv1.TaskFrame{Event: ev, JobID: e.JobID, Task: t})
	default:
		return sink.Frame(apiv1.FrameEvent, id, apiv1.EventFrame{Event: ev, JobID: e.JobID})
	}
}

func (s *Streams) currentJob(ctx context.Context, jobID string) (*apiv1.Job, error) {
	j, err := s.cfg.Store.JobGetByID(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return s.jobObject(ctx, j)
}

func (s *Streams) jobDone(ctx context.Context, sink Sink, jobID string) error {
	j, err := s.cfg.Store.JobGetByID(ctx, jobID)
	if err != nil {
		return err
	}
	return sink.Frame(apiv1.FrameDone, "", apiv1.DoneFrame{JobID: jobID, Status: string(j.Status)})
}

// Watch is what a watch stream follows: IDs in the caller's order, of
// which Watched are the caller's jobs with the status each had when it was
// found; Unknown are the entries of the others (each with its error), shown
// as they are in the snapshot.
type Watch struct {
	IDs     []string
	Watched map[string]bool
	// Statuses holds the watched jobs' statuses; the stream keeps it up
	// to date.
	Statuses map[string]string
	Unknown  []apiv1.WatchEntry
}

// WatchStream is the stream of several jobs (GET /api/v1/jobs/watch): a
// snapshot of each with its result fields, then a job frame per job event
// (results on terminal ones), and done once every watched job ended.
func (s *Streams) WatchStream(ctx context.Context, w *Watch) *Spec {
	var jobIDs []string
	for _, id := range w.IDs {
		if w.Watched[id] {
			jobIDs = append(jobIDs, id)
		}
	}
	statuses := w.Statuses
	allDone := func() bool {
		for _, st := range statuses {
			if !store.JobStatus(st).IsTerminal() {
				return false
			}
		}
		return true
	}
	return &Spec{
		Filter: Filter{JobIDs: w.Watched},
		Feed:   store.JobEventFeedParams{JobIDs: jobIDs},
		Ended:  allDone,
		Emit: func(sink Sink, evs []*store.JobEvent) (bool, error) {
			for _, e := range evs {
				if !isJobEvent(e.Kind) {
					continue // watch streams carry job deltas only
				}
				j, err := s.cfg.Store.JobGetByID(ctx, e.JobID)
				if err != nil {
					return true, err
				}
				frame, err := s.watchJobFrame(ctx, j, e)
				if err != nil {
					return true, err
				}
				if err := sink.Frame(apiv1.FrameJob, PosID(e.Position), frame); err != nil {
					return true, err
				}
				if jobview.TerminalEvent(e.Kind) {
					statuses[e.JobID] = string(j.Status)
				}
			}
			if !allDone() {
				return false, nil
			}
			return true, sink.Frame(apiv1.FrameDone, "", apiv1.DoneFrame{Statuses: statuses})
		},
		Snapshot: func(sink Sink, pos int64, resync *string) (bool, error) {
			snap := apiv1.WatchSnapshot{Jobs: make([]apiv1.WatchEntry, 0, len(w.IDs)), Position: pos, Resync: resync}
			for _, id := range w.IDs {
				if !w.Watched[id] {
					i := slices.IndexFunc(w.Unknown, func(e apiv1.WatchEntry) bool { return e.ID == id })
					snap.Jobs = append(snap.Jobs, w.Unknown[i])
					continue
				}
				j, err := s.cfg.Store.JobGetByID(ctx, id)
				if err != nil {
					return true, err
				}
				statuses[id] = string(j.Status)
				jv, res, err := s.watchView(ctx, j)
				if err != nil {
					return true, err
				}
				snap.Jobs = append(snap.Jobs, apiv1.WatchEntry{ID: id, Job: jv, Result: res})
			}
			if err := sink.Frame(apiv1.FrameSnapshot, PosID(pos), snap); err != nil {
				return true, err
			}
			if allDone() {
				return true, sink.Frame(apiv1.FrameDone, "", apiv1.DoneFrame{Statuses: statuses})
			}
			return false, nil
		},
	}
}

// watchView is a watched job's object and its result fields.
func (s *Streams) watchView(ctx context.Context, j *store.Job) (*apiv1.Job, *apiv1.ResultCommon, error) {
	summary, err := s.cfg.Views.SummaryOf(ctx, j)
	if err != nil {
		return nil, nil, err
	}
	res := jobview.ResultCommonView(j, summary)
	v := jobview.JobView(j, summary)
	if err := s.cfg.Views.AddCheckpointSummary(ctx, j, v); err != nil {
		return nil, nil, err
	}
	return v, &res, nil
}

func (s *Streams) watchJobFrame(ctx context.Context, j *store.Job, e *store.JobEvent) (apiv1.JobFrame, error) {
	jv, res, err := s.watchView(ctx, j)
	if err != nil {
		return apiv1.JobFrame{}, err
	}
	f := apiv1.JobFrame{Event: jobview.EventView(e), Job: jv}
	if jobview.TerminalEvent(e.Kind) {
		f.Result = res
	}
	return f, nil
}

// ProjectStream is the stream of one account's project (GET
// /api/v1/projects/{name}/stream): a snapshot of its running, queued and
// recent jobs, then a job frame per job event. It never ends by itself.
func (s *Streams) ProjectStream(ctx context.Context, accountID string, proj *store.Project) *Spec {
	return &Spec{
		Filter: Filter{AccountID: accountID, ProjectID: proj.ID},
		Feed:   store.JobEventFeedParams{AccountID: accountID, ProjectID: proj.ID},
		Emit: func(sink Sink, evs []*store.JobEvent) (bool, error) {
			for _, e := range evs {
				if !isJobEvent(e.Kind) {
					continue // job deltas only
				}
				j, err := s.cfg.Store.JobGetByID(ctx, e.JobID)
				if err != nil {
					return true, err
				}
				entry := jobview.JobListEntryView(j, false)
				if err := sink.Frame(apiv1.FrameJob, PosID(e.Position), apiv1.ProjectJobFrame{Event: jobview.EventView(e), Job: entry}); err != nil {
					return true, err
				}
			}
			return false, nil
		},
		Snapshot: func(sink Sink, pos int64, resync *string) (bool, error) {
			snap := apiv1.ProjectSnapshot{Project: proj.Name, Active: []apiv1.JobListEntry{}, Queued: []apiv1.JobListEntry{},
				Recent: []apiv1.JobListEntry{}, Position: pos, Resync: resync}
			for _, part := range []struct {
				dst      *[]apiv1.JobListEntry
				statuses []store.JobStatus
				limit    int
			}{
				{&snap.Active, []store.JobStatus{store.JobRunning}, projectOpenJobs},
				{&snap.Queued, []store.JobStatus{store.JobPlanning, store.JobQueued}, projectOpenJobs},
				{&snap.Recent, terminalStatuses, projectRecentJobs},
			} {
				jobs, _, err := s.cfg.Views.List(ctx, &store.JobListParams{AccountID: accountID, ProjectID: proj.ID,
					Statuses: part.statuses, Limit: part.limit})
				if err != nil {
					return true, err
				}
				for _, j := range jobs {
					*part.dst = append(*part.dst, jobview.JobListEntryView(j, false))
				}
			}
			return false, sink.Frame(apiv1.FrameSnapshot, PosID(pos), snap)
		},
	}
}
