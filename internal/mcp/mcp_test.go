package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// bearer adds a token to every request, as an agent host configured with
// an Authorization header does.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// onEngines runs fn on each store engine with a fresh server.
func onEngines(t *testing.T, fn func(t *testing.T, e *apitest.Env)) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			fn(t, apitest.Start(t, apitest.Options{Store: eng.Open(t)}))
		})
	}
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu      sync.Mutex
	seen    []*sdk.ProgressNotificationParams
	first   chan struct{}
	once    sync.Once
	changed chan struct{}
}

func newProgressLog() *progressLog {
	return &progressLog{first: make(chan struct{}), changed: make(chan struct{}, 1)}
}

func (p *progressLog) handle(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.seen = append(p.seen, req.Params)
	p.mu.Unlock()
	p.once.Do(func() { close(p.first) })
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// until waits for a notification that ok accepts and returns all seen so
// far: a client may handle a call's notifications after its result.
func (p *progressLog) until(t *testing.T, ok func(*sdk.ProgressNotificationParams) bool) []*sdk.ProgressNotificationParams {
	t.Helper()
	for {
		seen := p.all()
		if slices.ContainsFunc(seen, ok) {
			return seen
		}
		select {
		case <-p.changed:
		case <-t.Context().Done():
			t.Fatalf("no such progress notification among %d", len(seen))
		}
	}
}

func (p *progressLog) all() []*sdk.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// connectRemote connects the Go SDK's client to the server's /mcp with token.
func connectRemote(t *testing.T, e *apitest.Env, token string, pl *progressLog) (*sdk.ClientSession, error) {
	opts := &sdk.ClientOptions{}
	if pl != nil {
		opts.ProgressNotificationHandler = pl.handle
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "skiff-test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// call calls a tool and decodes its structured content into out (nil:
// skip), failing the test on a tool error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any, out any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(res))
	}
	decode(t, res, out)
	return res
}

func decode(t *testing.T, res *sdk.CallToolResult, out any) {
	t.Helper()
	if out == nil {
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The remote server over Streamable HTTP, with the Go SDK's client: the
// instructions are skill.md, the tools are listed with schemas, and a job
// goes from submit through wait (progress notifications as its tasks end)
// to its result, output, tasks and artifacts; docs pages are resources.
func TestRemoteJobLifecycle(t *testing.T) {
	onEngines(t, func(t *testing.T, e *apitest.Env) {
		acct := e.FundedAccount(t, "agent", "hello", 50_000_000)
		pl := newProgressLog()
		cs, err := connectRemote(t, e, acct.Member, pl)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		init := cs.InitializeResult()
		if init.ServerInfo.Name != "skiff" || !strings.Contains(init.Instructions, "submit_job") ||
			!strings.Contains(init.Instructions, "# ") {
			t.Errorf("initialize: got server %+v, instructions %.200q", init.ServerInfo, init.Instructions)
		}

		tools, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
			if tool.InputSchema == nil || tool.Description == "" {
				t.Errorf("tool %s: no schema or description", tool.Name)
			}
		}
		for _, want := range []string{"list_projects", "show_project", "project_status", "submit_job", "show_job",
			"list_tasks", "wait_for_job", "get_result", "list_results", "cancel_job", "job_output", "list_artifacts",
			"read_artifact", "balance", "topup_quote", "send_feedback"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools: %s missing from %v", want, names)
			}
		}
		for _, local := range []string{"push_directory", "download_artifact"} {
			if slices.Contains(names, local) {
				t.Errorf("tools: the remote server offers %s, which writes to its own disk", local)
			}
		}
		// The job's schema comes from apiv1.JobSubmit.
		for _, tool := range tools.Tools {
			if tool.Name == "submit_job" {
				b, _ := json.Marshal(tool.InputSchema)
				for _, field := range []string{`"fan_out"`, `"runner_command"`, `"idempotency_key"`, `"requirements"`} {
					if !strings.Contains(string(b), field) {
						t.Errorf("submit_job schema lacks %s: %s", field, b)
					}
				}
			}
		}

		var projects struct {
			Projects []struct{ Name string } `json:"projects"`
		}
		call(t, cs, "list_projects", map[string]any{}, &projects)
		if len(projects.Projects) != 1 || projects.Projects[0].Name != "hello" {
			t.Errorf("list_projects: got %+v", projects)
		}
		var status struct {
			ProjectReady bool   `json:"project_ready"`
			NextAction   string `json:"next_action"`
		}
		call(t, cs, "project_status", map[string]any{"name": "hello"}, &status)
		if !status.ProjectReady || status.NextAction == "" {
			t.Errorf("project_status: got %+v", status)
		}

		var sub struct {
			Job struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"job"`
			IdempotencyKey string `json:"idempotency_key"`
		}
		job := map[string]any{"project": "hello", "runner_command": []string{"/runner"},
			"fan_out": map[string]any{"items": []any{map[string]any{"n": 1}, map[string]any{"n": 2}, map[string]any{"n": 3}}}}
		call(t, cs, "submit_job", map[string]any{"job": job, "idempotency_key": "mcp-test-1"}, &sub)
		if sub.Job.ID == "" || sub.IdempotencyKey != "mcp-test-1" {
			t.Fatalf("submit_job: got %+v", sub)
		}
		// The same key again admits nothing new.
		var again struct {
			Job struct{ ID string } `json:"job"`
		}
		call(t, cs, "submit_job", map[string]any{"job": job, "idempotency_key": "mcp-test-1"}, &again)
		if again.Job.ID != sub.Job.ID {
			t.Errorf("submit_job with the same key: got job %s, want %s", again.Job.ID, sub.Job.ID)
		}

		// wait_for_job follows the stream: the first notification (the
		// snapshot) comes before any task ran; then each task ends.
		type waitOut struct {
			Done bool `json:"done"`
			Job  struct {
				Status string `json:"status"`
			} `json:"job"`
			Result struct {
				Results []struct {
					Result json.RawMessage `json:"result"`
				} `json:"results"`
			} `json:"result"`
		}
		waited := make(chan *sdk.CallToolResult, 1)
		go func() {
			params := &sdk.CallToolParams{Name: "wait_for_job", Arguments: map[string]any{"job_id": sub.Job.ID}}
			params.SetProgressToken("wait-1")
			res, err := cs.CallTool(t.Context(), params)
			if err != nil {
				t.Errorf("wait_for_job: %v", err)
			}
			waited <- res
		}()
		<-pl.first
		if n := e.Worker().RunAll(t, 0, `{"ok": true}`); n != 3 {
			t.Fatalf("worker ran %d tasks, want 3", n)
		}
		res := <-waited
		if res == nil || res.IsError {
			t.Fatalf("wait_for_job: %+v", res)
		}
		var w waitOut
		decode(t, res, &w)
		if !w.Done || w.Job.Status != "completed" || len(w.Result.Results) != 3 {
			t.Errorf("wait_for_job: got %+v", w)
		}
		// The first notification came before any task ran; one says all
		// three ended.
		seen := pl.until(t, func(p *sdk.ProgressNotificationParams) bool { return p.Progress == 3 && p.Total == 3 })
		if seen[0].Progress != 0 || seen[0].Total != 3 || len(seen) < 3 {
			for _, p := range seen {
				t.Logf("progress %v/%v %s", p.Progress, p.Total, p.Message)
			}
			t.Errorf("progress: got %d notifications, the first %v/%v; want 0/3 first and at least 3",
				len(seen), seen[0].Progress, seen[0].Total)
		}
		if seen[0].ProgressToken != "wait-1" {
			t.Errorf("progress token: got %v", seen[0].ProgressToken)
		}

		var result struct {
			Status      string `json:"status"`
			ResultCount int    `json:"result_count"`
		}
		call(t, cs, "get_result", map[string]any{"job_id": sub.Job.ID}, &result)
		if result.ResultCount != 3 {
			t.Errorf("get_result: got %+v", result)
		}
		var out struct {
			Output string `json:"output"`
		}
		call(t, cs, "job_output", map[string]any{"job_id": sub.Job.ID}, &out)
		if !strings.Contains(out.Output, "ran") {
			t.Errorf("job_output: got %+v", out)
		}
		var tasks struct {
			Tasks []struct{ Status string } `json:"tasks"`
			More  bool                      `json:"more"`
		}
		call(t, cs, "list_tasks", map[string]any{"job_id": sub.Job.ID, "limit": 2}, &tasks)
		if len(tasks.Tasks) != 2 || !tasks.More || tasks.Tasks[0].Status != "succeeded" {
			t.Errorf("list_tasks: got %+v", tasks)
		}

		// A small text artifact comes back inline; the list finds it.
		c := client.New(e.URL, acct.Member)
		art, err := c.PutArtifact(t.Context(), "notes.txt", "", func() (rc io.ReadCloser, err error) {
			return io.NopCloser(strings.NewReader("hello from an artifact\n")), nil
		}, 23)
		if err != nil {
			t.Fatal(err)
		}
		var read struct {
			Text *string `json:"text"`
			Link string  `json:"link"`
		}
		call(t, cs, "read_artifact", map[string]any{"artifact_id": art.ID}, &read)
		if read.Text == nil || *read.Text != "hello from an artifact\n" {
			t.Errorf("read_artifact: got %+v", read)
		}
		var arts struct {
			Count int `json:"count"`
		}
		call(t, cs, "list_artifacts", map[string]any{}, &arts)
		if arts.Count == 0 {
			t.Errorf("list_artifacts: none")
		}

		var bal struct {
			Balance struct {
				AvailableUSD json.Number `json:"available_usd"`
			} `json:"balance"`
		}
		call(t, cs, "balance", map[string]any{}, &bal)
		if bal.Balance.AvailableUSD == "" {
			t.Errorf("balance: got %+v", bal)
		}
		var fb struct {
			ID            string `json:"id"`
			AccountLinked bool   `json:"account_linked"`
		}
		call(t, cs, "send_feedback", map[string]any{"type": "feature_request", "title": "more tools",
			"description": "from the MCP test"}, &fb)
		if !strings.HasPrefix(fb.ID, "fb_") || !fb.AccountLinked {
			t.Errorf("send_feedback: got %+v", fb)
		}

		// An unknown job is a tool error carrying the API's envelope.
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "show_job", Arguments: map[string]any{"job_id": "job_nope"}})
		if err != nil {
			t.Fatal(err)
		}
		var te struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		}
		decode(t, res, &te)
		if !res.IsError || te.Status != 404 {
			t.Errorf("show_job of an unknown job: got isError %v, %+v", res.IsError, te)
		}

		// The docs are resources, read from the server.
		rs, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rs.Resources {
			found = found || r.URI == "skiff://docs/jobs"
		}
		if !found {
			t.Errorf("resources: skiff://docs/jobs missing")
		}
		page, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "skiff://docs/jobs"})
		if err != nil || len(page.Contents) != 1 || !strings.HasPrefix(page.Contents[0].Text, "# ") {
			t.Errorf("read skiff://docs/jobs: %v %+v", err, page)
		}
	})
}
