package submit

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
)

// RequirementFields are the fields of a requirements object, in the order
// the API documents them.
var RequirementFields = []string{"cpu", "memory_mb", "gpu_count", "gpu_memory_mb", "profile", "storage_gb", "min_single_core_score"}

// EditRequirements applies a requirements patch (PATCH
// /api/v1/jobs/:id/requirements) to a job's resolved requirements cur: a
// field with a value replaces the current one, a field set to null removes
// it, so that it falls back to base (the job's preset over the operator's
// defaults; the built-in default where base has none too). The new values
// are checked like a submission's and resolved the same way, GPU intent
// included (see MergeRequirements): {"gpu_count": 2} on a cpu job makes it
// a gpu job, {"profile": "cpu"} drops its GPUs.
//
// Problems are reported like Validate's, under "requirements.<field>"; a
// field that is not a requirement, or a value of the wrong JSON type, is a
// problem too. An empty patch is refused: it is almost always a body sent
// in another shape.
func EditRequirements(cur Requirements, base apiv1.JobRequirements, patch map[string]json.RawMessage) (Requirements, error) {
	p := problems{}
	if len(patch) == 0 {
		return cur, fault.Invalid("empty_patch", `Send the requirement fields to change, e.g. {"cpu": 4, "memory_mb": null}.`,
			"the patch names no requirement field (known: %s)", strings.Join(RequirementFields, ", "))
	}
	var over apiv1.JobRequirements
	removed := map[string]bool{}
	for name, raw := range patch {
		field := "requirements." + name
		if !slices.Contains(RequirementFields, name) {
			p.add(field, "is not a requirement field (known: %s)", strings.Join(RequirementFields, ", "))
			continue
		}
		if isNull(raw) {
			removed[name] = true
			continue
		}
		var dst any
		switch name {
		case "cpu":
			dst = &over.CPU
		case "memory_mb":
			dst = &over.MemoryMB
		case "gpu_count":
			dst = &over.GPUCount
		case "gpu_memory_mb":
			dst = &over.GPUMemoryMB
		case "profile":
			dst = &over.Profile
		case "storage_gb":
			dst = &over.StorageGB
		case "min_single_core_score":
			dst = &over.MinSingleCoreScore
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				p.add(field, "must be %s or null, not %s", describeValue(name), te.Value)
			} else {
				p.add(field, "must be %s or null", describeValue(name))
			}
		}
	}
	if err := p.err(); err != nil {
		return cur, err
	}
	checkRequirements(p, "requirements", over)

	start := cur.API()
	for name := range removed {
		switch name {
		case "cpu":
			start.CPU = base.CPU
		case "memory_mb":
			start.MemoryMB = base.MemoryMB
		case "gpu_count":
			start.GPUCount = base.GPUCount
		case "gpu_memory_mb":
			start.GPUMemoryMB = base.GPUMemoryMB
		case "profile":
			start.Profile = base.Profile
		case "storage_gb":
			start.StorageGB = base.StorageGB
		case "min_single_core_score":
			start.MinSingleCoreScore = base.MinSingleCoreScore
		}
	}
	out := resolve(p, MergeRequirements(start, over))
	if err := p.err(); err != nil {
		return cur, err
	}
	return out, nil
}

func describeValue(field string) string {
	switch field {
	case "cpu", "min_single_core_score":
		return "a number"
	case "profile":
		return "a string (cpu or gpu)"
	}
	return "an integer"
}

// BaseRequirements are the requirements a job falls back to where it sets
// none itself: its preset's over the operator's defaults. A preset that no
// longer exists is skipped.
func BaseRequirements(lim Limits, preset string) apiv1.JobRequirements {
	base := lim.Defaults
	if pr, ok := lim.Presets[preset]; ok && preset != "" {
		base = MergeRequirements(base, pr)
	}
	return base
}
