package cli

import (
	"flag"

	"github.com/skiffhq/skiff/internal/server"
)

func registerData(fs *flag.FlagSet, d *server.DataConfig) {
	fs.StringVar(&d.HubEndpoint, "huggingface-endpoint", d.HubEndpoint, "base URL of the Hugging Face hub, or of a mirror, for huggingface data sources (as HF_ENDPOINT for the hub's clients) (env SKIFF_HUGGINGFACE_ENDPOINT)")
	fs.StringVar(&d.HubTokenFile, "huggingface-token-file", d.HubTokenFile, "file holding the operator's Hugging Face token, sent to --huggingface-endpoint only for the repos of --huggingface-token-repos; never logged (env SKIFF_HUGGINGFACE_TOKEN_FILE)")
	fs.StringVar(&d.HubTokenRepos, "huggingface-token-repos", d.HubTokenRepos, "comma-separated repos (org/name, or patterns such as org/*) that --huggingface-token-file's token may fetch; any other repo is fetched with the tenant's own token (its project env, HF_TOKEN by default) or none. Empty: the token is used for no repo (env SKIFF_HUGGINGFACE_TOKEN_REPOS)")
	fs.Float64Var(&d.CacheGB, "data-source-cache-gb", d.CacheGB, "GiB of fetched data sources a host keeps; past it, least recently used sources no task holds are removed (0: no cap) (env SKIFF_DATA_SOURCE_CACHE_GB)")
	fs.BoolVar(&d.AllowPrivate, "data-source-allow-private", d.AllowPrivate, "let data sources download from loopback, link-local or private addresses (env SKIFF_DATA_SOURCE_ALLOW_PRIVATE)")
	fs.Float64Var(&d.CacheMountsGB, "cache-mounts-gb", d.CacheMountsGB, "GiB of cache mounts a host keeps; past it, least recently used caches no task holds are removed whole (0: no cap) (env SKIFF_CACHE_MOUNTS_GB)")
}
