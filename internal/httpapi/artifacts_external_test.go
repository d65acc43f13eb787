package httpapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// externalOrigin is a real HTTP server on loopback standing for the
// public site an external artifact's URL names; hits counts its requests.
func externalOrigin(t *testing.T, files map[string][]byte) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	hits := &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/data.csv", http.StatusFound)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

func registerExternal(t *testing.T, c *apitest.Client, url, sha string) apiv1.Artifact {
	t.Helper()
	body := map[string]any{"url": url}
	if sha != "" {
		body["sha256"] = sha
	}
	var a apiv1.Artifact
	c.Post(t, "/api/v1/artifacts/external", body).JSON(t, http.StatusCreated, &a)
	return a
}

// An external artifact is served through the service like an uploaded
// one (ranges, ETag, 304), checked against its sha256 and the upload
// limit; what breaks a rule is a 502 envelope, and nothing is kept.
func testArtifactExternalDownload(t *testing.T, f *fixture) {
	data := []byte("id,value\n1,2\n3,4\n")
	srv, hits := externalOrigin(t, map[string][]byte{
		"/data.csv": data, "/changed.csv": []byte("id,value\n9,9\n"), "/big.bin": bytes.Repeat([]byte("x"), 1001),
	})
	// Loopback stands for a public address here: the operator's switch
	// that lets URLs reach private addresses.
	_, c := withArtifacts(t, f, artifact.Config{AllowPrivate: true, MaxUploadBytes: 1000})

	a := registerExternal(t, c, srv.URL+"/data.csv", sum(data))
	r := c.Get(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK)
	if !bytes.Equal(r.Body, data) || r.Header.Get("ETag") != `"`+sum(data)+`"` ||
		r.Header.Get("Content-Length") != "17" || r.Header.Get("Content-Disposition") != `attachment; filename=data.csv` {
		t.Errorf("external download: got %q ETag %s length %s disposition %q, want the origin's bytes, their sha256, 17, data.csv",
			r.Body, r.Header.Get("ETag"), r.Header.Get("Content-Length"), r.Header.Get("Content-Disposition"))
	}
	r = c.Do(t, apitest.Request{Method: http.MethodGet, Path: "/api/v1/artifacts/" + a.ID,
		Header: http.Header{"Range": {"bytes=3-7"}}}).Want(t, http.StatusPartialContent)
	if string(r.Body) != "value" || r.Header.Get("Content-Range") != "bytes 3-7/17" {
		t.Errorf("external range: got %q %q, want \"value\" bytes 3-7/17", r.Body, r.Header.Get("Content-Range"))
	}
	// Its registered digest answers If-None-Match without a fetch.
	before := hits.Load()
	c.Do(t, apitest.Request{Method: http.MethodGet, Path: "/api/v1/artifacts/" + a.ID,
		Header: http.Header{"If-None-Match": {`"` + sum(data) + `"`}}}).Want(t, http.StatusNotModified)
	if n := hits.Load() - before; n != 0 {
		t.Errorf("If-None-Match of a registered digest: the origin got %d requests, want 0", n)
	}

	// Without a digest, and behind a redirect: the fetched bytes' sha256
	// is the ETag.
	for _, p := range []string{"/data.csv", "/moved"} {
		b := registerExternal(t, c, srv.URL+p, "")
		r := c.Get(t, "/api/v1/artifacts/"+b.ID).Want(t, http.StatusOK)
		if !bytes.Equal(r.Body, data) || r.Header.Get("ETag") != `"`+sum(data)+`"` {
			t.Errorf("external %s without sha256: got %q ETag %s, want the origin's bytes", p, r.Body, r.Header.Get("ETag"))
		}
	}

	for _, tc := range []struct {
		path, sha, code string
		details         map[string]any
	}{
		{"/changed.csv", sum(data), "external_digest_mismatch",
			map[string]any{"sha256": sum(data), "fetched_sha256": sum([]byte("id,value\n9,9\n")), "fetched_size": float64(13)}},
		{"/big.bin", "", "external_artifact_too_large", map[string]any{"limit_bytes": float64(1000)}},
		{"/gone.bin", "", "external_fetch_failed", nil},
	} {
		b := registerExternal(t, c, srv.URL+tc.path, tc.sha)
		r := c.Get(t, "/api/v1/artifacts/"+b.ID)
		env := r.Fail(t, http.StatusBadGateway)
		if env.Code != tc.code || env.RecommendedAction == "" || env.Details["url"] != srv.URL+tc.path ||
			r.Header.Get("Content-Disposition") != "" || r.Header.Get("ETag") != "" {
			t.Errorf("external %s: got %+v, headers %v; want 502 %s naming the url, no download headers", tc.path, env, r.Header, tc.code)
		}
		for k, v := range tc.details {
			if env.Details[k] != v {
				t.Errorf("external %s: details[%s] = %v, want %v", tc.path, k, env.Details[k], v)
			}
		}
	}
	// Nothing fetched is kept or counted.
	wantQuotaUsed(t, c, 0)
}

// The fetch of a user's download has the address rules of task inputs:
// an artifact whose URL leads to loopback (a row older than the rules, or
// a name whose DNS answer changed since registration) is refused when
// fetched, and the address is never dialled.
func testArtifactExternalDownloadRefused(t *testing.T, f *fixture) {
	srv, hits := externalOrigin(t, map[string][]byte{"/x": []byte("secret")})
	a, err := f.e.Store.ArtifactCreate(t.Context(), &store.ArtifactCreateParams{ID: id.New(id.Artifact), AccountID: f.acct.ID,
		Filename: "x", Source: store.ArtifactExternal, URL: srv.URL + "/x", Kind: store.ArtifactUpload, Now: f.e.Clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	env := f.member.Get(t, "/api/v1/artifacts/"+a.ID).Fail(t, http.StatusBadGateway)
	if env.Code != "external_fetch_failed" || !strings.Contains(env.Error, "loopback") {
		t.Errorf("external artifact on loopback: got %+v, want 502 external_fetch_failed saying loopback is refused", env)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the refused address got %d requests, want 0", n)
	}
}

// Each external download spools the whole file on the data disk, so an
// account has at most two in flight: a third is a 429 with Retry-After,
// another account is not affected, and a slot is free again once a
// download ends.
func testArtifactExternalDownloadsPerAccount(t *testing.T, f *fixture) {
	held := make(chan struct{})
	arrived := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-held
		_, _ = w.Write([]byte("slow"))
	}))
	t.Cleanup(srv.Close)
	released := false
	release := func() {
		if !released {
			released = true
			close(held)
		}
	}
	t.Cleanup(release)
	_, c := withArtifacts(t, f, artifact.Config{AllowPrivate: true})
	a := registerExternal(t, c, srv.URL+"/slow.bin", "")
	done := make(chan int, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, c.BaseURL+"/api/v1/artifacts/"+a.ID, nil)
			req.Header.Set("Authorization", "Bearer "+c.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	<-arrived
	<-arrived
	r := c.Get(t, "/api/v1/artifacts/"+a.ID)
	env := r.Fail(t, http.StatusTooManyRequests)
	if env.Code != "too_many_external_downloads" || r.Header.Get("Retry-After") == "" {
		t.Errorf("a third download at once: got %q Retry-After %q, want too_many_external_downloads with Retry-After", env.Code, r.Header.Get("Retry-After"))
	}
	release()
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("a held download ended %d, want 200", code)
		}
	}
	if got := c.Get(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK).Body; string(got) != "slow" {
		t.Errorf("after the others ended: got %q, want the file", got)
	}
}
