package apiv1

import "encoding/json"

// JobType is the kind of a job (spec 1, 4.5).
type JobType string

const (
	JobTypeStructuredRunner JobType = "structured_runner" // the default
	JobTypeSweep            JobType = "sweep"
	JobTypeMapReduce        JobType = "map_reduce"
	JobTypeBenchmark        JobType = "benchmark"
)

// Enumerated values of the submission's string fields; the first of each
// group (or the one marked) is the default.
const (
	PriorityHigh   = "high"
	PriorityNormal = "normal" // default
	PriorityLow    = "low"

	ReliabilityBestEffort     = "best_effort" // default
	ReliabilityStrictComplete = "strict_complete"

	PlacementShared    = "shared" // default
	PlacementDedicated = "dedicated"

	ExecutionSandboxed = "sandboxed" // the only value user projects may send

	ReservationBestEffort = "best_effort" // the only mode accepted

	ProfileCPU = "cpu"
	ProfileGPU = "gpu"

	MergeCollect     = "collect" // default
	MergeKeyed       = "keyed"
	MergeWeightedAvg = "weighted_avg"

	RankDesc = "desc" // default
	RankAsc  = "asc"
)

// JobSubmit is the body of POST /api/v1/jobs and one element of the jobs
// array of POST /api/v1/jobs/batch (spec 4.5).
//
// Pointers tell an absent field from a zero value. Fields whose type the
// service checks by hand, so that a wrong type is answered with a 422 that
// names the field and says what it must be, are json.RawMessage: payload-like
// objects, client_ref (string or null), callback_url (any non-empty value is
// refused), result_schema (any non-object is refused), and the fields that
// exist only to be refused (tasks, the guaranteed reservation fields,
// distribution.max_tasks_per_node).
type JobSubmit struct {
	Type          *JobType        `json:"type,omitempty"`
	Project       *string         `json:"project,omitempty"`
	RunnerCommand []string        `json:"runner_command,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"` // object; structured_runner and map_reduce
	TimeoutS      *int64          `json:"timeout_s,omitempty"`
	RuntimeHintS  *int64          `json:"runtime_hint_s,omitempty"`
	MaxRetries    *int64          `json:"max_retries,omitempty"`
	Priority      *string         `json:"priority,omitempty"`
	DependsOn     []string        `json:"depends_on,omitempty"`
	Tags          []string        `json:"tags,omitempty"`
	ClientRef     json.RawMessage `json:"client_ref,omitempty"` // string or null
	Preset        *string         `json:"preset,omitempty"`

	Requirements    *JobRequirements  `json:"requirements,omitempty"`
	Reservation     *JobReservation   `json:"reservation,omitempty"`
	Distribution    *JobDistribution  `json:"distribution,omitempty"` // refused; see JobDistribution
	Checkpointing   *JobCheckpointing `json:"checkpointing,omitempty"`
	ReliabilityMode *string           `json:"reliability_mode,omitempty"`
	PlacementPolicy *string           `json:"placement_policy,omitempty"`
	ExecutionPolicy *string           `json:"execution_policy,omitempty"`
	CallbackURL     json.RawMessage   `json:"callback_url,omitempty"`  // reserved: null or "" only
	ResultSchema    json.RawMessage   `json:"result_schema,omitempty"` // object or null; accepted and ignored
	State           *JobState         `json:"state,omitempty"`

	// structured_runner fan-out and the merge of its results.
	FanOut        *JobFanOut `json:"fan_out,omitempty"`
	BatchSize     *int64     `json:"batch_size,omitempty"`
	BatchPerTask  *int64     `json:"batch_per_task,omitempty"` // alias of batch_size
	MergeStrategy *string    `json:"merge_strategy,omitempty"`
	ValueField    *string    `json:"value_field,omitempty"`  // weighted_avg
	WeightField   *string    `json:"weight_field,omitempty"` // weighted_avg

	// map_reduce.
	Split  *JobSplit         `json:"split,omitempty"`
	Reduce map[string]string `json:"reduce,omitempty"` // result field -> operator

	// sweep.
	Parameters   json.RawMessage `json:"parameters,omitempty"`    // name -> non-empty list of values
	FixedPayload json.RawMessage `json:"fixed_payload,omitempty"` // object
	RankBy       *string         `json:"rank_by,omitempty"`       // sweep (required) and benchmark
	RankOrder    *string         `json:"rank_order,omitempty"`

	// benchmark.
	Candidates    json.RawMessage `json:"candidates,omitempty"`     // name -> config object
	SharedPayload json.RawMessage `json:"shared_payload,omitempty"` // object
	Replicas      *int64          `json:"replicas,omitempty"`

	Meta    json.RawMessage `json:"meta,omitempty"` // object, echoed back
	Variant *string         `json:"variant,omitempty"`

	// Tasks is refused: jobs describe their tasks through a type and
	// fan_out, never as an explicit top-level task array.
	Tasks json.RawMessage `json:"tasks,omitempty"`
}

// JobRequirements are the minimum resources of each task. Absent fields come
// from the preset, then from the service's defaults.
type JobRequirements struct {
	CPU                *float64 `json:"cpu,omitempty"`
	MemoryMB           *int64   `json:"memory_mb,omitempty"`
	GPUCount           *int64   `json:"gpu_count,omitempty"`
	GPUMemoryMB        *int64   `json:"gpu_memory_mb,omitempty"`
	Profile            *string  `json:"profile,omitempty"` // cpu or gpu
	StorageGB          *int64   `json:"storage_gb,omitempty"`
	MinSingleCoreScore *float64 `json:"min_single_core_score,omitempty"` // 1.0 (baseline) to 3.0
}

// JobReservation asks for capacity. Only best_effort exists; the
// guaranteed-mode fields are named here so that sending them is answered
// with a 422 rather than silently ignored.
type JobReservation struct {
	Mode           *string          `json:"mode,omitempty"`
	Parallelism    json.RawMessage  `json:"parallelism,omitempty"`
	GuaranteedForS json.RawMessage  `json:"guaranteed_for_s,omitempty"`
	MaxWaitS       json.RawMessage  `json:"max_wait_s,omitempty"`
	Distribution   *JobDistribution `json:"distribution,omitempty"`
}

// JobDistribution is accepted in reservation and at the top level only so
// that max_tasks_per_node can be refused by name.
type JobDistribution struct {
	MaxTasksPerNode json.RawMessage `json:"max_tasks_per_node,omitempty"`
}

// JobCheckpointing turns on checkpoint and resume (structured_runner only).
type JobCheckpointing struct {
	Enabled          *bool   `json:"enabled,omitempty"`
	ResumeFromLatest *bool   `json:"resume_from_latest,omitempty"`
	PayloadKey       *string `json:"payload_key,omitempty"` // where resume state goes; default _resume
}

// JobState asks the service to write terminal values into the project's
// shared state: publish maps a shared-state key to a dotted path into the
// job's result object (spec 2.6), e.g. {"best_lr": "aggregate_result.best.lr"}.
type JobState struct {
	Publish map[string]string `json:"publish,omitempty"`
}

// JobFanOut splits one structured_runner job into tasks. Exactly one shape:
// {by}, {items} or {chunks, total, range_field}.
type JobFanOut struct {
	By           *string           `json:"by,omitempty"`
	Items        []json.RawMessage `json:"items,omitempty"`
	Chunks       *int64            `json:"chunks,omitempty"`
	Total        *int64            `json:"total,omitempty"`
	RangeField   *string           `json:"range_field,omitempty"`
	BatchSize    *int64            `json:"batch_size,omitempty"`     // same as the top-level field
	BatchPerTask *int64            `json:"batch_per_task,omitempty"` // alias of batch_size
}

// JobSplit is map_reduce's split of a numeric range [start, start+total)
// into chunks tasks; each task's range goes in payload[field].
type JobSplit struct {
	Field  *string `json:"field,omitempty"`
	Start  *int64  `json:"start,omitempty"` // default 0
	Total  *int64  `json:"total,omitempty"`
	Chunks *int64  `json:"chunks,omitempty"`
}

// JobBatchSubmit is the body of POST /api/v1/jobs/batch: at most 200
// submissions. They stay raw so that each one is checked, and answered, on
// its own index.
type JobBatchSubmit struct {
	Jobs []json.RawMessage `json:"jobs"`
}

// JobBatchResult answers POST /api/v1/jobs/batch: 201 when every job was
// admitted, 207 when some were refused.
type JobBatchResult struct {
	Jobs       []JobBatchEntry `json:"jobs"`
	Submitted  int             `json:"submitted"`
	Errors     []JobBatchError `json:"errors"`
	ErrorCount int             `json:"error_count"`
}

// JobBatchEntry is one admitted job of a batch.
type JobBatchEntry struct {
	Index   int             `json:"index"`
	ID      string          `json:"id"`
	Status  string          `json:"status"`
	Payload json.RawMessage `json:"payload"`
	Meta    json.RawMessage `json:"meta"`
	Variant *string         `json:"variant,omitempty"`
	// Replayed says the entry was admitted by an earlier request with the
	// same Idempotency-Key and body; this one created nothing.
	Replayed bool `json:"replayed"`
}

// JobBatchError is one refused job of a batch, in the error envelope's terms.
type JobBatchError struct {
	Index             int            `json:"index"`
	Error             string         `json:"error"`
	Code              string         `json:"code,omitempty"`
	RecommendedAction string         `json:"recommended_action,omitempty"`
	Details           map[string]any `json:"details,omitempty"`
}
