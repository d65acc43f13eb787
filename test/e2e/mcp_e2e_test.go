package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// mcpLine is one line test/mcp/drive.mjs printed.
type mcpLine struct {
	Step         string          `json:"step"`
	Tool         string          `json:"tool"`
	Message      string          `json:"message"`
	Instructions string          `json:"instructions"`
	Names        []string        `json:"names"`
	IsError      bool            `json:"isError"`
	Structured   json.RawMessage `json:"structured"`
	Text         string          `json:"text"`
	Progress     []struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	} `json:"progress"`
}

// mcpCall is one tool call of drive.mjs's plan.
type mcpCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Progress  bool           `json:"progress,omitempty"`
}

// driveMCP runs test/mcp/drive.mjs (the @modelcontextprotocol/sdk client)
// with args and the calls, and returns its lines and exit code.
func driveMCP(t *testing.T, env []string, calls []mcpCall, args ...string) ([]mcpLine, int) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Skip(t, "node is not installed (scripts/setup.sh installs it)")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "mcp"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		testenv.Skip(t, "test/mcp/node_modules is missing: run scripts/setup.sh (npm ci in test/mcp)")
	}
	plan := filepath.Join(t.TempDir(), "calls.json")
	b, _ := json.Marshal(calls)
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, append(append([]string{filepath.Join(dir, "drive.mjs")}, args...), plan)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKIFF_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var lines []mcpLine
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for sc.Scan() {
		var l mcpLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("drive.mjs printed %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("drive.mjs %v: exit %d\nstderr:\n%s", args, code, stderr.String())
		}
	})
	return lines, code
}

func mcpCallLine(t *testing.T, lines []mcpLine, tool string) mcpLine {
	t.Helper()
	for _, l := range lines {
		if l.Step == "call" && l.Tool == tool {
			return l
		}
	}
	t.Fatalf("no %s call among %+v", tool, lines)
	return mcpLine{}
}

// TestMCPWithTheNpmClient drives both MCP servers of the real binary with
// the ecosystem's own client (@modelcontextprotocol/sdk), on each store:
// `skiff mcp` over stdio with the CLI's saved login pushes the hello
// example (its .dockerignore honoured, the build followed), submits a job,
// waits for it with progress notifications and reads its result, which
// the server's own gVisor host computed; the remote /mcp answers the same
// tools, a 402 with the quote when the account cannot pay, and refuses a
// bad token.
func TestMCPWithTheNpmClient(t *testing.T) {
	buildtest.RequireTools(t)
	runner := buildExample(t, "hello")
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			dataDir := buildtest.DataDir(t)
			var env []string
			if store == "postgres" {
				url := pgtest.NewDatabase(t)
				env = envList("SKIFF_DATABASE_URL", url)
			}
			srv := startServer(t, env, "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--host-slots", "1")
			key := strings.TrimSpace(skiff(t, env, "admin", "create-key", "--data-dir", dataDir, "--account", "agent").stdout)
			skiff(t, env, "admin", "grant-credit", "--data-dir", dataDir, "--account", "agent", "--usd", "20")
			broke := strings.TrimSpace(skiff(t, env, "admin", "create-key", "--data-dir", dataDir, "--account", "broke").stdout)

			// The hello example as a user has it, and a login saved.
			dir := filepath.Join(t.TempDir(), "hello")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			files := exampleFiles(t, "hello", "Dockerfile", "skiff.project.json", ".dockerignore", "main.go")
			files["runner"] = string(runner)
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			config := envList("XDG_CONFIG_HOME", t.TempDir())
			if r := skiff(t, config, "login", "--url", srv.URL, "--token", key); r.code != 0 {
				t.Fatalf("skiff login: exit %d\n%s", r.code, r.stderr)
			}

			lines, code := driveMCP(t, append(config, asSkiff+"=1"), []mcpCall{
				{Tool: "push_directory", Arguments: map[string]any{"dir": dir, "project": "hello"}, Progress: true},
				{Tool: "submit_job", Arguments: map[string]any{"job": map[string]any{"project": "hello",
					"runner_command": []string{"/runner"}, "payload": map[string]any{"name": "Ada", "repeat": 2}},
					"idempotency_key": "e2e-mcp-1"}},
				{Tool: "wait_for_job", Arguments: map[string]any{"job_id": "$job"}, Progress: true},
				{Tool: "get_result", Arguments: map[string]any{"job_id": "$job"}},
			}, "local", os.Args[0])
			if code != 0 {
				t.Fatalf("drive.mjs local: exit %d: %+v", code, lines)
			}
			if lines[0].Step != "initialize" || !strings.Contains(lines[0].Instructions, "submit_job") {
				t.Errorf("initialize: %+v", lines[0])
			}
			if !slices.Contains(lines[1].Names, "push_directory") || !slices.Contains(lines[1].Names, "wait_for_job") {
				t.Errorf("tools: %v", lines[1].Names)
			}
			push := mcpCallLine(t, lines, "push_directory")
			var pushed struct {
				Push struct{ Status string } `json:"push"`
			}
			_ = json.Unmarshal(push.Structured, &pushed)
			if push.IsError || pushed.Push.Status != "published" || len(push.Progress) == 0 {
				t.Fatalf("push_directory: %+v", push)
			}
			wait := mcpCallLine(t, lines, "wait_for_job")
			var waited struct {
				Done bool                    `json:"done"`
				Job  struct{ Status string } `json:"job"`
			}
			_ = json.Unmarshal(wait.Structured, &waited)
			if wait.IsError || !waited.Done || waited.Job.Status != "completed" || len(wait.Progress) == 0 {
				t.Errorf("wait_for_job: %+v", wait)
			}
			res := mcpCallLine(t, lines, "get_result")
			var result struct {
				Results []struct {
					Result map[string]any `json:"result"`
				} `json:"results"`
			}
			_ = json.Unmarshal(res.Structured, &result)
			if res.IsError || len(result.Results) != 1 || result.Results[0].Result["greeting"] != "hello, Ada\nhello, Ada" {
				t.Errorf("get_result: %s", res.Structured)
			}
			var sub struct {
				Job struct{ ID string } `json:"job"`
			}
			_ = json.Unmarshal(mcpCallLine(t, lines, "submit_job").Structured, &sub)

			// The remote server: the same job seen through /mcp.
			lines, code = driveMCP(t, nil, []mcpCall{
				{Tool: "show_job", Arguments: map[string]any{"job_id": sub.Job.ID}},
			}, "remote", srv.URL+"/mcp", key)
			if code != 0 || slices.Contains(lines[1].Names, "push_directory") {
				t.Fatalf("drive.mjs remote: exit %d: %+v", code, lines)
			}
			if show := mcpCallLine(t, lines, "show_job"); show.IsError || !strings.Contains(string(show.Structured), `"completed"`) {
				t.Errorf("show_job: %+v", show)
			}

			// An account without credit pushes the same example (no money
			// needed) and gets the quote and what to do when it submits.
			brokeConfig := envList("XDG_CONFIG_HOME", t.TempDir())
			if r := skiff(t, brokeConfig, "login", "--url", srv.URL, "--token", broke); r.code != 0 {
				t.Fatalf("skiff login: exit %d\n%s", r.code, r.stderr)
			}
			lines, code = driveMCP(t, append(brokeConfig, asSkiff+"=1"), []mcpCall{
				{Tool: "push_directory", Arguments: map[string]any{"dir": dir, "project": "hello"}},
				{Tool: "submit_job", Arguments: map[string]any{"job": map[string]any{"project": "hello",
					"runner_command": []string{"/runner"}, "payload": map[string]any{"name": "Bo"}}, "idempotency_key": "e2e-broke-1"}},
			}, "local", os.Args[0])
			if code != 0 {
				t.Fatalf("drive.mjs local (broke): exit %d: %+v", code, lines)
			}
			refused := mcpCallLine(t, lines, "submit_job")
			var te struct {
				Status int `json:"status"`
				Quote  struct {
					ID string `json:"id"`
				} `json:"quote"`
				NextSteps []string `json:"next_steps"`
			}
			_ = json.Unmarshal(refused.Structured, &te)
			if !refused.IsError || te.Status != 402 || te.Quote.ID == "" || len(te.NextSteps) == 0 ||
				!strings.Contains(refused.Text, te.Quote.ID) {
				t.Errorf("submit without credit: %+v", refused)
			}

			// A bad token is refused at connect.
			lines, code = driveMCP(t, nil, nil, "remote", srv.URL+"/mcp", "flk_nope")
			if code != 1 || len(lines) != 1 || lines[0].Step != "error" || !strings.Contains(lines[0].Message, "invalid credentials") {
				t.Errorf("bad token: exit %d, %+v", code, lines)
			}
			if code := srv.stop(t, 30*1e9); code != 0 {
				t.Errorf("server exit %d", code)
			}
		})
	}
}
