package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
)

// The three streams of spec 6 (docs/streams.md). Each one subscribes to the
// broker first, then sends its snapshot (or, after a reconnect, the events
// the client missed, read from the store), then on every wake-up sends the
// frames of the events committed after the last one it sent: the store's
// event feed is the only source, the broker only says when to read it.

const (
	streamSnapshotTasks = 100 // tasks in a job stream's snapshot
	maxWatchIDs         = 100 // spec 8
	projectRecentJobs   = 20  // terminal jobs in a project stream's snapshot
	projectOpenJobs     = 200 // running, and queued, jobs in a project stream's snapshot (newest)
	feedBatch           = 500
)

// openStream checks the broker and the caller's stream cap, and subscribes.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request, f event.Filter) (*event.Subscription, func(), error) {
	if s.streams.Broker == nil {
		return nil, nil, fault.New(fault.KindUnavailable, "streams_unavailable", "Poll the job instead.",
			"event streams are not running on this server")
	}
	release, err := s.streamCaps.acquire(w, principal(r.Context()).Account.ID, s.streams.PerAccount)
	if err != nil {
		return nil, nil, err
	}
	sub, err := s.streams.Broker.Subscribe(f)
	if err != nil {
		release()
		return nil, nil, fault.New(fault.KindUnavailable, "streams_unavailable", "Retry in a few seconds.",
			"event streams are not running: %v", err)
	}
	return sub, func() { sub.Close(); release() }, nil
}

// resumePoint decides where a stream starts: after the client's
// Last-Event-ID when it sent a usable one and missed no more than the
// replay limit (the missed events are returned), or at a fresh snapshot
// (resume false, with the reason when the client asked to resume).
//
// It runs after the subscription opened: the newest position, read now, is
// where a snapshot read next stands (it shows every event up to it), and
// the subscription wakes the stream for every event after it.
func (s *Server) resumePoint(ctx context.Context, r *http.Request, feed store.JobEventFeedParams) (missed []*store.JobEvent, cursor int64, resume bool, resync *string, err error) {
	from, err := s.views.LastEventPosition(ctx)
	if err != nil {
		return nil, 0, false, nil, err
	}
	pos, asked, valid := lastEventID(r)
	if !asked {
		return nil, from, false, nil, nil
	}
	if !valid || pos > from {
		// Not a position this store handed out.
		why := apiv1.ResyncInvalidLastEvent
		return nil, from, false, &why, nil
	}
	feed.After, feed.Limit = pos, s.streams.ReplayLimit+1
	missed, err = s.views.EventsAfter(ctx, &feed)
	if err != nil {
		return nil, 0, false, nil, err
	}
	if len(missed) > s.streams.ReplayLimit {
		why := apiv1.ResyncGapTooLarge
		return nil, from, false, &why, nil
	}
	return missed, pos, true, nil, nil
}

// follow sends the frames of the events after cursor as the subscription
// delivers them (emit turns a batch into frames and says when the stream is
// done), pings while idle, and ends the stream with a timeout frame when
// its life is over. A subscription closed under it (the client read too
// slowly, or the server stops) ends the stream; the client resumes with
// Last-Event-ID.
//
// The subscription is the broker's read of the store's feed, in position
// order, of every event after its start that the filter selects; it opened
// before the stream's snapshot or missed events were read, so together
// they leave no gap, and what it repeats (at or before cursor) is skipped.
// No stream reads the store for its deltas: with a thousand streams, one
// read of the feed serves them all.
func (s *Server) follow(ctx context.Context, sse *sseWriter, sub *event.Subscription, cursor int64,
	emit func([]*store.JobEvent) (bool, error)) error {
	life := time.NewTimer(s.streams.Timeout)
	defer life.Stop()
	ping := time.NewTicker(s.streams.PingInterval)
	defer ping.Stop()
	var batch []*store.JobEvent
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-life.C:
			return s.closing(sse, apiv1.TimeoutStreamLife, cursor)
		case <-ping.C:
			if err := sse.frame(apiv1.FramePing, "", map[string]any{"time": s.clock.Now()}); err != nil {
				return nil
			}
		case e, ok := <-sub.C:
			if !ok {
				// The broker gave up on this stream: its client fell
				// behind, or the server stops. Either way the client is
				// told where to resume before the connection closes.
				reason := apiv1.TimeoutServerShutdown
				if errors.Is(sub.Err(), event.ErrSlow) {
					reason = apiv1.TimeoutSlowReader
					s.log.InfoContext(ctx, "stream closed: client fell behind", "request_id", requestID(ctx))
				}
				return s.closing(sse, reason, cursor)
			}
			batch = takeQueued(sub.C, append(batch[:0], e), feedBatch)
			fresh := batch[:0]
			for _, e := range batch {
				if e.Position > cursor {
					fresh = append(fresh, e)
				}
			}
			if len(fresh) == 0 {
				continue
			}
			done, err := s.streamTurn(ctx, sse, func() (bool, error) { return emit(fresh) })
			if err != nil || done {
				return err
			}
			cursor = fresh[len(fresh)-1].Position
		}
	}
}

// streamTurn runs fn, which makes one batch of a stream's frames, when the
// server's stream work has room: the frames of a thousand streams woken at
// once are built a few at a time, leaving the other cores to the requests
// beside them (with 1,000 streams on 2 cores, submissions were 13 to 25 %
// slower without it; BenchmarkWatchStreams). The frames are collected
// while fn runs and written after the turn is given back, so that a
// client slow to read holds up only its own stream.
func (s *Server) streamTurn(ctx context.Context, sse *sseWriter, fn func() (bool, error)) (bool, error) {
	select {
	case s.streamWork <- struct{}{}:
	case <-ctx.Done():
		return true, nil
	}
	sse.hold()
	done, err := func() (bool, error) {
		defer func() { <-s.streamWork }() // given back even if fn panics
		return fn()
	}()
	if werr := sse.release(); werr != nil && err == nil {
		return true, werr
	}
	return done, err
}

// closing ends a stream with a timeout frame saying why and where its
// client resumes. A client that stopped reading may never take it: the
// write gives up after the stream's write timeout.
func (s *Server) closing(sse *sseWriter, reason string, cursor int64) error {
	action := "Reconnect with Last-Event-ID " + posID(cursor) + " to go on where this stream ended."
	switch reason {
	case apiv1.TimeoutSlowReader:
		action = "Read the stream as it arrives, then reconnect with Last-Event-ID " + posID(cursor) + "; nothing is lost."
	case apiv1.TimeoutServerShutdown:
		action = "The server is restarting: reconnect with Last-Event-ID " + posID(cursor) + " in a few seconds; nothing is lost."
	}
	return sse.frame(apiv1.FrameTimeout, "", apiv1.TimeoutFrame{Reason: reason,
		StreamTimeoutS: s.streams.Timeout.Seconds(), LastEventID: posID(cursor), RecommendedAction: action})
}

// isJobEvent reports whether an event kind is about the job as a whole:
// its frame is a job frame.
func isJobEvent(kind string) bool { return strings.HasPrefix(kind, "job.") }

// takeQueued appends to batch, without blocking, the events already
// queued on c, up to max in all: one emit for what arrived together.
func takeQueued(c <-chan *store.JobEvent, batch []*store.JobEvent, max int) []*store.JobEvent {
	for len(batch) < max {
		select {
		case e, ok := <-c:
			if !ok {
				return batch
			}
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// streamEnd ends a handler whose stream already answered 200: a failure
// can no longer become an envelope, so it is logged and the stream closes.
func (s *Server) streamEnd(r *http.Request, err error) error {
	if err != nil && r.Context().Err() == nil {
		s.log.WarnContext(r.Context(), "stream ended by an error", "request_id", requestID(r.Context()), "err", err)
	}
	return nil
}

// streamSpec is what one kind of stream brings to serveStream: which
// events it follows, and how it shows them.
type streamSpec struct {
	filter event.Filter
	feed   store.JobEventFeedParams
	// ended reports whether there is nothing more to show (every job
	// ended): a client that resumes with nothing missed then gets 204,
	// which tells EventSource to stop reconnecting. Nil: never.
	ended func() bool
	// emit sends the frames of a batch of events and says whether the
	// stream is done (it sent the done frame).
	emit func(sse *sseWriter, evs []*store.JobEvent) (bool, error)
	// snapshot sends the snapshot frame of a fresh stream at position pos
	// (resync says why a resume was refused) and says whether the stream
	// is done.
	snapshot func(sse *sseWriter, pos int64, resync *string) (bool, error)
	// resumed, when set, runs after a resumed stream sent what its client
	// missed, and says whether the stream is done.
	resumed func(sse *sseWriter) (bool, error)
}

// serveStream runs a stream: subscribe (before anything is read, so that
// nothing committed meanwhile is missed), find where the client resumes,
// send what it missed or a snapshot, then follow the events until the
// stream is done, times out or the client leaves.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, sp *streamSpec) error {
	ctx := r.Context()
	sub, closeSub, err := s.openStream(w, r, sp.filter)
	if err != nil {
		return err
	}
	defer closeSub()
	missed, cursor, resume, resync, err := s.resumePoint(ctx, r, sp.feed)
	if err != nil {
		return err
	}
	if resume && len(missed) == 0 && sp.ended != nil && sp.ended() {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	sse, err := startSSE(w, r, s.streams.WriteTimeout)
	if err != nil {
		return nil
	}
	emit := func(evs []*store.JobEvent) (bool, error) { return sp.emit(sse, evs) }
	if resume {
		if len(missed) > 0 {
			if done, err := emit(missed); done || err != nil {
				return s.streamEnd(r, err)
			}
			cursor = missed[len(missed)-1].Position
		}
		if sp.resumed != nil {
			if done, err := sp.resumed(sse); done || err != nil {
				return s.streamEnd(r, err)
			}
		}
	} else if done, err := sp.snapshot(sse, cursor, resync); done || err != nil {
		return s.streamEnd(r, err)
	}
	return s.streamEnd(r, s.follow(ctx, sse, sub, cursor, emit))
}

// jobStream serves GET /api/v1/jobs/{id}/stream.
func (s *Server) jobStream(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	j, err := s.jobFor(r, "id")
	if err != nil {
		return err
	}
	feed := store.JobEventFeedParams{JobIDs: []string{j.ID}}
	return s.serveStream(w, r, &streamSpec{
		filter: event.Filter{JobIDs: map[string]bool{j.ID: true}},
		feed:   feed,
		ended:  j.Status.IsTerminal,
		emit: func(sse *sseWriter, evs []*store.JobEvent) (bool, error) {
			terminal := false
			for _, e := range evs {
				if err := s.jobEventFrame(ctx, sse, e); err != nil {
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
				rest, err := s.views.EventsAfter(ctx, &store.JobEventFeedParams{JobIDs: feed.JobIDs, After: last, Limit: feedBatch})
				if err != nil || len(rest) == 0 {
					break
				}
				for _, e := range rest {
					if err := s.jobEventFrame(ctx, sse, e); err != nil {
						return true, err
					}
				}
				last = rest[len(rest)-1].Position
			}
			return true, s.jobDone(ctx, sse, j.ID)
		},
		snapshot: func(sse *sseWriter, pos int64, resync *string) (bool, error) {
			snap, err := s.jobSnapshot(ctx, j.ID, pos, resync)
			if err != nil {
				return true, err
			}
			if err := sse.frame(apiv1.FrameSnapshot, posID(pos), snap); err != nil {
				return true, err
			}
			if st := store.JobStatus(snap.Job.Status); st.IsTerminal() {
				return true, sse.frame(apiv1.FrameDone, "", apiv1.DoneFrame{JobID: j.ID, Status: string(st)})
			}
			return false, nil
		},
		resumed: func(sse *sseWriter) (bool, error) {
			if !j.Status.IsTerminal() {
				return false, nil
			}
			// The client had seen the end but not what was committed
			// with it.
			return true, s.jobDone(ctx, sse, j.ID)
		},
	})
}

// jobSnapshot reads a job stream's snapshot.
func (s *Server) jobSnapshot(ctx context.Context, jobID string, pos int64, resync *string) (*apiv1.JobStreamSnapshot, error) {
	j, err := s.store.JobGetByID(ctx, jobID)
	if err != nil {
		return nil, err
	}
	jv, err := s.jobObject(ctx, j)
	if err != nil {
		return nil, err
	}
	tasks, attempts, err := s.views.TaskPage(ctx, j, 0, streamSnapshotTasks)
	if err != nil {
		return nil, err
	}
	counts, err := s.views.TaskCounts(ctx, j)
	if err != nil {
		return nil, err
	}
	arts, err := s.views.Artifacts(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
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
func (s *Server) jobEventFrame(ctx context.Context, sse *sseWriter, e *store.JobEvent) error {
	ev := jobview.EventView(e)
	id := posID(e.Position)
	switch kind := e.Kind; {
	case isJobEvent(kind):
		jv, err := s.currentJob(ctx, e.JobID)
		if err != nil {
			return err
		}
		return sse.frame(apiv1.FrameJob, id, apiv1.JobFrame{Event: ev, Job: jv})
	case e.TaskID != "":
		t, err := s.views.EventTask(ctx, e)
		if err != nil {
			return err
		}
		return sse.frame(apiv1.FrameTask, id, apiv1.TaskFrame{Event: ev, JobID: e.JobID, Task: t})
	default:
		return sse.frame(apiv1.FrameEvent, id, apiv1.EventFrame{Event: ev, JobID: e.JobID})
	}
}

func (s *Server) currentJob(ctx context.Context, jobID string) (*apiv1.Job, error) {
	j, err := s.store.JobGetByID(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return s.jobObject(ctx, j)
}

func (s *Server) jobDone(ctx context.Context, sse *sseWriter, jobID string) error {
	j, err := s.store.JobGetByID(ctx, jobID)
	if err != nil {
		return err
	}
	return sse.frame(apiv1.FrameDone, "", apiv1.DoneFrame{JobID: jobID, Status: string(j.Status)})
}

// watchIDs parses ids= of GET /jobs/watch: 1 to 100 distinct job ids.
func watchIDs(r *http.Request) ([]string, error) {
	raw := r.URL.Query().Get("ids")
	ids := splitList(raw)
	if len(ids) == 0 {
		return nil, fault.Invalid("invalid_ids", "Pass ids=job_a,job_b (1 to 100 job ids, comma-separated).",
			"ids is required: a comma-separated list of job ids").With("field", "ids")
	}
	var out []string
	for _, id := range ids {
		if len(id) > 64 || !validJobID(id) {
			return nil, fault.Invalid("invalid_ids", "Pass job ids as returned by POST /api/v1/jobs (job_...).",
				"%q is not a job id", id).With("field", "ids")
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) > maxWatchIDs {
		return nil, fault.Invalid("too_many_ids", "Watch at most 100 jobs per stream; open another stream for the rest.",
			"%d job ids; at most %d may be watched on one stream", len(out), maxWatchIDs).With("field", "ids").With("limit", maxWatchIDs)
	}
	return out, nil
}

func validJobID(id string) bool {
	if len(id) <= len("job_") || id[:4] != "job_" {
		return false
	}
	for _, c := range id[4:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// jobWatch serves GET /api/v1/jobs/watch.
func (s *Server) jobWatch(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	ids, err := watchIDs(r)
	if err != nil {
		return err
	}
	acct := principal(ctx).Account.ID
	statuses := map[string]string{}
	var entries []apiv1.WatchEntry
	watched := map[string]bool{}
	for _, id := range ids {
		j, err := s.jobs.Get(ctx, acct, id)
		if fe, ok := fault.As(err); ok && fe.Kind == fault.KindNotFound {
			entries = append(entries, apiv1.WatchEntry{ID: id, Error: &apiv1.Error{Error: fe.Message, Code: fe.Code,
				RecommendedAction: "Check the id: only your own account's jobs can be watched."}})
			continue
		}
		if err != nil {
			return err
		}
		watched[id] = true
		statuses[id] = string(j.Status)
	}
	if len(watched) == 0 {
		return fault.NotFound("job", ids[0]).With("ids", ids)
	}
	var jobIDs []string
	for _, id := range ids {
		if watched[id] {
			jobIDs = append(jobIDs, id)
		}
	}
	allDone := func() bool {
		for _, st := range statuses {
			if !store.JobStatus(st).IsTerminal() {
				return false
			}
		}
		return true
	}
	return s.serveStream(w, r, &streamSpec{
		filter: event.Filter{JobIDs: watched},
		feed:   store.JobEventFeedParams{JobIDs: jobIDs},
		ended:  allDone,
		emit: func(sse *sseWriter, evs []*store.JobEvent) (bool, error) {
			for _, e := range evs {
				if !isJobEvent(e.Kind) {
					continue // watch streams carry job deltas only
				}
				j, err := s.store.JobGetByID(ctx, e.JobID)
				if err != nil {
					return true, err
				}
				frame, err := s.watchJobFrame(ctx, j, e)
				if err != nil {
					return true, err
				}
				if err := sse.frame(apiv1.FrameJob, posID(e.Position), frame); err != nil {
					return true, err
				}
				if jobview.TerminalEvent(e.Kind) {
					statuses[e.JobID] = string(j.Status)
				}
			}
			if !allDone() {
				return false, nil
			}
			return true, sse.frame(apiv1.FrameDone, "", apiv1.DoneFrame{Statuses: statuses})
		},
		snapshot: func(sse *sseWriter, pos int64, resync *string) (bool, error) {
			snap := apiv1.WatchSnapshot{Jobs: make([]apiv1.WatchEntry, 0, len(ids)), Position: pos, Resync: resync}
			for _, id := range ids {
				if !watched[id] {
					i := slices.IndexFunc(entries, func(e apiv1.WatchEntry) bool { return e.ID == id })
					snap.Jobs = append(snap.Jobs, entries[i])
					continue
				}
				j, err := s.store.JobGetByID(ctx, id)
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
			if err := sse.frame(apiv1.FrameSnapshot, posID(pos), snap); err != nil {
				return true, err
			}
			if allDone() {
				return true, sse.frame(apiv1.FrameDone, "", apiv1.DoneFrame{Statuses: statuses})
			}
			return false, nil
		},
	})
}

// watchView is a watched job's object and its result fields.
func (s *Server) watchView(ctx context.Context, j *store.Job) (*apiv1.Job, *apiv1.ResultCommon, error) {
	summary, err := s.views.SummaryOf(ctx, j)
	if err != nil {
		return nil, nil, err
	}
	res := jobview.ResultCommonView(j, summary)
	return jobview.JobView(j, summary), &res, nil
}

func (s *Server) watchJobFrame(ctx context.Context, j *store.Job, e *store.JobEvent) (apiv1.JobFrame, error) {
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

// projectStream serves GET /api/v1/projects/{name}/stream.
func (s *Server) projectStream(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	acct, err := s.streamAccount(r)
	if err != nil {
		return err
	}
	proj, err := s.projects.Get(ctx, acct, r.PathValue("name"))
	if err != nil {
		return err
	}
	return s.serveStream(w, r, &streamSpec{
		filter: event.Filter{AccountID: acct, ProjectID: proj.ID},
		feed:   store.JobEventFeedParams{AccountID: acct, ProjectID: proj.ID},
		emit: func(sse *sseWriter, evs []*store.JobEvent) (bool, error) {
			for _, e := range evs {
				if !isJobEvent(e.Kind) {
					continue // job deltas only
				}
				j, err := s.store.JobGetByID(ctx, e.JobID)
				if err != nil {
					return true, err
				}
				entry := jobview.JobListEntryView(j, false)
				if err := sse.frame(apiv1.FrameJob, posID(e.Position), apiv1.ProjectJobFrame{Event: jobview.EventView(e), Job: entry}); err != nil {
					return true, err
				}
			}
			return false, nil
		},
		snapshot: func(sse *sseWriter, pos int64, resync *string) (bool, error) {
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
				jobs, _, err := s.views.List(ctx, &store.JobListParams{AccountID: acct, ProjectID: proj.ID,
					Statuses: part.statuses, Limit: part.limit})
				if err != nil {
					return true, err
				}
				for _, j := range jobs {
					*part.dst = append(*part.dst, jobview.JobListEntryView(j, false))
				}
			}
			return false, sse.frame(apiv1.FrameSnapshot, posID(pos), snap)
		},
	})
}

// streamAccount is the account whose project a project stream shows: the
// caller's own, or, for an admin (the operator, who sees all), the one its
// account= names by id or name.
func (s *Server) streamAccount(r *http.Request) (string, error) {
	p := principal(r.Context())
	want := r.URL.Query().Get("account")
	if want == "" || want == p.Account.ID || want == p.Account.Name {
		return p.Account.ID, nil
	}
	if p.Key.Role != store.RoleAdmin {
		return "", fault.Forbidden("admin_required", "Leave out account= to stream your own account's project; only admin keys see other accounts.",
			"account=%q is not the caller's account", want)
	}
	get := s.store.AccountGetByName
	if strings.HasPrefix(want, "acct_") {
		get = s.store.AccountGetByID
	}
	a, err := get(r.Context(), want)
	if errors.Is(err, store.ErrNotFound) {
		return "", fault.NotFound("account", want)
	}
	if err != nil {
		return "", err
	}
	return a.ID, nil
}
