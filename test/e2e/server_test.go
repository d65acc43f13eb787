package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
)

// `admin create-key` prints only a key, and that key works at once against
// a server running on the same data dir; `admin grant-credit` prints the
// balance the server then shows.
func TestAdminAgainstRunningServer(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0")

	r := skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "acme")
	if r.code != 0 || !keyRe.MatchString(r.stdout) {
		t.Fatalf("create-key: got exit %d, stdout %q, stderr %q; want 0 and one flk_ key line", r.code, r.stdout, r.stderr)
	}
	member := strings.TrimSpace(r.stdout)
	c := srv.client(t, member)
	var bal struct {
		Account struct{ Name, Role string } `json:"account"`
		Balance map[string]json.Number      `json:"balance"`
	}
	c.Get(t, "/api/v1/account/balance").JSON(t, http.StatusOK, &bal)
	if bal.Account.Name != "acme" || bal.Account.Role != "member" || bal.Balance["available_usd"] != "0" {
		t.Errorf("new key: got %+v, want account acme, role member, balance 0", bal)
	}
	c.Post(t, "/api/v1/projects", map[string]any{"name": "p1"}).Want(t, http.StatusCreated)

	r = skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "acme", "--role", "viewer")
	if r.code != 0 || !keyRe.MatchString(r.stdout) {
		t.Fatalf("create-key --role viewer: got exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	viewer := srv.client(t, strings.TrimSpace(r.stdout))
	viewer.Get(t, "/api/v1/projects/p1").Want(t, http.StatusOK)
	viewer.Post(t, "/api/v1/projects", map[string]any{"name": "p2"}).Fail(t, http.StatusForbidden)

	for _, tc := range []struct{ usd, want string }{{"12.5", "12.5"}, {"0.000001", "12.500001"}, {"7", "19.500001"}} {
		r = skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "acme", "--usd", tc.usd, "--note", "beta")
		if r.code != 0 || r.stdout != tc.want+"\n" {
			t.Fatalf("grant-credit %s: got exit %d, stdout %q, stderr %q; want %q", tc.usd, r.code, r.stdout, r.stderr, tc.want)
		}
		c.Get(t, "/api/v1/account/balance").JSON(t, http.StatusOK, &bal)
		if bal.Balance["available_usd"].String() != tc.want || bal.Balance["ledger_balance_usd"].String() != tc.want {
			t.Errorf("after grant-credit %s: got balance %v, want available and ledger %s", tc.usd, bal.Balance, tc.want)
		}
	}
	// A grant to a new account creates it; its first key sees the money.
	r = skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "newco", "--usd", "5")
	if r.code != 0 || r.stdout != "5\n" {
		t.Fatalf("grant-credit to a new account: got exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "newco")
	srv.client(t, strings.TrimSpace(r.stdout)).Get(t, "/api/v1/account/balance").JSON(t, http.StatusOK, &bal)
	if bal.Account.Name != "newco" || bal.Balance["available_usd"] != "5" {
		t.Errorf("newco: got %+v, want balance 5", bal)
	}

	if code := srv.stop(t, 10*time.Second); code != 0 {
		t.Errorf("got exit %d after SIGTERM, want 0", code)
	}
}

// Every flag has an environment twin; a flag on the command line wins.
func TestEnvironmentTwins(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "from-env")
	env := envList("SKIFF_DATA_DIR", dir, "SKIFF_LISTEN", "127.0.0.1:0", "SKIFF_LOG_LEVEL", "debug")
	srv := startServer(t, env)
	if _, err := os.Stat(filepath.Join(dir, "skiff.db")); err != nil {
		t.Errorf("SKIFF_DATA_DIR: got %v, want the database under %s", err, dir)
	}
	r := skiff(t, envList("SKIFF_DATA_DIR", dir), "admin", "create-key", "--account", "acme")
	if r.code != 0 || !keyRe.MatchString(r.stdout) {
		t.Fatalf("create-key with SKIFF_DATA_DIR: got exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	srv.client(t, strings.TrimSpace(r.stdout)).Get(t, "/api/v1/account/balance").Want(t, http.StatusOK)
	if code := srv.stop(t, 10*time.Second); code != 0 {
		t.Errorf("got exit %d, want 0", code)
	}
	if !strings.Contains(srv.logText(), `"level":"DEBUG"`) && !strings.Contains(srv.logText(), `"level":"INFO"`) {
		t.Errorf("SKIFF_LOG_LEVEL=debug: got no JSON log")
	}

	// The command line wins over the environment.
	flagDir := filepath.Join(t.TempDir(), "from-flag")
	srv = startServer(t, envList("SKIFF_DATA_DIR", dir, "SKIFF_LISTEN", "256.0.0.1:1"), "--data-dir", flagDir, "--listen", "127.0.0.1:0")
	if _, err := os.Stat(filepath.Join(flagDir, "skiff.db")); err != nil {
		t.Errorf("--data-dir over SKIFF_DATA_DIR: got %v, want the database under %s", err, flagDir)
	}
	srv.stop(t, 10*time.Second)

	// A bad value in the environment is an error that names the variable.
	r = skiff(t, envList("SKIFF_DRAIN_TIMEOUT", "soon", "SKIFF_DATA_DIR", t.TempDir()), "server")
	if r.code == 0 || !strings.Contains(r.stderr, "SKIFF_DRAIN_TIMEOUT") {
		t.Errorf("bad SKIFF_DRAIN_TIMEOUT: got exit %d, stderr %q; want a failure naming it", r.code, r.stderr)
	}
	r = skiff(t, envList("SKIFF_LOG_LEVEL", "loud", "SKIFF_DATA_DIR", t.TempDir()), "server")
	if r.code == 0 || !strings.Contains(r.stderr, "log-level") {
		t.Errorf("bad SKIFF_LOG_LEVEL: got exit %d, stderr %q; want a failure naming it", r.code, r.stderr)
	}
}

// SIGTERM stops accepting, finishes the request in flight, and exits 0.
func TestSIGTERMDrainsInFlightRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--drain-timeout", "20s")
	r := skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "acme")
	key := strings.TrimSpace(r.stdout)
	srv.client(t, key).Post(t, "/api/v1/projects", map[string]any{"name": "p1"}).Want(t, http.StatusCreated)

	// A PUT whose body arrives in two halves: the handler is still reading
	// it when SIGTERM comes. It asks for 100-continue, which the server
	// sends when the handler first reads the body: that is the sign the
	// request is in the handler.
	pr, pw := io.Pipe()
	reading := make(chan struct{})
	trace := &httptrace.ClientTrace{Got100Continue: func() { close(reading) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPut,
		srv.URL+"/api/v1/projects/p1/kv/inflight", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, string(b), err}
	}()
	select {
	case <-reading:
	case a := <-answered:
		t.Fatalf("the PUT was answered before its handler read the body: %d %s (%v)", a.status, a.body, a.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no 100 Continue: the handler did not start reading the body")
	}
	if _, err := pw.Write([]byte(`{"value": {"half": `)); err != nil {
		t.Fatal(err)
	}

	if err := srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	srv.waitLog(t, "shutting down", 10*time.Second)
	// Shutdown has begun: new connections are refused...
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(srv.URL + "/health")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server still accepts connections 5s after SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-srv.Done():
		t.Fatal("the server exited with a request in flight")
	default:
	}
	// ...and the request in flight still completes.
	finished := time.Now()
	if _, err := pw.Write([]byte(`2}}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case a := <-answered:
		if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `"value":{"half":2}`) {
			t.Errorf("in-flight PUT: got %d %s (%v), want 200 with the value", a.status, a.body, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight request got no answer")
	}
	if code := srv.wait(t, 5*time.Second); code != 0 {
		t.Errorf("got exit %d after SIGTERM, want 0", code)
	}
	t.Logf("exited %s after the in-flight request finished", time.Since(finished).Round(time.Millisecond))
	srv.waitLog(t, "stopped", time.Second)

	// The write made it to the store.
	srv = startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0")
	var e struct {
		Value json.RawMessage `json:"value"`
	}
	srv.client(t, key).Get(t, "/api/v1/projects/p1/kv/inflight").JSON(t, http.StatusOK, &e)
	if string(e.Value) != `{"half":2}` {
		t.Errorf("after restart: got value %s, want {\"half\":2}", e.Value)
	}
	srv.stop(t, 10*time.Second)
}

// A restart on the same data dir keeps projects, shared state and keys.
func TestRestartKeepsEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0")
	r := skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "acme")
	member := strings.TrimSpace(r.stdout)
	r = skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "acme", "--role", "viewer")
	viewer := strings.TrimSpace(r.stdout)
	skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "acme", "--usd", "3.25")

	c := srv.client(t, member)
	c.Post(t, "/api/v1/projects", map[string]any{"name": "keep", "env": map[string]string{"A": "1"}, "setup_timeout_s": 90}).
		Want(t, http.StatusCreated)
	c.Post(t, "/api/v1/projects", map[string]any{"name": "keep2"}).Want(t, http.StatusCreated)
	for _, kv := range []struct{ key, value string }{{"a", `1`}, {"b/c", `{"x": [true, null]}`}, {"ttl", `"soon"`}} {
		body := `{"value": ` + kv.value + `}`
		if kv.key == "ttl" {
			body = `{"value": ` + kv.value + `, "ttl_s": 86400}`
		}
		c.Put(t, "/api/v1/projects/keep/kv/"+kv.key, json.RawMessage(body)).Want(t, http.StatusOK)
	}
	snapshot := func(c *apitest.Client) string {
		t.Helper()
		var b strings.Builder
		for _, p := range []string{"/api/v1/projects", "/api/v1/projects/keep", "/api/v1/projects/keep2",
			"/api/v1/projects/keep/kv", "/api/v1/projects/keep/status", "/api/v1/account/balance"} {
			b.WriteString(p + " " + string(c.Get(t, p).Want(t, http.StatusOK).Body))
		}
		return b.String()
	}
	before := snapshot(c)
	if code := srv.stop(t, 10*time.Second); code != 0 {
		t.Fatalf("got exit %d, want 0", code)
	}

	srv = startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0")
	c = srv.client(t, member)
	if after := snapshot(c); after != before {
		t.Errorf("after restart:\ngot  %s\nwant %s", after, before)
	}
	srv.client(t, viewer).Get(t, "/api/v1/projects/keep").Want(t, http.StatusOK)
	srv.client(t, viewer).Delete(t, "/api/v1/projects/keep").Fail(t, http.StatusForbidden)
	if code := srv.stop(t, 10*time.Second); code != 0 {
		t.Errorf("got exit %d, want 0", code)
	}
}

func TestServerMigrate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "new", "nested")
	for i := 0; i < 2; i++ {
		r := skiff(t, nil, "server", "migrate", "--data-dir", dir)
		if r.code != 0 || r.stdout != "migrated sqlite store\n" {
			t.Fatalf("migrate #%d: got exit %d, stdout %q, stderr %q; want 0 and \"migrated sqlite store\"", i+1, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "skiff.db")); err != nil {
		t.Fatalf("got %v, want the database created", err)
	}
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0")
	srv.stop(t, 10*time.Second)

	r := skiff(t, envList("SKIFF_DATA_DIR", filepath.Join(t.TempDir(), "env")), "server", "migrate")
	if r.code != 0 || r.stdout != "migrated sqlite store\n" {
		t.Errorf("migrate with SKIFF_DATA_DIR: got exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// Startup on an empty data dir completes; the time it takes is logged, not
// asserted.
func TestStartupOnEmptyDataDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "empty")
	start := time.Now()
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0")
	t.Logf("skiff server on an empty data dir: /ready answered 200 after %s (startup_ms logged by the server: %v)",
		time.Since(start).Round(time.Millisecond), srv.waitLog(t, "skiff server started", time.Second)["startup_ms"])
	srv.client(t, "").Get(t, "/health").Want(t, http.StatusOK)
	if code := srv.stop(t, 10*time.Second); code != 0 {
		t.Errorf("got exit %d, want 0", code)
	}
}

// The same commands work on PostgreSQL with --database-url.
func TestPostgresStore(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	r := skiff(t, nil, "server", "migrate", "--database-url", url)
	if r.code != 0 || r.stdout != "migrated postgres store\n" {
		t.Fatalf("migrate: got exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	srv := startServer(t, envList("SKIFF_DATABASE_URL", url), "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	r = skiff(t, nil, "admin", "create-key", "--database-url", url, "--account", "acme")
	if r.code != 0 || !keyRe.MatchString(r.stdout) {
		t.Fatalf("create-key: got exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	key := strings.TrimSpace(r.stdout)
	r = skiff(t, envList("SKIFF_DATABASE_URL", url), "admin", "grant-credit", "--account", "acme", "--usd", "2.5")
	if r.code != 0 || r.stdout != "2.5\n" {
		t.Fatalf("grant-credit: got exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	c := srv.client(t, key)
	var bal struct {
		Balance map[string]json.Number `json:"balance"`
	}
	c.Get(t, "/api/v1/account/balance").JSON(t, http.StatusOK, &bal)
	if bal.Balance["available_usd"] != "2.5" {
		t.Errorf("got balance %v, want available_usd 2.5", bal.Balance)
	}
	c.Post(t, "/api/v1/projects", map[string]any{"name": "pg"}).Want(t, http.StatusCreated)
	if code := srv.stop(t, 10*time.Second); code != 0 {
		t.Errorf("got exit %d, want 0", code)
	}
	srv = startServer(t, envList("SKIFF_DATABASE_URL", url), "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	srv.client(t, key).Get(t, "/api/v1/projects/pg").Want(t, http.StatusOK)
	srv.stop(t, 10*time.Second)
}

var keyRe = regexp.MustCompile(`^flk_[A-Z2-7]{52}\n$`)
