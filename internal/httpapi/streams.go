package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// The HTTP side of the three streams of spec 6 (docs/streams.md): each
// handler reads its request (which job, which ids, which project, where the
// client resumes), and the engine in package event runs the stream over an
// SSE writer (sse.go).

const maxWatchIDs = 100 // spec 8

// serveStream runs a stream: the caller's stream cap taken, the engine
// subscribes and finds where the client resumes, then sends what it missed
// or a snapshot and follows the events until the stream is done, times out
// or the client leaves.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, spec *event.Spec) error {
	ctx := r.Context()
	if err := s.streamer.Available(); err != nil {
		return err
	}
	release, err := s.acquireStream(w, principal(ctx).Account.ID, s.streams.PerAccount)
	if err != nil {
		return err
	}
	defer release()
	pos, asked, valid := lastEventID(r)
	st, err := s.streamer.Open(ctx, spec, event.LastEventID{Pos: pos, Asked: asked, Valid: valid})
	if err != nil {
		return err
	}
	defer st.Close()
	if st.Ended() {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	sse, err := startSSE(w, r, s.streams.WriteTimeout)
	if err != nil {
		return nil
	}
	return s.streamEnd(r, st.Run(ctx, sse, s.log.With("request_id", requestID(ctx))))
}

// streamEnd ends a handler whose stream already answered 200: a failure
// can no longer become an envelope, so it is logged and the stream closes.
func (s *Server) streamEnd(r *http.Request, err error) error {
	if err != nil && r.Context().Err() == nil {
		s.log.WarnContext(r.Context(), "stream ended by an error", "request_id", requestID(r.Context()), "err", err)
	}
	return nil
}

// jobStream serves GET /api/v1/jobs/{id}/stream.
func (s *Server) jobStream(w http.ResponseWriter, r *http.Request) error {
	j, err := s.jobFor(r, "id")
	if err != nil {
		return err
	}
	return s.serveStream(w, r, s.streamer.JobStream(r.Context(), j))
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
	return s.serveStream(w, r, s.streamer.WatchStream(ctx, &event.Watch{IDs: ids, Watched: watched,
		Statuses: statuses, Unknown: entries}))
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
	return s.serveStream(w, r, s.streamer.ProjectStream(ctx, acct, proj))
}

// streamAccount is the account whose project a project stream shows: the
// caller's own, or, for an admin (the operator, who sees all), the one its
// account= names by id or name.
func (s *Server) streamAccount(r *http.Request) (string, error) {
	return s.namedAccount(r, "account",
		"Leave out account= to stream your own account's project; only admin keys see other accounts.")
}

// namedAccount resolves the account query parameter param names (by id or
// name): none or the caller's own is the caller's; another account only
// for an admin key (403 admin_required with action otherwise, before it is
// looked up, so that a key learns nothing of other accounts).
func (s *Server) namedAccount(r *http.Request, param, action string) (string, error) {
	p := principal(r.Context())
	want := r.URL.Query().Get(param)
	if want == "" || want == p.Account.ID || want == p.Account.Name {
		return p.Account.ID, nil
	}
	if p.Key.Role != store.RoleAdmin {
		return "", fault.Forbidden("admin_required", action, "%s=%q is not the caller's account", param, want)
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
