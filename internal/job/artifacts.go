package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// ArtifactsKey is the payload key of a task's artifact inputs and declared
// outputs (spec 2.10 rule 6): _artifacts.download names the inputs,
// _artifacts.upload the outputs, and the host adds _artifacts.local_paths.
const ArtifactsKey = "_artifacts"

// ArtifactInput is one entry of _artifacts.download.
type ArtifactInput struct {
	ID    string
	Field string // where it was named, for errors: payload._artifacts.download[1]
}

// ArtifactInputs reads _artifacts.download of a payload: an id, {"id": ...},
// or a list of either. A payload without it has no inputs.
func ArtifactInputs(payload json.RawMessage) ([]ArtifactInput, error) {
	var top map[string]json.RawMessage
	if len(payload) == 0 || json.Unmarshal(payload, &top) != nil {
		return nil, nil // not an object: no reserved keys
	}
	raw, ok := top[ArtifactsKey]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var arts map[string]json.RawMessage
	if err := json.Unmarshal(raw, &arts); err != nil {
		return nil, invalidInput("payload._artifacts", "must be an object with download and upload")
	}
	dl, ok := arts["download"]
	if !ok || string(dl) == "null" {
		return nil, nil
	}
	one := func(v json.RawMessage, field string) (ArtifactInput, error) {
		var s string
		if json.Unmarshal(v, &s) == nil {
			if s == "" {
				return ArtifactInput{}, invalidInput(field, "is an empty artifact id")
			}
			return ArtifactInput{ID: s, Field: field}, nil
		}
		var o struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(v, &o) == nil && o.ID != "" {
			return ArtifactInput{ID: o.ID, Field: field}, nil
		}
		return ArtifactInput{}, invalidInput(field, "must be an artifact id or {\"id\": ...}")
	}
	var list []json.RawMessage
	if strings.HasPrefix(strings.TrimSpace(string(dl)), "[") {
		if err := json.Unmarshal(dl, &list); err != nil {
			return nil, invalidInput("payload._artifacts.download", "must be an id, {\"id\": ...}, or a list of them")
		}
		if len(list) == 0 {
			// Spec 3.3: "a non-empty list of those". An empty list is
			// most likely a template whose ids were never filled in;
			// running the task without its inputs would waste the money.
			return nil, invalidInput("payload._artifacts.download", "is an empty list: name at least one artifact id, or leave download out")
		}
		out := make([]ArtifactInput, 0, len(list))
		for i, v := range list {
			in, err := one(v, fmt.Sprintf("payload._artifacts.download[%d]", i))
			if err != nil {
				return nil, err
			}
			out = append(out, in)
		}
		return out, nil
	}
	in, err := one(dl, "payload._artifacts.download")
	if err != nil {
		return nil, err
	}
	return []ArtifactInput{in}, nil
}

func invalidInput(field, msg string) error {
	return fault.Invalid("invalid_artifact_input", "Name artifacts of your account by id in payload._artifacts.download: an id, {\"id\": ...}, or a list of them.",
		"%s %s", field, msg).With("field", field)
}

// checkArtifactInputs resolves every task's inputs for the account: an
// unknown, deleted or foreign id is a 422 naming the entry. It returns the
// distinct ids.
func checkArtifactInputs(ctx context.Context, q store.Querier, accountID string, tasks []store.Task) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	for _, t := range tasks {
		ins, err := ArtifactInputs(t.Payload)
		if err != nil {
			return nil, withTask(err, len(tasks), t.Index)
		}
		for _, in := range ins {
			if seen[in.ID] {
				continue
			}
			if _, err := q.ArtifactGet(ctx, accountID, in.ID); errors.Is(err, store.ErrNotFound) {
				return nil, withTask(fault.Invalid("unknown_artifact",
					"Name only artifacts of your account that are not deleted; list them with GET /api/v1/artifacts.",
					"%s: artifact %q not found", in.Field, in.ID).With("field", in.Field).With("artifact_id", in.ID), len(tasks), t.Index)
			} else if err != nil {
				return nil, fmt.Errorf("artifact input: %w", err)
			}
			seen[in.ID] = true
			ids = append(ids, in.ID)
		}
	}
	return ids, nil
}

// withTask names the task of a fanned-out job in the error's details.
func withTask(err error, n int, index int64) error {
	fe, ok := fault.As(err)
	if !ok || n <= 1 {
		return err
	}
	return fe.With("task_index", index)
}

// referenceInputs records that the job consumes the artifacts.
func referenceInputs(ctx context.Context, q store.Querier, jobID string, ids []string, now time.Time) error {
	for _, artID := range ids {
		if err := q.ArtifactRefAdd(ctx, &store.ArtifactRefParams{ArtifactID: artID, JobID: jobID,
			Role: store.ArtifactRoleInput, Now: now}); err != nil {
			return err
		}
	}
	return nil
}

// PurgeFinishedBefore deletes up to batch terminal jobs that finished
// before t, with their tasks, outputs and events (spec 8: terminal job
// retention); their artifacts stay, one reference fewer.
func (s *Service) PurgeFinishedBefore(ctx context.Context, t time.Time, batch int) (int, error) {
	n, err := s.store.JobPurgeFinishedBefore(ctx, t, batch)
	if err != nil {
		return n, fmt.Errorf("purge jobs: %w", err)
	}
	return n, nil
}
