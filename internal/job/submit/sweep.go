package submit

// The sweep job type: the parameter grid and its ranking.

import (
	"encoding/json"

	"github.com/skiffhq/skiff/internal/job/expand"
)

func (v *validator) sweep() *expand.Sweep {
	in, p := v.in, v.p
	out := &expand.Sweep{}
	if obj, ok := v.object("fixed_payload", in.FixedPayload); ok {
		out.Fixed = obj
	}
	if !present(in.Parameters) {
		p.add("parameters", `required for sweep: an object of name to a list of values, e.g. {"lr": [0.1, 0.01]}`)
		return out
	}
	var params map[string]json.RawMessage
	if firstByte(in.Parameters) != '{' || json.Unmarshal(in.Parameters, &params) != nil {
		p.add("parameters", "must be an object of name to a non-empty list of values")
		return out
	}
	switch {
	case len(params) == 0:
		p.add("parameters", "give at least one parameter")
		return out
	case len(params) > MaxSweepParameters:
		p.add("parameters", "at most %d parameters", MaxSweepParameters)
		return out
	}
	for name, raw := range params {
		where := "parameters." + name
		if msg := badName(name, false); msg != "" {
			p.add("parameters", "names: %s", msg)
			continue
		}
		var values []json.RawMessage
		if firstByte(raw) != '[' || json.Unmarshal(raw, &values) != nil {
			p.add(where, "must be a list of values")
			continue
		}
		if len(values) == 0 {
			p.add(where, "must be a non-empty list")
			continue
		}
		out.Parameters = append(out.Parameters, expand.Parameter{Name: name, Values: values})
	}
	return out
}
