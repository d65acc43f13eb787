package job

// The executor: the two calls between the fleet and the job service. A
// host's poll claims work with ClaimWork, which answers each attempt
// described completely; an attempt's end is recorded with AttemptFinished
// (execution.go). Between the two the fleet needs nothing else of jobs.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/skiffhq/skiff/internal/store"
)

// Work is one attempt claimed for a host, described completely: how its
// job's tasks run (image, command, env, data sources and cache mounts), the
// payload its runner reads, the artifacts it takes as inputs and the disk it
// asked for. The fleet turns it into the host protocol's assignment.
type Work struct {
	Task      *store.Task
	Attempt   *store.Attempt
	Spec      *RunSpec
	Payload   json.RawMessage
	Inputs    []*store.Artifact
	StorageGB int64
}

// ClaimWork claims, in one transaction, the tasks that fit what next offers
// (ClaimSeveral says how next is asked), and describes each. An attempt the
// platform cannot describe (its revision or an input is gone) ends at once
// as a host error, requeued free up to the cap, and is left out; the log
// says why.
func (s *Service) ClaimWork(ctx context.Context, next func(prev []Claimed) *store.TaskClaimParams) ([]Work, error) {
	claimed, err := s.ClaimSeveral(ctx, next)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	out := make([]Work, 0, len(claimed))
	for _, cl := range claimed {
		w, err := s.describe(ctx, cl.Task, cl.Attempt)
		if err != nil {
			s.log.Error("cannot describe a claimed attempt", "attempt_id", cl.Attempt.ID, "job_id", cl.Attempt.JobID, "err", err)
			if ferr := s.AttemptFinished(ctx, cl.Attempt, &Outcome{HostError: "the task's revision cannot be loaded"}, nil, ""); ferr != nil {
				s.log.Error("record the attempt's end", "attempt_id", cl.Attempt.ID, "err", ferr)
			}
			continue
		}
		out = append(out, *w)
	}
	return out, nil
}

// describe is attempt a of task t, described for its host.
func (s *Service) describe(ctx context.Context, t *store.Task, a *store.Attempt) (*Work, error) {
	rs, err := s.RunSpecOf(ctx, t.JobID)
	if err != nil {
		return nil, err
	}
	payload, err := s.AttemptPayload(ctx, rs, t, a)
	if err != nil {
		return nil, err
	}
	inputs, err := s.inputsOf(ctx, t)
	if err != nil {
		return nil, err
	}
	// A resumed attempt gets its published checkpoint's file too.
	cpIn, err := s.checkpointInput(ctx, rs, t, a)
	if err != nil {
		return nil, err
	}
	if cpIn != nil && !slices.ContainsFunc(inputs, func(in *store.Artifact) bool { return in.ID == cpIn.ID }) {
		inputs = append(inputs, cpIn)
	}
	return &Work{Task: t, Attempt: a, Spec: rs, Payload: payload, Inputs: inputs, StorageGB: storageGB(t.Requirements)}, nil
}

// inputsOf is the artifacts task t downloads before its runner starts
// (payload._artifacts.download), each once.
func (s *Service) inputsOf(ctx context.Context, t *store.Task) ([]*store.Artifact, error) {
	ins, err := ArtifactInputs(t.Payload)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*store.Artifact
	for _, in := range ins {
		if seen[in.ID] {
			continue
		}
		seen[in.ID] = true
		a, err := s.store.ArtifactGetByID(ctx, in.ID)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", in.ID, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// storageGB is a task's requirements.storage_gb, 0 when it has none.
func storageGB(requirements json.RawMessage) int64 {
	var r struct {
		StorageGB int64 `json:"storage_gb"`
	}
	if len(requirements) == 0 || json.Unmarshal(requirements, &r) != nil {
		return 0
	}
	return r.StorageGB
}

// runSpecs caches how each job's tasks run: a job's revision never
// changes, and a 10,000-task job should not re-read it per task. The cache
// is dropped whole when it grows past its bound.
type runSpecs struct {
	mu sync.Mutex
	m  map[string]*RunSpec
}

const runSpecCacheSize = 1024

// RunSpecOf is RunSpec of the job jobID, cached.
func (s *Service) RunSpecOf(ctx context.Context, jobID string) (*RunSpec, error) {
	s.specs.mu.Lock()
	rs := s.specs.m[jobID]
	s.specs.mu.Unlock()
	if rs != nil {
		return rs, nil
	}
	j, err := s.store.JobGetByID(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if rs, err = s.RunSpec(ctx, j); err != nil {
		return nil, err
	}
	s.specs.mu.Lock()
	if s.specs.m == nil || len(s.specs.m) >= runSpecCacheSize {
		s.specs.m = map[string]*RunSpec{}
	}
	s.specs.m[jobID] = rs
	s.specs.mu.Unlock()
	return rs, nil
}
