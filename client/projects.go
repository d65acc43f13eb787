package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/skiffhq/skiff/apiv1"
)

// CreateProject creates a project (POST /api/v1/projects).
func (c *Client) CreateProject(ctx context.Context, p *apiv1.ProjectWrite) (*apiv1.Project, error) {
	var out apiv1.Project
	return &out, c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/projects", body: p}, &out)
}

// UpdateProject changes the fields p sets (PUT /api/v1/projects/{name}).
func (c *Client) UpdateProject(ctx context.Context, name string, p *apiv1.ProjectWrite) (*apiv1.Project, error) {
	var out apiv1.Project
	return &out, c.call(ctx, &request{method: http.MethodPut, path: "/api/v1/projects/" + esc(name), body: p}, &out)
}

// Projects lists the account's projects.
func (c *Client) Projects(ctx context.Context) ([]*apiv1.Project, error) {
	var out apiv1.ProjectList
	return out.Projects, c.get(ctx, "/api/v1/projects", nil, &out)
}

// Project reads one project.
func (c *Client) Project(ctx context.Context, name string) (*apiv1.Project, error) {
	var out apiv1.Project
	return &out, c.get(ctx, "/api/v1/projects/"+esc(name), nil, &out)
}

// DeleteProject deletes a project.
func (c *Client) DeleteProject(ctx context.Context, name string) (*apiv1.ProjectDeleted, error) {
	var out apiv1.ProjectDeleted
	return &out, c.call(ctx, &request{method: http.MethodDelete, path: "/api/v1/projects/" + esc(name)}, &out)
}

// ProjectStatus is the project's readiness; details adds the builds and
// preparations (status/details).
func (c *Client) ProjectStatus(ctx context.Context, name string, details bool) (*apiv1.Readiness, error) {
	p := "/api/v1/projects/" + esc(name) + "/status"
	if details {
		p += "/details"
	}
	var out apiv1.Readiness
	return &out, c.get(ctx, p, nil, &out)
}

// InitProject asks for the project's preparation (POST .../init); maxNodes
// 0 leaves the server's default.
func (c *Client) InitProject(ctx context.Context, name string, maxNodes int) (*apiv1.InitResponse, error) {
	body := map[string]any{}
	if maxNodes > 0 {
		body["max_nodes"] = maxNodes
	}
	var out apiv1.InitResponse
	return &out, c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/projects/" + esc(name) + "/init", body: body}, &out)
}

// CancelQueued cancels the project's planning and queued jobs (with tag,
// when not "").
func (c *Client) CancelQueued(ctx context.Context, name, tag string) (*apiv1.CancelQueuedResult, error) {
	var body apiv1.CancelQueuedRequest
	if tag != "" {
		body.Tag = &tag
	}
	var out apiv1.CancelQueuedResult
	return &out, c.call(ctx, &request{method: http.MethodPut, path: "/api/v1/projects/" + esc(name) + "/cancel-queued", body: body}, &out)
}

// KVGet reads one shared-state entry.
func (c *Client) KVGet(ctx context.Context, project, key string) (*apiv1.KVEntry, error) {
	var out apiv1.KVEntry
	return &out, c.get(ctx, kvPath(project, key), nil, &out)
}

// KVPut writes value (JSON) under key; ttlS 0 keeps it until deleted.
func (c *Client) KVPut(ctx context.Context, project, key string, value json.RawMessage, ttlS int64) (*apiv1.KVEntry, error) {
	body := apiv1.KVWrite{Value: value}
	if ttlS > 0 {
		body.TTLS = &ttlS
	}
	var out apiv1.KVEntry
	return &out, c.call(ctx, &request{method: http.MethodPut, path: kvPath(project, key), body: body}, &out)
}

// KVDelete removes a key.
func (c *Client) KVDelete(ctx context.Context, project, key string) (*apiv1.KVDeleted, error) {
	var out apiv1.KVDeleted
	return &out, c.call(ctx, &request{method: http.MethodDelete, path: kvPath(project, key)}, &out)
}

// KVList lists the entries whose key starts with prefix (at most limit;
// 0: the server's default).
func (c *Client) KVList(ctx context.Context, project, prefix string, limit int) (*apiv1.KVList, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out apiv1.KVList
	return &out, c.get(ctx, "/api/v1/projects/"+esc(project)+"/kv", q, &out)
}

func kvPath(project, key string) string {
	// The key may hold slashes: the route captures the rest of the path.
	return "/api/v1/projects/" + esc(project) + "/kv/" + (&url.URL{Path: key}).EscapedPath()
}
