package httpapi_test

import (
	"encoding/json"
	"errors"
	"io/fs"
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
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/testenv"
)

// fencedBlock is one fenced code block of a docs page.
type fencedBlock struct{ lang, info, code string }

// pageBlocks reads every fenced code block of a docs page, in order.
func pageBlocks(t *testing.T, file string) []fencedBlock {
	t.Helper()
	src, err := fs.ReadFile(docs.Pages, file)
	if err != nil {
		t.Fatal(err)
	}
	var out []fencedBlock
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		fb, ok := n.(*ast.FencedCodeBlock)
		if !entering || !ok || fb.Info == nil {
			return ast.WalkContinue, nil
		}
		info := strings.TrimSpace(string(fb.Info.Value(src)))
		lang, _, _ := strings.Cut(info, " ")
		var code strings.Builder
		for i := 0; i < fb.Lines().Len(); i++ {
			seg := fb.Lines().At(i)
			code.Write(seg.Value(src))
		}
		out = append(out, fencedBlock{lang: lang, info: info, code: code.String()})
		return ast.WalkContinue, nil
	})
	return out
}

// helloHost stands in for a host running examples/hello: once a client
// follows a stream (as it would while a real task runs), it runs the
// queued tasks, printing "hello, Ada" as progress and as its output, and
// then waits for that stream to close before it looks again, so that a
// job submitted next waits for its own stream.
func helloHost(t *testing.T, f *fixture) {
	ctx := t.Context()
	waitStreams := func(open bool) {
		for ctx.Err() == nil && (f.e.Broker.Count() > 0) != open {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for ctx.Err() == nil {
		waitStreams(true)
		// The stream subscribed; give it time to send its snapshot, so
		// that the page's output (which starts queued) is what it prints.
		time.Sleep(500 * time.Millisecond)
		for ctx.Err() == nil && runHello(t, f) {
		}
		waitStreams(false)
	}
}

// runHello runs the next queued task as examples/hello would; false when
// none is queued (or it failed, reported).
func runHello(t *testing.T, f *fixture) bool {
	ctx := t.Context()
	_, a, err := f.e.Jobs.Claim(ctx, &store.TaskClaimParams{HostID: "wkr_docs", AttemptID: id.New(id.Attempt),
		ResourceProfile: json.RawMessage(`{}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, Now: f.e.Clock.Now()})
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	start := f.e.Clock.Now()
	if err == nil {
		err = f.e.Jobs.AttemptStarted(ctx, a, start)
	}
	if err == nil {
		err = f.e.Jobs.AttemptProgress(ctx, a, json.RawMessage(`{"done":0,"total":1}`), "hello, Ada\n")
	}
	if err == nil {
		o := job.Outcome{Result: json.RawMessage(`{"greeting":"hello, Ada"}`), Stdout: "hello, Ada\n",
			StartedAt: start, EndedAt: start.Add(time.Second)}
		err = f.e.Jobs.AttemptFinished(ctx, a, &o, nil, "hello, Ada\n")
	}
	if err != nil && ctx.Err() == nil {
		t.Errorf("hello host: %v", err)
	}
	return err == nil
}

// TestStreamDocsExamples runs the curl and JavaScript examples of
// docs/streams.md as a reader would, against a real server whose stand-in
// host runs the job, and holds their output to what the page shows.
func TestStreamDocsExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "the streams examples need "+tool)
		}
	}
	sse, _ := filepath.Abs("../../test/sse/node_modules")
	if _, err := os.Stat(filepath.Join(sse, "eventsource")); err != nil {
		testenv.Skip(t, "test/sse/node_modules missing: run make setup (npm ci)")
	}
	f := setupWith(t, apitest.Engines()[0], apitest.Options{})
	funded(100_000_000)(t, f)
	f.member.Post(t, "/api/v1/projects", map[string]any{"name": "hello"}).Want(t, 201)
	publishFor(t, f.e, f.acct.ID, "hello")
	go helloHost(t, f)
	env := append(os.Environ(), "SKIFF_URL="+f.e.URL, "SKIFF_TOKEN="+f.acct.Member)

	blocks := pageBlocks(t, "streams.md")
	var curlBlock, jsBlock, jsOutput string
	for i, b := range blocks {
		switch {
		case b.lang == "sh" && strings.Contains(b.info, "TestStreamDocsExamples"):
			curlBlock = b.code
		case b.lang == "js" && jsBlock == "":
			jsBlock = b.code
			if i+1 < len(blocks) && blocks[i+1].lang == "text" {
				jsOutput = blocks[i+1].code
			}
		}
	}
	if curlBlock == "" || jsBlock == "" || jsOutput == "" {
		t.Fatal("docs/streams.md: the curl block, the js block or the js block's output is missing")
	}

	t.Run("curl", func(t *testing.T) {
		cmd := exec.CommandContext(t.Context(), "bash", "-c", "set -euo pipefail\n"+curlBlock)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the curl example failed: %v\n%s", err, out)
		}
		var events []string
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(l, "event: "); ok {
				events = append(events, v)
			}
		}
		got := strings.Join(events, " ")
		if !strings.HasPrefix(got, "snapshot task job ") || !strings.HasSuffix(got, " job done") ||
			!strings.Contains(string(out), `"kind":"job.completed"`) || !strings.Contains(string(out), `"status":"completed"}`) {
			t.Errorf("curl printed frames %q; want snapshot, task, job, ..., the terminal job frame and done:\n%s", got, out)
		}
	})

	t.Run("javascript", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(sse, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "follow.mjs"), []byte(jsBlock), 0o644); err != nil {
			t.Fatal(err)
		}
		j := f.member.Post(t, "/api/v1/jobs", map[string]any{"project": "hello", "runner_command": []string{"/runner"},
			"payload": map[string]any{"name": "Ada"}}).Object(t, 201)
		jobID := j["id"].(string)
		cmd := exec.CommandContext(t.Context(), "node", "follow.mjs", jobID)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node follow.mjs: %v\n%s", err, out)
		}
		want := strings.ReplaceAll(jsOutput, "job_...", jobID)
		if string(out) != want {
			t.Errorf("node follow.mjs printed:\n%s\nthe page shows:\n%s", out, want)
		}
	})
}
