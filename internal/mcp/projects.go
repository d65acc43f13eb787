package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type projectInput struct {
	Name string `json:"name" jsonschema:"the project's name"`
}

type projectStatusInput struct {
	Name    string `json:"name" jsonschema:"the project's name"`
	Details bool   `json:"details,omitempty" jsonschema:"add the builds and replicas (GET /projects/{name}/status/details)"`
}

func (t *Tools) addProjectTools(s *sdk.Server, sess Session) {
	c := sess.Client
	add(t, s, reads, "list_projects", "List projects",
		"The account's projects, each with its published revision and manifest (GET /api/v1/projects).",
		func(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (any, error) {
			ps, err := c.Projects(ctx)
			if err != nil {
				return nil, err
			}
			return map[string]any{"projects": ps}, nil
		})
	add(t, s, reads, "show_project", "Show a project",
		"One project: its manifest, published revision and defaults (GET /api/v1/projects/{name}).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in projectInput) (any, error) {
			return c.Project(ctx, in.Name)
		})
	add(t, s, reads, "project_status", "Project status",
		"Whether a project can take jobs now (ready_for_jobs), its latest build and what to do next (next_action).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in projectStatusInput) (any, error) {
			return c.ProjectStatus(ctx, in.Name, in.Details)
		})
}
