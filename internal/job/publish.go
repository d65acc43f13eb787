package job

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// state.publish (spec 4.5): when a job ends completed or partial, each
// "key": "path" pair writes the value at path in the job's result object
// into the project's shared state under key. A path is dotted, with list
// indexes as numbers: "aggregate_result.best.params.lr",
// "aggregate_result.0.score", "summary.task_outcome_counts.succeeded". A
// path that does not resolve writes nothing and is named in the
// job.state_published event.

// publish writes the job's published values in q's transaction.
func (s *Service) publish(ctx context.Context, q store.Querier, j *store.Job, sum Summary, now time.Time) error {
	sub, err := s.request(j)
	if err != nil || len(sub.Publish) == 0 {
		return err
	}
	doc, err := json.Marshal(map[string]any{
		"job_id": j.ID, "status": j.Status, "aggregate_result": sum.AggregateResult,
		"aggregate_aliases": sum.AggregateAliases, "completeness": sum.Completeness, "summary": sum,
	})
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(sub.Publish))
	for k := range sub.Publish {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	written, missing := []string{}, []string{}
	for _, k := range keys {
		v, ok := resolve(doc, sub.Publish[k])
		if !ok {
			missing = append(missing, k)
			continue
		}
		if _, err := q.KVPut(ctx, &store.KVPutParams{ProjectID: j.ProjectID, Key: k, Value: v, Now: now}); err != nil {
			return fmt.Errorf("publish %s: %w", k, err)
		}
		written = append(written, k)
	}
	return s.event(ctx, q, j.ID, "", "", "job.state_published", map[string]any{"written": written, "missing": missing}, now)
}

// resolve follows a dotted path into a JSON document.
func resolve(doc json.RawMessage, path string) (json.RawMessage, bool) {
	cur := doc
	for _, seg := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) == nil && obj != nil {
			v, ok := obj[seg]
			if !ok {
				return nil, false
			}
			cur = v
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(cur, &list) == nil {
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(list) {
				return nil, false
			}
			cur = list[i]
			continue
		}
		return nil, false
	}
	return cur, len(cur) > 0
}
