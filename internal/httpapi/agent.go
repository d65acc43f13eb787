package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// AgentController is the controller's side of agentproto as the agent
// endpoints call it (fleet.Controller). Its errors are faults: their kind
// chooses the status through statusOf, their code is the ErrorResponse code
// a host acts on.
type AgentController interface {
	Register(ctx context.Context, token string, req *agentproto.RegisterRequest) (*agentproto.RegisterResponse, error)
	Poll(ctx context.Context, token string, req *agentproto.PollRequest) (*agentproto.PollResponse, error)
	Event(ctx context.Context, token, attemptID string, ev *agentproto.AttemptEvent) error
	// OpenInput and ReceiveArtifact move an attempt's artifact inputs and
	// outputs (protocol 3).
	OpenInput(ctx context.Context, token, attemptID, artifactID string) (io.ReadCloser, *store.Artifact, error)
	ReceiveArtifact(ctx context.Context, token, attemptID, path, kind string, body io.Reader, contentLength int64) (*agentproto.UploadedArtifact, error)
	// OpenImage streams an attempt's image as the tar of its OCI layout
	// (protocol 5).
	OpenImage(ctx context.Context, token, attemptID string) (io.ReadCloser, error)
}

// AgentHandler serves agentproto's endpoints. They are not part of the
// public API (/api/v1): hosts authenticate with their host token, never
// with an account key, and errors use agentproto.ErrorResponse rather than
// the public envelope. The status codes still come from statusOf.
//
// disk, when given, is the data dir's free-disk watermark: under it a
// host's output uploads are refused with 507, as the public uploads are.
func AgentHandler(c AgentController, log *slog.Logger, disk ...*diskfree.Checker) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &agentAPI{c: c, log: log}
	var free *diskfree.Checker
	if len(disk) > 0 {
		free = disk[0]
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+agentproto.RegisterPath, func(w http.ResponseWriter, r *http.Request) {
		var req agentproto.RegisterRequest
		if !a.decode(w, r, &req, 1<<20) {
			return
		}
		resp, err := c.Register(r.Context(), hostToken(r), &req)
		a.answer(w, r, resp, err)
	})
	mux.HandleFunc("POST "+agentproto.PollPath, func(w http.ResponseWriter, r *http.Request) {
		var req agentproto.PollRequest
		if !a.decode(w, r, &req, 1<<20) {
			return
		}
		resp, err := c.Poll(r.Context(), hostToken(r), &req)
		a.answer(w, r, resp, err)
	})
	mux.HandleFunc("POST "+agentproto.AttemptEventsPath+"{id}/events", func(w http.ResponseWriter, r *http.Request) {
		var ev agentproto.AttemptEvent
		// A finished event carries the result file and 10 KB of output;
		// the agent caps the result well below this.
		if !a.decode(w, r, &ev, 64<<20) {
			return
		}
		err := c.Event(r.Context(), hostToken(r), r.PathValue("id"), &ev)
		a.answer(w, r, agentproto.EventResponse{}, err)
	})
	mux.HandleFunc("GET "+agentproto.AttemptEventsPath+"{id}/inputs/{artifact_id}", func(w http.ResponseWriter, r *http.Request) {
		rc, art, err := c.OpenInput(r.Context(), hostToken(r), r.PathValue("id"), r.PathValue("artifact_id"))
		if err != nil {
			a.answer(w, r, nil, err)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		if art.Source == store.ArtifactLocal {
			w.Header().Set("Content-Length", strconv.FormatInt(art.SizeBytes, 10))
		}
		if _, err := io.Copy(w, rc); err != nil {
			log.Warn("input download cut short", "attempt_id", r.PathValue("id"), "artifact_id", art.ID, "err", err)
		}
	})
	mux.HandleFunc("GET "+agentproto.AttemptEventsPath+"{id}/image", func(w http.ResponseWriter, r *http.Request) {
		rc, err := c.OpenImage(r.Context(), hostToken(r), r.PathValue("id"))
		if err != nil {
			a.answer(w, r, nil, err)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Type", "application/x-tar")
		if _, err := io.Copy(w, rc); err != nil {
			// The host verifies every blob and fetches again.
			log.Warn("image download cut short", "attempt_id", r.PathValue("id"), "err", err)
		}
	})
	mux.HandleFunc("POST "+agentproto.AttemptEventsPath+"{id}/artifacts", func(w http.ResponseWriter, r *http.Request) {
		if low, why := free.Low(); low {
			log.Warn("output upload refused: data dir low on disk", "attempt_id", r.PathValue("id"), "why", why)
			a.answer(w, r, nil, errDiskFull())
			return
		}
		up, err := c.ReceiveArtifact(r.Context(), hostToken(r), r.PathValue("id"), r.URL.Query().Get("path"),
			r.URL.Query().Get("kind"), r.Body, r.ContentLength)
		a.answer(w, r, up, err)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, fault.New(fault.KindNotFound, "not_found", "", "no agent endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

type agentAPI struct {
	c   AgentController
	log *slog.Logger
}

func hostToken(r *http.Request) string {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

func (a *agentAPI) decode(w http.ResponseWriter, r *http.Request, into any, limit int64) bool {
	if v := r.Header.Get(agentproto.VersionHeader); v != "" && !supportedVersion(v) {
		a.writeError(w, r, fault.New(fault.KindUpgradeRequired, agentproto.CodeUnsupportedVersion, "",
			"this controller speaks agent protocol %d to %d", agentproto.MinProtocolVersion, agentproto.ProtocolVersion))
		return false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(into); err != nil {
		a.writeError(w, r, fault.New(fault.KindBadRequest, "bad_request", "", "malformed body: %v", err))
		return false
	}
	return true
}

func (a *agentAPI) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	switch {
	case err == nil:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The host hung up; nobody reads this answer.
	default:
		a.writeError(w, r, err)
	}
}

// writeError answers err as an ErrorResponse. Like the public API's
// writeError, a cause that is not a fault is logged and never shown.
func (a *agentAPI) writeError(w http.ResponseWriter, r *http.Request, err error) {
	fe, ok := fault.As(err)
	if !ok {
		fe = &fault.Error{Kind: fault.KindInternal, Code: "internal", Message: "the controller failed; retry", Cause: err}
	}
	status := statusOf(fe.Kind)
	if status >= 500 {
		a.log.ErrorContext(r.Context(), "agent request failed", "path", r.URL.Path, "status", status, "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(agentproto.ErrorResponse{Code: fe.Code, Message: fe.Message})
}

// supportedVersion reports whether a version header names a version the
// controller speaks.
func supportedVersion(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && agentproto.Supported(n)
}
