package manifest_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/project/manifest"
	"github.com/skiffhq/skiff/internal/project/tarball"
)

// The push handler passes a *tarball.Tree; the manifest package does not
// import tarball, so the fit is checked here.
var _ manifest.FileChecker = (*tarball.Tree)(nil)

func tree() *tarball.Tree {
	return &tarball.Tree{
		Files: []tarball.File{
			{Path: "Dockerfile"}, {Path: "docker/Dockerfile.gpu"}, {Path: "requirements.txt"}, {Path: "seed-file"},
		},
		Dirs:     []string{"cache-seed", "docker", "src"},
		Symlinks: []tarball.Symlink{{Path: "Containerfile", Target: "docker/Dockerfile.gpu"}},
	}
}

func TestCheckAgainst(t *testing.T) {
	t.Parallel()
	const head = `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}`
	tests := []struct {
		name     string
		rest     string
		files    *tarball.Tree
		problems []manifest.Problem // nil means the check passes
	}{
		{"minimal with a Dockerfile", ``, tree(), nil},
		{"everything present", `, "build": {"dockerfile": "docker/Dockerfile.gpu", "context": "src", "inputs": ["requirements.txt", "src"]},
			"cache_mounts": [{"name": "c", "path": "/cache", "seed": "./cache-seed"}]`, tree(), nil},
		{"dockerfile through a symlink", `, "build": {"dockerfile": "Containerfile"}`, tree(), nil},
		{"no Dockerfile at the root", ``, &tarball.Tree{Files: []tarball.File{{Path: "main.py"}}}, []manifest.Problem{
			{Field: "build.dockerfile", Message: "the tarball has no Dockerfile at its root; every project is built from one (set build.dockerfile if yours lives elsewhere)"},
		}},
		{"every reference missing", `, "build": {"dockerfile": "docker/Missing", "context": "nope", "inputs": ["requirements.txt", "lib/", "data.csv"]},
			"cache_mounts": [{"name": "a", "path": "/a", "seed": "seed-file"}, {"name": "b", "path": "/b", "seed": "gone"}]`, tree(), []manifest.Problem{
			{Field: "build.dockerfile", Message: `"docker/Missing" is not in the tarball`},
			{Field: "build.context", Message: `directory "nope" is not in the tarball`},
			{Field: "build.inputs[1]", Message: `"lib" is not in the tarball`},
			{Field: "build.inputs[2]", Message: `"data.csv" is not in the tarball`},
			{Field: "cache_mounts[0].seed", Message: `"seed-file" is a file in the tarball, not a directory`},
			{Field: "cache_mounts[1].seed", Message: `directory "gone" is not in the tarball`},
		}},
		{"dockerfile is a directory", `, "build": {"dockerfile": "docker"}`, tree(), []manifest.Problem{
			{Field: "build.dockerfile", Message: `"docker" is a directory; name the Dockerfile itself`},
		}},
		{"context is a file", `, "build": {"context": "requirements.txt"}`, tree(), []manifest.Problem{
			{Field: "build.context", Message: `"requirements.txt" is a file in the tarball, not a directory`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := manifest.Parse([]byte(head + tt.rest + "}"))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = m.CheckAgainst(tt.files)
			if tt.problems == nil {
				if err != nil {
					t.Fatalf("got %v, want no problems", err)
				}
				return
			}
			var ps manifest.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("got %v, want manifest.Problems", err)
			}
			if len(ps) != len(tt.problems) {
				t.Fatalf("got %d problems %q, want %d", len(ps), ps.Details(), len(tt.problems))
			}
			for i := range ps {
				if ps[i] != tt.problems[i] {
					t.Errorf("problem %d: got %+v, want %+v", i, ps[i], tt.problems[i])
				}
			}
		})
	}
}

// TestDocsExamplesParse keeps docs/manifest.md honest: every ```json block
// in it is a complete manifest that must parse.
func TestDocsExamplesParse(t *testing.T) {
	t.Parallel()
	blocks := jsonBlocks(t, "../../../docs/manifest.md")
	if len(blocks) < 3 {
		t.Fatalf("found %d json examples in docs/manifest.md, want at least 3", len(blocks))
	}
	for i, b := range blocks {
		if _, err := manifest.Parse([]byte(b)); err != nil {
			t.Errorf("example %d does not parse: %v\n%s", i+1, err, b)
		}
	}
}

func jsonBlocks(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	data := string(raw)
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(data, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```json":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}
