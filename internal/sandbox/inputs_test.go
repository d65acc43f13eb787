package sandbox_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skiffhq/skiff/internal/sandbox"
)

func TestPrepareInputs(t *testing.T) {
	t.Parallel()
	s := validSpec(t)
	cache := t.TempDir()
	src := filepath.Join(cache, "abc")
	if err := os.WriteFile(src, []byte("rows"), 0o444); err != nil {
		t.Fatal(err)
	}
	s.Payload = []byte(`{"x":1,"_artifacts":{"download":["art_1"]}}`)
	s.Inputs = []sandbox.Input{{Name: "data set.csv", HostPath: src}}
	s.Env = map[string]string{"SKIFF_ARTIFACT_FORGED": "/etc/passwd"}
	view := sandbox.ContainerDirs()
	d, err := sandbox.Prepare(&s, nil, view)
	if err != nil {
		t.Fatal(err)
	}
	placed := filepath.Join(d.Payload, "inputs", "data set.csv")
	if b, err := os.ReadFile(placed); err != nil || string(b) != "rows" {
		t.Fatalf("placed input: got %q, %v; want %q", b, err, "rows")
	}
	if st, _ := os.Stat(placed); st.Mode().Perm() != 0o444 {
		t.Errorf("input mode: got %v, want 0444", st.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(d.Payload, "inputs", "new"), nil, 0o644); err == nil && os.Geteuid() != 0 {
		t.Error("created a file in the inputs directory, want it read-only")
	}
	var p struct {
		X         int `json:"x"`
		Artifacts struct {
			Download   []string `json:"download"`
			LocalPaths []string `json:"local_paths"`
		} `json:"_artifacts"`
	}
	b, _ := os.ReadFile(d.PayloadFile())
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	want := "/run/skiff/payload/inputs/data set.csv"
	if p.X != 1 || len(p.Artifacts.Download) != 1 || !slices.Equal(p.Artifacts.LocalPaths, []string{want}) {
		t.Errorf("payload: got %s, want x, download kept and local_paths [%s]", b, want)
	}
	env := sandbox.Environ(&s, view)
	if !slices.Contains(env, "SKIFF_ARTIFACT_DATA_SET_CSV="+want) || slices.Contains(env, "SKIFF_ARTIFACT_FORGED=/etc/passwd") {
		t.Errorf("env: got %q, want SKIFF_ARTIFACT_DATA_SET_CSV and no forged SKIFF_ARTIFACT_ variable", env)
	}
	for name, ok := range map[string]bool{"a.txt": true, "": false, "..": false, "a/b": false, `a\b`: false} {
		if got := sandbox.ValidInputName(name); got != ok {
			t.Errorf("ValidInputName(%q): got %v, want %v", name, got, ok)
		}
	}
}
