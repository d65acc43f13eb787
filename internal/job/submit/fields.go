package submit

// Checks of single fields that every job type shares.

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skiffhq/skiff/apiv1"
)

// onlyFor refuses a field given to a job type it does not belong to.
func (v *validator) onlyFor(field string, given bool, types ...apiv1.JobType) {
	if given && v.typ != "" && !slices.Contains(types, v.typ) {
		v.wrongType(field, types...)
	}
}

func (v *validator) wrongType(field string, types ...apiv1.JobType) {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	v.p.add(field, "applies only to type %s; this job is %s", strings.Join(names, " and "), v.typ)
}

// object checks that raw is absent, null, or a JSON object, and returns it
// compacted (nil when absent or null).
func (v *validator) object(field string, raw json.RawMessage) (json.RawMessage, bool) {
	if raw == nil || isNull(raw) {
		return nil, true
	}
	if firstByte(raw) != '{' {
		v.p.add(field, "must be a JSON object")
		return nil, false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		v.p.add(field, "must be a JSON object")
		return nil, false
	}
	return b.Bytes(), true
}

// name checks a field-name field (a payload or result key) and returns it.
func (v *validator) name(field string, val *string, required bool) string {
	if val == nil {
		if required {
			v.p.add(field, "required: a field name")
		}
		return ""
	}
	reserved := field == "fan_out.by" || field == "fan_out.range_field" || field == "split.field"
	if msg := badName(*val, !reserved); msg != "" {
		v.p.add(field, "%s", msg)
		return ""
	}
	return *val
}

// badName says what is wrong with a payload or result field name, or "".
func badName(s string, underscoreOK bool) string {
	switch {
	case s == "" || len(s) > MaxFieldNameBytes:
		return "must be a field name of 1-256 bytes"
	case hasControl(s):
		return "may not contain control characters"
	case !underscoreOK && strings.HasPrefix(s, "_"):
		return "may not start with _ (those payload fields are set by the service)"
	}
	return ""
}

// validPath reports whether s is a dotted path of non-empty segments.
func validPath(s string) bool {
	if s == "" || len(s) > MaxFieldNameBytes || hasControl(s) {
		return false
	}
	for seg := range strings.SplitSeq(s, ".") {
		if seg == "" {
			return false
		}
	}
	return true
}

// enum returns *val if it is one of allowed, def when val is nil, and
// records a problem otherwise.
func enum(p problems, field string, val *string, def string, allowed ...string) string {
	if val == nil {
		return def
	}
	if !slices.Contains(allowed, *val) {
		p.add(field, "must be %s", orList(allowed))
		return def
	}
	return *val
}

func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func index(field string, i int) string {
	return field + "[" + strconv.Itoa(i) + "]"
}

func countText(n int) string {
	if n >= 1<<31-1 {
		return "more than 2 billion"
	}
	return strconv.Itoa(n)
}

func present(raw json.RawMessage) bool { return raw != nil && !isNull(raw) }

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func firstByte(raw json.RawMessage) byte {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return 0
	}
	return t[0]
}

func hasControl(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
