package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
)

type resultInput struct {
	JobID string `json:"job_id" jsonschema:"the job's id (job_...)"`
}

type listResultsInput struct {
	Project string   `json:"project,omitempty" jsonschema:"only this project's jobs"`
	Tag     string   `json:"tag,omitempty" jsonschema:"only jobs with this tag"`
	Status  []string `json:"status,omitempty" jsonschema:"only jobs in these statuses (default: the terminal ones)"`
	Limit   int      `json:"limit,omitempty" jsonschema:"the most results to return, newest first (default 20)"`
}

func (t *Tools) addResultTools(s *sdk.Server, sess Session) {
	c := sess.Client
	add(t, s, reads, "get_result", "A job's result",
		"A job's result: the aggregate (merged results, ranking) and the first page of its tasks' results (GET /api/v1/results/{job_id}).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in resultInput) (any, error) {
			return c.Result(ctx, in.JobID)
		})
	add(t, s, reads, "list_results", "Recent results",
		"The results of the account's recent jobs, newest first, each with its aggregate (GET /api/v1/results).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in listResultsInput) (any, error) {
			limit := in.Limit
			if limit <= 0 {
				limit = 20
			}
			var out []apiv1.ResultListEntry
			for r, err := range c.Results(ctx, client.ResultFilter{Project: in.Project, Tag: in.Tag, Status: in.Status}) {
				if err != nil {
					return nil, err
				}
				out = append(out, r)
				if len(out) == limit {
					break
				}
			}
			return map[string]any{"results": out, "count": len(out)}, nil
		})
}
