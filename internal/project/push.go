package project

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/project/manifest"
	"github.com/skiffhq/skiff/internal/project/tarball"
	"github.com/skiffhq/skiff/internal/store"
)

// MaxPushBytes is the largest push body (spec 8: 100 MB raw gzip).
const MaxPushBytes = 100 * 1000 * 1000

// ManifestFile is the manifest's name at the tarball root.
const ManifestFile = manifest.FileName

// PushOutcome is the answer to a push: Accepted (202) with a queued build, or
// Unchanged (200) when the content equals the published revision.
type PushOutcome struct {
	Push      *store.Push
	Unchanged bool
	Manifest  *manifest.Manifest
	// SizeBytes and TarballDiff describe this upload (for Unchanged, Push is
	// the published revision it matched).
	SizeBytes   int64
	TarballDiff json.RawMessage
}

// pushesDir holds one directory per push: its extracted build context,
// kept until the build ends.
func (s *Service) pushDir(pushID string) string { return filepath.Join(s.dataDir, "pushes", pushID) }

// Push takes a gzip tarball, checks it, and queues its build. Nothing of a
// refused push is kept: no row, no file.
func (s *Service) Push(ctx context.Context, accountID, name string, body io.Reader) (*PushOutcome, error) {
	p, err := s.Get(ctx, accountID, name)
	if err != nil {
		return nil, err
	}
	if err := s.refuseIfInitializing(ctx, p); err != nil {
		return nil, err
	}
	if err := s.refuseIfBusy(ctx, p); err != nil {
		return nil, err
	}
	// The account's caps are checked before a byte of the body is read, so
	// that a refused push stages nothing.
	uploaded, err := s.beginUpload(ctx, accountID)
	if err != nil {
		return nil, err
	}
	defer uploaded()
	pushID := id.New(id.Push)
	// The context dir is stored with the push and handed to the builder,
	// which wants an absolute path; --data-dir defaults to a relative one.
	dir, err := filepath.Abs(s.pushDir(pushID))
	if err != nil {
		return nil, fmt.Errorf("push dir: %w", err)
	}
	ctxDir := filepath.Join(dir, "context")
	if err := os.MkdirAll(ctxDir, 0o755); err != nil {
		return nil, fmt.Errorf("push dir: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	counted := &countingReader{r: body, limit: MaxPushBytes}
	var src io.Reader = counted
	var kept *os.File // the tarball as sent, for a shared context store
	if s.contexts != nil {
		if kept, err = os.Create(filepath.Join(dir, "context.tar.gz")); err != nil {
			return nil, fmt.Errorf("push dir: %w", err)
		}
		defer kept.Close()
		src = io.TeeReader(counted, kept)
	}
	tree, err := tarball.Extract(ctx, src, ctxDir, tarball.Limits{})
	if err == nil && kept != nil {
		// The gzip trailer after the tar's end belongs to the tarball too.
		_, err = io.Copy(io.Discard, src)
	}
	if counted.over {
		return nil, fault.New(fault.KindTooLarge, "push_too_large",
			"Push at most 100 MB of gzip: leave data out of the tarball and fetch it at run time (data_sources) or upload it as an artifact.",
			"push body is larger than %d bytes", MaxPushBytes)
	}
	if counted.failed != nil {
		// The client went away or the connection broke mid-upload: not a
		// bad tarball and not the server's fault.
		return nil, fault.New(fault.KindBadRequest, "upload_interrupted",
			"Resend the push; nothing of the interrupted one was kept.",
			"the push body could not be read to its end: %v", counted.failed)
	}
	if err != nil {
		return nil, tarballFault(err)
	}
	m, err := s.checkManifest(ctxDir, tree)
	if err != nil {
		return nil, err
	}
	hash := tree.ContentHash()
	index := tree.Index()

	published, err := s.store.PushLatestPublished(ctx, p.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("latest published push: %w", err)
	}
	var diff *tarball.Changes
	if published != nil {
		var prev tarball.FileIndex
		if json.Unmarshal(published.FileIndex, &prev) == nil {
			d := tarball.Diff(&prev, &index)
			diff = &d
		}
	}
	diffJSON, _ := json.Marshal(diff)
	// Identical content needs no build, unless a failed build came after the
	// published one: then pushing the published content again is how the
	// user recovers, and it must get a push record that supersedes the
	// failure (the rebuild is a layer cache hit).
	if published != nil && published.ContentHash == hash && s.latestIs(ctx, p.ID, published.ID) {
		return &PushOutcome{Push: published, Unchanged: true, Manifest: m, SizeBytes: counted.n, TarballDiff: diffJSON}, nil
	}
	indexJSON, _ := json.Marshal(index)
	manifestJSON, _ := json.Marshal(m)
	if kept != nil {
		// The build may run on another controller: it reads the tarball
		// from the shared store, and nothing stays here.
		if ctxDir, err = s.shareContext(ctx, kept.Name()); err != nil {
			return nil, err
		}
	}
	pu, err := s.store.PushCreate(ctx, &store.PushCreateParams{
		ID: pushID, ProjectID: p.ID, AccountID: accountID, ContentHash: hash, SizeBytes: counted.n,
		TarballDiff: diffJSON, FileIndex: indexJSON, Manifest: manifestJSON, ContextDir: ctxDir, Now: s.clock.Now(),
	})
	if errors.Is(err, store.ErrConflict) {
		// Another push won the race between our check and our insert.
		return nil, s.refuseIfBusy(ctx, p)
	}
	if err != nil {
		return nil, fmt.Errorf("record push: %w", err)
	}
	keep = kept == nil
	s.WakeBuilds()
	return &PushOutcome{Push: pu, Manifest: m, SizeBytes: counted.n, TarballDiff: diffJSON}, nil
}

// latestIs reports whether the project's newest push is pushID.
func (s *Service) latestIs(ctx context.Context, projectID, pushID string) bool {
	latest, err := s.store.PushLatest(ctx, projectID)
	return err == nil && latest.ID == pushID
}

// refuseIfBusy answers 409 while a build is queued or running.
func (s *Service) refuseIfBusy(ctx context.Context, p *store.Project) error {
	active, err := s.store.PushActive(ctx, p.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("active push: %w", err)
	}
	rd, err := s.Readiness(ctx, p)
	if err != nil {
		return err
	}
	return &fault.Error{Kind: fault.KindConflict, Code: "push_in_progress",
		Message: fmt.Sprintf("project %q already has a push %s (%s)", p.Name, active.ID, active.Status),
		Action:  "Wait for the active push to finish (poll its status_url), then push again.",
		Fields: map[string]any{
			"init_state": rd.InitState, "ready_for_jobs": rd.ReadyForJobs,
			"next_action": "Poll GET /api/v1/projects/" + p.Name + "/pushes/" + active.ID + " until it is terminal, then push again.",
			"active_push": PushView(p.Name, active),
		}}
}

// refuseIfInitializing answers a push with 409 while an init prepares the
// project's runtime on a host (spec 7: push during another push or init).
// A preparation older than the project's setup_timeout_s is taken as one a
// crash abandoned, so that it cannot block pushes for ever.
func (s *Service) refuseIfInitializing(ctx context.Context, p *store.Project) error {
	preps, err := s.store.RuntimePrepList(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("runtime preparations: %w", err)
	}
	timeout := time.Duration(p.SetupTimeoutS) * time.Second
	for _, r := range preps {
		if r.Status != store.RuntimePreparing || s.clock.Now().Sub(r.UpdatedAt) > timeout {
			continue
		}
		rd, err := s.Readiness(ctx, p)
		if err != nil {
			return err
		}
		return &fault.Error{Kind: fault.KindConflict, Code: "init_in_progress",
			Message: fmt.Sprintf("project %q is being initialized (runtime preparation on a host is in progress)", p.Name),
			Action:  "Wait until GET /api/v1/projects/" + p.Name + "/status shows the init finished, then push again.",
			Fields: map[string]any{
				"init_state": rd.InitState, "ready_for_jobs": rd.ReadyForJobs,
				"next_action": "Poll GET /api/v1/projects/" + p.Name + "/status until init_state is no longer initializing, then push again.",
				"active_push": nil,
			}}
	}
	return nil
}

// checkManifest reads, parses and checks the manifest against the tarball.
func (s *Service) checkManifest(ctxDir string, tree *tarball.Tree) (*manifest.Manifest, error) {
	invalid := func(problems []string) error {
		return &fault.Error{Kind: fault.KindInvalid, Code: "invalid_manifest", Message: "invalid project: " + problems[0],
			Action:  "Fix " + ManifestFile + " and the files it references, then push again. See /docs/projects/project-manifest.",
			Details: map[string]any{"problems": problems}}
	}
	if !tree.Has(ManifestFile) || tree.IsDir(ManifestFile) {
		return nil, invalid([]string{ManifestFile + " is missing at the root of the tarball"})
	}
	data, err := os.ReadFile(filepath.Join(ctxDir, ManifestFile))
	if err != nil {
		return nil, invalid([]string{ManifestFile + " cannot be read: " + err.Error()})
	}
	m, err := manifest.Parse(data)
	if err == nil {
		err = m.CheckAgainst(tree)
	}
	if err != nil {
		return nil, invalid(manifestProblems(err))
	}
	return m, nil
}

// manifestProblems lists each problem of a manifest error.
func manifestProblems(err error) []string {
	var ps manifest.Problems
	if errors.As(err, &ps) && len(ps) > 0 {
		return ps.Details()
	}
	return []string{err.Error()}
}

// tarballFault maps extraction failures to the spec's answers: 400 when the
// body is not gzip, 422 "invalid tarball" otherwise.
func tarballFault(err error) error {
	var te *tarball.Error
	if !errors.As(err, &te) {
		return fmt.Errorf("extract: %w", err)
	}
	details := map[string]any{"problems": te.Details()}
	switch te.Kind {
	case tarball.KindNotGzip:
		return &fault.Error{Kind: fault.KindBadRequest, Code: "not_gzip", Message: te.Message(),
			Action: te.RecommendedAction(), Details: details}
	case tarball.KindNotTar:
		return &fault.Error{Kind: fault.KindInvalid, Code: "invalid_tarball", Message: "invalid tarball",
			Action: te.RecommendedAction(), Details: details}
	}
	return &fault.Error{Kind: fault.KindInvalid, Code: "invalid_tarball", Message: te.Message(),
		Action: te.RecommendedAction(), Details: details}
}

// countingReader counts the body and fails once it passes limit, so an
// oversized push is cut off while streaming, not after.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
	over  bool
	// failed is the body's own read error (a client that hung up), kept so
	// that it is not mistaken for a malformed tarball.
	failed error
}

var errPushTooLarge = errors.New("push body too large")

func (c *countingReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errPushTooLarge
	}
	n, err := c.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		c.failed = err
	}
	c.n += int64(n)
	if c.n > c.limit {
		c.over = true
		return n, errPushTooLarge
	}
	return n, err
}

// PushView renders a push record for the API; it never shows host paths.
func PushView(projectName string, pu *store.Push) *apiv1.PushRecord {
	v := &apiv1.PushRecord{
		PushRef: pu.ID, Status: string(pu.Status), StatusURL: "/api/v1/projects/" + projectName + "/pushes/" + pu.ID,
		ContentHash: pu.ContentHash, SizeBytes: pu.SizeBytes, Terminal: pu.Status.IsTerminal(),
		ImageRef: optString(pu.ImageRef), ImageDigest: optString(pu.ImageDigest), Error: optString(pu.Error),
		LogTail: pu.LogTail, CreatedAt: pu.CreatedAt, UpdatedAt: pu.UpdatedAt, StartedAt: pu.StartedAt,
		FinishedAt: pu.FinishedAt, Attempts: pu.Attempts,
	}
	if len(pu.TarballDiff) > 0 && string(pu.TarballDiff) != "null" {
		v.TarballDiff = pu.TarballDiff
	}
	switch pu.Status {
	case store.PushQueued, store.PushBuilding:
		v.NextAction = "Poll " + v.StatusURL + " until terminal is true."
	case store.PushPublished:
		v.NextAction = "Submit jobs: POST /api/v1/jobs with project " + projectName + "."
	case store.PushFailed:
		v.NextAction = pu.NextAction
	}
	return v
}

// PushLatest is the newest push of a project.
func (s *Service) PushLatest(ctx context.Context, p *store.Project) (*store.Push, error) {
	pu, err := s.store.PushLatest(ctx, p.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.KindNotFound, "no_push", "Push a tarball first: POST /api/v1/projects/"+p.Name+"/push",
			"project %q has no pushes yet", p.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("latest push: %w", err)
	}
	return pu, nil
}

// PushGet is one push of a project.
func (s *Service) PushGet(ctx context.Context, p *store.Project, ref string) (*store.Push, error) {
	pu, err := s.store.PushGet(ctx, p.ID, ref)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NotFound("push", ref)
	}
	if err != nil {
		return nil, fmt.Errorf("get push: %w", err)
	}
	return pu, nil
}
