package job

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/project/manifest"
	"github.com/skiffhq/skiff/internal/store"
)

// RunSpec is how every task of a job runs: the revision the job was
// submitted against, and the command, directory and environment the project
// and the submission give its runner.
type RunSpec struct {
	Job         *store.Job
	Request     *submit.Submission
	ImageDigest string            // sha256:<hex> of the published revision
	Command     []string          // runner_command, else the manifest's entrypoint
	Cwd         string            // the manifest's runtime.workdir
	Env         map[string]string // manifest entrypoint env, then project env on top
	// DataSources and CacheMounts are the revision's manifest's.
	DataSources []manifest.DataSource
	CacheMounts []manifest.CacheMount
	// CacheEpoch is the project's cache-mount epoch when the spec was
	// read; invalidate moves it on.
	CacheEpoch int64
}

// RunSpec resolves how j's tasks run. It reads the job's revision, which
// stays as it was when the job was submitted even if the project is pushed
// again, and the project's current env.
func (s *Service) RunSpec(ctx context.Context, j *store.Job) (*RunSpec, error) {
	sub, err := s.request(j)
	if err != nil {
		return nil, err
	}
	pu, err := s.store.PushGet(ctx, j.ProjectID, j.PushID)
	if err != nil {
		return nil, fmt.Errorf("job %s: revision %s: %w", j.ID, j.PushID, err)
	}
	var m manifest.Manifest
	if err := json.Unmarshal(pu.Manifest, &m); err != nil {
		return nil, fmt.Errorf("job %s: manifest of %s: %w", j.ID, pu.ID, err)
	}
	rs := &RunSpec{Job: j, Request: sub, ImageDigest: pu.ImageDigest, Command: sub.RunnerCommand,
		Cwd: m.Runtime.Workdir, Env: map[string]string{}, DataSources: m.DataSources, CacheMounts: m.CacheMounts}
	if len(rs.Command) == 0 {
		rs.Command = m.Entrypoint.Command
	}
	for k, v := range m.Entrypoint.Env {
		rs.Env[k] = v
	}
	if len(m.CacheMounts) > 0 {
		if rs.CacheEpoch, err = s.store.ProjectCacheEpoch(ctx, j.ProjectID); err != nil && err != store.ErrNotFound {
			return nil, fmt.Errorf("cache epoch of project %s: %w", j.ProjectID, err)
		}
	}
	p, err := s.store.ProjectGetByID(ctx, j.ProjectID)
	switch {
	case err == nil && len(p.Env) > 0:
		var env map[string]string
		if err := json.Unmarshal(p.Env, &env); err != nil {
			return nil, fmt.Errorf("project %s env: %w", p.ID, err)
		}
		for k, v := range env {
			rs.Env[k] = v
		}
	case err != nil && err != store.ErrNotFound:
		return nil, fmt.Errorf("project of job %s: %w", j.ID, err)
	}
	return rs, nil
}
