package httpapi

import (
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/project"
)

func (s *Server) kvList(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", project.DefaultKVLimit, 1, project.MaxKVLimit)
	if err != nil {
		return err
	}
	prefix := r.URL.Query().Get("prefix")
	es, err := s.projects.KVList(r.Context(), p, prefix, limit)
	if err != nil {
		return err
	}
	out := apiv1.KVList{Project: p.Name, Prefix: prefix, Entries: make([]*apiv1.KVEntry, 0, len(es)), Count: len(es)}
	for _, e := range es {
		out.Entries = append(out.Entries, project.KVView(p.Name, e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) kvPut(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	var body apiv1.KVWrite
	raw, err := decodeJSON(w, r, &body, false)
	if err != nil {
		return err
	}
	if _, ok := raw["value"]; !ok {
		body.Value = nil
	}
	e, err := s.projects.KVPut(r.Context(), p, r.PathValue("key"), &body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, project.KVView(p.Name, e))
	return nil
}

func (s *Server) kvGet(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	e, err := s.projects.KVGet(r.Context(), p, r.PathValue("key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, project.KVView(p.Name, e))
	return nil
}

func (s *Server) kvDelete(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	key := r.PathValue("key")
	if err := s.projects.KVDelete(r.Context(), p, key); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.KVDeleted{Status: "deleted", Project: p.Name, Key: key})
	return nil
}
