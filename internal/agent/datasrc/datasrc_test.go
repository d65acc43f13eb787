package datasrc_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent/datasrc"
	"github.com/skiffhq/skiff/internal/agent/datasrc/datasrctest"
	"github.com/skiffhq/skiff/internal/agentproto"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func newCache(t *testing.T, srv *datasrctest.StandIn, mod func(*datasrc.Config)) (*datasrc.Cache, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "data")
	cfg := datasrc.Config{Root: root, HubEndpoint: srv.URL, AllowPrivate: true, MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond, IdleTimeout: 2 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := datasrc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, root
}

func urlSource(srv *datasrctest.StandIn, path, sum string) agentproto.DataSource {
	return agentproto.DataSource{Name: "weights", Source: agentproto.DataSourceURL, URI: srv.URL + path, SHA256: sum, MountPath: "/data/w.bin", Account: "acct_a"}
}

func TestURLSource(t *testing.T) {
	t.Parallel()
	content := []byte(strings.Repeat("weights ", 4096))

	t.Run("fetched once by many tasks, read-only, kept", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Files["/w.bin"] = content
		c, _ := newCache(t, srv, nil)
		ds := urlSource(srv, "/w.bin", sha(content))
		var wg sync.WaitGroup
		paths := make([]string, 20)
		for i := range paths {
			wg.Go(func() {
				p, release, err := c.Acquire(t.Context(), ds)
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				defer release()
				paths[i] = p
			})
		}
		wg.Wait()
		if n := srv.Count("/w.bin"); n != 1 {
			t.Errorf("downloads: got %d, want 1 for 20 tasks", n)
		}
		got, err := os.ReadFile(paths[0])
		if err != nil || string(got) != string(content) {
			t.Fatalf("content: got %d bytes (%v), want %d", len(got), err, len(content))
		}
		if info, _ := os.Stat(paths[0]); info.Mode().Perm() != 0o444 {
			t.Errorf("mode: got %v, want read-only 0444", info.Mode().Perm())
		}
	})

	t.Run("a wrong sha256 fails with both digests and is not retried", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Files["/w.bin"] = content
		c, _ := newCache(t, srv, nil)
		wrong := strings.Repeat("ab", 32)
		_, _, err := c.Acquire(t.Context(), urlSource(srv, "/w.bin", wrong))
		if err == nil || !strings.Contains(err.Error(), "sha256 is "+sha(content)) || !strings.Contains(err.Error(), wrong) {
			t.Fatalf("error: got %v, want one naming the actual and the expected sha256", err)
		}
		if n := srv.Count("/w.bin"); n != 1 {
			t.Errorf("downloads: got %d, want 1 (a mismatch is permanent)", n)
		}
	})

	t.Run("a missing file fails at once", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		c, _ := newCache(t, srv, nil)
		_, _, err := c.Acquire(t.Context(), urlSource(srv, "/nope.bin", ""))
		if err == nil || !strings.Contains(err.Error(), "answered 404") {
			t.Fatalf("error: got %v, want a 404", err)
		}
		if n := srv.Count("/nope.bin"); n != 1 {
			t.Errorf("requests: got %d, want 1", n)
		}
	})

	t.Run("a dropped connection is resumed with a range", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Files["/w.bin"] = content
		srv.DropAfter, srv.Drops = 1000, 1
		c, _ := newCache(t, srv, nil)
		p, release, err := c.Acquire(t.Context(), urlSource(srv, "/w.bin", sha(content)))
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		release()
		if got, _ := os.ReadFile(p); string(got) != string(content) {
			t.Errorf("content after resume: got %d bytes, want %d", len(got), len(content))
		}
		if n := srv.Count("/w.bin"); n != 2 {
			t.Errorf("requests: got %d, want 2 (the drop and the resume)", n)
		}
	})

	t.Run("a stalled server is given up on and retried", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Files["/w.bin"] = content
		srv.Stall, srv.Stalls = time.Minute, 1
		c, _ := newCache(t, srv, func(cfg *datasrc.Config) { cfg.IdleTimeout = 300 * time.Millisecond })
		if _, _, err := c.Acquire(t.Context(), urlSource(srv, "/w.bin", sha(content))); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if n := srv.Count("/w.bin"); n != 2 {
			t.Errorf("requests: got %d, want 2 (the stall and the retry)", n)
		}
	})

	t.Run("a server that keeps failing fails after the tries", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Files["/w.bin"] = content
		srv.Stall, srv.Stalls = time.Minute, 100
		c, _ := newCache(t, srv, func(cfg *datasrc.Config) { cfg.IdleTimeout = 100 * time.Millisecond; cfg.Tries = 3 })
		_, _, err := c.Acquire(t.Context(), urlSource(srv, "/w.bin", sha(content)))
		if err == nil || !strings.Contains(err.Error(), "after 3 tries") {
			t.Fatalf("error: got %v, want a failure after 3 tries", err)
		}
	})

	t.Run("a restart mid-download resumes what the last run left", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Files["/w.bin"] = content
		srv.DropAfter, srv.Drops = 5000, 1
		c, root := newCache(t, srv, func(cfg *datasrc.Config) { cfg.Tries = 1 })
		ds := urlSource(srv, "/w.bin", sha(content))
		if _, _, err := c.Acquire(t.Context(), ds); err == nil {
			t.Fatal("first run: got no error, want the dropped download to fail with one try")
		}
		// The host restarts: a new cache over the same root.
		c2, err := datasrc.New(datasrc.Config{Root: root, HubEndpoint: srv.URL, AllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := c2.Acquire(t.Context(), ds)
		if err != nil {
			t.Fatalf("after restart: %v", err)
		}
		if got, _ := os.ReadFile(p); string(got) != string(content) {
			t.Errorf("content: got %d bytes, want %d", len(got), len(content))
		}
	})

	t.Run("private addresses are refused unless allowed", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Files["/w.bin"] = content
		c, _ := newCache(t, srv, func(cfg *datasrc.Config) { cfg.AllowPrivate = false })
		_, _, err := c.Acquire(t.Context(), urlSource(srv, "/w.bin", sha(content)))
		if err == nil || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "--data-source-allow-private") {
			t.Fatalf("error: got %v, want a refusal of the loopback address", err)
		}
		if n := srv.Count("/w.bin"); n != 0 {
			t.Errorf("requests: got %d, want none", n)
		}
	})

	t.Run("the cap evicts the least recently used source not in use", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		a, b, d := []byte(strings.Repeat("a", 4000)), []byte(strings.Repeat("b", 4000)), []byte(strings.Repeat("d", 4000))
		srv.Files["/a"], srv.Files["/b"], srv.Files["/d"] = a, b, d
		c, _ := newCache(t, srv, func(cfg *datasrc.Config) { cfg.MaxBytes = 9000 })
		ctx := t.Context()
		pa, relA, err := c.Acquire(ctx, urlSource(srv, "/a", sha(a)))
		if err != nil {
			t.Fatal(err)
		}
		pb, relB, err := c.Acquire(ctx, urlSource(srv, "/b", sha(b)))
		if err != nil {
			t.Fatal(err)
		}
		relB()
		// a is older but held; b is released: b goes.
		if _, _, err := c.Acquire(ctx, urlSource(srv, "/d", sha(d))); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(pa); err != nil {
			t.Errorf("held source a: %v, want it kept", err)
		}
		if _, err := os.Stat(pb); !os.IsNotExist(err) {
			t.Errorf("released source b: stat %v, want it evicted", err)
		}
		relA()
	})
}

func TestHubSource(t *testing.T) {
	t.Parallel()
	files := []datasrctest.File{
		{Path: "config.json", Content: []byte(`{"model_type":"gpt2"}`)},
		{Path: "model.safetensors", Content: []byte(strings.Repeat("\x01\x02", 5000)), LFS: true},
		{Path: "tokenizer/vocab.txt", Content: []byte("a\nb\n")},
		{Path: "README.md", Content: []byte("# readme")},
	}
	hf := func(include ...string) agentproto.DataSource {
		return agentproto.DataSource{Name: "gpt2", Source: agentproto.DataSourceHuggingFace, Repo: "openai-community/gpt2",
			RepoType: "model", Revision: commit, Include: include, MountPath: "/models/gpt2", Account: "acct_a"}
	}

	t.Run("the selected files in the repo's layout, token sent to the hub only", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Token, srv.PageSize = "hf_secret", 2
		srv.Repos[datasrctest.RepoKey("model", "openai-community/gpt2", commit)] = files
		c, _ := newCache(t, srv, func(cfg *datasrc.Config) {
			cfg.HubToken, cfg.HubTokenRepos = "hf_secret", []string{"openai-community/*"}
		})
		dir, release, err := c.Acquire(t.Context(), hf("*.json", "*.safetensors", "tokenizer/*"))
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		defer release()
		for _, f := range files {
			got, err := os.ReadFile(filepath.Join(dir, f.Path))
			if f.Path == "README.md" {
				if err == nil {
					t.Errorf("README.md: fetched, want it left out by include")
				}
				continue
			}
			if err != nil || string(got) != string(f.Content) {
				t.Errorf("%s: got %d bytes (%v), want %d", f.Path, len(got), err, len(f.Content))
			}
		}
		srv.Mu.Lock()
		defer srv.Mu.Unlock()
		for path, n := range srv.Requests {
			if strings.HasPrefix(path, "/blobs/") && n != 1 {
				t.Errorf("%s: %d requests, want 1", path, n)
			}
		}
	})

	t.Run("a dataset repo", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Repos[datasrctest.RepoKey("dataset", "acme/rows", commit)] = files[:1]
		c, _ := newCache(t, srv, nil)
		ds := hf()
		ds.Repo, ds.RepoType = "acme/rows", "dataset"
		dir, _, err := c.Acquire(t.Context(), ds)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
			t.Error(err)
		}
	})

	t.Run("a hash the bytes do not match fails naming the file", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		bad := append([]datasrctest.File(nil), files...)
		bad[1].ListedSHA = strings.Repeat("c", 64)
		srv.Repos[datasrctest.RepoKey("model", "openai-community/gpt2", commit)] = bad
		c, _ := newCache(t, srv, nil)
		_, _, err := c.Acquire(t.Context(), hf())
		if err == nil || !strings.Contains(err.Error(), "model.safetensors") || !strings.Contains(err.Error(), "the hub lists "+strings.Repeat("c", 64)) {
			t.Fatalf("error: got %v, want a sha256 mismatch of model.safetensors", err)
		}
	})

	t.Run("an unknown commit, a wrong token, an include matching nothing", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Repos[datasrctest.RepoKey("model", "openai-community/gpt2", commit)] = files
		c, _ := newCache(t, srv, nil)
		other := hf()
		other.Revision = strings.Repeat("f", 40)
		if _, _, err := c.Acquire(t.Context(), other); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("unknown commit: got %v, want a 404", err)
		}
		if _, _, err := c.Acquire(t.Context(), hf("*.bin")); err == nil || !strings.Contains(err.Error(), "has no file that include") {
			t.Errorf("include: got %v, want no file selected", err)
		}
		srv.Mu.Lock()
		srv.Token = "hf_right"
		srv.Mu.Unlock()
		c2, _ := newCache(t, srv, nil)
		wrong := hf()
		wrong.Token = "hf_wrong"
		_, _, err := c2.Acquire(t.Context(), wrong)
		if err == nil || !strings.Contains(err.Error(), "token_env") || strings.Contains(err.Error(), "hf_wrong") {
			t.Errorf("wrong token: got %v, want a 401 that points at the tenant's token without showing it", err)
		}
	})

	t.Run("a cancelled fetch is taken over by the next task", func(t *testing.T) {
		t.Parallel()
		srv := datasrctest.Start(t)
		srv.Repos[datasrctest.RepoKey("model", "openai-community/gpt2", commit)] = files
		srv.Stall, srv.Stalls = 200*time.Millisecond, 1
		c, _ := newCache(t, srv, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if _, _, err := c.Acquire(ctx, hf()); err == nil {
			t.Fatal("cancelled: got no error")
		}
		if _, _, err := c.Acquire(t.Context(), hf()); err != nil {
			t.Fatalf("next: %v", err)
		}
	})
}
