package cli

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/internal/agent/datasrc"
)

// dataFlags configure how hosts fetch the manifests' data sources and keep
// their cache mounts.
type dataFlags struct {
	hubEndpoint   string
	hubTokenFile  string
	hubTokenRepos string
	cacheGB       float64
	allowPrivate  bool
	cacheMountsGB float64
	imageCacheGB  float64
}

// DefaultImageCacheGB bounds a host's image and input caches: a few dozen
// revisions' images, without filling a disk lent for tasks.
const DefaultImageCacheGB = 20

func (d *dataFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.hubEndpoint, "huggingface-endpoint", datasrc.DefaultHubEndpoint, "base URL of the Hugging Face hub, or of a mirror, for huggingface data sources (as HF_ENDPOINT for the hub's clients) (env SKIFF_HUGGINGFACE_ENDPOINT)")
	fs.StringVar(&d.hubTokenFile, "huggingface-token-file", "", "file holding the operator's Hugging Face token, sent to --huggingface-endpoint only for the repos of --huggingface-token-repos; never logged (env SKIFF_HUGGINGFACE_TOKEN_FILE)")
	fs.StringVar(&d.hubTokenRepos, "huggingface-token-repos", "", "comma-separated repos (org/name, or patterns such as org/*) that --huggingface-token-file's token may fetch; any other repo is fetched with the tenant's own token (its project env, HF_TOKEN by default) or none. Empty: the token is used for no repo (env SKIFF_HUGGINGFACE_TOKEN_REPOS)")
	fs.Float64Var(&d.cacheGB, "data-source-cache-gb", 0, "GiB of fetched data sources a host keeps; past it, least recently used sources no task holds are removed (0: no cap) (env SKIFF_DATA_SOURCE_CACHE_GB)")
	fs.BoolVar(&d.allowPrivate, "data-source-allow-private", false, "let data sources download from loopback, link-local or private addresses (env SKIFF_DATA_SOURCE_ALLOW_PRIVATE)")
	fs.Float64Var(&d.imageCacheGB, "image-cache-gb", DefaultImageCacheGB, "GiB of unpacked images and artifact inputs a host keeps cached; past it, the least recently used no running task uses are removed (0: no cap) (env SKIFF_IMAGE_CACHE_GB)")
	fs.Float64Var(&d.cacheMountsGB, "cache-mounts-gb", 0, "GiB of cache mounts a host keeps; past it, least recently used caches no task holds are removed whole (0: no cap) (env SKIFF_CACHE_MOUNTS_GB)")
}

func (d *dataFlags) validate() error {
	if d.cacheGB < 0 || d.cacheMountsGB < 0 || d.imageCacheGB < 0 {
		return errors.New("--data-source-cache-gb, --cache-mounts-gb and --image-cache-gb must not be negative")
	}
	return nil
}

// config is the data-source cache's configuration, less its Root and
// Logger: the operator's hub token read from its file, and the repos it is
// for checked.
func (d *dataFlags) config(log *slog.Logger) (datasrc.Config, error) {
	var token string
	if d.hubTokenFile != "" {
		b, err := os.ReadFile(d.hubTokenFile)
		if err != nil {
			// The error names the file, never its content.
			return datasrc.Config{}, fmt.Errorf("--huggingface-token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	repos := splitList(d.hubTokenRepos)
	for _, r := range repos {
		if _, err := path.Match(r, ""); err != nil {
			return datasrc.Config{}, fmt.Errorf("--huggingface-token-repos: %q is not a repo or pattern", r)
		}
	}
	if token != "" && len(repos) == 0 {
		log.Warn("--huggingface-token-file is set without --huggingface-token-repos: the operator's token is used for no repo")
	}
	return datasrc.Config{HubEndpoint: d.hubEndpoint, HubToken: token, HubTokenRepos: repos,
		AllowPrivate: d.allowPrivate, MaxBytes: gib(d.cacheGB)}, nil
}

// cache opens the host's data-source cache under root.
func (d *dataFlags) cache(root string, log *slog.Logger) (*datasrc.Cache, error) {
	cfg, err := d.config(log)
	if err != nil {
		return nil, err
	}
	cfg.Root, cfg.Logger = filepath.Clean(root), log
	return datasrc.New(cfg)
}

func gib(v float64) int64 { return int64(v * (1 << 30)) }
