package manifest

import (
	"fmt"
	"strings"
)

// Problem is one rule the manifest breaks. Field is the JSON path of the
// offending value ("runtime.workdir", "data_sources[1].mount_path",
// "entrypoint.env.SKIFF_X"); it is empty for problems of the whole file.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// Problems is the error Parse and CheckAgainst return: every problem found,
// in the order of the file. The HTTP layer answers it with 422 and Details
// as the envelope's details.
type Problems []Problem

func (ps Problems) Error() string {
	return "invalid " + FileName + ": " + strings.Join(ps.Details(), "; ")
}

// Details renders each problem as one line.
func (ps Problems) Details() []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// RecommendedAction tells the client what to do next.
func (ps Problems) RecommendedAction() string {
	return "Fix " + FileName + " as listed in details and push again; the fields are described at /docs/projects/project-manifest."
}

// MissingFile is the error for a tarball without a manifest. Finding the
// file is the caller's job; the wording is kept here with the other
// manifest errors so every client sees one voice.
func MissingFile() error {
	return Problems{{Message: fmt.Sprintf("the tarball has no %s at its root; add one, the smallest valid manifest is %s", FileName, Minimal)}}
}

// collector gathers problems while a manifest is checked.
type collector struct {
	problems Problems
}

func (c *collector) add(field, format string, args ...any) {
	c.problems = append(c.problems, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// err returns the problems as an error, or a true nil when there are none
// (a nil Problems inside an error interface would not compare equal to nil).
func (c *collector) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	return c.problems
}
