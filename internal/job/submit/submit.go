// Package submit checks a job submission (spec 4.5) before anything is
// stored, and turns it into a normalized Submission with every default
// filled in and the Spec that package expand turns into tasks. It is pure:
// whether the project exists, whether depends_on ids are the caller's, and
// whether the balance covers the hold are the admission's questions, asked
// later against the store.
//
// Decode reads a body field by field, so that wrong JSON types are also
// reported all at once and by field; Validate then checks the rules.
// DecodeBatch and DecodeBatchEntry do the same for POST /api/v1/jobs/batch,
// whose entries are answered each on its own index.
//
// Every broken rule is reported at once, each under the field it is about,
// as one fault of kind invalid (HTTP 422) with details {fields: {field:
// message}}; nested fields are dotted and list elements indexed
// ("requirements.cpu", "depends_on[3]", "fan_out.items[2]").
//
// Choices the spec leaves open (to be copied into the user docs):
//
//   - null means absent for every field; "" means absent for client_ref,
//     preset, execution_policy and callback_url.
//   - timeout_s is at most 7 days (Limits.MaxTimeoutS). runtime_hint_s above
//     timeout_s is lowered to it, since timeout_s remains the ceiling.
//   - runner_command: 1 to 256 non-empty strings, each at most 4 KiB and
//     64 KiB in all, without NUL bytes.
//   - depends_on ids look like job_ followed by 1-64 lowercase letters or
//     digits, and may not repeat. Tags are 1-128 bytes without control
//     characters; a repeated tag is dropped, keeping the first.
//   - Requirements resolve as built-in defaults (cpu 1, memory_mb 2048,
//     storage_gb 10, profile cpu, no GPU) < Limits.Defaults < preset <
//     explicit fields; see MergeRequirements for how GPU fields follow the
//     explicit intent. A gpu_count above 0 implies profile gpu and profile
//     gpu implies one GPU. min_single_core_score absent means no minimum.
//   - reservation: mode best_effort only. guaranteed, parallelism,
//     guaranteed_for_s, max_wait_s and distribution.max_tasks_per_node (in
//     reservation or at the top level) are refused whenever present.
//   - A field that belongs to another job type is refused rather than
//     ignored (parameters on a structured_runner job is almost always a
//     missing type): fan_out, batch_size and checkpointing.enabled are
//     structured_runner's; split and reduce map_reduce's (both required);
//     parameters and fixed_payload sweep's; candidates, shared_payload and
//     replicas benchmark's; rank_by and rank_order sweep's and benchmark's.
//     sweep and benchmark take their payload in fixed_payload and
//     shared_payload, so a non-empty payload is refused for them.
//     merge_strategy other than collect is structured_runner's.
//   - merge_strategy keyed needs fan_out.by; weighted_avg needs value_field
//     and weight_field, which are refused with any other strategy.
//   - batch_size and batch_per_task may be given at the top level or inside
//     fan_out; every value given must agree. They apply to fan_out.by only.
//   - Payload fields the service sets start with an underscore, so fan_out.by,
//     fan_out.range_field, split.field and sweep parameter names may not.
//   - checkpointing.enabled is refused on other types than structured_runner
//     (enabled false is accepted anywhere); resume_from_latest needs enabled;
//     payload_key, where the resume state goes, defaults to _resume.
//   - state.publish maps a project shared-state key (1-256 bytes) to a dotted
//     path into the job's result object, at most 32 entries.
//   - Bounds: at most Limits.MaxTasks (10,000) tasks per job, 1000 sweep
//     combinations over at most 64 parameters, 2 to 100 benchmark candidates,
//     1 to 100 replicas, 1 to 64 reduce fields, meta at most 16 KiB, variant
//     at most 255 bytes, field names at most 256 bytes.
package submit

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/job/expand"
)

// Limits of the spec (section 8) and bounds it leaves open.
const (
	DefaultTimeoutS      = 3600
	DefaultMaxTimeoutS   = 7 * 24 * 3600
	MaxRetries           = 10
	MaxDependsOn         = 50
	MaxTags              = 20
	MaxTagBytes          = 128
	MaxClientRefBytes    = 255
	MaxBatchJobs         = 200
	DefaultMaxTasks      = 10_000
	MaxSweepCombinations = 1000
	MaxSweepParameters   = 64
	MinCandidates        = 2
	MaxCandidates        = 100
	MaxReplicas          = 100
	MaxReduceFields      = 64
	MaxPublish           = 32
	MaxCommandArgs       = 256
	MaxCommandArgBytes   = 4 << 10
	MaxCommandBytes      = 64 << 10
	MaxFieldNameBytes    = 256
	MaxMetaBytes         = 16 << 10
	MaxVariantBytes      = 255
	// Body caps, sized from the limits above: a POST /jobs body carries
	// one job of up to 10,000 tasks (a fan_out.items list of 10,000
	// items of about 1.6 KB), a batch up to 200 such jobs of about 160 KB
	// each. docs/limits.md states them.
	MaxSubmitBodyBytes = 16 << 20
	MaxBatchBodyBytes  = 32 << 20
	// MaxPayloadBytes bounds payload, fixed_payload and shared_payload as
	// sent; large inputs belong in artifacts (_artifacts.download).
	MaxPayloadBytes = 8 << 20
	// MaxExpandedPayloadBytes bounds a job's task payloads together once
	// expanded: what the store keeps and a host receives. A 1 MiB payload
	// fanned out into 10,000 chunks would be 10 GB.
	MaxExpandedPayloadBytes = 64 << 20
	DefaultPayloadKey       = "_resume"
)

var (
	projectRe = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	jobIDRe   = regexp.MustCompile(`^job_[a-z0-9]{1,64}$`)
)

// Limits are the operator's settings that validation depends on. The zero
// value is usable: zero fields take their defaults.
type Limits struct {
	// Presets maps each preset name to its requirements; a submission may
	// name only these. Nil means no presets exist.
	Presets map[string]apiv1.JobRequirements
	// Defaults are the operator's default requirements; a nil field keeps the
	// built-in default (DefaultCPU and so on).
	Defaults apiv1.JobRequirements
	// MaxTasks bounds the tasks one job expands into; 0 means
	// DefaultMaxTasks.
	MaxTasks int
	// MaxTimeoutS bounds timeout_s; 0 means DefaultMaxTimeoutS.
	MaxTimeoutS int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxTasks <= 0 {
		l.MaxTasks = DefaultMaxTasks
	}
	if l.MaxTimeoutS <= 0 {
		l.MaxTimeoutS = DefaultMaxTimeoutS
	}
	return l
}

// Submission is a valid submission with every default filled in.
type Submission struct {
	Type          apiv1.JobType
	Project       string
	RunnerCommand []string
	// Payload is the compact payload object ({} when absent); for sweep and
	// benchmark it is always {} and the task payloads come from Expand.
	Payload         json.RawMessage
	TimeoutS        int64
	RuntimeHintS    int64 // 0: no hint; never above TimeoutS
	MaxRetries      int
	Priority        string
	DependsOn       []string
	Tags            []string
	ClientRef       *string
	Preset          string // "" when none
	Requirements    Requirements
	ReservationMode string
	Checkpointing   Checkpointing
	ReliabilityMode string
	PlacementPolicy string
	ExecutionPolicy string
	Publish         map[string]string // shared-state key -> result path; nil when none

	MergeStrategy string
	ValueField    string
	WeightField   string
	Reduce        []Reducer // map_reduce, sorted by Field
	RankBy        string    // sweep and benchmark; "" when none
	RankOrder     string    // sweep and benchmark

	Meta    json.RawMessage // compact object, or nil
	Variant *string

	// Expand is what package expand turns into the task payloads, and
	// TaskCount how many tasks it gives.
	Expand    expand.Spec
	TaskCount int
}

// Checkpointing is the resolved checkpoint setting.
type Checkpointing struct {
	Enabled          bool   `json:"enabled"`
	ResumeFromLatest bool   `json:"resume_from_latest"`
	PayloadKey       string `json:"payload_key"` // DefaultPayloadKey unless set
}

// Reducer is one map_reduce reduction: Op over result field Field.
type Reducer struct {
	Field       string `json:"field"`
	Op          string `json:"op"`                     // sum, mean, max, min, weighted_avg, concat, count, collect
	WeightField string `json:"weight_field,omitempty"` // for weighted_avg only
}

// expansionFields are the fields a Spec is built from: while any of them
// has a problem, the Spec is not expanded.
var expansionFields = []string{"type", "payload", "fan_out", "batch_size", "batch_per_task",
	"split", "parameters", "fixed_payload", "candidates", "shared_payload", "replicas"}

// reduceOps are the operators of spec 4.5 besides weighted_avg:<field>.

// Validate checks s against every rule of spec 4.5 and lim, and returns the
// normalized submission. All problems are reported together as one fault of
// kind invalid.
func Validate(s *apiv1.JobSubmit, lim Limits) (*Submission, error) {
	if s == nil {
		return nil, fault.Invalid("invalid_job", "Send a job submission object.", "a job submission is required")
	}
	v := &validator{in: s, lim: lim.withDefaults(), p: problems{}, out: &Submission{}}
	v.run()
	if err := v.p.err(); err != nil {
		return nil, err
	}
	return v.out, nil
}

type validator struct {
	in  *apiv1.JobSubmit
	lim Limits
	p   problems
	out *Submission
	typ apiv1.JobType // "" when type itself is invalid
}

func (v *validator) run() {
	v.basics()
	v.runner()
	v.scheduling()
	v.requirements()
	v.policies()
	v.meta()
	v.spec()
}

func (v *validator) basics() {
	in, out, p := v.in, v.out, v.p
	v.typ = apiv1.JobTypeStructuredRunner
	if in.Type != nil {
		switch t := *in.Type; t {
		case apiv1.JobTypeStructuredRunner, apiv1.JobTypeSweep, apiv1.JobTypeMapReduce, apiv1.JobTypeBenchmark:
			v.typ = t
		default:
			v.typ = ""
			p.add("type", "must be structured_runner, sweep, map_reduce or benchmark (structured_runner when unsure)")
		}
	}
	out.Type = v.typ
	switch {
	case in.Project == nil || *in.Project == "":
		p.add("project", "required: the name of a registered project")
	case !projectRe.MatchString(*in.Project):
		p.add("project", "must be 1-64 characters from a-z, 0-9, underscore, hyphen")
	default:
		out.Project = *in.Project
	}
	if in.Tasks != nil && !isNull(in.Tasks) {
		p.addCoded("tasks", "tasks_unsupported", "Remove tasks; describe the work with type and fan_out (by, items, or chunks).",
			"a top-level tasks array is not accepted; use fan_out to make several tasks")
	}
}

func (v *validator) runner() {
	in, out, p := v.in, v.out, v.p
	cmd := in.RunnerCommand
	switch {
	case len(cmd) == 0:
		p.add("runner_command", `required: a non-empty array of strings, e.g. ["python", "main.py"]`)
	case len(cmd) > MaxCommandArgs:
		p.add("runner_command", "at most %d arguments", MaxCommandArgs)
	default:
		total := 0
		for i, a := range cmd {
			total += len(a)
			switch {
			case a == "":
				p.add(index("runner_command", i), "must be a non-empty string")
			case len(a) > MaxCommandArgBytes:
				p.add(index("runner_command", i), "at most %d bytes", MaxCommandArgBytes)
			case strings.IndexByte(a, 0) >= 0:
				p.add(index("runner_command", i), "may not contain NUL")
			}
		}
		if total > MaxCommandBytes {
			p.add("runner_command", "at most %d bytes in all", MaxCommandBytes)
		}
		out.RunnerCommand = slices.Clone(cmd)
	}
	out.Payload = []byte("{}")
	if obj, ok := v.object("payload", in.Payload); ok && obj != nil {
		switch {
		case (v.typ == apiv1.JobTypeSweep || v.typ == apiv1.JobTypeBenchmark) && string(obj) != "{}":
			where := "fixed_payload"
			if v.typ == apiv1.JobTypeBenchmark {
				where = "shared_payload"
			}
			p.add("payload", "%s jobs take their common payload in %s; leave payload out", v.typ, where)
		case v.typ != apiv1.JobTypeSweep && v.typ != apiv1.JobTypeBenchmark:
			out.Payload = obj
		}
	}

	out.TimeoutS = DefaultTimeoutS
	if in.TimeoutS != nil {
		if t := *in.TimeoutS; t <= 0 || t > v.lim.MaxTimeoutS {
			p.add("timeout_s", "must be > 0 and at most %d seconds", v.lim.MaxTimeoutS)
		} else {
			out.TimeoutS = t
		}
	}
	if in.RuntimeHintS != nil {
		if h := *in.RuntimeHintS; h <= 0 {
			p.add("runtime_hint_s", "must be > 0 seconds, or left out")
		} else {
			out.RuntimeHintS = min(h, out.TimeoutS)
		}
	}
	if in.MaxRetries != nil {
		if r := *in.MaxRetries; r < 0 || r > MaxRetries {
			p.add("max_retries", "must be 0 to %d", MaxRetries)
		} else {
			out.MaxRetries = int(r)
		}
	}
}

func (v *validator) scheduling() {
	in, out, p := v.in, v.out, v.p
	out.Priority = enum(p, "priority", in.Priority, apiv1.PriorityNormal, apiv1.PriorityHigh, apiv1.PriorityNormal, apiv1.PriorityLow)

	if len(in.DependsOn) > MaxDependsOn {
		p.add("depends_on", "at most %d job ids", MaxDependsOn)
	} else if len(in.DependsOn) > 0 {
		seen := make(map[string]int, len(in.DependsOn))
		for i, id := range in.DependsOn {
			switch j, dup := seen[id]; {
			case !jobIDRe.MatchString(id):
				p.add(index("depends_on", i), "must be a job id (job_...)")
			case dup:
				p.add(index("depends_on", i), "repeats depends_on[%d]", j)
			default:
				seen[id] = i
				out.DependsOn = append(out.DependsOn, id)
			}
		}
	}

	if len(in.Tags) > MaxTags {
		p.add("tags", "at most %d tags", MaxTags)
	} else if len(in.Tags) > 0 {
		seen := make(map[string]bool, len(in.Tags))
		for i, t := range in.Tags {
			switch {
			case t == "" || len(t) > MaxTagBytes:
				p.add(index("tags", i), "must be 1-%d bytes", MaxTagBytes)
			case hasControl(t):
				p.add(index("tags", i), "may not contain control characters")
			case !seen[t]:
				seen[t] = true
				out.Tags = append(out.Tags, t)
			}
		}
	}

	if in.ClientRef != nil && !isNull(in.ClientRef) {
		var ref string
		switch err := json.Unmarshal(in.ClientRef, &ref); {
		case err != nil:
			p.add("client_ref", "must be a string or null")
		case len(ref) > MaxClientRefBytes:
			p.add("client_ref", "at most %d bytes", MaxClientRefBytes)
		case ref != "":
			out.ClientRef = &ref
		}
	}
}

func (v *validator) requirements() {
	in, out, p := v.in, v.out, v.p
	reqs := v.lim.Defaults
	if in.Preset != nil && *in.Preset != "" {
		pr, ok := v.lim.Presets[*in.Preset]
		if ok {
			out.Preset = *in.Preset
			reqs = MergeRequirements(reqs, pr)
		} else {
			names := make([]string, 0, len(v.lim.Presets))
			for n := range v.lim.Presets {
				names = append(names, n)
			}
			sort.Strings(names)
			known := "none are defined"
			if len(names) > 0 {
				known = "known: " + strings.Join(names, ", ")
			}
			p.addCoded("preset", "unknown_preset", "Use a name from GET /api/v1/presets, or leave preset out.",
				"unknown preset %q (%s)", *in.Preset, known)
		}
	}
	if in.Requirements != nil {
		checkRequirements(p, "requirements", *in.Requirements)
		reqs = MergeRequirements(reqs, *in.Requirements)
	}
	if !p.has("requirements") && !p.has("preset") {
		out.Requirements = resolve(p, reqs)
	}

	out.ReservationMode = apiv1.ReservationBestEffort
	guaranteedAction := "Leave reservation out or send {\"mode\": \"best_effort\"}; guaranteed capacity is not offered."
	if r := in.Reservation; r != nil {
		if r.Mode != nil && *r.Mode != apiv1.ReservationBestEffort {
			if *r.Mode == "guaranteed" {
				p.addCoded("reservation.mode", "reservation_unsupported", guaranteedAction, "guaranteed reservations are not offered; only best_effort")
			} else {
				p.add("reservation.mode", "must be best_effort")
			}
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
		}{{"parallelism", r.Parallelism}, {"guaranteed_for_s", r.GuaranteedForS}, {"max_wait_s", r.MaxWaitS}} {
			if f.raw != nil && !isNull(f.raw) {
				p.addCoded("reservation."+f.name, "reservation_unsupported", guaranteedAction,
					"is a guaranteed-reservation field, and guaranteed reservations are not offered")
			}
		}
		if d := r.Distribution; d != nil && d.MaxTasksPerNode != nil && !isNull(d.MaxTasksPerNode) {
			p.addCoded("reservation.distribution.max_tasks_per_node", "reservation_unsupported",
				"Remove max_tasks_per_node; placement is decided by the service.", "is not supported")
		}
	}
	if d := in.Distribution; d != nil && d.MaxTasksPerNode != nil && !isNull(d.MaxTasksPerNode) {
		p.addCoded("distribution.max_tasks_per_node", "reservation_unsupported",
			"Remove max_tasks_per_node; placement is decided by the service.", "is not supported")
	}
}

func (v *validator) policies() {
	in, out, p := v.in, v.out, v.p
	out.ReliabilityMode = enum(p, "reliability_mode", in.ReliabilityMode, apiv1.ReliabilityBestEffort,
		apiv1.ReliabilityBestEffort, apiv1.ReliabilityStrictComplete)
	out.PlacementPolicy = enum(p, "placement_policy", in.PlacementPolicy, apiv1.PlacementShared,
		apiv1.PlacementShared, apiv1.PlacementDedicated)
	out.ExecutionPolicy = apiv1.ExecutionSandboxed
	if e := in.ExecutionPolicy; e != nil && *e != "" && *e != apiv1.ExecutionSandboxed {
		p.addCoded("execution_policy", "execution_policy_unsupported", "Leave execution_policy out; user projects always run sandboxed.",
			"must be sandboxed; user projects always run in the gVisor sandbox")
	}
	if c := in.CallbackURL; c != nil && !isNull(c) && string(bytes.TrimSpace(c)) != `""` {
		p.addCoded("callback_url", "callback_url_unsupported",
			"Remove callback_url; poll GET /api/v1/jobs/{id} or follow GET /api/v1/jobs/{id}/stream.",
			"webhooks are not offered; callback_url must be empty or null")
	}
	if rs := in.ResultSchema; rs != nil && !isNull(rs) && firstByte(rs) != '{' {
		p.add("result_schema", "must be a JSON object (it is accepted and ignored) or null")
	}

	out.Checkpointing.PayloadKey = DefaultPayloadKey
	if c := in.Checkpointing; c != nil {
		enabled := c.Enabled != nil && *c.Enabled
		switch {
		case enabled && v.typ != apiv1.JobTypeStructuredRunner && v.typ != "":
			v.wrongType("checkpointing.enabled", apiv1.JobTypeStructuredRunner)
		case c.ResumeFromLatest != nil && *c.ResumeFromLatest && !enabled:
			p.add("checkpointing.resume_from_latest", "needs checkpointing.enabled true")
		}
		out.Checkpointing.Enabled = enabled
		out.Checkpointing.ResumeFromLatest = c.ResumeFromLatest != nil && *c.ResumeFromLatest
		if c.PayloadKey != nil {
			if msg := badName(*c.PayloadKey, true); msg != "" {
				p.add("checkpointing.payload_key", "%s", msg)
			} else {
				out.Checkpointing.PayloadKey = *c.PayloadKey
			}
		}
	}

	if in.State != nil && len(in.State.Publish) > 0 {
		if len(in.State.Publish) > MaxPublish {
			p.add("state.publish", "at most %d entries", MaxPublish)
		} else {
			out.Publish = make(map[string]string, len(in.State.Publish))
			for key, path := range in.State.Publish {
				where := "state.publish." + key
				switch {
				case key == "" || len(key) > 256 || hasControl(key):
					p.add("state.publish", "keys must be shared-state keys: 1-256 bytes without control characters")
				case !validPath(path):
					p.add(where, `must be a dotted path into the job's result, e.g. "aggregate_result.best"`)
				default:
					out.Publish[key] = path
				}
			}
		}
	}

	out.MergeStrategy = apiv1.MergeCollect
	if in.MergeStrategy != nil {
		switch ms := *in.MergeStrategy; ms {
		case apiv1.MergeCollect:
		case apiv1.MergeKeyed, apiv1.MergeWeightedAvg:
			if v.typ != apiv1.JobTypeStructuredRunner && v.typ != "" {
				v.wrongType("merge_strategy", apiv1.JobTypeStructuredRunner)
			}
			out.MergeStrategy = ms
		default:
			p.add("merge_strategy", "must be collect, keyed or weighted_avg")
		}
	}
	switch out.MergeStrategy {
	case apiv1.MergeKeyed:
		if in.FanOut == nil || in.FanOut.By == nil {
			p.add("merge_strategy", "keyed needs fan_out.by")
		}
	case apiv1.MergeWeightedAvg:
		out.ValueField = v.name("value_field", in.ValueField, true)
		out.WeightField = v.name("weight_field", in.WeightField, true)
	}
	if out.MergeStrategy != apiv1.MergeWeightedAvg {
		for _, f := range []struct {
			name string
			val  *string
		}{{"value_field", in.ValueField}, {"weight_field", in.WeightField}} {
			if f.val != nil {
				p.add(f.name, "applies only with merge_strategy weighted_avg")
			}
		}
	}
}

func (v *validator) meta() {
	in, out, p := v.in, v.out, v.p
	if obj, ok := v.object("meta", in.Meta); ok && obj != nil {
		if len(obj) > MaxMetaBytes {
			p.add("meta", "at most %d bytes", MaxMetaBytes)
		} else {
			out.Meta = obj
		}
	}
	if in.Variant != nil {
		if len(*in.Variant) > MaxVariantBytes {
			p.add("variant", "at most %d bytes", MaxVariantBytes)
		} else {
			vr := *in.Variant
			out.Variant = &vr
		}
	}
}

// spec checks the type-specific fields and builds the expansion Spec.
func (v *validator) spec() {
	in, out, p := v.in, v.out, v.p
	sr, sw, mr, bm := apiv1.JobTypeStructuredRunner, apiv1.JobTypeSweep, apiv1.JobTypeMapReduce, apiv1.JobTypeBenchmark
	v.onlyFor("fan_out", in.FanOut != nil, sr)
	v.onlyFor("split", in.Split != nil, mr)
	v.onlyFor("reduce", in.Reduce != nil, mr)
	v.onlyFor("parameters", present(in.Parameters), sw)
	v.onlyFor("fixed_payload", present(in.FixedPayload), sw)
	v.onlyFor("candidates", present(in.Candidates), bm)
	v.onlyFor("shared_payload", present(in.SharedPayload), bm)
	v.onlyFor("replicas", in.Replicas != nil, bm)
	v.onlyFor("rank_by", in.RankBy != nil, sw, bm)
	v.onlyFor("rank_order", in.RankOrder != nil, sw, bm)

	spec := expand.Spec{Type: v.typ, Payload: out.Payload}
	limitField := "fan_out" // where a too-large expansion is reported
	switch v.typ {
	case sr:
		spec.FanOut = v.fanOut()
	case mr:
		spec.Split = v.split()
		limitField = "split.chunks"
		v.reduce()
	case sw:
		spec.Sweep = v.sweep()
		limitField = "parameters"
		out.RankBy = v.name("rank_by", in.RankBy, true)
	case bm:
		spec.Benchmark = v.benchmark()
		limitField = "candidates"
		if in.RankBy != nil {
			out.RankBy = v.name("rank_by", in.RankBy, false)
		}
	default:
		return
	}
	if v.typ == sw || v.typ == bm {
		out.RankOrder = enum(p, "rank_order", in.RankOrder, apiv1.RankDesc, apiv1.RankAsc, apiv1.RankDesc)
	}
	if v.typ != sr {
		v.batchSize() // only to refuse it
	}
	for _, f := range expansionFields {
		if p.has(f) {
			return // the spec is incomplete; expanding it would only add noise
		}
	}
	size, err := expand.Measure(&spec)
	n := size.Tasks
	if err != nil {
		var fe *expand.FieldError
		if errors.As(err, &fe) {
			p.add(fe.Field, "%s", fe.Message)
		} else {
			p.add("type", "%v", err)
		}
		return
	}
	switch {
	case v.typ == sw && n > MaxSweepCombinations:
		p.addCoded("parameters", "too_many_tasks", "Sweep fewer values, or split the sweep into several jobs.",
			"%s combinations; at most %d", countText(n), MaxSweepCombinations)
		return
	case n > v.lim.MaxTasks:
		p.addCoded(limitField, "too_many_tasks", "Make fewer, larger tasks (batch_size, fewer chunks), or split the work into several jobs.",
			"expands into %s tasks; at most %d per job", countText(n), v.lim.MaxTasks)
		return
	case size.PayloadBytes > MaxExpandedPayloadBytes:
		p.addCoded(limitField, "payload_too_large", "Move the bulk of the payload into an artifact (POST /api/v1/artifacts) and name it in payload._artifacts.download; every task can read it.",
			"its %d tasks' payloads would take about %d MiB together; at most %d MiB per job", n, size.PayloadBytes>>20, MaxExpandedPayloadBytes>>20)
		return
	}
	out.Expand = spec
	out.TaskCount = n
}
