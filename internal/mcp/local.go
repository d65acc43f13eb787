package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
)

// The local server's tools read and write the user's disk, as `skiff push`
// and `skiff artifacts get` do; relative paths are the working directory's
// of `skiff mcp`.

type pushInput struct {
	Dir     string `json:"dir" jsonschema:"the project directory (a Dockerfile, skiff.project.json, the runner); its .dockerignore is honoured"`
	Project string `json:"project,omitempty" jsonschema:"the project's name (default: the directory's name); created when missing"`
	NoWait  bool   `json:"no_wait,omitempty" jsonschema:"return once uploaded instead of following the build"`
}

type pushOutput struct {
	Project    string               `json:"project"`
	Created    bool                 `json:"created"`
	Push       *apiv1.PushRecord    `json:"push,omitempty"`
	Unchanged  *apiv1.PushUnchanged `json:"unchanged,omitempty"`
	NextAction string               `json:"next_action"`
}

type downloadInput struct {
	ArtifactID string `json:"artifact_id" jsonschema:"the artifact's id (art_...)"`
	Path       string `json:"path" jsonschema:"the file to write (parent directories are made)"`
	Overwrite  bool   `json:"overwrite,omitempty" jsonschema:"replace the file if it exists"`
}

// pushPollInterval is how often a push's build is read while it runs.
const pushPollInterval = time.Second

func (t *Tools) addLocalTools(s *sdk.Server, sess Session) {
	c := sess.Client
	add(t, s, writes, "push_directory", "Push a directory",
		"Pack a local directory (leaving out what its .dockerignore names), push it to a project (created when missing) "+
			"and follow the build to published or failed, with progress notifications; like `skiff push DIR`.",
		func(ctx context.Context, req *sdk.CallToolRequest, in pushInput) (any, error) {
			return pushDir(ctx, c, req, in)
		})
	add(t, s, retries, "download_artifact", "Download an artifact",
		"Write an artifact's content to a local file; like `skiff artifacts get ID -o PATH`.",
		func(ctx context.Context, _ *sdk.CallToolRequest, in downloadInput) (any, error) {
			return download(ctx, c, in)
		})
}

func pushDir(ctx context.Context, c *client.Client, req *sdk.CallToolRequest, in pushInput) (any, error) {
	abs, err := filepath.Abs(in.Dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", abs)
	}
	out := pushOutput{Project: in.Project}
	if out.Project == "" {
		out.Project = filepath.Base(abs)
	}
	if _, err := c.Project(ctx, out.Project); client.IsNotFound(err) {
		if _, err := c.CreateProject(ctx, &apiv1.ProjectWrite{Name: &out.Project}); err != nil {
			return nil, err
		}
		out.Created = true
	} else if err != nil {
		return nil, err
	}
	res, err := c.PushDir(ctx, out.Project, abs, nil)
	if err != nil {
		return nil, err
	}
	if res.Unchanged != nil {
		out.Unchanged = res.Unchanged
		out.NextAction = "Nothing changed: the published revision is current. Submit a job with submit_job."
		return out, nil
	}
	out.Push = res.Accepted
	if in.NoWait {
		out.NextAction = "The build runs: follow it with project_status."
		return out, nil
	}
	token := req.Params.GetProgressToken()
	step := 0
	rec, err := c.WaitPush(ctx, out.Project, res.Accepted.PushRef, pushPollInterval, func(r *apiv1.PushRecord) {
		if token == nil || req.Session == nil {
			return
		}
		step++
		// The build has no known length: progress counts the changes seen.
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(step),
			Message: fmt.Sprintf("build %s: %s", r.PushRef, r.Status)})
	})
	if err != nil {
		return nil, err
	}
	out.Push = rec
	if rec.Status != "published" {
		msg := "build " + rec.PushRef + " " + rec.Status
		if rec.Error != nil {
			msg += ": " + *rec.Error
		}
		if rec.NextAction != "" {
			msg += ". " + rec.NextAction
		}
		return nil, fmt.Errorf("%s\nlog tail:\n%s", msg, rec.LogTail)
	}
	out.NextAction = "Published " + rec.PushRef + ". Submit a job to project " + out.Project + " with submit_job."
	return out, nil
}

func download(ctx context.Context, c *client.Client, in downloadInput) (any, error) {
	path, err := filepath.Abs(in.Path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil && !in.Overwrite {
		return nil, fmt.Errorf("%s exists: pass overwrite to replace it", path)
	}
	body, _, err := c.GetArtifact(ctx, in.ArtifactID)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	// Write beside it and rename, so that a broken download never leaves
	// half a file under the name asked for.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(f, body)
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("download artifact %s to %s: %w", in.ArtifactID, path, err)
	}
	return map[string]any{"artifact_id": in.ArtifactID, "path": path, "bytes": n}, nil
}
