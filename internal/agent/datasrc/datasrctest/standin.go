// Package datasrctest is a stand-in for the servers data sources come
// from, for tests: no Hugging Face hub and no internet are reachable where
// the tests run. StandIn serves plain files (url sources) and the part of
// the hub's public HTTP API that a download uses: the recursive tree
// listing of a revision (GET /api/{type}s/{repo}/tree/{revision}, paged
// with a Link header) with each file's size and git blob id, and for
// LFS files their sha256 and size; and the resolve URLs
// (/{repo}/resolve/{revision}/{path}, /datasets/... for datasets), which
// for LFS files redirect to a separate blob path as the hub redirects to
// its CDN. Ranges are honoured (http.ServeContent).
package datasrctest

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git blob ids, as the hub lists them
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// File is one file of a stand-in repo.
type File struct {
	Path    string
	Content []byte
	LFS     bool
	// ListedSHA, when set, is listed instead of the true hash (a hub
	// that disagrees with its bytes).
	ListedSHA string
	// ListedSize, when above 0, is listed instead of the true size (a
	// hub, or a server behind it, that sends more than it declares).
	ListedSize int64
}

// StandIn is the test server. Its fields may be changed while it runs,
// under Mu.
type StandIn struct {
	URL   string
	Token string // when set, the hub API and resolve URLs want "Bearer <Token>"

	Mu sync.Mutex
	// Files are plain downloads by path ("/weights.bin").
	Files map[string][]byte
	// Repos are hub repos by "<type>/<repo>@<revision>".
	Repos map[string][]File
	// PageSize splits the tree listing into pages (0: one page).
	PageSize int
	// DropAfter, when > 0, makes the next Drops downloads of a file stop
	// after that many bytes by closing the connection.
	DropAfter int
	Drops     int
	// Stall, when > 0, makes the next Stalls downloads send nothing for
	// that long.
	Stall  time.Duration
	Stalls int
	// Unsized sends plain downloads without a Content-Length (chunked),
	// so only the bytes themselves say how large they are.
	Unsized bool
	// Requests counts requests by path; AuthSeen records the
	// Authorization headers received.
	Requests map[string]int
	AuthSeen []string
}

// Start serves a stand-in until the test ends.
func Start(t testing.TB) *StandIn {
	s := &StandIn{Files: map[string][]byte{}, Repos: map[string][]File{}, Requests: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// RepoKey names a repo at a revision in Repos.
func RepoKey(repoType, repo, revision string) string {
	return repoType + "/" + repo + "@" + revision
}

// Count is how many requests path received.
func (s *StandIn) Count(path string) int {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.Requests[path]
}

func (s *StandIn) serve(w http.ResponseWriter, r *http.Request) {
	s.Mu.Lock()
	s.Requests[r.URL.Path]++
	s.AuthSeen = append(s.AuthSeen, r.Header.Get("Authorization"))
	s.Mu.Unlock()
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/"):
		if s.authorized(w, r) {
			s.tree(w, r)
		}
	case strings.Contains(p, "/resolve/"):
		if s.authorized(w, r) {
			s.resolve(w, r)
		}
	case strings.HasPrefix(p, "/blobs/"):
		s.Mu.Lock()
		content, ok := s.Files[p]
		s.Mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.send(w, r, content)
	default:
		s.Mu.Lock()
		content, ok := s.Files[p]
		s.Mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.send(w, r, content)
	}
}

func (s *StandIn) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		http.Error(w, `{"error":"Invalid credentials"}`, http.StatusUnauthorized)
		return false
	}
	return true
}

// send serves content, misbehaving as the fault fields ask.
func (s *StandIn) send(w http.ResponseWriter, r *http.Request, content []byte) {
	s.Mu.Lock()
	drop, stall := 0, time.Duration(0)
	if s.Drops > 0 && s.DropAfter > 0 {
		s.Drops--
		drop = s.DropAfter
	}
	if s.Stalls > 0 && s.Stall > 0 {
		s.Stalls--
		stall = s.Stall
	}
	unsized := s.Unsized
	s.Mu.Unlock()
	if unsized && r.Header.Get("Range") == "" {
		w.WriteHeader(http.StatusOK)
		for b := content; len(b) > 0; {
			n := min(len(b), 4096)
			_, _ = w.Write(b[:n])
			w.(http.Flusher).Flush() // no Content-Length: chunked
			b = b[n:]
		}
		return
	}
	if stall > 0 {
		select {
		case <-time.After(stall):
		case <-r.Context().Done():
		}
		return
	}
	if drop > 0 && r.Header.Get("Range") == "" && drop < len(content) {
		// Promise the whole file, send part of it, and hang up.
		w.Header().Set("Content-Length", strconv.Itoa(len(content)))
		w.Header().Set("Accept-Ranges", "bytes")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(content[:drop])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
}

type treeEntry struct {
	Type string    `json:"type"`
	Oid  string    `json:"oid"`
	Size int64     `json:"size"`
	Path string    `json:"path"`
	LFS  *lfsEntry `json:"lfs,omitempty"`
}

type lfsEntry struct {
	Oid         string `json:"oid"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

// tree answers GET /api/{type}s/{owner}/{name}/tree/{revision}.
func (s *StandIn) tree(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/")
	typ, rest, _ := strings.Cut(rest, "/")
	repo, revision, ok := strings.Cut(rest, "/tree/")
	if !ok || r.URL.Query().Get("recursive") != "true" {
		http.Error(w, "want /api/{type}s/{repo}/tree/{revision}?recursive=true", http.StatusBadRequest)
		return
	}
	s.Mu.Lock()
	files, found := s.Repos[RepoKey(strings.TrimSuffix(typ, "s"), repo, revision)]
	pageSize := s.PageSize
	s.Mu.Unlock()
	if !found {
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return
	}
	var entries []treeEntry
	dirs := map[string]bool{}
	for _, f := range files {
		for d := f.Path; strings.Contains(d, "/"); {
			d = d[:strings.LastIndex(d, "/")]
			if !dirs[d] {
				dirs[d] = true
				entries = append(entries, treeEntry{Type: "directory", Oid: strings.Repeat("0", 40), Path: d})
			}
		}
		size := int64(len(f.Content))
		if f.ListedSize > 0 {
			size = f.ListedSize
		}
		e := treeEntry{Type: "file", Oid: gitBlobID(f.Content), Size: size, Path: f.Path}
		if f.LFS {
			sum := sha256.Sum256(f.Content)
			oid := hex.EncodeToString(sum[:])
			if f.ListedSHA != "" {
				oid = f.ListedSHA
			}
			e.LFS = &lfsEntry{Oid: oid, Size: size, PointerSize: 134}
		} else if f.ListedSHA != "" {
			e.Oid = f.ListedSHA
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b treeEntry) int { return strings.Compare(a.Path, b.Path) })
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := len(entries)
	if pageSize > 0 && start+pageSize < end {
		end = start + pageSize
		next := fmt.Sprintf("%s?recursive=true&cursor=%d", r.URL.Path, end)
		w.Header().Set("Link", "<"+s.URL+next+`>; rel="next"`)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(entries[min(start, len(entries)):end])
}

// resolve answers GET [/datasets]/{repo}/resolve/{revision}/{path}.
func (s *StandIn) resolve(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	typ := "model"
	if rest, ok := strings.CutPrefix(p, "datasets/"); ok {
		typ, p = "dataset", rest
	}
	repo, rest, _ := strings.Cut(p, "/resolve/")
	revision, file, _ := strings.Cut(rest, "/")
	s.Mu.Lock()
	files := s.Repos[RepoKey(typ, repo, revision)]
	s.Mu.Unlock()
	for _, f := range files {
		if f.Path != file {
			continue
		}
		if f.LFS {
			// The hub sends LFS files from elsewhere (its CDN).
			sum := sha256.Sum256(f.Content)
			blob := "/blobs/" + hex.EncodeToString(sum[:])
			s.Mu.Lock()
			s.Files[blob] = f.Content
			s.Mu.Unlock()
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Content)))
			http.Redirect(w, r, blob, http.StatusFound)
			return
		}
		s.send(w, r, f.Content)
		return
	}
	w.Header().Set("X-Error-Code", "EntryNotFound")
	http.Error(w, "Entry not found", http.StatusNotFound)
}

// gitBlobID is git's id of a blob: sha1 of "blob <size>\0<content>".
func gitBlobID(b []byte) string {
	h := sha1.New() //nolint:gosec // see the import
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}
