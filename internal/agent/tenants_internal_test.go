package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/agentproto"
)

// fakeTransfer serves every input as the bytes its artifact id maps to and
// counts the fetches.
type fakeTransfer struct {
	Controller
	bytes   map[string]string // artifact id -> content
	fetches int
}

func (f *fakeTransfer) FetchInput(_ context.Context, _ string, in agentproto.InputArtifact, w io.Writer) error {
	f.fetches++
	_, err := io.WriteString(w, f.bytes[in.ID])
	return err
}

func (f *fakeTransfer) UploadArtifact(context.Context, *UploadParams) (*agentproto.UploadedArtifact, error) {
	return nil, nil
}

// An account's input is never served from another account's cached copy:
// tenant B naming A's sha256 on an artifact of its own gets what its own
// artifact serves, checked, and A's bytes only by fetching them itself.
func TestInputsAreCachedPerAccount(t *testing.T) {
	t.Parallel()
	secret := "account A's dataset"
	sum := sha256Hex(secret)
	tr := &fakeTransfer{bytes: map[string]string{"art_a": secret, "art_b": "B's own URL serves this"}}
	dir := t.TempDir()
	a := &Agent{cfg: Config{Controller: tr}, inputs: &inputCache{dir: filepath.Join(dir, "inputs")}}
	run := func(account, artifact string) (string, error) {
		at := &attempt{a: a, asg: agentproto.Assignment{AttemptID: "att_x", ProjectID: "prj_x", AccountID: account,
			Inputs: []agentproto.InputArtifact{{ID: artifact, SHA256: sum, Size: int64(len(tr.bytes[artifact])), Filename: "data"}}}}
		ins, err := at.resolveInputs(t.Context())
		if err != nil {
			return "", err
		}
		b, err := os.ReadFile(ins[0].HostPath)
		return string(b), err
	}
	if got, err := run("acct_a", "art_a"); err != nil || got != secret {
		t.Fatalf("A: %q, %v", got, err)
	}
	if got, err := run("acct_b", "art_b"); err == nil {
		t.Fatalf("B naming A's digest got %q, want a digest mismatch", got)
	} else if !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("B: %v, want a digest mismatch", err)
	}
	if got, err := run("acct_a", "art_a"); err != nil || got != secret || tr.fetches != 2 {
		t.Fatalf("A again: %q, %v after %d fetches; want the cached copy (2 fetches in all)", got, err, tr.fetches)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Seeds are copied only from under the host's seed root: not from a path
// elsewhere, not through a link out of it, and not at all without a root.
func TestSeedPath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	seed := filepath.Join(root, "push_1", "cache")
	if err := os.MkdirAll(seed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{SeedRoot: root}}
	if got, err := a.seedPath(seed); err != nil || got != seed {
		t.Errorf("a seed under the root: %q, %v", got, err)
	}
	for _, bad := range []string{"/etc", filepath.Join(root, "escape"), filepath.Join(root, "push_1", "..", ".."), root, "relative/dir"} {
		if _, err := a.seedPath(bad); err == nil {
			t.Errorf("seed %s: accepted, want refused", bad)
		}
	}
	none := &Agent{}
	if _, err := none.seedPath(seed); err == nil {
		t.Error("a host without a seed root accepted a seed")
	}
}
