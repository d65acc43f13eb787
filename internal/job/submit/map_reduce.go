package submit

// The map_reduce job type: split makes the map tasks, reduce the reductions.

import (
	"slices"
	"strings"

	"github.com/skiffhq/skiff/internal/job/expand"
)

var reduceOps = []string{"sum", "mean", "max", "min", "concat", "count", "collect"}

func (v *validator) split() *expand.Split {
	in, p := v.in, v.p
	sp := in.Split
	if sp == nil {
		p.add("split", "required for map_reduce: {field, start, total, chunks}")
		return nil
	}
	out := &expand.Split{Field: v.name("split.field", sp.Field, true)}
	if sp.Start != nil {
		if *sp.Start < -expand.MaxSafeInt || *sp.Start > expand.MaxSafeInt {
			p.add("split.start", "must be within ±(2^53-1)")
		}
		out.Start = *sp.Start
	}
	switch {
	case sp.Chunks == nil:
		p.add("split.chunks", "required: the number of map tasks")
	case *sp.Chunks < 1 || *sp.Chunks > int64(v.lim.MaxTasks):
		p.add("split.chunks", "must be 1 to %d", v.lim.MaxTasks)
	default:
		out.Chunks = int(*sp.Chunks)
	}
	switch {
	case sp.Total == nil:
		p.add("split.total", "required: the size of the range [start, start+total)")
	case *sp.Total < 1 || *sp.Total > expand.MaxSafeInt:
		p.add("split.total", "must be 1 to 2^53-1")
	case sp.Chunks != nil && *sp.Total < *sp.Chunks:
		p.add("split.total", "must be at least chunks, so that no task gets an empty range")
	case out.Start+*sp.Total > expand.MaxSafeInt:
		p.add("split.total", "start+total must be at most 2^53-1")
	default:
		out.Total = *sp.Total
	}
	return out
}

func (v *validator) reduce() {
	in, out, p := v.in, v.out, v.p
	switch {
	case len(in.Reduce) == 0:
		p.add("reduce", `required for map_reduce: an object of result field to operator, e.g. {"hits": "sum"}`)
		return
	case len(in.Reduce) > MaxReduceFields:
		p.add("reduce", "at most %d fields", MaxReduceFields)
		return
	}
	for field, op := range in.Reduce {
		where := "reduce." + field
		if msg := badName(field, true); msg != "" {
			p.add("reduce", "field names: %s", msg)
			continue
		}
		r := Reducer{Field: field, Op: op}
		if w, ok := strings.CutPrefix(op, "weighted_avg:"); ok {
			if msg := badName(w, true); msg != "" {
				p.add(where, "weighted_avg:<weight_field> needs a weight field name")
				continue
			}
			r.Op, r.WeightField = "weighted_avg", w
		} else if !slices.Contains(reduceOps, op) {
			p.add(where, "must be sum, mean, max, min, weighted_avg:<weight_field>, concat, count or collect")
			continue
		}
		out.Reduce = append(out.Reduce, r)
	}
	slices.SortFunc(out.Reduce, func(a, b Reducer) int { return strings.Compare(a.Field, b.Field) })
}
