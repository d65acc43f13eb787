package submit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/internal/fault"
)

// genericAction is the recommended action when several fields are wrong.
const genericAction = "Fix the fields named in details.fields and resend the submission."

// problem is one broken rule, tied to the submission field it is about.
type problem struct {
	msg    string
	code   string // machine code shown when this is the only problem
	action string // recommended action shown when this is the only problem
}

// problems collects every validation failure of a submission, so the caller
// learns about all of them at once.
type problems map[string]problem

// add records msg for field; the first problem found for a field is kept, as
// later checks of the same field usually follow from it.
func (p problems) add(field, format string, args ...any) {
	p.addCoded(field, "", "", format, args...)
}

func (p problems) addCoded(field, code, action, format string, args ...any) {
	if _, ok := p[field]; ok {
		return
	}
	p[field] = problem{msg: fmt.Sprintf(format, args...), code: code, action: action}
}

// has reports whether any problem was recorded for field or inside it.
func (p problems) has(field string) bool {
	for f := range p {
		if f == field || strings.HasPrefix(f, field+".") || strings.HasPrefix(f, field+"[") {
			return true
		}
	}
	return false
}

// err renders the problems as one fault of kind invalid (HTTP 422) with
// details {fields: {field: message}}.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	names := make([]string, 0, len(p))
	fields := make(map[string]any, len(p))
	for f, pr := range p {
		names = append(names, f)
		fields[f] = pr.msg
	}
	slices.Sort(names)
	e := &fault.Error{Kind: fault.KindInvalid, Code: "invalid_job", Action: genericAction,
		Details: map[string]any{"fields": fields}}
	if len(p) == 1 {
		pr := p[names[0]]
		e.Message = "invalid job: " + names[0] + ": " + pr.msg
		if pr.code != "" {
			e.Code = pr.code
		}
		if pr.action != "" {
			e.Action = pr.action
		}
		return e
	}
	e.Message = fmt.Sprintf("invalid job: %d fields are invalid: %s (see details.fields)", len(p), strings.Join(names, ", "))
	return e
}
