package httpapi_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/artifact/s3blob"
	"github.com/skiffhq/skiff/internal/artifact/s3test"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

func artifactSuite() []apiCase {
	return []apiCase{
		{"upload_and_download", testArtifactUploadDownload},
		{"same_content_counted_once", testArtifactDedupe},
		{"quota_exceeded_keeps_nothing", testArtifactQuota},
		{"too_large_keeps_nothing", testArtifactTooLarge},
		{"short_body_keeps_nothing", testArtifactShortBody},
		{"dropped_connection_keeps_nothing", testArtifactDisconnect},
		{"task_views_list_artifacts", testArtifactTaskViews},
		{"ranges", testArtifactRanges},
		{"foreign_and_unknown", testArtifactForeign},
		{"delete_in_use_and_grace", testArtifactDelete},
		{"retired_upload_endpoints", testArtifactRetired},
		{"list_paging", testArtifactListPaging},
		{"survives_restart", testArtifactRestart},
		{"task_inputs_checked_at_admission", testArtifactInputsAdmission},
		{"external_urls", testArtifactExternal},
		{"external_download", testArtifactExternalDownload},
		{"external_download_refused_address", testArtifactExternalDownloadRefused},
		{"external_downloads_per_account", testArtifactExternalDownloadsPerAccount},
		{"retention_purges_old_jobs", testArtifactRetention},
	}
}

func TestArtifacts(t *testing.T) {
	runSuite(t, artifactSuite(), funded(1000_000_000))
}

// TestArtifactsS3 runs the same suite with the S3-compatible blob store, a
// real versitygw, a fresh bucket per server.
func TestArtifactsS3(t *testing.T) {
	srv := s3test.Start(t)
	if srv == nil {
		return
	}
	runSuiteWith(t, artifactSuite(), funded(1000_000_000), func(tb testing.TB) artifact.Blob { return srv.Blob(tb, "skiff") })
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// upload posts body as a relay upload with the given headers.
func upload(t *testing.T, c *apitest.Client, body []byte, hdr map[string]string) *apitest.Response {
	t.Helper()
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	for k, v := range hdr {
		h.Set(k, v)
	}
	return c.Do(t, apitest.Request{Method: http.MethodPost, Path: "/api/v1/artifacts", Body: body, Header: h})
}

func mustUpload(t *testing.T, c *apitest.Client, body []byte, filename string) apiv1.Artifact {
	t.Helper()
	var a apiv1.Artifact
	upload(t, c, body, map[string]string{"X-Artifact-Filename": filename}).JSON(t, http.StatusCreated, &a)
	return a
}

func listArtifacts(t *testing.T, c *apitest.Client) apiv1.ArtifactList {
	t.Helper()
	var l apiv1.ArtifactList
	c.Get(t, "/api/v1/artifacts?limit=200").JSON(t, http.StatusOK, &l)
	return l
}

// blobFiles lists the content files of a local blob store, and whatever
// sits in its temporary directory.
func blobFiles(t *testing.T, e *apitest.Env) (content, tmp []string) {
	t.Helper()
	if s3, ok := e.Blob.(*s3blob.S3); ok {
		ctx := t.Context()
		for o := range s3.Client().ListObjects(ctx, s3.Bucket(), minio.ListObjectsOptions{Recursive: true}) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			if strings.HasPrefix(o.Key, s3.TmpPrefix()) {
				tmp = append(tmp, o.Key)
			} else {
				content = append(content, path.Base(o.Key))
			}
		}
		for u := range s3.Client().ListIncompleteUploads(ctx, s3.Bucket(), "", true) {
			tmp = append(tmp, "upload:"+u.Key)
		}
		sort.Strings(content)
		return content, tmp
	}
	l, ok := e.Blob.(*artifact.Local)
	if !ok {
		t.Fatalf("blob store is %T, want *artifact.Local or *s3blob.S3", e.Blob)
	}
	root := filepath.Dir(l.TempDir())
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if filepath.Dir(p) == l.TempDir() {
			tmp = append(tmp, d.Name())
		} else {
			content = append(content, d.Name())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(content)
	return content, tmp
}

func wantBlobs(t *testing.T, e *apitest.Env, want ...string) {
	t.Helper()
	content, tmp := blobFiles(t, e)
	sort.Strings(want)
	if strings.Join(content, ",") != strings.Join(want, ",") {
		t.Errorf("blob files: got %v, want %v", content, want)
	}
	if len(tmp) > 0 {
		t.Errorf("temporary blob files: got %v, want none", tmp)
	}
}

func wantQuotaUsed(t *testing.T, c *apitest.Client, want int64) {
	t.Helper()
	q := listArtifacts(t, c).Quota
	if q.UsedBytes != want || q.RemainingBytes != q.LimitBytes-want {
		t.Errorf("quota: got %+v, want used %d and remaining limit-used", q, want)
	}
}

func testArtifactUploadDownload(t *testing.T, f *fixture) {
	data := bytes.Repeat([]byte("dataset row\n"), 100000)
	r := upload(t, f.member, data, map[string]string{"X-Artifact-Filename": "../../etc/rapport été.csv"})
	var raw map[string]any
	r.JSON(t, http.StatusCreated, &raw)
	var a apiv1.Artifact
	r.JSON(t, http.StatusCreated, &a)
	if !strings.HasPrefix(a.ID, "art_") || a.SHA256 == nil || *a.SHA256 != sum(data) || a.Size != int64(len(data)) ||
		a.Source != "local" || a.Filename != "rapport été.csv" || a.Kind != "upload" {
		t.Errorf("upload: got %s, want art_ id, sha %s, size %d, source local, filename %q", r.Body, sum(data), len(data), "rapport été.csv")
	}
	wantBlobs(t, f.e, sum(data))

	g := f.member.Get(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK)
	if !bytes.Equal(g.Body, data) {
		t.Errorf("download: got %d bytes that differ, want the %d uploaded", len(g.Body), len(data))
	}
	for k, want := range map[string]string{
		"Content-Length":      fmt.Sprint(len(data)),
		"ETag":                `"` + sum(data) + `"`,
		"Content-Type":        "application/octet-stream",
		"Content-Disposition": "attachment; filename*=utf-8''rapport%20%C3%A9t%C3%A9.csv",
		"Accept-Ranges":       "bytes",
	} {
		if got := g.Header.Get(k); got != want {
			t.Errorf("download header %s: got %q, want %q", k, got, want)
		}
	}
	// A viewer of the account reads it too; If-None-Match with the ETag is 304.
	if v := f.viewer.Get(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK); !bytes.Equal(v.Body, data) {
		t.Error("viewer download differs")
	}
	f.member.Do(t, apitest.Request{Method: http.MethodGet, Path: "/api/v1/artifacts/" + a.ID,
		Header: http.Header{"If-None-Match": {`"` + sum(data) + `"`}}}).Want(t, http.StatusNotModified)

	var m apiv1.Artifact
	f.member.Get(t, "/api/v1/artifacts/"+a.ID+"/meta").JSON(t, http.StatusOK, &m)
	_, isS3 := f.e.Blob.(*s3blob.S3)
	if m.ID != a.ID || *m.SHA256 != sum(data) || (m.SignedURL != "") != isS3 || !m.DeletionEligible || m.ReferenceCount != 0 {
		t.Errorf("meta: got %+v, want the upload, deletion eligible, no references, a signed URL only from S3", m)
	}
	if isS3 {
		resp, err := http.Get(m.SignedURL)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, data) {
			t.Errorf("signed URL: got %d and %d bytes, want 200 and the upload", resp.StatusCode, len(got))
		}
	}
	l := listArtifacts(t, f.member)
	if l.Total != 1 || len(l.Artifacts) != 1 || l.Artifacts[0].ID != a.ID || l.Quota.UsedBytes != int64(len(data)) ||
		l.Quota.LimitBytes != artifact.DefaultQuotaBytes || l.Quota.RemainingBytes != artifact.DefaultQuotaBytes-int64(len(data)) {
		t.Errorf("list: got %+v, want the one artifact and used_bytes %d of %d", l, len(data), artifact.DefaultQuotaBytes)
	}

	// Filenames that are only a path, or nothing, are stored as no name.
	for _, name := range []string{"..", "/", "a/b/../..", `..\..\win.ini`} {
		got := mustUpload(t, f.member, []byte("n"), name)
		want := map[string]string{"..": "", "/": "", "a/b/../..": "..", `..\..\win.ini`: "win.ini"}[name]
		if want == ".." {
			want = ""
		}
		if got.Filename != want {
			t.Errorf("X-Artifact-Filename %q: stored %q, want %q", name, got.Filename, want)
		}
	}
}

func testArtifactDedupe(t *testing.T, f *fixture) {
	data := []byte(strings.Repeat("same bytes ", 1000))
	a1 := mustUpload(t, f.member, data, "one.txt")
	a2 := mustUpload(t, f.member, data, "two.txt")
	if a1.ID == a2.ID || *a1.SHA256 != *a2.SHA256 || a2.Filename != "two.txt" {
		t.Errorf("got %+v and %+v, want two artifacts with the same sha256", a1, a2)
	}
	wantBlobs(t, f.e, sum(data))
	wantQuotaUsed(t, f.member, int64(len(data)))
	// Another account's copy is its own quota's, and still one file.
	_, other := fundedAccount(t, f.e, "bob", "bobs", 0)
	mustUpload(t, other, data, "")
	wantQuotaUsed(t, other, int64(len(data)))
	wantQuotaUsed(t, f.member, int64(len(data)))
	wantBlobs(t, f.e, sum(data))
	// Deleting one of the account's two copies keeps the content counted.
	f.member.Delete(t, "/api/v1/artifacts/"+a1.ID).Want(t, http.StatusOK)
	wantQuotaUsed(t, f.member, int64(len(data)))
	f.member.Delete(t, "/api/v1/artifacts/"+a2.ID).Want(t, http.StatusOK)
	wantQuotaUsed(t, f.member, 0)
}

// withArtifacts starts a second server over the fixture's engine with
// other artifact limits, and an account with a member client.
func withArtifacts(t *testing.T, f *fixture, cfg artifact.Config) (*apitest.Env, *apitest.Client) {
	t.Helper()
	opts := apitest.Options{Store: f.eng.Open(t), Artifacts: cfg}
	if f.newBlob != nil {
		opts.Blob = f.newBlob(t)
	}
	e := apitest.Start(t, opts)
	acct := e.NewAccount(t, "small")
	return e, e.Client(acct.Member)
}

func testArtifactQuota(t *testing.T, f *fixture) {
	e, c := withArtifacts(t, f, artifact.Config{QuotaBytes: 1000})
	first := bytes.Repeat([]byte("a"), 600)
	mustUpload(t, c, first, "a")
	before := string(c.Get(t, "/api/v1/artifacts").Want(t, http.StatusOK).Body)
	over := bytes.Repeat([]byte("b"), 401)
	env := upload(t, c, over, nil).Fail(t, http.StatusInsufficientStorage)
	if env.Code != "artifact_quota_exceeded" || env.RecommendedAction == "" ||
		env.Details["limit_bytes"] != float64(1000) || env.Details["used_bytes"] != float64(600) || env.Details["remaining_bytes"] != float64(400) {
		t.Errorf("got %+v, want artifact_quota_exceeded with limit 1000, used 600, remaining 400", env)
	}
	if after := string(c.Get(t, "/api/v1/artifacts").Want(t, http.StatusOK).Body); after != before {
		t.Errorf("list after the refusal: got %+v, want %+v", after, before)
	}
	wantBlobs(t, e, sum(first))
	// The same content again costs nothing, so it fits at the limit.
	mustUpload(t, c, first, "again")
	// Exactly the remainder fits.
	rest := bytes.Repeat([]byte("c"), 400)
	mustUpload(t, c, rest, "rest")
	wantQuotaUsed(t, c, 1000)
	upload(t, c, []byte("d"), nil).Fail(t, http.StatusInsufficientStorage)
	wantBlobs(t, e, sum(first), sum(rest))
}

func testArtifactTooLarge(t *testing.T, f *fixture) {
	e, c := withArtifacts(t, f, artifact.Config{MaxUploadBytes: 1000})
	body := bytes.Repeat([]byte("x"), 1001)
	// Declared too large: refused before reading.
	env := upload(t, c, body, nil).Fail(t, http.StatusRequestEntityTooLarge)
	if env.Code != "artifact_too_large" || env.Details["limit_bytes"] != float64(1000) {
		t.Errorf("got %+v, want artifact_too_large with limit_bytes 1000", env)
	}
	// Chunked, no length: refused once the 1001st byte arrives.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.URL+"/api/v1/artifacts", io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "artifact_too_large") {
		t.Errorf("chunked upload over the limit: got %d %s, want 413 artifact_too_large", resp.StatusCode, b)
	}
	// At the limit is fine.
	mustUpload(t, c, body[:1000], "")
	wantBlobs(t, e, sum(body[:1000]))
	wantQuotaUsed(t, c, 1000)
}

// rawRequest sends head and then body over a fresh connection, closes the
// sending side (a client that stops), and reads the answer.
func rawRequest(t *testing.T, baseURL, head string, body []byte) (int, string) {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func testArtifactShortBody(t *testing.T, f *fixture) {
	before := f.state(t)
	head := "POST /api/v1/artifacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + f.acct.Member +
		"\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n"
	status, body := rawRequest(t, f.e.URL, head, bytes.Repeat([]byte("p"), 60000))
	if status != http.StatusBadRequest || !strings.Contains(body, `"upload_incomplete"`) || !strings.Contains(body, "recommended_action") {
		t.Errorf("body shorter than its Content-Length: got %d %s, want 400 upload_incomplete with an envelope", status, body)
	}
	// A chunked upload cut off midway.
	head = "POST /api/v1/artifacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + f.acct.Member +
		"\r\nTransfer-Encoding: chunked\r\n\r\n"
	status, body = rawRequest(t, f.e.URL, head, []byte("4000\r\n"+strings.Repeat("q", 0x4000)+"\r\n4000\r\nqqq"))
	if status != http.StatusBadRequest || !strings.Contains(body, `"upload_incomplete"`) {
		t.Errorf("chunked body cut off: got %d %s, want 400 upload_incomplete", status, body)
	}
	f.unchanged(t, before, "an interrupted upload")
	wantBlobs(t, f.e)
	wantQuotaUsed(t, f.member, 0)
}

func testArtifactRanges(t *testing.T, f *fixture) {
	data := []byte("0123456789")
	a := mustUpload(t, f.member, data, "digits.txt")
	get := func(rng string) *apitest.Response {
		return f.member.Do(t, apitest.Request{Method: http.MethodGet, Path: "/api/v1/artifacts/" + a.ID,
			Header: http.Header{"Range": {rng}}})
	}
	for _, c := range []struct{ rng, body, contentRange string }{
		{"bytes=0-3", "0123", "bytes 0-3/10"},
		{"bytes=7-", "789", "bytes 7-9/10"},
		{"bytes=-2", "89", "bytes 8-9/10"},
		{"bytes=5-100", "56789", "bytes 5-9/10"},
		{"bytes=-100", "0123456789", "bytes 0-9/10"},
		{"bytes=9-9", "9", "bytes 9-9/10"},
	} {
		r := get(c.rng).Want(t, http.StatusPartialContent)
		if string(r.Body) != c.body || r.Header.Get("Content-Range") != c.contentRange ||
			r.Header.Get("Content-Length") != fmt.Sprint(len(c.body)) {
			t.Errorf("Range %s: got %q %q length %s, want %q %q", c.rng, r.Body, r.Header.Get("Content-Range"),
				r.Header.Get("Content-Length"), c.body, c.contentRange)
		}
	}
	for _, rng := range []string{"bytes=abc-", "bytes=-1-3", "bytes=3-1", "bytes=10-", "bytes=-0", "bytes=1-2,4-5",
		"lines=1-2", "bytes=", "bytes=0x1-2", "bytes= -", "bytes=+1-2"} {
		r := get(rng)
		env := r.Fail(t, http.StatusRequestedRangeNotSatisfiable)
		if env.Code != "invalid_range" || env.RecommendedAction == "" || r.Header.Get("Content-Range") != "bytes */10" {
			t.Errorf("Range %q: got %+v Content-Range %q, want invalid_range and bytes */10", rng, env, r.Header.Get("Content-Range"))
		}
	}
	// An If-Range for another version sends everything.
	r := f.member.Do(t, apitest.Request{Method: http.MethodGet, Path: "/api/v1/artifacts/" + a.ID,
		Header: http.Header{"Range": {"bytes=0-1"}, "If-Range": {`"other"`}}}).Want(t, http.StatusOK)
	if string(r.Body) != string(data) {
		t.Errorf("If-Range mismatch: got %q, want the whole content", r.Body)
	}
}

func testArtifactForeign(t *testing.T, f *fixture) {
	a := mustUpload(t, f.member, []byte("mine"), "mine.txt")
	mal, other := fundedAccount(t, f.e, "mallory", "mals", 1000_000_000)
	_ = mal
	for _, p := range []string{"/api/v1/artifacts/" + a.ID, "/api/v1/artifacts/" + a.ID + "/meta",
		"/api/v1/artifacts/art_unknown", "/api/v1/artifacts/art_unknown/meta"} {
		env := other.Get(t, p).Fail(t, http.StatusNotFound)
		if env.Code != "artifact_not_found" {
			t.Errorf("GET %s by another account: got %q, want artifact_not_found", p, env.Code)
		}
	}
	other.Delete(t, "/api/v1/artifacts/"+a.ID).Fail(t, http.StatusNotFound)
	f.member.Get(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK)
	if l := listArtifacts(t, other); l.Total != 0 || l.Quota.UsedBytes != 0 {
		t.Errorf("another account's list: got %+v, want empty", l)
	}

	// X-Artifact-Job-Id naming another account's job, or none.
	job := submitJob(t, f.member, nil)
	before := f.state(t)
	for _, jobID := range []string{job.ID, "job_unknown"} {
		env := upload(t, other, []byte("x"), map[string]string{"X-Artifact-Job-Id": jobID}).Fail(t, http.StatusUnprocessableEntity)
		if env.Code != "artifact_job_not_found" || env.Details["header"] != "X-Artifact-Job-Id" {
			t.Errorf("X-Artifact-Job-Id %s of another account: got %+v, want 422 artifact_job_not_found naming the header", jobID, env)
		}
	}
	f.unchanged(t, before, "uploads naming a foreign job")
	if l := listArtifacts(t, other); l.Total != 0 {
		t.Errorf("after refused uploads: got %d artifacts, want 0", l.Total)
	}
	wantBlobs(t, f.e, sum([]byte("mine")))
}

func testArtifactDelete(t *testing.T, f *fixture) {
	job := submitJob(t, f.member, nil)
	produced := []byte("made by the job")
	var a apiv1.Artifact
	upload(t, f.member, produced, map[string]string{"X-Artifact-Job-Id": job.ID, "X-Artifact-Filename": "out.bin"}).
		JSON(t, http.StatusCreated, &a)
	if a.JobID == nil || *a.JobID != job.ID || a.ActiveReferenceCount != 1 || a.DeletionEligible {
		t.Errorf("upload for a queued job: got %+v, want job_id %s with one active reference", a, job.ID)
	}
	env := f.member.Delete(t, "/api/v1/artifacts/"+a.ID).Fail(t, http.StatusConflict)
	if env.Code != "artifact_in_use" || env.RecommendedAction == "" {
		t.Errorf("delete while the job is queued: got %+v, want 409 artifact_in_use", env)
	}
	f.viewer.Delete(t, "/api/v1/artifacts/"+a.ID).Fail(t, http.StatusForbidden)
	f.member.Get(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK)

	f.member.Put(t, "/api/v1/jobs/"+job.ID+"/cancel", map[string]any{}).Want(t, http.StatusOK)
	var m apiv1.Artifact
	f.member.Get(t, "/api/v1/artifacts/"+a.ID+"/meta").JSON(t, http.StatusOK, &m)
	if m.ActiveReferenceCount != 0 || m.TerminalReferenceCount != 1 || !m.DeletionEligible || m.LastReferencedAt == nil {
		t.Errorf("after cancel: got %+v, want one terminal reference and deletion_eligible", m)
	}
	shared := mustUpload(t, f.member, []byte("shared"), "s1")
	mustUpload(t, f.member, []byte("shared"), "s2")

	var del apiv1.ArtifactDeleted
	f.member.Delete(t, "/api/v1/artifacts/"+a.ID).JSON(t, http.StatusOK, &del)
	if !del.Deleted || !del.PurgeAt.Equal(f.e.Clock.Now().Add(24*time.Hour)) {
		t.Errorf("delete: got %+v, want deleted with purge_at now+24h", del)
	}
	f.member.Delete(t, "/api/v1/artifacts/"+shared.ID).Want(t, http.StatusOK)
	for _, p := range []string{"/api/v1/artifacts/" + a.ID, "/api/v1/artifacts/" + a.ID + "/meta"} {
		f.member.Get(t, p).Fail(t, http.StatusNotFound)
	}
	f.member.Delete(t, "/api/v1/artifacts/"+a.ID).Fail(t, http.StatusNotFound)
	wantQuotaUsed(t, f.member, int64(len("shared")))
	// In the grace the bytes stay.
	wantBlobs(t, f.e, sum(produced), sum([]byte("shared")))
	f.e.Clock.Advance(24*time.Hour - time.Second)
	if n, err := f.e.Artifacts.SweepGrace(t.Context(), 10); err != nil || n != 0 {
		t.Errorf("sweep inside the grace: got %d, %v; want 0", n, err)
	}
	wantBlobs(t, f.e, sum(produced), sum([]byte("shared")))
	f.e.Clock.Advance(time.Second)
	if n, err := f.e.Artifacts.SweepGrace(t.Context(), 10); err != nil || n != 2 {
		t.Errorf("sweep after the grace: got %d, %v; want 2", n, err)
	}
	// The shared content stays for the other artifact.
	wantBlobs(t, f.e, sum([]byte("shared")))
	wantQuotaUsed(t, f.member, int64(len("shared")))
}

func testArtifactRetired(t *testing.T, f *fixture) {
	for _, rt := range []struct{ method, path string }{
		{"POST", "/api/v1/artifacts/direct"}, {"POST", "/api/v1/artifacts/direct/complete"},
		{"POST", "/api/v1/artifacts/multipart"}, {"POST", "/api/v1/artifacts/multipart/part"},
		{"POST", "/api/v1/artifacts/multipart/complete"}, {"POST", "/api/v1/artifacts/multipart/abort"},
		{"GET", "/api/v1/artifacts/multipart/parts"},
	} {
		var body any
		if rt.method == "POST" {
			body = map[string]any{"filename": "x"}
		}
		env := f.member.Do(t, apitest.Request{Method: rt.method, Path: rt.path, Body: body}).Fail(t, http.StatusGone)
		if env.Code != "artifact_upload_endpoint_retired" || !strings.Contains(env.RecommendedAction, "POST /api/v1/artifacts") {
			t.Errorf("%s %s: got %+v, want 410 pointing at POST /api/v1/artifacts", rt.method, rt.path, env)
		}
	}
	wantBlobs(t, f.e)
}

func testArtifactListPaging(t *testing.T, f *fixture) {
	var ids []string
	for i := range 5 {
		ids = append(ids, mustUpload(t, f.member, []byte{byte('a' + i)}, fmt.Sprintf("f%d", i)).ID)
		f.e.Clock.Advance(time.Second)
	}
	var l apiv1.ArtifactList
	f.member.Get(t, "/api/v1/artifacts?limit=2&offset=1").JSON(t, http.StatusOK, &l)
	if l.Total != 5 || l.Count != 2 || l.Limit != 2 || l.Offset != 1 || len(l.Artifacts) != 2 ||
		l.Artifacts[0].ID != ids[3] || l.Artifacts[1].ID != ids[2] || l.Quota.UsedBytes != 5 {
		t.Errorf("page: got %+v, want total 5, items %s and %s, used 5", l, ids[3], ids[2])
	}
	for _, q := range []string{"limit=0", "limit=201", "offset=-1", "limit=x"} {
		f.member.Do(t, apitest.Request{Method: http.MethodGet, Path: "/api/v1/artifacts?" + q, Check: apitest.MustViolate}).
			Fail(t, http.StatusUnprocessableEntity)
	}
}

func testArtifactRestart(t *testing.T, f *fixture) {
	data := []byte("kept across restarts")
	a := mustUpload(t, f.member, data, "keep.txt")
	// A new server over the same store and blob directory.
	e2 := apitest.Start(t, apitest.Options{Store: f.e.Store, Blob: f.e.Blob})
	c := e2.Client(f.acct.Member)
	if g := c.Get(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK); !bytes.Equal(g.Body, data) {
		t.Errorf("after restart: got %q, want %q", g.Body, data)
	}
	wantQuotaUsed(t, c, int64(len(data)))
	// A new local store over the same directory clears only temporaries.
	l, ok := f.e.Blob.(*artifact.Local)
	if !ok {
		return
	}
	if err := os.WriteFile(filepath.Join(l.TempDir(), "put-stale"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := artifact.NewLocal(filepath.Dir(l.TempDir())); err != nil {
		t.Fatal(err)
	}
	wantBlobs(t, f.e, sum(data))
}

func testArtifactInputsAdmission(t *testing.T, f *fixture) {
	a := mustUpload(t, f.member, []byte("dataset"), "data.csv")
	b := mustUpload(t, f.member, []byte("weights"), "w.bin")
	_, other := fundedAccount(t, f.e, "mallory", "mals", 0)
	foreign := mustUpload(t, other, []byte("not yours"), "x")
	gone := mustUpload(t, f.member, []byte("deleted"), "gone")
	f.member.Delete(t, "/api/v1/artifacts/"+gone.ID).Want(t, http.StatusOK)

	before := f.state(t)
	for _, c := range []struct {
		download any
		field    string
		code     string
	}{
		{[]any{a.ID, foreign.ID}, "payload._artifacts.download[1]", "unknown_artifact"},
		{map[string]any{"id": "art_nope"}, "payload._artifacts.download", "unknown_artifact"},
		{gone.ID, "payload._artifacts.download", "unknown_artifact"},
		{[]any{a.ID, 7}, "payload._artifacts.download[1]", "invalid_artifact_input"},
		{"", "payload._artifacts.download", "invalid_artifact_input"},
		{[]any{}, "payload._artifacts.download", "invalid_artifact_input"},
	} {
		r := f.member.Post(t, "/api/v1/jobs", map[string]any{"project": fixtureProject, "runner_command": []string{"/runner"},
			"payload": map[string]any{"_artifacts": map[string]any{"download": c.download}}})
		env := r.Fail(t, http.StatusUnprocessableEntity)
		if env.Code != c.code || env.Details["field"] != c.field {
			t.Errorf("download %v: got %q field %v, want %q naming %s", c.download, env.Code, env.Details["field"], c.code, c.field)
		}
	}
	f.unchanged(t, before, "refused submissions with bad artifact inputs")

	job := submitJob(t, f.member, map[string]any{"payload": map[string]any{
		"_artifacts": map[string]any{"download": []any{a.ID, map[string]any{"id": b.ID}, a.ID}}}})
	for _, art := range []apiv1.Artifact{a, b} {
		var m apiv1.Artifact
		f.member.Get(t, "/api/v1/artifacts/"+art.ID+"/meta").JSON(t, http.StatusOK, &m)
		if m.ReferenceCount != 1 || m.ActiveReferenceCount != 1 || m.DeletionEligible {
			t.Errorf("input %s of a queued job: got references %d active %d eligible %v, want 1, 1, false",
				art.ID, m.ReferenceCount, m.ActiveReferenceCount, m.DeletionEligible)
		}
		env := f.member.Delete(t, "/api/v1/artifacts/"+art.ID).Fail(t, http.StatusConflict)
		if env.Code != "artifact_in_use" {
			t.Errorf("delete input of a queued job: got %q, want artifact_in_use", env.Code)
		}
	}
	f.member.Put(t, "/api/v1/jobs/"+job.ID+"/cancel", map[string]any{}).Want(t, http.StatusOK)
	f.member.Delete(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK)
}

func testArtifactExternal(t *testing.T, f *fixture) {
	sha := strings.Repeat("ab", 32)
	var a apiv1.Artifact
	f.member.Post(t, "/api/v1/artifacts/external", map[string]any{"filename": "../data.csv", "url": "https://93.184.215.14/files/data.csv#frag",
		"sha256": strings.ToUpper(sha)}).JSON(t, http.StatusCreated, &a)
	if a.Source != "external" || a.URL == nil || *a.URL != "https://93.184.215.14/files/data.csv" || a.SHA256 == nil || *a.SHA256 != sha ||
		a.Filename != "data.csv" || a.Size != 0 {
		t.Errorf("external: got %+v, want source external, the URL without fragment, the sha256 lower-cased, filename data.csv", a)
	}
	var b apiv1.Artifact
	f.member.Post(t, "/api/v1/artifacts/external", map[string]any{"url": "http://93.184.215.14/dir/model.bin"}).JSON(t, http.StatusCreated, &b)
	if b.Filename != "model.bin" || b.SHA256 != nil {
		t.Errorf("external without filename or sha256: got %+v, want filename model.bin and no sha256", b)
	}
	wantQuotaUsed(t, f.member, 0)
	f.member.Get(t, "/api/v1/artifacts/"+a.ID+"/meta").Want(t, http.StatusOK)
	// It may be a task input.
	submitJob(t, f.member, map[string]any{"payload": map[string]any{"_artifacts": map[string]any{"download": a.ID}}})

	before := f.state(t)
	for _, c := range []struct{ url, sha, code string }{
		{"ftp://93.184.215.14/x", "", "invalid_artifact_url"},
		{"file:///etc/passwd", "", "invalid_artifact_url"},
		{"https://user:secret@93.184.215.14/x", "", "invalid_artifact_url"},
		{"not a url", "", "invalid_artifact_url"},
		{"", "", "invalid_artifact_url"},
		{"http://127.0.0.1:8080/api/v1/artifacts", "", "artifact_url_refused"},
		{"http://localhost/x", "", "artifact_url_refused"},
		{"http://10.1.2.3/x", "", "artifact_url_refused"},
		{"http://192.168.0.10/x", "", "artifact_url_refused"},
		{"http://172.20.0.1/x", "", "artifact_url_refused"},
		{"http://169.254.169.254/latest/meta-data", "", "artifact_url_refused"},
		{"http://[::1]/x", "", "artifact_url_refused"},
		{"http://[fe80::1]/x", "", "artifact_url_refused"},
		{"http://[::ffff:127.0.0.1]/x", "", "artifact_url_refused"},
		{"http://0.0.0.0/x", "", "artifact_url_refused"},
		{"https://93.184.215.14/x", "xyz", "invalid_sha256"},
	} {
		body := map[string]any{"filename": "x", "url": c.url}
		if c.sha != "" {
			body["sha256"] = c.sha
		}
		env := f.member.Post(t, "/api/v1/artifacts/external", body).Fail(t, http.StatusUnprocessableEntity)
		if env.Code != c.code || env.Details["field"] == nil || env.RecommendedAction == "" {
			t.Errorf("url %q: got %q %v, want %s naming the field", c.url, env.Code, env.Details, c.code)
		}
	}
	f.unchanged(t, before, "refused external URLs")
	// An operator may allow private addresses.
	_, c := withArtifacts(t, f, artifact.Config{AllowPrivate: true})
	c.Post(t, "/api/v1/artifacts/external", map[string]any{"url": "http://127.0.0.1:9/x"}).Want(t, http.StatusCreated)
}

func testArtifactRetention(t *testing.T, f *fixture) {
	a := mustUpload(t, f.member, []byte("kept"), "in.txt")
	old := submitJob(t, f.member, map[string]any{"payload": map[string]any{"_artifacts": map[string]any{"download": a.ID}}})
	f.member.Put(t, "/api/v1/jobs/"+old.ID+"/cancel", map[string]any{}).Want(t, http.StatusOK)
	f.e.Clock.Advance(20 * 24 * time.Hour)
	recent := submitJob(t, f.member, nil)
	f.member.Put(t, "/api/v1/jobs/"+recent.ID+"/cancel", map[string]any{}).Want(t, http.StatusOK)
	f.e.Clock.Advance(11 * 24 * time.Hour) // old: 31 days; recent: 11
	n, err := f.e.Jobs.PurgeFinishedBefore(t.Context(), f.e.Clock.Now().Add(-30*24*time.Hour), 100)
	if err != nil || n != 1 {
		t.Fatalf("purge: got %d, %v; want 1", n, err)
	}
	for _, p := range []string{"/api/v1/jobs/" + old.ID, "/api/v1/jobs/" + old.ID + "/tasks", "/api/v1/jobs/" + old.ID + "/events", "/api/v1/results/" + old.ID} {
		f.member.Get(t, p).Fail(t, http.StatusNotFound)
	}
	f.member.Get(t, "/api/v1/jobs/"+recent.ID).Want(t, http.StatusOK)
	var m apiv1.Artifact
	f.member.Get(t, "/api/v1/artifacts/"+a.ID+"/meta").JSON(t, http.StatusOK, &m)
	if m.ReferenceCount != 0 || !m.DeletionEligible {
		t.Errorf("artifact after its job was purged: got %d references, want 0", m.ReferenceCount)
	}
	if g := f.member.Get(t, "/api/v1/artifacts/"+a.ID).Want(t, http.StatusOK); string(g.Body) != "kept" {
		t.Errorf("artifact bytes after the purge: got %q", g.Body)
	}
}
