// Package datasrc fetches a revision's data sources (manifest
// data_sources) onto a host and keeps them there, content-addressed, for
// every task that mounts them: a url source is one file, a huggingface
// source a directory of the repo's files at a pinned commit. It is the
// adapter behind agent.DataSources: it speaks HTTP(S) to the source.
//
// On disk, under Config.Root:
//
//	entries/<key>/data   a complete source (read-only file or directory)
//	partial/<key>...     bytes of an unfinished download, resumed by Range
//	tmp/                 entries being assembled, renamed into entries/
//
// An entry appears by one rename, so a task never sees half a source. The
// key is a digest of the account the source is fetched for and of what
// names the content: its sha256 when the manifest gives it, otherwise the
// URL, or the endpoint, repo, commit and include patterns, which a pinned
// commit makes immutable too.
//
// Entries are per account, never shared between accounts. A digest in a
// manifest is a claim, not proof of holding the bytes: keyed by sha256
// alone, a tenant naming another tenant's digest on a URL it cannot read
// would be handed that tenant's bytes without a download. Keyed per
// account, an account's first use of any content is a real download,
// checked; a hub repo fetched with one tenant's token is likewise never
// served to another. The cost is one copy per account that uses a source
// on a host, bounded by MaxBytes like the rest.
//
// The whole tree is mode 0700: only the host (root) reads it; tasks see an
// entry through their sandbox's read-only mount.
package datasrc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
)

// Defaults filled in by New.
const (
	DefaultHubEndpoint = "https://huggingface.co"
	DefaultTries       = 4
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 30 * time.Second
	// DefaultIdleTimeout ends a download whose server sends nothing for
	// this long (it is then retried, resuming where it stopped).
	DefaultIdleTimeout = time.Minute
	// DefaultFetchTimeout bounds a whole source's fetch, all its files
	// and tries included, so that a server trickling bytes just inside the
	// idle timeout cannot hold a host's slot for ever.
	DefaultFetchTimeout = 6 * time.Hour
)

// Config configures a Cache.
type Config struct {
	// Root holds the cache (see the package comment); created if missing.
	Root string
	// HubEndpoint is the Hugging Face hub's base URL, or a mirror's (as
	// HF_ENDPOINT is for the hub's own clients).
	HubEndpoint string
	// HubToken, the operator's, when set, is sent as a bearer token to
	// HubEndpoint only (redirects to another host drop it), and only for
	// the repos HubTokenRepos matches: a tenant naming any other repo
	// fetches it with its own token (DataSource.Token) or none. It is
	// never logged.
	HubToken string
	// HubTokenRepos are the repos the operator's token is for: repo ids
	// ("org/name") or path.Match patterns ("org/*"). Empty: none.
	HubTokenRepos []string
	// AllowPrivate lets downloads reach loopback, link-local and private
	// addresses; without it they are refused, as for external artifacts.
	AllowPrivate bool
	// MaxBytes caps the cache: after a fetch, least recently used sources
	// that no task holds are removed until the rest fit. 0: no cap.
	MaxBytes int64
	// Tries is how many times a download is attempted (resuming after the
	// first) before the source fails; MinBackoff and MaxBackoff bound the
	// exponential wait between tries.
	Tries                  int
	MinBackoff, MaxBackoff time.Duration
	IdleTimeout            time.Duration
	// FetchTimeout bounds one source's whole fetch (DefaultFetchTimeout
	// when 0).
	FetchTimeout time.Duration
	// Client is used as it is when set (tests give one trusting their CA);
	// nil builds one whose dialer enforces AllowPrivate.
	Client *http.Client
	Logger *slog.Logger
}

// Cache is a host's data-source cache. It is safe for concurrent use; one
// source is fetched once however many tasks ask for it at the same time.
type Cache struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger

	mu      sync.Mutex
	inUse   map[string]int          // key -> tasks holding it
	pending map[string]*fetchResult // key -> fetch in progress
}

type fetchResult struct {
	done chan struct{}
	err  error
}

// New returns a cache over cfg.Root.
func New(cfg Config) (*Cache, error) {
	if !filepath.IsAbs(cfg.Root) {
		return nil, fmt.Errorf("data source cache root %q: must be absolute", cfg.Root)
	}
	if cfg.HubEndpoint == "" {
		cfg.HubEndpoint = DefaultHubEndpoint
	}
	cfg.HubEndpoint = strings.TrimRight(cfg.HubEndpoint, "/")
	if !strings.HasPrefix(cfg.HubEndpoint, "https://") && !strings.HasPrefix(cfg.HubEndpoint, "http://") {
		return nil, fmt.Errorf("hub endpoint %q: want an http(s) URL", cfg.HubEndpoint)
	}
	if cfg.Tries <= 0 {
		cfg.Tries = DefaultTries
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = DefaultFetchTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, dir := range []string{"", "entries", "partial", "tmp"} {
		p := filepath.Join(cfg.Root, dir)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, fmt.Errorf("create data source cache: %w", err)
		}
		// An older host made these 0755; MkdirAll leaves a directory's
		// mode as it finds it.
		if err := os.Chmod(p, 0o700); err != nil {
			return nil, fmt.Errorf("data source cache: %w", err)
		}
	}
	// What a crash left half-assembled is of no use; partial downloads
	// are kept and resumed.
	if err := clearDir(filepath.Join(cfg.Root, "tmp")); err != nil {
		return nil, err
	}
	c := &Cache{cfg: cfg, client: cfg.Client, log: cfg.Logger, inUse: map[string]int{}, pending: map[string]*fetchResult{}}
	if c.client == nil {
		c.client = newClient(cfg.AllowPrivate)
	} else {
		// A given client (a test's, trusting its CA) keeps the rule on
		// redirects that drop from https to http.
		cl := *c.client
		cl.CheckRedirect = checkRedirect
		c.client = &cl
	}
	return c, nil
}

// Acquire returns the host path of ds's content (a file for url, a
// directory for huggingface), fetching it first if this host lacks it,
// and holds it against eviction until release is called.
func (c *Cache) Acquire(ctx context.Context, ds agentproto.DataSource) (string, func(), error) {
	key, err := c.key(ds)
	if err != nil {
		return "", nil, err
	}
	data := filepath.Join(c.cfg.Root, "entries", key, "data")
	for {
		c.mu.Lock()
		if _, err := os.Lstat(data); err == nil {
			c.inUse[key]++
			c.mu.Unlock()
			// The entry's time is its last use, for eviction.
			now := time.Now()
			_ = os.Chtimes(filepath.Dir(data), now, now)
			return data, c.releaser(key), nil
		}
		if p := c.pending[key]; p != nil {
			c.mu.Unlock()
			select {
			case <-p.done:
			case <-ctx.Done():
				return "", nil, ctx.Err()
			}
			// A fetch stopped by its own caller's cancellation is
			// taken over by the next caller; any other failure is
			// everyone's.
			if p.err != nil && (ctx.Err() != nil || !errors.Is(p.err, context.Canceled)) {
				return "", nil, p.err
			}
			continue
		}
		p := &fetchResult{done: make(chan struct{})}
		c.pending[key] = p
		c.mu.Unlock()

		start := time.Now()
		p.err = c.fetch(ctx, ds, key)
		if p.err == nil {
			c.log.Info("data source fetched", "name", ds.Name, "source", ds.Source, "key", key,
				"seconds", time.Since(start).Seconds())
		}
		c.mu.Lock()
		delete(c.pending, key)
		close(p.done)
		c.mu.Unlock()
		if p.err != nil {
			return "", nil, p.err
		}
		c.evict(key)
	}
}

func (c *Cache) releaser(key string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.inUse[key]--; c.inUse[key] <= 0 {
				delete(c.inUse, key)
			}
		})
	}
}

// key names ds's entry: the account's own (see the package comment).
func (c *Cache) key(ds agentproto.DataSource) (string, error) {
	if ds.Account == "" {
		// Without an account the entry would be shared by every tenant.
		return "", fmt.Errorf("data source %q: no account named; the controller is older than this host (protocol 6)", ds.Name)
	}
	switch ds.Source {
	case agentproto.DataSourceURL:
		if ds.SHA256 != "" {
			return "sha256-" + digest(ds.Account, ds.SHA256), nil
		}
		return "url-" + digest(ds.Account, ds.URI), nil
	case agentproto.DataSourceHuggingFace:
		include := slices.Clone(ds.Include)
		slices.Sort(include)
		return "hf-" + digest(ds.Account, c.cfg.HubEndpoint, ds.RepoType, ds.Repo, ds.Revision, strings.Join(include, "\x00")), nil
	}
	return "", fmt.Errorf("data source %q: unknown source %q", ds.Name, ds.Source)
}

// hubToken is the token sent to the hub for ds: the tenant's own, else the
// operator's for a repo on the operator's list, else none.
func (c *Cache) hubToken(ds agentproto.DataSource) string {
	if ds.Token != "" {
		return ds.Token
	}
	if c.cfg.HubToken != "" && OperatorRepo(c.cfg.HubTokenRepos, ds.Repo) {
		return c.cfg.HubToken
	}
	return ""
}

// OperatorRepo reports whether repo is on the operator's list: a pattern
// that names it or matches it as path.Match does ("org/*").
func OperatorRepo(list []string, repo string) bool {
	for _, p := range list {
		if ok, _ := path.Match(p, repo); ok || p == repo {
			return true
		}
	}
	return false
}

// fetch downloads ds into a fresh directory and renames it into entries/.
func (c *Cache) fetch(ctx context.Context, ds agentproto.DataSource, key string) error {
	tmp := filepath.Join(c.cfg.Root, "tmp", key+"-"+strings.ToLower(rand.Text()[:8]))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	data := filepath.Join(tmp, "data")
	partial := filepath.Join(c.cfg.Root, "partial", key)
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.FetchTimeout,
		permanent("data source %q was not fetched within %s", ds.Name, c.cfg.FetchTimeout))
	defer cancel()
	var err error
	switch ds.Source {
	case agentproto.DataSourceURL:
		err = c.fetchURL(ctx, ds, partial, data)
	case agentproto.DataSourceHuggingFace:
		err = c.fetchHub(ctx, ds, partial, data)
	}
	if err != nil {
		return err
	}
	if err := readOnly(data); err != nil {
		return err
	}
	entry := filepath.Join(c.cfg.Root, "entries", key)
	if err := os.Rename(tmp, entry); err != nil {
		return fmt.Errorf("store data source: %w", err)
	}
	_ = os.RemoveAll(partial)
	return nil
}

// evict removes least recently used entries nobody holds until the cache
// fits MaxBytes; keep (just fetched) stays whatever its size.
func (c *Cache) evict(keep string) {
	if c.cfg.MaxBytes <= 0 {
		return
	}
	type entry struct {
		key  string
		used time.Time
		size int64
	}
	dir := filepath.Join(c.cfg.Root, "entries")
	list, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var entries []entry
	var total int64
	for _, d := range list {
		info, err := d.Info()
		if err != nil {
			continue
		}
		size := treeSize(filepath.Join(dir, d.Name()))
		total += size
		entries = append(entries, entry{d.Name(), info.ModTime(), size})
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range entries {
		if total <= c.cfg.MaxBytes {
			return
		}
		c.mu.Lock()
		held := c.inUse[e.key] > 0 || c.pending[e.key] != nil || e.key == keep
		var trash string
		if !held {
			// Out of entries/ under the lock, so that no Acquire finds
			// it half removed.
			trash = filepath.Join(c.cfg.Root, "tmp", e.key+"-evicted-"+strings.ToLower(rand.Text()[:8]))
			if os.Rename(filepath.Join(dir, e.key), trash) != nil {
				trash = ""
			}
		}
		c.mu.Unlock()
		if trash != "" {
			_ = makeWritable(trash)
			_ = os.RemoveAll(trash)
			total -= e.size
			c.log.Info("data source evicted", "key", e.key, "bytes", e.size)
		}
	}
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func treeSize(root string) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// readOnly makes a fetched tree read-only to everyone and readable by the
// sandboxed runner (nobody), which is not its owner.
func readOnly(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o444)
		if d.IsDir() {
			mode = 0o555
		}
		return os.Chmod(p, mode)
	})
}

// makeWritable undoes readOnly's directory modes so a tree can be removed.
func makeWritable(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

func clearDir(dir string) error {
	list, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, d := range list {
		p := filepath.Join(dir, d.Name())
		_ = makeWritable(p)
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}
