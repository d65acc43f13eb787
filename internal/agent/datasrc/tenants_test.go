package datasrc_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/agent/datasrc"
	"github.com/skiffhq/skiff/internal/agent/datasrc/datasrctest"
	"github.com/skiffhq/skiff/internal/agentproto"
)

// A source fetched for one account is never handed to another: an account
// naming the same sha256 on a URL of its own gets what that URL serves,
// checked (here: other bytes, a mismatch), not the cached bytes; one naming
// the same URL and digest downloads it again into its own entry.
func TestSourcesAreKeptPerAccount(t *testing.T) {
	t.Parallel()
	srv := datasrctest.Start(t)
	secret := []byte("account A's private weights")
	srv.Files["/a.bin"] = secret
	srv.Files["/b.bin"] = []byte("whatever B serves")
	c, root := newCache(t, srv, nil)

	a := urlSource(srv, "/a.bin", sha(secret))
	pathA, release, err := c.Acquire(t.Context(), a)
	if err != nil {
		t.Fatalf("A: %v", err)
	}
	release()

	b := urlSource(srv, "/b.bin", sha(secret))
	b.Account = "acct_b"
	if p, _, err := c.Acquire(t.Context(), b); err == nil {
		got, _ := os.ReadFile(p)
		t.Fatalf("B naming A's digest on its own URL got %q, want a sha256 mismatch", got)
	} else if !strings.Contains(err.Error(), "sha256 is") {
		t.Fatalf("B: %v, want a sha256 mismatch", err)
	}
	same := a
	same.Account = "acct_b"
	pathB, release, err := c.Acquire(t.Context(), same)
	if err != nil {
		t.Fatalf("B with A's URL: %v", err)
	}
	release()
	srv.Mu.Lock()
	n := srv.Requests["/a.bin"]
	srv.Mu.Unlock()
	if pathA == pathB || n != 2 {
		t.Errorf("B's entry %s, A's %s, %d downloads of /a.bin; want two entries and two downloads", pathB, pathA, n)
	}
	if _, _, err := c.Acquire(t.Context(), agentproto.DataSource{Name: "x", Source: agentproto.DataSourceURL, URI: srv.URL + "/a.bin"}); err == nil {
		t.Error("a source without an account: fetched, want refused (its entry would be everyone's)")
	}
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache root: %v %v, want mode 0700", fi, err)
	}
}

// The operator's token goes only to the repos on the operator's list; a
// tenant's own token goes with its own sources; any other repo is fetched
// without a token.
func TestHubTokens(t *testing.T) {
	t.Parallel()
	srv := datasrctest.Start(t)
	files := []datasrctest.File{{Path: "config.json", Content: []byte(`{}`)}}
	for _, repo := range []string{"operator/model", "someone/private", "tenant/own"} {
		srv.Repos[datasrctest.RepoKey("model", repo, commit)] = files
	}
	c, _ := newCache(t, srv, func(cfg *datasrc.Config) {
		cfg.HubToken, cfg.HubTokenRepos = "hf_operator", []string{"operator/*"}
	})
	fetch := func(repo, token string) []string {
		t.Helper()
		srv.Mu.Lock()
		srv.AuthSeen = nil
		srv.Mu.Unlock()
		ds := agentproto.DataSource{Name: "m", Source: agentproto.DataSourceHuggingFace, Repo: repo, RepoType: "model",
			Revision: commit, Account: "acct_t", Token: token}
		if _, release, err := c.Acquire(t.Context(), ds); err != nil {
			t.Fatalf("%s: %v", repo, err)
		} else {
			release()
		}
		srv.Mu.Lock()
		defer srv.Mu.Unlock()
		return slices.Clone(srv.AuthSeen)
	}
	if seen := fetch("operator/model", ""); !slices.Contains(seen, "Bearer hf_operator") {
		t.Errorf("listed repo: the hub saw %q, want the operator's token", seen)
	}
	if seen := fetch("someone/private", ""); slices.ContainsFunc(seen, func(s string) bool { return s != "" }) {
		t.Errorf("a repo off the list: the hub saw %q, want no token", seen)
	}
	if seen := fetch("tenant/own", "hf_tenant"); !slices.Contains(seen, "Bearer hf_tenant") || slices.Contains(seen, "Bearer hf_operator") {
		t.Errorf("the tenant's token: the hub saw %q, want the tenant's only", seen)
	}
	if !datasrc.OperatorRepo([]string{"org/*"}, "org/x") || datasrc.OperatorRepo([]string{"org/*"}, "other/x") || datasrc.OperatorRepo(nil, "org/x") {
		t.Error("OperatorRepo: patterns match wrongly")
	}
}

// A download redirected from https to plain http is refused unless its
// sha256 is declared (and then checked).
func TestRedirectToHTTPNeedsADigest(t *testing.T) {
	t.Parallel()
	srv := datasrctest.Start(t)
	content := []byte("served over plain http")
	srv.Files["/w.bin"] = content
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(tlsSrv.Close)
	c, _ := newCache(t, srv, func(cfg *datasrc.Config) { cfg.Client = tlsSrv.Client() })

	ds := agentproto.DataSource{Name: "w", Source: agentproto.DataSourceURL, URI: tlsSrv.URL + "/w.bin", Account: "acct_a"}
	if _, _, err := c.Acquire(t.Context(), ds); err == nil || !strings.Contains(err.Error(), "redirect from https to plain http") {
		t.Fatalf("no digest: %v, want the redirect refused", err)
	}
	ds.SHA256 = sha(content)
	p, release, err := c.Acquire(t.Context(), ds)
	if err != nil {
		t.Fatalf("with a digest: %v", err)
	}
	release()
	if got, _ := os.ReadFile(p); string(got) != string(content) {
		t.Errorf("with a digest: got %q", got)
	}
}
