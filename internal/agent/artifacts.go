package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// ArtifactTransfer moves artifact bytes between a host and its controller
// (agentproto version 3). HTTPController implements it; a Controller
// without it runs tasks that have no inputs and uploads nothing.
type ArtifactTransfer interface {
	// FetchInput writes the bytes of one input of an attempt to w.
	FetchInput(ctx context.Context, attemptID string, in agentproto.InputArtifact, w io.Writer) error
	// UploadArtifact stores one file of an attempt.
	UploadArtifact(ctx context.Context, p *UploadParams) (*agentproto.UploadedArtifact, error)
}

// UploadParams is one file an attempt uploads.
type UploadParams struct {
	AttemptID string
	Path      string // relative to the artifact dir, or a file name
	Kind      string // agentproto.ArtifactKind*
	Size      int64
	Body      io.Reader
}

// inputCache keeps artifact inputs on the host by account and sha256, so
// that every attempt of a fan-out over one dataset shares one fetch:
// concurrent requests for the same content wait for the first.
//
// Never by sha256 alone: an external artifact's sha256 is what its tenant
// claims, and a tenant naming another tenant's digest on a URL of its own
// would otherwise be handed the other tenant's bytes, never fetched. Per
// account, an account's first use of any content is a real fetch, checked
// against the digest; only its own later attempts reuse it. The directory
// is 0700: the bytes reach a task through its own read-only inputs dir.
type inputCache struct {
	dir string
	now func() time.Time // dates a hit (eviction is least recently used first)

	mu       sync.Mutex
	inflight map[string]*fetchCall
	pins     map[string]int // key -> attempts using it (cachetrim.go)
}

type fetchCall struct {
	done chan struct{}
	path string
	err  error
}

// Fetches counts fetches that went to the controller, for tests.
func (c *inputCache) get(ctx context.Context, key string, fetch func(w io.Writer) (string, error)) (string, error) {
	final := filepath.Join(c.dir, filepath.FromSlash(key))
	if _, err := os.Stat(final); err == nil {
		if c.now != nil {
			_ = os.Chtimes(final, c.now(), c.now())
		}
		return final, nil
	}
	c.mu.Lock()
	if call, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.path, call.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	call := &fetchCall{done: make(chan struct{})}
	if c.inflight == nil {
		c.inflight = map[string]*fetchCall{}
	}
	c.inflight[key] = call
	c.mu.Unlock()

	call.path, call.err = c.fill(key, final, fetch)
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
	close(call.done)
	return call.path, call.err
}

// fill fetches into a temporary file, checks the digest the fetch reports
// against the key, and renames it into place.
func (c *inputCache) fill(key, final string, fetch func(w io.Writer) (string, error)) (string, error) {
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".fetch-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	got, err := fetch(io.MultiWriter(f, h))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if got != "" && got != sum {
		return "", &inputDigestError{got: sum, want: got}
	}
	if err := os.Chmod(f.Name(), 0o444); err != nil {
		return "", err
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return "", err
	}
	return final, nil
}

// inputDigestError is an input whose content does not have the sha256 its
// artifact names: a fault of the content (an external URL that serves
// other bytes than the user said), not of the host.
type inputDigestError struct{ got, want string }

func (e *inputDigestError) Error() string {
	return fmt.Sprintf("fetched content has sha256 %s, want %s", e.got, e.want)
}

// resolveInputs fetches (or finds cached) each input and names it in the
// sandbox: its filename, made unique; the id when it has none.
func (at *attempt) resolveInputs(ctx context.Context) ([]sandbox.Input, error) {
	ins := at.asg.Inputs
	if len(ins) == 0 {
		return nil, nil
	}
	tr, ok := at.a.cfg.Controller.(ArtifactTransfer)
	if !ok {
		return nil, errors.New("this host cannot fetch artifact inputs")
	}
	used := map[string]bool{}
	out := make([]sandbox.Input, 0, len(ins))
	scope := tenantDir(at.tenant())
	for _, in := range ins {
		key := in.SHA256
		if key == "" {
			// An external input without a digest: cached per id, since
			// nothing says two URLs hold the same bytes.
			key = "id-" + hex.EncodeToString([]byte(in.ID))
		} else if !validSHA(key) {
			return nil, fmt.Errorf("input %s has a malformed sha256", in.ID)
		}
		key = scope + "/" + key
		at.pin(at.a.inputs.pin(key))
		p, err := at.a.inputs.get(ctx, key, func(w io.Writer) (string, error) {
			at.a.inputFetches.Add(1)
			// Stopped at the size the controller declares for it, so a
			// source that sends more (an external URL behind the
			// controller) cannot fill the host's disk.
			limit := in.Size
			if in.URL != "" {
				// An external input is registered without a size: it
				// may be as large as the task's storage quota (none
				// without one).
				limit = cmp.Or(at.storageBytes(), -1)
			}
			return in.SHA256, boundedFetch(ctx, "input "+in.ID, w, limit, InputIdleTimeout, InputFetchTimeout,
				func(ctx context.Context, w io.Writer) error { return tr.FetchInput(ctx, at.asg.AttemptID, in, w) })
		})
		if err != nil {
			return nil, fmt.Errorf("fetch input %s: %w", in.ID, err)
		}
		name := in.Filename
		if !sandbox.ValidInputName(name) {
			name = in.ID
		}
		for i := 2; used[name]; i++ {
			ext := path.Ext(in.Filename)
			name = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(in.Filename, ext), i, ext)
			if !sandbox.ValidInputName(name) {
				name = fmt.Sprintf("%s-%d", in.ID, i)
			}
		}
		used[name] = true
		out = append(out, sandbox.Input{Name: name, HostPath: p})
	}
	return out, nil
}

// tenantDir is the directory of one account's cached inputs: a digest of
// its id, a plain name whatever the id holds.
func tenantDir(tenant string) string {
	sum := sha256.Sum256([]byte(tenant))
	return "t-" + hex.EncodeToString(sum[:16])
}

func validSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// declaredUploads reads payload._artifacts.upload: a path or a list of
// paths. A malformed entry is an error the task fails with.
func declaredUploads(payload json.RawMessage) ([]string, error) {
	var top struct {
		Artifacts struct {
			Upload json.RawMessage `json:"upload"`
		} `json:"_artifacts"`
	}
	if json.Unmarshal(payload, &top) != nil || len(top.Artifacts.Upload) == 0 || string(top.Artifacts.Upload) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(top.Artifacts.Upload, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(top.Artifacts.Upload, &list); err != nil {
		return nil, errors.New("payload._artifacts.upload must be a relative path or a list of them")
	}
	return list, nil
}

// checkDeclared holds each declared upload to spec 2.10 rule 6: a relative
// path to a regular file under the artifact directory. The collected
// files are exactly those (the walk never follows a symlink), so a
// declared path outside them is absolute, escapes, is a symlink or is
// missing; the message says which.
func checkDeclared(declared []string, arts []sandbox.Artifact, skipped []string) error {
	have := map[string]bool{}
	for _, a := range arts {
		have[a.Path] = true
	}
	isSkipped := map[string]bool{}
	for _, s := range skipped {
		isSkipped[s] = true
	}
	var problems []string
	for i, p := range declared {
		field := fmt.Sprintf("payload._artifacts.upload[%d] %q", i, p)
		clean := path.Clean(strings.ReplaceAll(p, `\`, "/"))
		switch {
		case p == "":
			problems = append(problems, field+": empty path")
		case strings.HasPrefix(p, "/"):
			problems = append(problems, field+": absolute paths are refused; name a path relative to SKIFF_ARTIFACT_DIR")
		case !filepath.IsLocal(p) || clean == ".." || strings.HasPrefix(clean, "../"):
			problems = append(problems, field+": escapes the artifact directory")
		case isSkipped[clean]:
			problems = append(problems, field+": not a regular file (symlinks are refused)")
		case !have[clean]:
			problems = append(problems, field+": no regular file there (a symlinked directory is not followed)")
		}
	}
	if len(problems) > 0 {
		return errors.New("declared artifact uploads refused: " + strings.Join(problems, "; "))
	}
	return nil
}

// uploadFile sends one host file, opened without following links.
func (at *attempt) uploadFile(ctx context.Context, tr ArtifactTransfer, hostPath, relPath, kind string) (*agentproto.UploadedArtifact, error) {
	f, err := os.OpenFile(hostPath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", relPath)
	}
	return tr.UploadArtifact(ctx, &UploadParams{AttemptID: at.asg.AttemptID, Path: relPath, Kind: kind,
		Size: st.Size(), Body: io.LimitReader(f, st.Size())})
}

// uploadOutputs uploads the artifact directory's files (marked failed when
// the attempt failed), a result too large to keep inline, and the full
// output when it outgrew the windows, and records them in o.
func (at *attempt) uploadOutputs(ctx context.Context, o *agentproto.Outcome, so *sandbox.Outcome, d sandbox.Dirs, logPath string, logNeeded bool) {
	tr, ok := at.a.cfg.Controller.(ArtifactTransfer)
	if !ok {
		return
	}
	log := at.a.log.With("attempt_id", at.asg.AttemptID)
	declared, err := declaredUploads(at.asg.Payload)
	if err == nil {
		err = checkDeclared(declared, so.Artifacts, so.SkippedArtifacts)
	}
	if err != nil {
		o.ArtifactError = err.Error()
	} else {
		kind := agentproto.ArtifactKindOutput
		if so.ExitCode != 0 || so.TimedOut || so.Killed || so.SandboxError != "" {
			kind = agentproto.ArtifactKindFailedOutput
		}
		for _, a := range so.Artifacts {
			up, err := at.uploadFile(ctx, tr, a.HostPath, a.Path, kind)
			if err != nil {
				log.Warn("artifact upload failed", "path", a.Path, "err", err)
				o.ArtifactError = fmt.Sprintf("upload of %s failed: %v", a.Path, err)
				break
			}
			o.Artifacts = append(o.Artifacts, *up)
		}
	}
	if so.ResultTooLarge {
		up, err := at.uploadFile(ctx, tr, d.ResultFile(), sandbox.ResultFileName, agentproto.ArtifactKindResult)
		if err != nil {
			log.Warn("spilled result upload failed", "err", err)
		} else {
			o.Artifacts = append(o.Artifacts, *up)
			o.ResultArtifactID, o.ResultTooLarge, o.ResultRejected = up.ID, false, ""
		}
	}
	if logNeeded {
		up, err := at.uploadFile(ctx, tr, logPath, "output.log", agentproto.ArtifactKindLog)
		if err != nil {
			log.Warn("full output upload failed", "err", err)
		} else {
			o.Artifacts = append(o.Artifacts, *up)
			o.OutputArtifactID = up.ID
		}
	}
}
