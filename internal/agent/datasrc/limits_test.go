package datasrc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent/datasrc"
	"github.com/skiffhq/skiff/internal/agent/datasrc/datasrctest"
	"github.com/skiffhq/skiff/internal/agentproto"
)

// partialBytes is what a cache holds of unfinished downloads.
func partialBytes(t *testing.T, root string) int64 {
	t.Helper()
	var n int64
	_ = filepath.Walk(root, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// A url source declares no size, so it may be as large as the cache: a
// server that streams more without a Content-Length is cut off there.
func TestDownloadStopsAtTheCacheCap(t *testing.T) {
	t.Parallel()
	srv := datasrctest.Start(t)
	srv.Files["/big.bin"] = []byte(strings.Repeat("x", 256<<10))
	srv.Unsized = true
	c, root := newCache(t, srv, func(cfg *datasrc.Config) { cfg.MaxBytes = 64 << 10 })
	_, _, err := c.Acquire(t.Context(), urlSource(srv, "/big.bin", ""))
	if err == nil || !strings.Contains(err.Error(), "sent more than the 65536 bytes declared") {
		t.Fatalf("error: got %v, want the download stopped at the cap", err)
	}
	if n := srv.Count("/big.bin"); n != 1 {
		t.Errorf("requests: got %d, want 1 (stopping is permanent)", n)
	}
	if n := partialBytes(t, root); n != 0 {
		t.Errorf("%d bytes left in the cache", n)
	}
}

// A hub file is stopped at the size the hub lists for it.
func TestDownloadStopsAtTheDeclaredSize(t *testing.T) {
	t.Parallel()
	srv := datasrctest.Start(t)
	srv.Unsized = true
	srv.Repos[datasrctest.RepoKey("model", "o/m", commit)] = []datasrctest.File{
		{Path: "model.safetensors", Content: []byte(strings.Repeat("\x01", 200<<10)), LFS: true, ListedSize: 1000},
	}
	c, root := newCache(t, srv, nil)
	_, _, err := c.Acquire(t.Context(), agentproto.DataSource{Name: "m", Source: agentproto.DataSourceHuggingFace,
		Repo: "o/m", RepoType: "model", Revision: commit, MountPath: "/m", Account: "acct_a"})
	if err == nil || !strings.Contains(err.Error(), "more than the 1000 bytes declared") {
		t.Fatalf("error: got %v, want the download stopped at the listed size", err)
	}
	if n := partialBytes(t, root); n != 0 {
		t.Errorf("%d bytes left in the cache", n)
	}
}

// A whole fetch has a deadline besides the idle one.
func TestFetchDeadline(t *testing.T) {
	t.Parallel()
	srv := datasrctest.Start(t)
	srv.Files["/w.bin"] = []byte("weights")
	srv.Stall, srv.Stalls = 10*time.Second, 100
	c, _ := newCache(t, srv, func(cfg *datasrc.Config) { cfg.FetchTimeout = 300 * time.Millisecond })
	_, _, err := c.Acquire(t.Context(), urlSource(srv, "/w.bin", ""))
	if err == nil || !strings.Contains(err.Error(), `"weights" was not fetched within 300ms`) {
		t.Fatalf("error: got %v, want the fetch deadline named", err)
	}
}
