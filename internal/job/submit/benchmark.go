package submit

// The benchmark job type: candidates run with replicas, ranked.

import (
	"encoding/json"

	"github.com/skiffhq/skiff/internal/job/expand"
)

func (v *validator) benchmark() *expand.Benchmark {
	in, p := v.in, v.p
	out := &expand.Benchmark{Replicas: 1}
	if obj, ok := v.object("shared_payload", in.SharedPayload); ok {
		out.Shared = obj
	}
	if in.Replicas != nil {
		if r := *in.Replicas; r < 1 || r > MaxReplicas {
			p.add("replicas", "must be 1 to %d", MaxReplicas)
		} else {
			out.Replicas = int(r)
		}
	}
	if !present(in.Candidates) {
		p.add("candidates", `required for benchmark: an object of at least 2 names to config objects`)
		return out
	}
	var cands map[string]json.RawMessage
	if firstByte(in.Candidates) != '{' || json.Unmarshal(in.Candidates, &cands) != nil {
		p.add("candidates", "must be an object of name to config object")
		return out
	}
	switch {
	case len(cands) < MinCandidates:
		p.add("candidates", "give at least %d candidates to compare", MinCandidates)
		return out
	case len(cands) > MaxCandidates:
		p.add("candidates", "at most %d candidates", MaxCandidates)
		return out
	}
	for name, cfg := range cands {
		if name == "" || len(name) > MaxFieldNameBytes || hasControl(name) {
			p.add("candidates", "names must be 1-%d bytes without control characters", MaxFieldNameBytes)
			continue
		}
		if !isNull(cfg) && firstByte(cfg) != '{' {
			p.add("candidates."+name, "must be a config object (or null for none)")
			continue
		}
		out.Candidates = append(out.Candidates, expand.Candidate{Name: name, Config: cfg})
	}
	return out
}
