// Package expand turns a validated job submission into the payloads of its
// tasks. It is pure: no storage, no clock, no randomness; the same Spec always
// gives the same tasks in the same order, each with a stable Index from 0.
//
// Choices the spec leaves open in section 4.5 (to be copied into the user
// docs):
//
//   - Payloads are JSON objects. A task payload is built in layers, a later
//     layer winning on a top-level key: the base payload (payload,
//     fixed_payload or shared_payload), then the task's own values (a fan-out
//     item, the sweep parameters, the candidate config), then the fields the
//     service sets (_batch, _sweep_idx, _sweep_params, _candidate, _replica,
//     and the range field). The merge is shallow: a nested object is replaced
//     whole, never merged key by key. Keys are written sorted and values are
//     compacted, so equal inputs give byte-equal payloads.
//   - fan_out {by: F}: payload[F] must be a non-empty list. Each task gets a
//     payload whose F is a sub-list of the items, in order: one item per task,
//     or batch_size items per task (the last batch may be shorter). F is
//     always a list, so a runner handles both forms the same way. When
//     batch_size is given, payload._batch = {index, size, start, count}:
//     the batch (task) index, the batch size asked for, the position of the
//     batch's first item in the original list, and the items it holds.
//   - fan_out {items: [...]}: each item must be an object; its task payload is
//     the base payload with the item's keys laid over it (the item wins).
//   - fan_out {chunks: N, total: T, range_field: R} splits [0, T) into N
//     contiguous ranges whose sizes differ by at most one (the first T mod N
//     ranges are one longer). payload[R] = {start, end, chunk_index,
//     chunk_count}, end exclusive. R defaults to "seed_range". map_reduce's
//     split {field, start, total, chunks} does the same over
//     [start, start+total) into payload[field]. Both record chunk_index,
//     chunk_count and seed_range in the task's Meta.
//   - sweep: parameters are taken in name order and the cartesian product
//     is walked like nested loops, the first name varying slowest and values
//     in the order given. Each payload is fixed_payload, then each parameter
//     at the top level under its name, then _sweep_idx (from 0) and
//     _sweep_params (the combination as an object).
//   - benchmark: candidates in name order, replicas inner, so the tasks of one
//     candidate are adjacent. Each payload is shared_payload, then the
//     candidate's config object, then _candidate (the name) and _replica
//     (from 0).
//
// Expansion does work proportional to the size of its output: each item,
// value and base field is visited once per task that carries it, so 10,000
// tasks cost milliseconds.
package expand

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
)

// DefaultRangeField is the payload field of a chunk fan-out's range when
// range_field is not given.
const DefaultRangeField = "seed_range"

// Names of the payload fields the service sets.
const (
	FieldBatch       = "_batch"
	FieldSweepIdx    = "_sweep_idx"
	FieldSweepParams = "_sweep_params"
	FieldCandidate   = "_candidate"
	FieldReplica     = "_replica"
)

// Spec is what a job expands from. Only the part matching Type is read:
// Payload and FanOut for structured_runner, Payload and Split for
// map_reduce, Sweep for sweep, Benchmark for benchmark.
type Spec struct {
	Type      apiv1.JobType
	Payload   json.RawMessage // a JSON object; nil means {}
	FanOut    *FanOut         // nil: one task
	Split     *Split
	Sweep     *Sweep
	Benchmark *Benchmark
}

// FanOut is one of three shapes: By, Items or Chunks.
type FanOut struct {
	By        string // payload list field
	BatchSize int    // items per task for By; 0 means one and no _batch field

	Items []json.RawMessage // explicit task payloads (objects)

	Chunks     int   // number of ranges
	Total      int64 // size of [0, Total)
	RangeField string
}

// Split is map_reduce's range: [Start, Start+Total) into Chunks tasks, each
// range in payload[Field].
type Split struct {
	Field  string
	Start  int64
	Total  int64
	Chunks int
}

// Sweep is a parameter grid.
type Sweep struct {
	Fixed      json.RawMessage // object merged into every task; nil means {}
	Parameters []Parameter
}

// Parameter is one axis of a sweep.
type Parameter struct {
	Name   string
	Values []json.RawMessage
}

// Benchmark runs each candidate Replicas times.
type Benchmark struct {
	Shared     json.RawMessage // object merged into every task; nil means {}
	Candidates []Candidate
	Replicas   int
}

// Candidate is one named configuration of a benchmark.
type Candidate struct {
	Name   string
	Config json.RawMessage // object; nil means {}
}

// Task is one expanded task.
type Task struct {
	Index   int
	Payload json.RawMessage // compact JSON object
	Meta    Meta
}

// Meta is what a task shows about its place in the job (spec 2.6: chunk
// fan-out keeps chunk_index, chunk_count and seed_range visible per task).
type Meta struct {
	ChunkIndex  *int            `json:"chunk_index,omitempty"`
	ChunkCount  *int            `json:"chunk_count,omitempty"`
	SeedRange   *Range          `json:"seed_range,omitempty"`
	SweepIndex  *int            `json:"sweep_idx,omitempty"`
	SweepParams json.RawMessage `json:"sweep_params,omitempty"`
	Candidate   string          `json:"candidate,omitempty"`
	Replica     *int            `json:"replica,omitempty"`
	Batch       *Batch          `json:"batch,omitempty"`
}

// Range is a half-open numeric range [Start, End).
type Range struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Batch places a batched fan-out task in the original list.
type Batch struct {
	Index int `json:"index"` // the task's index
	Size  int `json:"size"`  // batch_size as asked
	Start int `json:"start"` // position of the first item in the list
	Count int `json:"count"` // items in this batch
}

// FieldError is a Spec that cannot be expanded, named by the submission
// field at fault (e.g. "fan_out.by", "payload.files", "candidates.a").
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// MaxSafeInt bounds range arithmetic: every start and end stays an integer
// that a float64 (and so any JSON client) holds exactly.
const MaxSafeInt = 1<<53 - 1

// Count returns how many tasks s expands into, checking everything Tasks
// needs. It saturates at math.MaxInt32 rather than overflow, so a caller can
// compare it with a limit before expanding.
func Count(s *Spec) (int, error) {
	m, err := Measure(s)
	return m.Tasks, err
}

// Size is what a Spec expands into, known before it is expanded.
type Size struct {
	Tasks int
	// PayloadBytes bounds the bytes of every task payload together, from
	// above (within a few bytes a task): a 1 MiB payload fanned out into
	// 10,000 chunks is 10 GB once expanded, which a caller must refuse
	// before Tasks allocates it.
	PayloadBytes int64
}

// Measure returns the Size of s, checking everything Tasks needs, without
// expanding it. Both figures saturate rather than overflow.
func Measure(s *Spec) (Size, error) {
	p, err := plan(s)
	if err != nil {
		return Size{}, err
	}
	return Size{Tasks: p.count, PayloadBytes: p.bytes}, nil
}

// Tasks expands s into its tasks, in Index order.
func Tasks(s *Spec) ([]Task, error) {
	p, err := plan(s)
	if err != nil {
		return nil, err
	}
	if p.count > math.MaxInt32-1 {
		return nil, fieldErr("type", "expands into too many tasks")
	}
	tasks := make([]Task, p.count)
	p.emit(tasks)
	return tasks, nil
}

// planned is a checked Spec with its inputs parsed once.
type planned struct {
	count int
	bytes int64 // an upper bound of the payloads' bytes, together
	emit  func([]Task)
}

// fieldOverhead bounds what the service's own fields (_batch, _sweep_idx,
// _candidate, _replica, a range) and the separators around a field add to
// a task's payload, beyond the values the caller sent.
const fieldOverhead = 160

// perTask is n tasks of each bytes plus shared bytes in all, saturating.
func perTask(n int, each, shared int64) int64 {
	const ceiling = math.MaxInt64 / 2
	if each > 0 && int64(n) > ceiling/each {
		return ceiling
	}
	return min(int64(n)*each+shared, ceiling)
}

func plan(s *Spec) (*planned, error) {
	if s == nil {
		return nil, fieldErr("type", "nothing to expand")
	}
	switch s.Type {
	case apiv1.JobTypeStructuredRunner, "":
		return planStructured(s)
	case apiv1.JobTypeMapReduce:
		if s.Split == nil {
			return nil, fieldErr("split", "map_reduce needs split")
		}
		base, err := parseObject("payload", s.Payload)
		if err != nil {
			return nil, err
		}
		return planRange(base, "split", s.Split.Field, s.Split.Start, s.Split.Total, s.Split.Chunks)
	case apiv1.JobTypeSweep:
		return planSweep(s.Sweep)
	case apiv1.JobTypeBenchmark:
		return planBenchmark(s.Benchmark)
	}
	return nil, fieldErr("type", "unknown job type %q", s.Type)
}

func planStructured(s *Spec) (*planned, error) {
	base, err := parseObject("payload", s.Payload)
	if err != nil {
		return nil, err
	}
	f := s.FanOut
	if f == nil {
		payload := appendObject(nil, base)
		return &planned{count: 1, bytes: int64(len(payload)), emit: func(t []Task) { t[0] = Task{Index: 0, Payload: payload} }}, nil
	}
	shapes := 0
	if f.By != "" {
		shapes++
	}
	if f.Items != nil {
		shapes++
	}
	if f.Chunks != 0 || f.Total != 0 || f.RangeField != "" {
		shapes++
	}
	switch {
	case shapes == 0:
		return nil, fieldErr("fan_out", "give one of by, items, or chunks with total")
	case shapes > 1:
		return nil, fieldErr("fan_out", "by, items and chunks are different fan-out shapes; give only one")
	case f.BatchSize != 0 && f.By == "":
		return nil, fieldErr("batch_size", "batch_size applies only to fan_out.by")
	case f.By != "":
		return planBy(base, f.By, f.BatchSize)
	case f.Items != nil:
		return planItems(base, f.Items)
	}
	rf := f.RangeField
	if rf == "" {
		rf = DefaultRangeField
	}
	return planRange(base, "fan_out", rf, 0, f.Total, f.Chunks)
}

func planBy(base object, by string, batch int) (*planned, error) {
	where := "payload." + by
	raw, ok := base.get(by)
	if !ok {
		return nil, fieldErr(where, "fan_out.by names %q, which the payload does not have; it must be a non-empty list", by)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, fieldErr(where, "fan_out.by needs a list here")
	}
	if len(items) == 0 {
		return nil, fieldErr(where, "the list is empty, so there is nothing to fan out")
	}
	if batch < 0 {
		return nil, fieldErr("batch_size", "must be at least 1")
	}
	size := max(batch, 1)
	count := (len(items) + size - 1) / size
	rest := base.without(by)
	byKey := jsonKey(by)
	var itemBytes int64
	for _, it := range items {
		itemBytes += int64(len(it)) + 1
	}
	return &planned{count: count, bytes: perTask(count, rest.size()+int64(len(byKey))+2*fieldOverhead, itemBytes), emit: func(tasks []Task) {
		var over [2]field
		var sub, bat, buf []byte
		for i := range tasks {
			lo := i * size
			hi := min(lo+size, len(items))
			sub = append(sub[:0], '[')
			for j, it := range items[lo:hi] {
				if j > 0 {
					sub = append(sub, ',')
				}
				sub = append(sub, it...)
			}
			sub = append(sub, ']')
			o := over[:0]
			o = append(o, field{key: by, kj: byKey, val: sub})
			t := Task{Index: i}
			if batch > 0 {
				b := Batch{Index: i, Size: batch, Start: lo, Count: hi - lo}
				bat = appendBatch(bat[:0], b)
				o = append(o, field{key: FieldBatch, kj: jsonKey(FieldBatch), val: bat})
				t.Meta.Batch = &b
			}
			buf = appendObject(buf[:0], rest, sortFields(o))
			t.Payload = bytes.Clone(buf)
			tasks[i] = t
		}
	}}, nil
}

func planItems(base object, items []json.RawMessage) (*planned, error) {
	if len(items) == 0 {
		return nil, fieldErr("fan_out.items", "give at least one item")
	}
	objs := make([]object, len(items))
	for i, it := range items {
		where := fmt.Sprintf("fan_out.items[%d]", i)
		if t := bytes.TrimSpace(it); len(t) == 0 || string(t) == "null" {
			return nil, fieldErr(where, "must be a JSON object")
		}
		o, err := parseObject(where, it)
		if err != nil {
			return nil, err
		}
		objs[i] = o
	}
	var itemBytes int64
	for _, o := range objs {
		itemBytes += o.size()
	}
	return &planned{count: len(items), bytes: perTask(len(items), base.size()+fieldOverhead, itemBytes), emit: func(tasks []Task) {
		var buf []byte
		for i := range tasks {
			buf = appendObject(buf[:0], base, objs[i])
			tasks[i] = Task{Index: i, Payload: bytes.Clone(buf)}
		}
	}}, nil
}

// planRange splits [start, start+total) into chunks contiguous ranges.
func planRange(base object, where, rf string, start, total int64, chunks int) (*planned, error) {
	fieldName := where + ".range_field"
	if where == "split" {
		fieldName = "split.field"
	}
	switch {
	case rf == "":
		return nil, fieldErr(fieldName, "name the payload field that receives each task's range")
	case chunks < 1:
		return nil, fieldErr(where+".chunks", "must be at least 1")
	case total < int64(chunks):
		return nil, fieldErr(where+".total", "must be at least chunks (%d), so that no range is empty", chunks)
	case start < -MaxSafeInt || start > MaxSafeInt || total > MaxSafeInt || start+total > MaxSafeInt:
		return nil, fieldErr(where+".total", "the range must stay within ±(2^53-1)")
	}
	rest := base.without(rf)
	rfKey := jsonKey(rf)
	n := int64(chunks)
	each, extra := total/n, total%n
	return &planned{count: chunks, bytes: perTask(chunks, rest.size()+int64(len(rfKey))+fieldOverhead, 0), emit: func(tasks []Task) {
		ints := make([]int, 2*len(tasks)) // one allocation for every Meta pointer
		ranges := make([]Range, len(tasks))
		var val, buf []byte
		for i := range tasks {
			k := int64(i)
			lo := start + k*each + min(k, extra)
			hi := lo + each
			if k < extra {
				hi++
			}
			ranges[i] = Range{Start: lo, End: hi}
			ints[2*i], ints[2*i+1] = i, chunks
			val = append(val[:0], `{"start":`...)
			val = strconv.AppendInt(val, lo, 10)
			val = append(val, `,"end":`...)
			val = strconv.AppendInt(val, hi, 10)
			val = append(val, `,"chunk_index":`...)
			val = strconv.AppendInt(val, k, 10)
			val = append(val, `,"chunk_count":`...)
			val = strconv.AppendInt(val, n, 10)
			val = append(val, '}')
			buf = appendObject(buf[:0], rest, object{{key: rf, kj: rfKey, val: val}})
			tasks[i] = Task{Index: i, Payload: bytes.Clone(buf), Meta: Meta{
				ChunkIndex: &ints[2*i], ChunkCount: &ints[2*i+1], SeedRange: &ranges[i],
			}}
		}
	}}, nil
}

func planSweep(s *Sweep) (*planned, error) {
	if s == nil || len(s.Parameters) == 0 {
		return nil, fieldErr("parameters", "give at least one parameter with a list of values")
	}
	fixed, err := parseObject("fixed_payload", s.Fixed)
	if err != nil {
		return nil, err
	}
	params := slices.Clone(s.Parameters)
	slices.SortFunc(params, func(a, b Parameter) int { return strings.Compare(a.Name, b.Name) })
	count := 1
	for i, p := range params {
		switch {
		case p.Name == "":
			return nil, fieldErr("parameters", "parameter names may not be empty")
		case i > 0 && params[i-1].Name == p.Name:
			return nil, fieldErr("parameters."+p.Name, "named twice")
		case len(p.Values) == 0:
			return nil, fieldErr("parameters."+p.Name, "give a non-empty list of values")
		}
		values := make([]json.RawMessage, len(p.Values))
		for j, v := range p.Values {
			var c bytes.Buffer
			if err := json.Compact(&c, v); err != nil {
				return nil, fieldErr(fmt.Sprintf("parameters.%s[%d]", p.Name, j), "is not valid JSON")
			}
			values[j] = c.Bytes()
		}
		params[i].Values = values
		count = satMul(count, len(p.Values))
	}
	keys := make([][]byte, len(params))
	var combination int64 // the longest combination, written twice a task
	for i, p := range params {
		keys[i] = jsonKey(p.Name)
		longest := 0
		for _, v := range p.Values {
			longest = max(longest, len(v))
		}
		combination += int64(len(keys[i]) + longest + 2)
	}
	return &planned{count: count, bytes: perTask(count, fixed.size()+2*combination+2*fieldOverhead, 0), emit: func(tasks []Task) {
		odo := make([]int, len(params)) // the current combination, as value indexes
		over := make(object, 0, len(params)+2)
		ints := make([]int, len(tasks))
		var buf []byte
		for i := range tasks {
			over = over[:0]
			var sp []byte
			sp = append(sp, '{')
			for j, p := range params {
				v := p.Values[odo[j]]
				if j > 0 {
					sp = append(sp, ',')
				}
				sp = append(sp, keys[j]...)
				sp = append(sp, ':')
				sp = append(sp, v...)
				over = append(over, field{key: p.Name, kj: keys[j], val: v})
			}
			sp = append(sp, '}')
			over = append(over,
				field{key: FieldSweepIdx, kj: jsonKey(FieldSweepIdx), val: strconv.AppendInt(nil, int64(i), 10)},
				field{key: FieldSweepParams, kj: jsonKey(FieldSweepParams), val: sp})
			buf = appendObject(buf[:0], fixed, sortFields(over))
			ints[i] = i
			tasks[i] = Task{Index: i, Payload: bytes.Clone(buf), Meta: Meta{SweepIndex: &ints[i], SweepParams: sp}}
			for j := len(odo) - 1; j >= 0; j-- { // the last name varies fastest
				odo[j]++
				if odo[j] < len(params[j].Values) {
					break
				}
				odo[j] = 0
			}
		}
	}}, nil
}

func planBenchmark(b *Benchmark) (*planned, error) {
	if b == nil || len(b.Candidates) == 0 {
		return nil, fieldErr("candidates", "give at least one candidate")
	}
	if b.Replicas < 1 {
		return nil, fieldErr("replicas", "must be at least 1")
	}
	shared, err := parseObject("shared_payload", b.Shared)
	if err != nil {
		return nil, err
	}
	cands := slices.Clone(b.Candidates)
	slices.SortFunc(cands, func(a, b Candidate) int { return strings.Compare(a.Name, b.Name) })
	configs := make([]object, len(cands))
	for i, c := range cands {
		switch {
		case c.Name == "":
			return nil, fieldErr("candidates", "candidate names may not be empty")
		case i > 0 && cands[i-1].Name == c.Name:
			return nil, fieldErr("candidates."+c.Name, "named twice")
		}
		if configs[i], err = parseObject("candidates."+c.Name, c.Config); err != nil {
			return nil, err
		}
	}
	count := satMul(len(cands), b.Replicas)
	var each int64 // the largest candidate's payload
	for i, c := range cands {
		each = max(each, configs[i].size()+int64(6*len(c.Name)+2)+2*fieldOverhead)
	}
	return &planned{count: count, bytes: perTask(count, shared.size()+each, 0), emit: func(tasks []Task) {
		ints := make([]int, len(tasks))
		var buf []byte
		for i := range tasks {
			c, r := i/b.Replicas, i%b.Replicas
			name, _ := json.Marshal(cands[c].Name)
			over := sortFields(object{
				{key: FieldCandidate, kj: jsonKey(FieldCandidate), val: name},
				{key: FieldReplica, kj: jsonKey(FieldReplica), val: strconv.AppendInt(nil, int64(r), 10)},
			})
			buf = appendObject(buf[:0], shared, configs[c], over)
			ints[i] = r
			tasks[i] = Task{Index: i, Payload: bytes.Clone(buf), Meta: Meta{Candidate: cands[c].Name, Replica: &ints[i]}}
		}
	}}, nil
}

func satMul(a, b int) int {
	const ceiling = math.MaxInt32
	if a == 0 || b == 0 {
		return 0
	}
	if a > ceiling/b {
		return ceiling
	}
	return a * b
}

func appendBatch(dst []byte, b Batch) []byte {
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, int64(b.Index), 10)
	dst = append(dst, `,"size":`...)
	dst = strconv.AppendInt(dst, int64(b.Size), 10)
	dst = append(dst, `,"start":`...)
	dst = strconv.AppendInt(dst, int64(b.Start), 10)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, int64(b.Count), 10)
	return append(dst, '}')
}
