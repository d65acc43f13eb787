package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// object reads one JSON object field by field. encoding/json's strict mode
// stops at the first unknown field and says nothing about where it is; this
// reader reports every unknown or mistyped field with its full path, which
// is what a user fixing a manifest needs.
type object struct {
	c      *collector
	path   string
	fields map[string]json.RawMessage
	done   map[string]bool // fields read or already reported
}

// object returns raw as an object, or nil when it is absent or null. A
// value of another type is reported.
func (c *collector) object(path string, raw json.RawMessage) *object {
	if isNull(raw) {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		c.add(path, "must be an object, got %s", jsonType(raw))
		return nil
	}
	return &object{c: c, path: path, fields: fields, done: make(map[string]bool)}
}

// at is the path of one of the object's fields.
func (o *object) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// has reports whether key is present with a non-null value.
func (o *object) has(key string) bool {
	return !isNull(o.fields[key])
}

// require reports key as missing unless it is present.
func (o *object) require(key, hint string) bool {
	if o.has(key) {
		return true
	}
	o.done[key] = true
	o.c.add(o.at(key), "is required%s", hint)
	return false
}

func (o *object) take(key string) (json.RawMessage, bool) {
	o.done[key] = true
	raw := o.fields[key]
	return raw, !isNull(raw)
}

// str returns a string field; ok is false when it is absent or mistyped.
func (o *object) str(key string) (string, bool) {
	raw, ok := o.take(key)
	if !ok {
		return "", false
	}
	return o.c.str(o.at(key), raw)
}

func (c *collector) str(path string, raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		c.add(path, "must be a string, got %s", jsonType(raw))
		return "", false
	}
	return s, true
}

// integer returns an integer field. A fraction or exponent is refused
// rather than rounded.
func (o *object) integer(key string) (int, bool) {
	raw, ok := o.take(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
	if err != nil {
		o.c.add(o.at(key), "must be an integer, got %s", jsonText(raw))
		return 0, false
	}
	return n, true
}

// list returns an array field's elements.
func (o *object) list(key string) ([]json.RawMessage, bool) {
	raw, ok := o.take(key)
	if !ok {
		return nil, false
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		o.c.add(o.at(key), "must be an array, got %s", jsonType(raw))
		return nil, false
	}
	return items, true
}

// strings returns an array-of-strings field. ok is false when the field is
// absent, not an array, or holds a non-string (each one is reported).
func (o *object) strings(key string) ([]string, bool) {
	items, ok := o.list(key)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for i, raw := range items {
		s, good := o.c.str(fmt.Sprintf("%s[%d]", o.at(key), i), raw)
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// stringMap returns an object-of-strings field and its keys, sorted so that
// problems come out in a stable order.
func (o *object) stringMap(key string) (map[string]string, []string, bool) {
	raw, ok := o.take(key)
	if !ok {
		return nil, nil, false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		o.c.add(o.at(key), "must be an object of strings, got %s", jsonType(raw))
		return nil, nil, false
	}
	out := make(map[string]string, len(fields))
	keys := slices.Sorted(maps.Keys(fields))
	for _, k := range keys {
		s, good := o.c.str(o.at(key)+"."+k, fields[k])
		ok = ok && good
		out[k] = s
	}
	return out, keys, ok
}

// forbid reports key, when present at all, with a message saying why it is
// not allowed; field names what is reported, which may be a path below key.
func (o *object) forbid(key, field, message string) {
	if _, present := o.fields[key]; !present {
		return
	}
	o.done[key] = true
	o.c.add(field, "%s", message)
}

// rejectUnknown reports every field that is neither read nor in known. A
// misspelt field is an error rather than ignored, because an ignored typo
// silently changes what runs.
func (o *object) rejectUnknown(known ...string) {
	for _, key := range slices.Sorted(maps.Keys(o.fields)) {
		if o.done[key] || slices.Contains(known, key) {
			continue
		}
		msg := fmt.Sprintf("unknown field %q", key)
		if s := suggest(key, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		where := "the manifest"
		if o.path != "" {
			where = o.path
		}
		o.c.add(o.at(key), "%s; the fields of %s are: %s", msg, where, strings.Join(known, ", "))
	}
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// jsonType names a value's JSON type for messages.
func jsonType(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// jsonText quotes a short value for messages, or names its type if long.
func jsonText(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) > 40 {
		return jsonType(raw)
	}
	return string(t)
}

// suggest returns the known name closest to a misspelt one, if it is close
// enough to be a typo.
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(name, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
