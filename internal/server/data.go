package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/internal/agent/datasrc"
	"github.com/skiffhq/skiff/internal/store"
)

// DataConfig configure how hosts fetch the manifests' data sources and keep
// their cache mounts.
type DataConfig struct {
	HubEndpoint   string
	HubTokenFile  string
	HubTokenRepos string
	CacheGB       float64
	AllowPrivate  bool
	CacheMountsGB float64
}

func (d *DataConfig) Validate() error {
	if d.CacheGB < 0 || d.CacheMountsGB < 0 {
		return errors.New("--data-source-cache-gb and --cache-mounts-gb must not be negative")
	}
	return nil
}

// Cache opens the host's data-source Cache under root.
func (d *DataConfig) Cache(root string, log *slog.Logger) (*datasrc.Cache, error) {
	var token string
	if d.HubTokenFile != "" {
		b, err := os.ReadFile(d.HubTokenFile)
		if err != nil {
			// The error names the file, never its content.
			return nil, fmt.Errorf("--huggingface-token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	repos := SplitList(d.HubTokenRepos)
	for _, r := range repos {
		if _, err := path.Match(r, ""); err != nil {
			return nil, fmt.Errorf("--huggingface-token-repos: %q is not a repo or pattern", r)
		}
	}
	if token != "" && len(repos) == 0 {
		log.Warn("--huggingface-token-file is set without --huggingface-token-repos: the operator's token is used for no repo")
	}
	return datasrc.New(datasrc.Config{Root: filepath.Clean(root), HubEndpoint: d.HubEndpoint, HubToken: token, HubTokenRepos: repos,
		AllowPrivate: d.AllowPrivate, MaxBytes: GiB(d.CacheGB), Logger: log})
}

func GiB(v float64) int64 { return int64(v * (1 << 30)) }

// projectEnv reads a project's env from the store, for the tenant's own hub
// token when the local host prepares a revision's data sources.
func projectEnv(db store.Store) func(ctx context.Context, projectID string) (map[string]string, error) {
	return func(ctx context.Context, projectID string) (map[string]string, error) {
		p, err := db.ProjectGetByID(ctx, projectID)
		if err != nil || len(p.Env) == 0 {
			return nil, err
		}
		var env map[string]string
		if err := json.Unmarshal(p.Env, &env); err != nil {
			return nil, fmt.Errorf("project %s env: %w", projectID, err)
		}
		return env, nil
	}
}
