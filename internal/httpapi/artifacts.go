package httpapi

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// ArtifactView renders an artifact.
func ArtifactView(a *store.Artifact) apiv1.Artifact {
	v := apiv1.Artifact{ID: a.ID, Size: a.SizeBytes, Source: string(a.Source), Filename: a.Filename, Kind: string(a.Kind),
		CreatedAt: a.CreatedAt, LastReferencedAt: a.LastReferencedAt, ReferenceCount: a.ReferenceCount,
		ActiveReferenceCount: a.ActiveReferenceCount, TerminalReferenceCount: a.TerminalReferenceCount,
		DeletionEligible: a.ActiveReferenceCount == 0,
		Links:            apiv1.ArtifactLinks{Content: "/api/v1/artifacts/" + a.ID, Meta: "/api/v1/artifacts/" + a.ID + "/meta"}}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	v.SHA256, v.URL, v.JobID, v.TaskID = opt(a.SHA256), opt(a.URL), opt(a.JobID), opt(a.TaskID)
	return v
}

// artifactUpload streams the raw body into the blob store (POST
// /api/v1/artifacts): never read whole into memory.
func (s *Server) artifactUpload(w http.ResponseWriter, r *http.Request) error {
	p := principal(r.Context())
	a, err := s.artifacts.Upload(r.Context(), &artifact.UploadParams{AccountID: p.Account.ID,
		Filename: r.Header.Get("X-Artifact-Filename"), JobID: strings.TrimSpace(r.Header.Get("X-Artifact-Job-Id")),
		Body: r.Body, ContentLength: r.ContentLength})
	if err != nil {
		if fe, ok := fault.As(err); ok && (fe.Kind == fault.KindTooLarge || fe.Code == "upload_incomplete") {
			// The rest of the body is not read: close the connection
			// rather than drain gigabytes.
			w.Header().Set("Connection", "close")
		}
		return err
	}
	writeJSON(w, http.StatusCreated, ArtifactView(a))
	return nil
}

// artifactExternal registers an http(s) URL without uploading it.
func (s *Server) artifactExternal(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.ExternalArtifactRequest
	if _, err := decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	a, err := s.artifacts.RegisterExternal(r.Context(), &artifact.ExternalParams{AccountID: principal(r.Context()).Account.ID,
		Filename: req.Filename, URL: req.URL, SHA256: req.SHA256})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ArtifactView(a))
	return nil
}

func (s *Server) artifactList(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := pageParams(r)
	if err != nil {
		return err
	}
	as, total, q, err := s.artifacts.List(r.Context(), principal(r.Context()).Account.ID, limit, offset)
	if err != nil {
		return err
	}
	out := apiv1.ArtifactList{Artifacts: make([]apiv1.Artifact, 0, len(as)),
		Quota:    apiv1.ArtifactQuota{LimitBytes: q.Limit, UsedBytes: q.Used, RemainingBytes: q.Remaining},
		PageInfo: apiv1.PageInfo{Total: total, Count: len(as), Limit: limit, Offset: offset}}
	for _, a := range as {
		out.Artifacts = append(out.Artifacts, ArtifactView(a))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) artifactMeta(w http.ResponseWriter, r *http.Request) error {
	a, err := s.artifacts.Get(r.Context(), principal(r.Context()).Account.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	v := ArtifactView(a)
	u, exp, err := s.artifacts.SignedURL(r.Context(), a)
	if err != nil {
		return err
	}
	if u != "" {
		v.SignedURL, v.SignedURLExpiresAt = u, &exp
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) artifactDelete(w http.ResponseWriter, r *http.Request) error {
	purge, err := s.artifacts.Delete(r.Context(), principal(r.Context()).Account.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.ArtifactDeleted{ID: r.PathValue("id"), Deleted: true, PurgeAt: purge})
	return nil
}

// artifactGone answers the retired direct and multipart upload endpoints.
func (s *Server) artifactGone(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.KindGone, "artifact_upload_endpoint_retired",
		"Upload through the relay instead: POST /api/v1/artifacts with the raw bytes as the body (up to the relay limit), optional X-Artifact-Filename and X-Artifact-Job-Id headers.",
		"%s %s is retired: direct and multipart artifact uploads are no longer offered", r.Method, r.URL.Path).
		With("use", "POST /api/v1/artifacts")
}

// artifactGet streams an artifact's bytes, with one byte range when asked.
// An external artifact is fetched from its URL first (artifactGetExternal).
func (s *Server) artifactGet(w http.ResponseWriter, r *http.Request) error {
	a, err := s.artifacts.Get(r.Context(), principal(r.Context()).Account.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if a.Source != store.ArtifactLocal {
		return s.artifactGetExternal(w, r, a)
	}
	if notModified(w, r, a, a.SHA256) {
		return nil
	}
	return s.serveContent(w, r, a, a.SHA256, a.SizeBytes, func(start, length int64) (io.ReadCloser, error) {
		return s.artifacts.Open(r.Context(), a, start, length)
	})
}

// artifactGetExternal fetches an external artifact whole through the
// service (the SSRF rules, size limit and digest check of task inputs:
// artifact.FetchExternal) and then serves it as a local one, ranges
// included. Fetching first costs the time to the first byte, but a digest
// that does not match, or a body over the limit, is then a 502 with an
// envelope rather than a download cut short. A redirect to the URL would
// check nothing and hand the user's client a URL the service may not
// reach.
// External-artifact downloads one account may have in flight, and the
// Retry-After of the 429 past them.
const (
	maxExternalFetchesPerAccount = 2
	externalFetchRetryAfter      = 5
)

func (s *Server) artifactGetExternal(w http.ResponseWriter, r *http.Request, a *store.Artifact) error {
	// With a registered digest the content is known without a fetch:
	// what does not match it is never served.
	if a.SHA256 != "" && notModified(w, r, a, a.SHA256) {
		return nil
	}
	if low, why := s.diskFree.Low(); low {
		s.log.WarnContext(r.Context(), "external artifact download refused: data dir low on disk", "artifact_id", a.ID, "why", why)
		return errDiskFull()
	}
	// Each fetch spools the whole file (up to the upload cap) on the data
	// disk: an account gets a few at once, not the disk.
	release, ok := s.externalFetches.acquire(principal(r.Context()).Account.ID, maxExternalFetchesPerAccount)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(externalFetchRetryAfter))
		return fault.New(fault.KindRateLimited, "too_many_external_downloads",
			fmt.Sprintf("Wait for your other downloads of external artifacts to finish (at most %d at once per account), then retry.", maxExternalFetchesPerAccount),
			"this account is already downloading %d external artifacts", maxExternalFetchesPerAccount).With("limit", maxExternalFetchesPerAccount)
	}
	defer release()
	sp, err := s.artifacts.FetchExternal(r.Context(), a)
	if err != nil {
		if fault.Is(err, fault.KindBadGateway) {
			s.log.WarnContext(r.Context(), "external artifact not served", "artifact_id", a.ID, "err", err)
		}
		return err
	}
	defer sp.Close()
	if notModified(w, r, a, sp.SHA256) {
		return nil
	}
	return s.serveContent(w, r, a, sp.SHA256, sp.Size, func(start, length int64) (io.ReadCloser, error) {
		return io.NopCloser(sp.Section(start, length)), nil
	})
}

// notModified answers 304 with the download's headers when If-None-Match
// names content of sha256 sum.
func notModified(w http.ResponseWriter, r *http.Request, a *store.Artifact, sum string) bool {
	etag := `"` + sum + `"`
	if inm := r.Header.Get("If-None-Match"); inm == "" || (inm != etag && inm != "*") {
		return false
	}
	setDownloadHeaders(w.Header(), a, sum)
	w.WriteHeader(http.StatusNotModified)
	return true
}

func setDownloadHeaders(h http.Header, a *store.Artifact, sum string) {
	h.Set("ETag", `"`+sum+`"`)
	h.Set("Accept-Ranges", "bytes")
	h.Set("Cache-Control", "private, max-age=0, must-revalidate")
	if a.Filename != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename}))
	} else {
		h.Set("Content-Disposition", "attachment")
	}
}

// serveContent sends the size bytes of content sum that open reads, or
// the one range asked for.
func (s *Server) serveContent(w http.ResponseWriter, r *http.Request, a *store.Artifact, sum string, size int64,
	open func(start, length int64) (io.ReadCloser, error)) error {
	h := w.Header()
	setDownloadHeaders(h, a, sum)
	etag := h.Get("ETag")
	start, length, partial := int64(0), size, false
	if rh := r.Header.Get("Range"); rh != "" && ifRangeMatches(r, etag) {
		var err error
		start, length, err = parseRange(rh, size)
		if err != nil {
			h.Del("ETag")
			h.Del("Content-Disposition")
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			return err
		}
		partial = true
	}
	rc, err := open(start, length)
	if err != nil {
		return err
	}
	defer rc.Close()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	status := http.StatusOK
	if partial {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, size))
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, rc); err != nil {
		// Headers are out; the client sees a short body and its length
		// tells it so.
		s.log.WarnContext(r.Context(), "artifact download cut short", "artifact_id", a.ID, "err", err)
	}
	return nil
}

// ifRangeMatches: a Range with an If-Range naming another version is
// ignored (the whole content is sent).
func ifRangeMatches(r *http.Request, etag string) bool {
	ir := r.Header.Get("If-Range")
	return ir == "" || ir == etag
}

func rangeError(size int64, format string, args ...any) error {
	return fault.New(fault.KindRangeNotSatisfiable, "invalid_range",
		fmt.Sprintf("Ask for one range of the %d bytes as 'bytes=FIRST-LAST', 'bytes=FIRST-' or 'bytes=-SUFFIX', with non-negative integers.", size),
		format, args...).With("size", size)
}

// parseRange reads one "bytes=" range of RFC 9110 against size. A
// malformed, negative, multiple or unsatisfiable range fails with 416.
func parseRange(h string, size int64) (start, length int64, err error) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !ok {
		return 0, 0, rangeError(size, "Range %q is not a bytes range", h)
	}
	if strings.Contains(spec, ",") {
		return 0, 0, rangeError(size, "Range %q asks for several ranges; one is served", h)
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, 0, rangeError(size, "Range %q is malformed", h)
	}
	num := func(s string) (int64, bool) {
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	if first == "" { // suffix: the last N bytes
		n, ok := num(last)
		if !ok {
			return 0, 0, rangeError(size, "Range %q is malformed", h)
		}
		if n == 0 || size == 0 {
			return 0, 0, rangeError(size, "Range %q selects no bytes of %d", h, size)
		}
		n = min(n, size)
		return size - n, n, nil
	}
	a, ok := num(first)
	if !ok {
		return 0, 0, rangeError(size, "Range %q is malformed", h)
	}
	if a >= size {
		return 0, 0, rangeError(size, "Range %q starts past the end (%d bytes)", h, size)
	}
	if last == "" {
		return a, size - a, nil
	}
	b, ok := num(last)
	if !ok || b < a {
		return 0, 0, rangeError(size, "Range %q is malformed", h)
	}
	b = min(b, size-1)
	return a, b - a + 1, nil
}
