package httpapi

import (
	"net/http"
	"strconv"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
)

func accountView(p *store.Principal) apiv1.Account {
	return apiv1.Account{ID: p.Account.ID, Name: p.Account.Name, Role: string(p.Key.Role), CreatedAt: p.Account.CreatedAt}
}

// projectFor resolves {name} to a project of the caller's account.
func (s *Server) projectFor(r *http.Request) (*store.Project, error) {
	return s.projects.Get(r.Context(), principal(r.Context()).Account.ID, r.PathValue("name"))
}

func (s *Server) projectCreate(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.ProjectWrite
	raw, err := decodeJSON(w, r, &body, false)
	if err != nil {
		return err
	}
	p, err := s.projects.Create(r.Context(), principal(r.Context()).Account.ID, &body, raw)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, project.View(p))
	return nil
}

func (s *Server) projectList(w http.ResponseWriter, r *http.Request) error {
	ps, err := s.projects.List(r.Context(), principal(r.Context()).Account.ID)
	if err != nil {
		return err
	}
	out := apiv1.ProjectList{Count: len(ps), Projects: make([]*apiv1.Project, 0, len(ps))}
	for _, p := range ps {
		out.Projects = append(out.Projects, project.View(p))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) projectGet(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	v := project.View(p)
	if v.InitStatus, err = s.projects.Readiness(r.Context(), p); err != nil {
		return err
	}
	v.InitStatus.Project = "" // the readiness object names the project only on the status endpoints
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) projectUpdate(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.ProjectWrite
	raw, err := decodeJSON(w, r, &body, false)
	if err != nil {
		return err
	}
	p, err := s.projects.Update(r.Context(), principal(r.Context()).Account.ID, r.PathValue("name"), &body, raw)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, project.View(p))
	return nil
}

func (s *Server) projectDelete(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := s.projects.Delete(r.Context(), principal(r.Context()).Account.ID, name); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.ProjectDeleted{Status: "deleted", Project: name})
	return nil
}

func (s *Server) projectStatus(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	rd, err := s.projects.Readiness(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rd)
	return nil
}

func (s *Server) projectStatusDetails(w http.ResponseWriter, r *http.Request) error {
	p, err := s.projectFor(r)
	if err != nil {
		return err
	}
	rd, err := s.projects.Readiness(r.Context(), p)
	if err != nil {
		return err
	}
	if rd.Diagnostics, err = s.projects.Diagnostics(r.Context(), p); err != nil {
		return err
	}
	if rd.Diagnostics == nil {
		rd.Diagnostics = []apiv1.Diagnostic{}
	}
	writeJSON(w, http.StatusOK, struct {
		*apiv1.Readiness
		Diagnostics []apiv1.Diagnostic `json:"diagnostics"`
	}{rd, rd.Diagnostics})
	return nil
}

// queryInt parses an optional integer query parameter within [min, max].
func queryInt(r *http.Request, name string, def, min, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, fault.Invalid("invalid_"+name, "Use an integer "+name+" between "+strconv.Itoa(min)+" and "+strconv.Itoa(max)+".",
			"%s must be an integer between %d and %d", name, min, max).With("field", name)
	}
	return n, nil
}
