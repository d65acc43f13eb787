package httpapi

import (
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/project"
)

// projectPush takes the raw gzip body (not multipart), streamed.
func (s *Server) projectPush(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength > project.MaxPushBytes {
		return fault.New(fault.KindTooLarge, "push_too_large", "Push at most 100 MB of gzip.",
			"push body is %d bytes; the limit is %d", r.ContentLength, project.MaxPushBytes)
	}
	p := principal(r.Context())
	out, err := s.projects.Push(r.Context(), p.Account.ID, r.PathValue("name"), r.Body)
	if err != nil {
		return err
	}
	if out.Unchanged {
		pr, err := s.projects.Get(r.Context(), p.Account.ID, r.PathValue("name"))
		if err != nil {
			return err
		}
		rd, err := s.projects.Readiness(r.Context(), pr)
		if err != nil {
			return err
		}
		rd.Project = ""
		writeJSON(w, http.StatusOK, apiv1.PushUnchanged{
			Status: "unchanged", PushRef: out.Push.ID, ContentHash: out.Push.ContentHash, SizeBytes: out.SizeBytes,
			RuntimeKind: pr.RuntimeKind, RuntimeVersion: pr.RuntimeVersion, ManifestPresent: true,
			TarballDiff: out.TarballDiff, ReadyForJobs: rd.ReadyForJobs,
			StatusMessage: "The content equals the published revision " + out.Push.ID + "; nothing to build.",
			NextAction:    "Submit jobs: POST /api/v1/jobs with project " + pr.Name + ".", InitStatus: rd,
		})
		return nil
	}
	writeJSON(w, http.StatusAccepted, project.PushView(r.PathValue("name"), out.Push))
	return nil
}

func (s *Server) projectPushLatest(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	pu, err := s.projects.PushLatest(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, project.PushView(p.Name, pu))
	return nil
}

func (s *Server) projectPushGet(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	pu, err := s.projects.PushGet(r.Context(), p, r.PathValue("push_ref"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, project.PushView(p.Name, pu))
	return nil
}

func (s *Server) projectInit(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		MaxNodes *int `json:"max_nodes"`
	}
	if _, err := decodeJSON(w, r, &body, true); err != nil {
		return err
	}
	maxNodes := 0
	if body.MaxNodes != nil {
		if *body.MaxNodes < 1 || *body.MaxNodes > 10000 {
			return fault.Invalid("invalid_max_nodes", "Use a max_nodes between 1 and 10000, or omit it for every host.",
				"max_nodes must be a positive integer")
		}
		maxNodes = *body.MaxNodes
	}
	res, err := s.projects.Init(r.Context(), principal(r.Context()).Account.ID, r.PathValue("name"), maxNodes)
	if err != nil {
		return err
	}
	res.Readiness.Project = ""
	writeJSON(w, http.StatusOK, apiv1.InitResponse{Status: res.Status, ReadyForJobs: res.Readiness.ReadyForJobs,
		StatusMessage: res.StatusMessage, NextAction: res.NextAction, InitStatus: res.Readiness})
	return nil
}

func (s *Server) projectInvalidate(w http.ResponseWriter, r *http.Request) error {
	res, err := s.projects.Invalidate(r.Context(), principal(r.Context()).Account.ID, r.PathValue("name"))
	if err != nil {
		return err
	}
	res.Readiness.Project = ""
	writeJSON(w, http.StatusOK, apiv1.InitResponse{Status: res.Status, ReadyForJobs: res.Readiness.ReadyForJobs,
		StatusMessage: res.StatusMessage, NextAction: res.NextAction, InitStatus: res.Readiness})
	return nil
}
