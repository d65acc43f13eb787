package client_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// forEngine runs fn on a fresh server per store engine.
func forEngine(t *testing.T, opts apitest.Options, fn func(t *testing.T, e *apitest.Env)) {
	forEngineWith(t, func(*testing.T) apitest.Options { return opts }, fn)
}

// forEngineWith is forEngine with options made per server.
func forEngineWith(t *testing.T, opts func(t *testing.T) apitest.Options, fn func(t *testing.T, e *apitest.Env)) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			o := opts(t)
			o.Store = eng.Open(t)
			fn(t, apitest.Start(t, o))
		})
	}
}

// account is a funded account with a published project "p" and its client.
func account(t *testing.T, e *apitest.Env, opts ...client.Option) (*apitest.Account, *client.Client) {
	t.Helper()
	a := e.FundedAccount(t, "acme", "p", 10_000_000)
	return a, client.New(e.URL, a.Member, opts...)
}

func submit(t *testing.T, c *client.Client, extra map[string]any) *apiv1.Job {
	t.Helper()
	body := map[string]any{"project": "p", "runner_command": []string{"/runner"}}
	for k, v := range extra {
		body[k] = v
	}
	j, err := c.SubmitJobRaw(t.Context(), body, "")
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestProjectsAndKV(t *testing.T) {
	forEngine(t, apitest.Options{}, func(t *testing.T, e *apitest.Env) {
		ctx := t.Context()
		_, c := account(t, e)
		if _, err := c.CreateProject(ctx, &apiv1.ProjectWrite{Name: client.Ptr("p")}); client.StatusOf(err) != http.StatusConflict {
			t.Errorf("second create: got %v, want a 409", err)
		}
		ps, err := c.Projects(ctx)
		if err != nil || len(ps) != 1 || ps[0].Name != "p" {
			t.Fatalf("projects: %v %v", ps, err)
		}
		up, err := c.UpdateProject(ctx, "p", &apiv1.ProjectWrite{Env: map[string]string{"A": "1"}})
		if err != nil || up.Env["A"] != "1" {
			t.Errorf("update: %+v %v", up, err)
		}
		st, err := c.ProjectStatus(ctx, "p", true)
		if err != nil || st.ContentHash == nil {
			t.Errorf("status: %+v %v", st, err)
		}
		if _, err := c.KVPut(ctx, "p", "dir/key", json.RawMessage(`{"lr":0.1}`), 0); err != nil {
			t.Fatal(err)
		}
		kv, err := c.KVGet(ctx, "p", "dir/key")
		if err != nil || string(kv.Value) != `{"lr":0.1}` {
			t.Errorf("kv get: %+v %v", kv, err)
		}
		l, err := c.KVList(ctx, "p", "dir/", 0)
		if err != nil || l.Count != 1 {
			t.Errorf("kv list: %+v %v", l, err)
		}
		if _, err := c.KVDelete(ctx, "p", "dir/key"); err != nil {
			t.Fatal(err)
		}
		_, err = c.KVGet(ctx, "p", "dir/key")
		ae, ok := client.AsError(err)
		if !ok || ae.Status != http.StatusNotFound || ae.Code() == "" || ae.RecommendedAction() == "" {
			t.Errorf("kv get after delete: %#v, want a 404 envelope with a code and an action", err)
		}
		if _, err := c.DeleteProject(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Project(ctx, "p"); !client.IsNotFound(err) {
			t.Errorf("deleted project: %v", err)
		}
		// A viewer key is refused writes with the envelope.
		bad := client.New(e.URL, "flk_nonsense")
		if _, err := bad.Projects(ctx); client.StatusOf(err) != http.StatusUnauthorized {
			t.Errorf("bad token: %v, want 401", err)
		}
	})
}

func TestPushDir(t *testing.T) {
	forEngine(t, apitest.Options{}, func(t *testing.T, e *apitest.Env) {
		ctx := t.Context()
		_, c := account(t, e)
		dir := t.TempDir()
		write := func(name, body string) {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("Dockerfile", "FROM scratch\nCOPY runner /runner\n")
		write("skiff.project.json", `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`)
		write("runner", "#!/bin/sh\n")
		write("data/big.bin", "xxxx")
		write("data/keep.txt", "keep")
		write("src/a/b/cache.pyc", "x")
		write(".dockerignore", "# comment\ndata\n!data/keep.txt\n**/*.pyc\n")
		var buf bytes.Buffer
		if _, err := client.WriteTarball(&buf, dir); err != nil {
			t.Fatal(err)
		}
		if got, want := tarNames(t, buf.Bytes()), []string{".dockerignore", "Dockerfile", "data/keep.txt", "runner", "skiff.project.json"}; !slices.Equal(got, want) {
			t.Errorf("tarball files: got %v, want %v", got, want)
		}
		var sent int64
		res, err := c.PushDir(ctx, "p", dir, func(n int64) { sent = n })
		if err != nil {
			t.Fatal(err)
		}
		if res.Accepted == nil || res.PushRef() == "" || sent == 0 {
			t.Fatalf("push: %+v, sent %d", res, sent)
		}
		rec, err := c.PushStatus(ctx, "p", res.PushRef())
		if err != nil || rec.PushRef != res.PushRef() {
			t.Errorf("push status: %+v %v", rec, err)
		}
		if _, err := c.PushDir(ctx, "p", t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "Dockerfile") {
			t.Errorf("push of a directory without a Dockerfile: %v", err)
		}
	})
}

func tarNames(t *testing.T, b []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
	}
}

func TestJobsStreamsAndResults(t *testing.T) {
	forEngine(t, apitest.Options{}, func(t *testing.T, e *apitest.Env) {
		ctx := t.Context()
		_, c := account(t, e)
		j := submit(t, c, map[string]any{"fan_out": map[string]any{"items": []any{map[string]any{}, map[string]any{}, map[string]any{}}}})
		s := c.StreamJob(j.ID, "")
		f, err := s.Next(ctx)
		var snap apiv1.JobStreamSnapshot
		if err != nil || f.Event != apiv1.FrameSnapshot || f.Decode(&snap) != nil || snap.TaskCount != 3 {
			t.Fatalf("first frame: %+v %v", f, err)
		}
		w := e.Worker()
		w.Claim(t)
		w.Progress(t, `{"pct":50}`, "half way\n")
		w.Finish(t, time.Second, 0, `{"v":1}`, "one\n", "")
		// Read a few frames, drop the connection, and resume from the last id.
		var seen []string
		for len(seen) < 3 {
			f, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, f.Event+"@"+f.ID)
		}
		last := s.LastEventID()
		s.Close()
		w.RunAll(t, 0, `{"v":2}`)
		r := c.StreamJob(j.ID, last)
		var rest []client.Frame
		for {
			f, err := r.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, f)
		}
		if len(rest) == 0 || rest[0].Event == apiv1.FrameSnapshot || rest[len(rest)-1].Event != apiv1.FrameDone {
			t.Fatalf("resumed frames: %v", rest)
		}
		events, err := c.JobEvents(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		// Every event after the first seen frames arrived once, in order.
		var ids []string
		for _, f := range rest {
			if f.ID != "" {
				ids = append(ids, f.ID)
			}
		}
		lastN, _ := strconv.ParseInt(last, 10, 64)
		var want []string
		for _, ev := range events {
			if ev.Position > lastN {
				want = append(want, strconv.FormatInt(ev.Position, 10))
			}
		}
		if !slices.Equal(ids, want) {
			t.Errorf("resumed ids %v, want the events after %s: %v", ids, last, want)
		}
		done, err := c.WaitJob(ctx, j.ID, nil)
		if err != nil || done.Status != "completed" {
			t.Fatalf("wait: %+v %v", done, err)
		}
		tasks, err := client.Collect(c.Tasks(ctx, j.ID))
		if err != nil || len(tasks) != 3 || tasks[0].Status != "succeeded" {
			t.Errorf("tasks: %d %v", len(tasks), err)
		}
		res, err := c.Result(ctx, j.ID)
		if err != nil || res.ResultCount != 3 {
			t.Errorf("result: %+v %v", res, err)
		}
		rt, err := client.Collect(c.ResultTasks(ctx, j.ID))
		if err != nil || len(rt) != 3 || string(rt[0].Result) != `{"v":1}` {
			t.Errorf("result tasks: %+v %v", rt, err)
		}
		out, err := c.JobOutput(ctx, j.ID)
		if err != nil || !strings.Contains(out.Output, "one") {
			t.Errorf("output: %+v %v", out, err)
		}
		if _, err := c.CancelJob(ctx, j.ID, ""); client.StatusOf(err) != http.StatusConflict {
			t.Errorf("cancel of a completed job: %v, want 409", err)
		}
		// Watch sees the job end at once.
		ws := c.WatchJobs([]string{j.ID}, "")
		if f, err := ws.Next(ctx); err != nil || f.Event != apiv1.FrameSnapshot {
			t.Errorf("watch: %+v %v", f, err)
		}
	})
}

// Paging: the iterators walk every page.
func TestPaging(t *testing.T) {
	forEngine(t, apitest.Options{}, func(t *testing.T, e *apitest.Env) {
		ctx := t.Context()
		_, c := account(t, e, client.WithPageSize(2))
		var ids []string
		for range 5 {
			ids = append(ids, submit(t, c, nil).ID)
		}
		got, err := client.Collect(c.Jobs(ctx, client.JobFilter{Project: "p"}))
		if err != nil || len(got) != 5 {
			t.Fatalf("jobs: %d %v", len(got), err)
		}
		for _, id := range ids {
			j, err := c.CancelJob(ctx, id, "test")
			if err != nil || j.Status != "cancelled" {
				t.Fatalf("cancel: %+v %v", j, err)
			}
		}
		ledger, err := client.Collect(c.Ledger(ctx, ""))
		if err != nil || len(ledger) == 0 {
			t.Errorf("ledger: %v %v", ledger, err)
		}
		holds, err := client.Collect(c.Holds(ctx))
		if err != nil || len(holds) != 5 {
			t.Errorf("holds: %d %v", len(holds), err)
		}
		results, err := client.Collect(c.Results(ctx, client.ResultFilter{}))
		if err != nil || len(results) != 5 {
			t.Errorf("results: %d %v", len(results), err)
		}
	})
}

func TestArtifacts(t *testing.T) {
	forEngine(t, apitest.Options{}, func(t *testing.T, e *apitest.Env) {
		ctx := t.Context()
		_, c := account(t, e)
		path := filepath.Join(t.TempDir(), "data.csv")
		body := bytes.Repeat([]byte("a,b\n"), 50_000)
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		var sent int64
		a, err := c.PutArtifactFile(ctx, path, "", func(n int64) { sent = n })
		if err != nil || a.Size != int64(len(body)) || a.Filename != "data.csv" || sent != int64(len(body)) {
			t.Fatalf("put: %+v %v (sent %d)", a, err, sent)
		}
		rc, size, err := c.GetArtifact(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, body) || size != int64(len(body)) {
			t.Errorf("get: %d bytes (size %d), want %d", len(got), size, len(body))
		}
		list, err := client.Collect(c.Artifacts(ctx))
		if err != nil || len(list) != 1 {
			t.Errorf("list: %v %v", list, err)
		}
		if _, err := c.DeleteArtifact(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ArtifactMeta(ctx, a.ID); err == nil {
			t.Errorf("meta of a deleted artifact: no error")
		}
	})
}

// A 429 is retried after its Retry-After; the waits go through WithSleep,
// which moves the server's fake clock instead of sleeping.
func TestRetryAfter(t *testing.T) {
	forEngine(t, apitest.Options{AuthRatePerAddress: 1, AuthRatePerIP: -1}, func(t *testing.T, e *apitest.Env) {
		ctx := t.Context()
		var waits []time.Duration
		c := client.New(e.URL, "", client.WithSleep(func(_ context.Context, d time.Duration) error {
			waits = append(waits, d)
			e.Clock.Advance(d)
			return nil
		}))
		w, err := client.ParseWallet(strings.Repeat("42", 32))
		if err != nil {
			t.Fatal(err)
		}
		first, err := c.WalletSignIn(ctx, w, "")
		if err != nil || !strings.HasPrefix(first.Token, "fls_") {
			t.Fatalf("sign in: %+v %v", first, err)
		}
		// The second sign-in is rate limited, waits and succeeds.
		second, err := c.WalletSignIn(ctx, w, "")
		if err != nil || second.Account.ID != first.Account.ID {
			t.Fatalf("second sign in: %+v %v", second, err)
		}
		if len(waits) == 0 || waits[0] <= 0 {
			t.Errorf("waits: %v, want at least one Retry-After wait", waits)
		}
		// Without retries the 429 comes back with its Retry-After.
		noRetry := client.New(e.URL, "", client.WithRetries(0, time.Second))
		_, err = noRetry.WalletSignIn(ctx, w, "")
		if ae, ok := client.AsError(err); !ok || ae.Status != http.StatusTooManyRequests || ae.RetryAfter <= 0 {
			t.Errorf("no retry: %#v", err)
		}
	})
}

func TestUnreachable(t *testing.T) {
	c := client.New("http://127.0.0.1:1", "x")
	_, err := c.Balance(t.Context())
	ae, ok := client.AsError(err)
	if !ok || ae.Status != 0 || ae.Code() != "unavailable" || !errors.Is(err, ae.Unwrap()) {
		t.Errorf("unreachable: %#v", err)
	}
}
