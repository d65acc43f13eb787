package datasrc

import (
	"context"
	"crypto/sha1" //nolint:gosec // git names blobs by SHA-1; it is what the hub reports for non-LFS files
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
)

// hubFile is one entry of the hub's tree listing
// (GET {endpoint}/api/{type}s/{repo}/tree/{revision}?recursive=true): a
// file's git blob id and size, and for a file stored in LFS its sha256 and
// size.
type hubFile struct {
	Type string `json:"type"` // "file" or "directory"
	Path string `json:"path"`
	Oid  string `json:"oid"`
	Size int64  `json:"size"`
	LFS  *struct {
		Oid  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// maxListingBytes bounds one page of the tree listing.
const maxListingBytes = 64 << 20

// fetchHub downloads the files of ds's repo at its commit that its include
// patterns select into the directory data, in the repo's layout, checking
// each against the size and hash the hub lists.
func (c *Cache) fetchHub(ctx context.Context, ds agentproto.DataSource, partial, data string) error {
	where := fmt.Sprintf("%s %s at %s", repoTypeOr(ds.RepoType), ds.Repo, ds.Revision)
	files, err := c.hubList(ctx, ds)
	if err != nil {
		return fmt.Errorf("list the files of %s: %w", where, err)
	}
	var selected []hubFile
	for _, f := range files {
		if f.Type == "file" && included(ds.Include, f.Path) {
			selected = append(selected, f)
		}
	}
	if len(selected) == 0 {
		return permanent("%s has no file that include %q selects", where, ds.Include)
	}
	if err := os.Mkdir(data, 0o755); err != nil {
		return err
	}
	for _, f := range selected {
		if !safeRepoPath(f.Path) {
			return permanent("%s lists a file path %q that is not a plain relative path", where, f.Path)
		}
		part := filepath.Join(partial, filepath.FromSlash(f.Path))
		fctx := ctx
		if f.LFS != nil {
			fctx = withDigest(ctx) // its sha256 is checked (checkHubFile)
		}
		if err := c.download(fctx, c.resolveURL(ds, f.Path), c.hubToken(ds), part, f.declaredSize()); err != nil {
			return fmt.Errorf("download %s of %s: %w", f.Path, where, err)
		}
		if err := checkHubFile(part, f); err != nil {
			_ = os.Remove(part)
			return fmt.Errorf("%s of %s: %w", f.Path, where, err)
		}
		dst := filepath.Join(data, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(part, dst); err != nil {
			return err
		}
	}
	return nil
}

// hubList reads the recursive tree listing, following the Link header's
// next pages.
func (c *Cache) hubList(ctx context.Context, ds agentproto.DataSource) ([]hubFile, error) {
	next := fmt.Sprintf("%s/api/%ss/%s/tree/%s?recursive=true", c.cfg.HubEndpoint, repoTypeOr(ds.RepoType),
		ds.Repo, url.PathEscape(ds.Revision))
	var all []hubFile
	for page := 0; next != ""; page++ {
		if page > 10_000 {
			return nil, permanent("the listing has more than 10,000 pages")
		}
		var files []hubFile
		var err error
		for try := 1; ; try++ {
			files, next, err = c.hubListPage(ctx, next, c.hubToken(ds))
			if err == nil || try >= c.cfg.Tries || ctx.Err() != nil {
				break
			}
			if isPermanent(err) {
				break
			}
			if werr := sleepCtx(ctx, c.backoff(try)); werr != nil {
				return nil, werr
			}
		}
		if err != nil {
			return nil, err
		}
		all = append(all, files...)
	}
	return all, nil
}

func (c *Cache) hubListPage(ctx context.Context, pageURL, token string) ([]hubFile, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pageURL, nil)
	if err != nil {
		return nil, "", permanent("%v", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, "", fmt.Errorf("%s answered %d", hostOf(pageURL), resp.StatusCode)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, "", permanent("%s answered %d: the repo is private or gated; give the source your own hub token (data_sources[].token_env names the project env variable holding it, HF_TOKEN by default)", hostOf(pageURL), resp.StatusCode)
	case resp.StatusCode == http.StatusNotFound:
		return nil, "", permanent("%s answered 404: no such repo or commit", hostOf(pageURL))
	case resp.StatusCode != http.StatusOK:
		return nil, "", permanent("%s answered %d", hostOf(pageURL), resp.StatusCode)
	}
	var files []hubFile
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListingBytes)).Decode(&files); err != nil {
		return nil, "", fmt.Errorf("decode the listing of %s: %w", hostOf(pageURL), err)
	}
	next := nextLink(resp.Header.Get("Link"))
	if next != "" {
		// A relative next page is resolved against the page; another
		// host is not followed (it would receive the token).
		base, _ := url.Parse(pageURL)
		u, err := base.Parse(next)
		if err != nil || u.Host != base.Host {
			return nil, "", permanent("the listing's next page %q is not on %s", next, base.Host)
		}
		next = u.String()
	}
	return files, next, nil
}

// resolveURL is where the hub serves one file of the repo at the commit.
func (c *Cache) resolveURL(ds agentproto.DataSource, file string) string {
	prefix := ""
	if ds.RepoType == "dataset" {
		prefix = "/datasets"
	}
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return fmt.Sprintf("%s%s/%s/resolve/%s/%s", c.cfg.HubEndpoint, prefix, ds.Repo, url.PathEscape(ds.Revision), strings.Join(segs, "/"))
}

// checkHubFile compares a downloaded file with its listing: an LFS file's
// size and sha256, any other file's size and git blob id.
// declaredSize is the size the hub lists for f (its LFS object's for a
// file stored in LFS), which its download may not pass.
func (f hubFile) declaredSize() int64 {
	if f.LFS != nil && f.LFS.Size > 0 {
		return f.LFS.Size
	}
	return f.Size
}

func checkHubFile(p string, f hubFile) error {
	size, oid, kind := f.Size, f.Oid, "git blob id"
	var h hash.Hash
	if f.LFS != nil {
		size, oid, kind = f.LFS.Size, f.LFS.Oid, "sha256"
		h = sha256.New()
	} else {
		h = sha1.New() //nolint:gosec // see the import
		h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	}
	file, err := os.Open(p)
	if err != nil {
		return err
	}
	defer file.Close()
	n, err := io.Copy(h, file)
	if err != nil {
		return err
	}
	if n != size {
		return permanent("the hub lists %d bytes, the download has %d", size, n)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != oid {
		return permanent("%s is %s, the hub lists %s", kind, got, oid)
	}
	return nil
}

// included reports whether the include patterns select file (all files
// when there are none). A pattern matches the whole path, as path.Match.
func included(patterns []string, file string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, file); ok {
			return true
		}
	}
	return false
}

func safeRepoPath(p string) bool {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.Contains(p, "\x00") || strings.Contains(p, "\\") {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." {
			return false
		}
	}
	return true
}

func repoTypeOr(t string) string {
	if t == "" {
		return "model"
	}
	return t
}

// nextLink is the rel="next" target of a Link header, or "".
func nextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if ok && strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			return strings.Trim(strings.TrimSpace(target), "<>")
		}
	}
	return ""
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
