package submit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
)

// Decode reads one submission body. Unlike a plain json.Unmarshal, which
// stops at the first field of the wrong type, it decodes each field on its
// own and answers every wrong type at once, named by field ("timeout_s must
// be an integer", "requirements.cpu must be a number"), in the same 422 shape
// as Validate. Unknown fields are ignored.
func Decode(body []byte) (*apiv1.JobSubmit, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		if !json.Valid(body) {
			return nil, fault.New(fault.KindBadRequest, "malformed_json", "Send a valid JSON object.",
				"request body is not valid JSON")
		}
		return nil, notAnObject()
	}
	if raw == nil {
		return nil, notAnObject()
	}
	return DecodeFields(raw)
}

func notAnObject() error {
	return fault.Invalid("not_an_object", "Send the submission as a JSON object.", "a job submission must be a JSON object")
}

// DecodeFields is Decode over an object already split into its fields, as
// the HTTP layer's body decoder and DecodeBatch return it.
func DecodeFields(raw map[string]json.RawMessage) (*apiv1.JobSubmit, error) {
	s := &apiv1.JobSubmit{}
	p := problems{}
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name := jsonName(sf)
		r, ok := raw[name]
		if !ok {
			continue
		}
		if !utf8.Valid(r) {
			p.add(name, "must be valid UTF-8")
			continue
		}
		if isPayloadField(name) && len(r) > MaxPayloadBytes {
			p.addCoded(name, "payload_too_large", "Put large inputs in an artifact (POST /api/v1/artifacts) and name it in payload._artifacts.download.",
				"is %d bytes; at most %d MiB", len(r), MaxPayloadBytes>>20)
			continue
		}
		if err := json.Unmarshal(r, v.Field(i).Addr().Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				p.add(name, "could not be read: %v", err)
				continue
			}
			field, want := name, describe(sf.Type)
			if te.Field != "" {
				field = name + "." + te.Field
				want = describe(te.Type)
				if ft, ok := fieldType(sf.Type, strings.Split(te.Field, ".")); ok {
					want = describe(ft)
				}
			}
			p.add(field, "must be %s, not %s", want, te.Value)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// DecodeBatch reads the body of POST /api/v1/jobs/batch and returns its
// submissions, still raw, so that each is decoded and answered on its own
// index. The batch itself must hold 1 to MaxBatchJobs entries.
func DecodeBatch(body []byte) ([]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		if !json.Valid(body) {
			return nil, fault.New(fault.KindBadRequest, "malformed_json", "Send a valid JSON object.",
				"request body is not valid JSON")
		}
		return nil, fault.Invalid("not_an_object", `Send {"jobs": [submission, ...]}.`, "a batch must be a JSON object")
	}
	return BatchJobs(raw)
}

// BatchJobs is DecodeBatch over an object already split into its fields.
func BatchJobs(raw map[string]json.RawMessage) ([]json.RawMessage, error) {
	p := problems{}
	var jobs []json.RawMessage
	r, ok := raw["jobs"]
	switch {
	case !ok || string(r) == "null":
		p.add("jobs", "required: an array of 1 to %d submissions", MaxBatchJobs)
	case json.Unmarshal(r, &jobs) != nil:
		p.add("jobs", "must be an array of submissions")
	case len(jobs) == 0:
		p.add("jobs", "give at least one submission")
	case len(jobs) > MaxBatchJobs:
		p.addCoded("jobs", "batch_too_large", "Split the jobs into batches of at most 200.",
			"holds %d submissions; at most %d per batch", len(jobs), MaxBatchJobs)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return jobs, nil
}

// DecodeBatchEntry decodes one element of a batch; an element that is not an
// object is an error for that index only.
func DecodeBatchEntry(raw json.RawMessage) (*apiv1.JobSubmit, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, notAnObject()
	}
	return DecodeFields(m)
}

func jsonName(sf reflect.StructField) string {
	tag := sf.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return sf.Name
	}
	return name
}

// fieldType follows a dotted JSON path through struct types and returns the
// declared type at its end.
func fieldType(t reflect.Type, path []string) (reflect.Type, bool) {
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil, false
		}
		found := false
		for i := range t.NumField() {
			if jsonName(t.Field(i)) == seg {
				t, found = t.Field(i).Type, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return t, true
}

// describe names a Go type the way the API documents it.
func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "an object of strings"
		}
		return "an object"
	case reflect.Struct:
		return "an object"
	}
	return "JSON of another type"
}

// isPayloadField names the submission's payload objects, each at most
// MaxPayloadBytes as sent.
func isPayloadField(name string) bool {
	return name == "payload" || name == "fixed_payload" || name == "shared_payload"
}
