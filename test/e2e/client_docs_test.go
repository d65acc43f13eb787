package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/skiffhq/skiff/docs"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// cliDocsMarker is how docs/cli.md marks the blocks this test runs (the
// docs test of internal/httpapi runs blocks without the skiff binary, so
// they say norun there).
const cliDocsMarker = "test/e2e's TestCLIDocs runs"

// TestCLIDocs runs the commands of docs/cli.md, in order, in one bash with
// the skiff binary on PATH, against a real server whose stand-in host runs
// every task.
func TestCLIDocs(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("skipping: no bash")
	}
	ce := newClientEnv(t, apitest.Engines()[0])
	go func() { _ = ce.e.Projects.RunBuilds(t.Context(), apitest.ReadyBuilder{}) }()
	go func() { _ = ce.e.Worker().Serve(t.Context(), 20*time.Millisecond) }()

	bin := t.TempDir()
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 exec '%s' \"$@\"\n", asSkiff, os.Args[0])
	if err := os.WriteFile(filepath.Join(bin, "skiff"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	n := 0
	for _, b := range fencedBlocks(src, "sh") {
		if !strings.Contains(b.info, cliDocsMarker) {
			continue
		}
		n++
		fmt.Fprintf(&script, "echo '>>> block %d' >&2\n%s\n", n, b.code)
	}
	if n < 4 {
		t.Fatalf("found %d blocks marked %q in docs/cli.md", n, cliDocsMarker)
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-c", script.String())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), ce.env...)
	cmd.Env = append(cmd.Env, "SKIFF_TOKEN="+ce.acct.Member, "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the commands of docs/cli.md failed: %v\n%s", err, out)
	}
	for _, want := range []string{"Logged in to", "Build psh_", "published", "Result of job_", "succeeded"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the output of docs/cli.md's commands lacks %q:\n%s", want, out)
		}
	}
	// The page is served as documentation too.
	found := false
	for _, p := range docs.Catalog() {
		found = found || p.File == "cli.md"
	}
	if !found {
		t.Error("docs/cli.md is not in the docs catalog")
	}
}

type fenced struct{ info, code string }

// fencedBlocks returns the fenced code blocks of markdown src whose
// language is lang.
func fencedBlocks(src []byte, lang string) []fenced {
	var out []fenced
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		fb, ok := n.(*ast.FencedCodeBlock)
		if !entering || !ok || fb.Info == nil {
			return ast.WalkContinue, nil
		}
		info := strings.TrimSpace(string(fb.Info.Value(src)))
		if l, _, _ := strings.Cut(info, " "); l != lang {
			return ast.WalkContinue, nil
		}
		var code bytes.Buffer
		for i := 0; i < fb.Lines().Len(); i++ {
			seg := fb.Lines().At(i)
			code.Write(seg.Value(src))
		}
		out = append(out, fenced{info: info, code: code.String()})
		return ast.WalkContinue, nil
	})
	return out
}
