package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/internal/agentproto"
)

// Handler serves agentproto's endpoints. They are not part of the public
// API (/api/v1): hosts authenticate with their host token, never with an
// account key, and errors use agentproto.ErrorResponse.
func (c *Controller) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+agentproto.RegisterPath, func(w http.ResponseWriter, r *http.Request) {
		var req agentproto.RegisterRequest
		if !c.decode(w, r, &req, 1<<20) {
			return
		}
		resp, err := c.Register(r.Context(), bearer(r), &req)
		c.answer(w, r, resp, err)
	})
	mux.HandleFunc("POST "+agentproto.LeasePath, func(w http.ResponseWriter, r *http.Request) {
		var req agentproto.LeaseRequest
		if !c.decode(w, r, &req, 1<<20) {
			return
		}
		resp, err := c.Lease(r.Context(), bearer(r), &req)
		c.answer(w, r, resp, err)
	})
	mux.HandleFunc("POST "+agentproto.AttemptEventsPath+"{id}/events", func(w http.ResponseWriter, r *http.Request) {
		var ev agentproto.AttemptEvent
		// A finished event carries the result file and 10 KB of output;
		// the agent caps the result well below this.
		if !c.decode(w, r, &ev, 64<<20) {
			return
		}
		err := c.Event(r.Context(), bearer(r), r.PathValue("id"), &ev)
		c.answer(w, r, agentproto.EventResponse{}, err)
	})
	mux.HandleFunc("GET "+agentproto.AttemptEventsPath+"{id}/inputs/{artifact_id}", c.serveInput)
	mux.HandleFunc("POST "+agentproto.AttemptEventsPath+"{id}/artifacts", c.receiveArtifact)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no agent endpoint "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func bearer(r *http.Request) string {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

func (c *Controller) decode(w http.ResponseWriter, r *http.Request, into any, limit int64) bool {
	if v := r.Header.Get(agentproto.VersionHeader); v != "" && !supportedHeader(v) {
		writeError(w, http.StatusUpgradeRequired, agentproto.CodeUnsupportedVersion,
			"this controller speaks agent protocol "+strconv.Itoa(agentproto.ProtocolVersion))
		return false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(into); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "malformed body: "+err.Error())
		return false
	}
	return true
}

func (c *Controller) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	switch {
	case err == nil:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	case errors.Is(err, errUnauthorized):
		writeError(w, http.StatusUnauthorized, "unauthorized", "unknown host token")
	case errors.Is(err, errWrongHost):
		writeError(w, http.StatusForbidden, "forbidden", err.Error())
	case errors.Is(err, errUnknownHost):
		writeError(w, http.StatusNotFound, agentproto.CodeUnknownHost, "register again")
	case errors.Is(err, errVersion):
		writeError(w, http.StatusUpgradeRequired, agentproto.CodeUnsupportedVersion, err.Error())
	case errors.Is(err, errDuplicate):
		writeError(w, http.StatusConflict, "duplicate", err.Error())
	case errors.Is(err, errGone):
		writeError(w, http.StatusGone, "gone", err.Error())
	case errors.Is(err, errBadEvent):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The host hung up; nobody reads this answer.
	default:
		c.log.Error("agent request failed", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "the controller failed; retry")
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(agentproto.ErrorResponse{Code: code, Message: msg})
}

// supportedHeader reports whether a version header names a version this
// controller speaks.
func supportedHeader(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && agentproto.Supported(n)
}
