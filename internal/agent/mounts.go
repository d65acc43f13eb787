package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// DataSources fetches a revision's data sources onto the host
// (datasrc.Cache implements it over HTTP).
type DataSources interface {
	// Acquire returns the host path of ds's content, a file or a
	// directory, fetching it if the host lacks it, and holds it until
	// release is called.
	Acquire(ctx context.Context, ds agentproto.DataSource) (path string, release func(), err error)
}

// mounts fetches the assignment's data sources and places its cache
// mounts, creating their mount points in the image root (which the
// sandbox mounts read-only). An error is a host error: the attempt is
// requeued free, and fails with this message once the requeues run out.
func (at *attempt) mounts(ctx context.Context, rootfs string) ([]sandbox.Mount, func(), error) {
	asg := &at.asg
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	var out []sandbox.Mount
	for _, ds := range asg.DataSources {
		if at.a.cfg.DataSources == nil {
			release()
			return nil, nil, fmt.Errorf("data source %q: this host cannot fetch data sources", ds.Name)
		}
		if ds.Account == "" {
			ds.Account = at.tenant()
		}
		src, rel, err := at.a.cfg.DataSources.Acquire(ctx, ds)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("data source %q: %w", ds.Name, err)
		}
		releases = append(releases, rel)
		info, err := os.Stat(src)
		if err == nil {
			err = ensureMountPoint(rootfs, ds.MountPath, info.IsDir())
		}
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("data source %q: mount at %s: %w", ds.Name, ds.MountPath, err)
		}
		out = append(out, sandbox.Mount{Source: src, Destination: ds.MountPath, ReadOnly: true})
	}
	for _, cm := range asg.CacheMounts {
		src, err := at.a.cacheMounts.dir(ctx, asg.ProjectID, cm.Epoch, cm.Name)
		if err == nil {
			err = ensureMountPoint(rootfs, cm.Path, true)
		}
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("cache mount %q: %w", cm.Name, err)
		}
		seed := ""
		if cm.Seed != "" {
			if seed, err = at.a.seedPath(cm.Seed); err != nil {
				release()
				return nil, nil, fmt.Errorf("cache mount %q: %w", cm.Name, err)
			}
		}
		releases = append(releases, at.a.cacheMounts.hold(src))
		out = append(out, sandbox.Mount{Source: src, Destination: cm.Path, Seed: seed, Bounded: at.a.cacheMounts.bounded()})
	}
	return out, release, nil
}

// ensureMountPoint creates dir (or an empty file) at the absolute path p
// inside rootfs unless it is there, the way ensureDir makes the working
// directory: os.Root keeps it inside the root whatever links the image
// holds.
func ensureMountPoint(rootfs, p string, dir bool) error {
	rel := strings.TrimPrefix(filepath.Clean("/"+p), "/")
	if dir {
		return ensureDir(rootfs, p)
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return err
	}
	defer root.Close()
	if parent := filepath.Dir(rel); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	info, err := root.Lstat(rel)
	switch {
	case err == nil && info.Mode().IsRegular():
		return nil
	case err == nil:
		return fmt.Errorf("the image has a %s there, not a file", info.Mode().Type())
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE, 0o444)
	if err != nil {
		return err
	}
	return f.Close()
}

// tenant names whose the host's cached inputs and data sources of this
// attempt are: its account, or, from a controller older than protocol 6
// that does not say, its project (which belongs to one account).
func (at *attempt) tenant() string {
	if at.asg.AccountID != "" {
		return at.asg.AccountID
	}
	return "project:" + at.asg.ProjectID
}

// seedPath is seed resolved, if it lies under the host's seed root: a
// controller names the directory a cache mount is seeded from, and a host
// copies it into the task's cache; anything outside the root (the host's
// /etc, another tenant's files, the controller's image store) is refused,
// links followed.
func (a *Agent) seedPath(seed string) (string, error) {
	if a.cfg.SeedRoot == "" {
		return "", fmt.Errorf("seed %s refused: this host takes no cache seeds", seed)
	}
	root, err := filepath.EvalSymlinks(a.cfg.SeedRoot)
	if err != nil {
		return "", fmt.Errorf("seed root: %w", err)
	}
	if !filepath.IsAbs(seed) {
		return "", fmt.Errorf("seed %s refused: not an absolute path", seed)
	}
	real, err := filepath.EvalSymlinks(seed)
	if err != nil {
		return "", fmt.Errorf("seed %s: %w", seed, err)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("seed %s refused: not under this host's seeds directory %s", seed, a.cfg.SeedRoot)
	}
	return real, nil
}
