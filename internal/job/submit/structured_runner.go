package submit

// The structured_runner job type: fan_out splits one job into tasks, batch_size groups items per task.

import (
	"encoding/json"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/job/expand"
)

func (v *validator) fanOut() *expand.FanOut {
	in, p := v.in, v.p
	batch := v.batchSize()
	f := in.FanOut
	if f == nil {
		if batch > 0 {
			p.add("batch_size", "applies only to fan_out.by")
		}
		return nil
	}
	shapes := []string{}
	if f.By != nil {
		shapes = append(shapes, "by")
	}
	if f.Items != nil {
		shapes = append(shapes, "items")
	}
	if f.Chunks != nil || f.Total != nil || f.RangeField != nil {
		shapes = append(shapes, "chunks")
	}
	mixedAction := "Send exactly one fan-out shape: {by}, {items} or {chunks, total, range_field}."
	switch {
	case len(shapes) == 0:
		p.add("fan_out", "give one shape: {by: <payload list field>}, {items: [...]} or {chunks, total, range_field}")
		return nil
	case len(shapes) > 1:
		p.addCoded("fan_out", "mixed_fan_out", mixedAction, "mixes the fan-out shapes %s; give only one", strings.Join(shapes, " and "))
		return nil
	}
	out := &expand.FanOut{}
	switch shapes[0] {
	case "by":
		out.By = v.name("fan_out.by", f.By, true)
		out.BatchSize = batch
	case "items":
		if batch > 0 {
			p.add("batch_size", "applies only to fan_out.by")
		}
		if len(f.Items) == 0 {
			p.add("fan_out.items", "give at least one item")
		}
		out.Items = make([]json.RawMessage, len(f.Items))
		for i, it := range f.Items {
			if firstByte(it) != '{' {
				p.add(index("fan_out.items", i), "must be a JSON object")
			}
			out.Items[i] = it
		}
	case "chunks":
		if batch > 0 {
			p.add("batch_size", "applies only to fan_out.by")
		}
		switch {
		case f.Chunks == nil:
			p.add("fan_out.chunks", "required with total: the number of tasks")
		case *f.Chunks < 1 || *f.Chunks > int64(v.lim.MaxTasks):
			p.add("fan_out.chunks", "must be 1 to %d", v.lim.MaxTasks)
		default:
			out.Chunks = int(*f.Chunks)
		}
		switch {
		case f.Total == nil:
			p.add("fan_out.total", "required with chunks: the size of the range [0, total)")
		case *f.Total < 1 || *f.Total > expand.MaxSafeInt:
			p.add("fan_out.total", "must be 1 to 2^53-1")
		case f.Chunks != nil && *f.Total < *f.Chunks:
			p.add("fan_out.total", "must be at least chunks, so that no task gets an empty range")
		default:
			out.Total = *f.Total
		}
		out.RangeField = expand.DefaultRangeField
		if f.RangeField != nil {
			out.RangeField = v.name("fan_out.range_field", f.RangeField, true)
		}
	}
	return out
}

// batchSize reconciles batch_size, batch_per_task and their fan_out twins;
// 0 means none given.
func (v *validator) batchSize() int {
	in, p := v.in, v.p
	type src struct {
		name string
		val  *int64
	}
	srcs := []src{{"batch_size", in.BatchSize}, {"batch_per_task", in.BatchPerTask}}
	if in.FanOut != nil {
		srcs = append(srcs, src{"fan_out.batch_size", in.FanOut.BatchSize}, src{"fan_out.batch_per_task", in.FanOut.BatchPerTask})
	}
	var got int64
	var from string
	for _, s := range srcs {
		if s.val == nil {
			continue
		}
		switch {
		case v.typ != apiv1.JobTypeStructuredRunner && v.typ != "":
			v.wrongType(s.name, apiv1.JobTypeStructuredRunner)
		case *s.val < 1 || *s.val > int64(DefaultMaxTasks):
			p.add(s.name, "must be 1 to %d", DefaultMaxTasks)
		case from != "" && *s.val != got:
			p.add(s.name, "is %d but %s is %d; they are the same setting", *s.val, from, got)
		default:
			got, from = *s.val, s.name
		}
	}
	return int(got)
}
