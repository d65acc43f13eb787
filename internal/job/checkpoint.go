package job

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skiffhq/skiff/internal/store"
)

// Checkpointing (structured_runner, spec 2.5 and 2.10 rule 7).
//
// A runner checkpoints by printing a progress line whose object has a
// "checkpoint" member: SKIFF_PROGRESS:{"pct": 40, "checkpoint": {"step": 400}}.
// The latest such value is kept on the task (its "checkpoint" field) across
// attempts. With checkpointing.enabled and resume_from_latest, an attempt
// after the first receives it in its payload under payload_key (default
// "_resume"), and the task's resume_state shows what it resumed from.

// checkpointOf is the "checkpoint" member of a progress object, nil when
// it has none.
func checkpointOf(progress json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(progress, &p) != nil {
		return nil
	}
	c := p["checkpoint"]
	if len(c) == 0 || string(c) == "null" {
		return nil
	}
	return c
}

// AttemptPayload is the payload attempt a of task t runs with: the task's
// payload, plus its latest checkpoint under payload_key when the job
// resumes from checkpoints and this is not the first attempt.
func (s *Service) AttemptPayload(ctx context.Context, rs *RunSpec, t *store.Task, a *store.Attempt) (json.RawMessage, error) {
	c := rs.Request.Checkpointing
	if !c.Enabled || !c.ResumeFromLatest || a.Number < 2 || len(t.Checkpoint) == 0 {
		return t.Payload, nil
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(t.Payload, &p); err != nil || p == nil {
		return t.Payload, nil // not an object: nothing to add to
	}
	p[c.PayloadKey] = t.Checkpoint
	out, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	state, _ := json.Marshal(map[string]any{"checkpoint": t.Checkpoint, "attempt_number": a.Number,
		"payload_key": c.PayloadKey})
	if err := s.store.TaskSetResumeState(ctx, t.ID, state); err != nil {
		return nil, fmt.Errorf("record resume state: %w", err)
	}
	return out, nil
}
