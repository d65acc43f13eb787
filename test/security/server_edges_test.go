package security_test

// The server's edges (issue 28, part 6): what a stranger can do to the
// HTTP server itself, without running anything: hold it with slow bodies
// and piles of connections, read its metrics, write escape sequences into
// the operator's terminal through feedback, dodge rate limits by rotating
// IPv6 addresses, and keep using a session after logging out.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// edgesRawResponse reads one HTTP response from conn (within d) and
// returns its status and body.
func edgesRawResponse(t *testing.T, conn net.Conn, d time.Duration) (int, []byte) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the server's answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func edgesDial(t *testing.T, s *instance) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func edgesCode(t *testing.T, body []byte) string {
	t.Helper()
	var e apiv1.Error
	if err := json.Unmarshal(body, &e); err != nil || e.RecommendedAction == "" {
		t.Fatalf("answer %s is not the error envelope (%v)", body, err)
	}
	return e.Code
}

// A body trickled a byte at a time holds a handler and a connection for as
// long as the client likes, unless the server asks for a pace. A steady
// upload at a modest rate still goes through.
func TestEdgesSlowLorisBodyIsCutOff(t *testing.T) {
	s := startServer(t, "sqlite", "--no-local-host", "--body-min-rate", "1024", "--body-rate-window", "2s")

	conn := edgesDial(t, s)
	fmt.Fprintf(conn, "POST /api/v1/feedback HTTP/1.1\r\nHost: skiff\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 100 ms: 10 B/s, far below 1 KiB/s
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	// Without the rule the server waits for the other 99,990 bytes
	// forever; 60 s bounds the test, not the server.
	status, body := edgesRawResponse(t, conn, 60*time.Second)
	if status != http.StatusRequestTimeout || edgesCode(t, body) != "body_too_slow" {
		t.Fatalf("slow-loris body: got %d %s, want 408 body_too_slow", status, body)
	}

	// A steady upload at 2.5 KB/s over more than one window: accepted.
	pad := strings.Repeat("x", 7000)
	payload := []byte(`{"type": "bug", "title": "steady", "description": "a slow but steady upload", "metadata": {"pad": "` + pad + `"}}`)
	pr, pw := io.Pipe()
	go func() {
		for rest := payload; len(rest) > 0; {
			n := min(500, len(rest))
			if _, err := pw.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
			time.Sleep(200 * time.Millisecond)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v1/feedback", pr)
	req.ContentLength = int64(len(payload))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("steady upload: got %d %s, want 201", resp.StatusCode, b)
	}
}

// Connections cost a goroutine and buffers each; past --max-connections
// the server answers 503 and closes, and a freed slot serves again.
func TestEdgesConnectionsPastTheCapAreRefused(t *testing.T) {
	const maxConns = 4
	s := startServer(t, "sqlite", "--no-local-host", "--max-connections", fmt.Sprint(maxConns))
	var held []net.Conn
	refused := false
	for i := 0; i <= maxConns && !refused; i++ {
		conn := edgesDial(t, s)
		fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: skiff\r\n\r\n")
		status, body := edgesRawResponse(t, conn, 30*time.Second)
		switch {
		case status == http.StatusOK:
			held = append(held, conn) // kept open (keep-alive): it holds its slot
		case status == http.StatusServiceUnavailable && edgesCode(t, body) == "too_many_connections":
			refused = true
		default:
			t.Fatalf("connection %d: got %d %s", i+1, status, body)
		}
	}
	if !refused || len(held) == 0 {
		t.Fatalf("%d connections held open, none refused; want a refusal by connection %d", len(held), maxConns+1)
	}
	held[0].Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn := edgesDial(t, s)
		fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: skiff\r\nConnection: close\r\n\r\n")
		status, body := edgesRawResponse(t, conn, 30*time.Second)
		conn.Close()
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after freeing a slot: still %d %s", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The spec lets loopback scrape /metrics, but once an operator set a
// --metrics-token, a proxy or process on the machine must not read it
// without the token.
func TestEdgesMetricsNeedTheConfiguredToken(t *testing.T) {
	s := startServer(t, "sqlite", "--no-local-host", "--metrics-token", "mtk_edges_secret")
	get := func(token string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if status, body := get(""); status != http.StatusUnauthorized || edgesCode(t, body) != "unauthenticated" {
		t.Errorf("GET /metrics from loopback without the token: got %d %s, want 401", status, body)
	}
	if status, body := get("mtk_wrong"); status != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong token: got %d %s, want 401", status, body)
	}
	if status, body := get("mtk_edges_secret"); status != http.StatusOK || !bytes.Contains(body, []byte("skiff_")) {
		t.Errorf("GET /metrics with the token: got %d, want 200 with metrics", status)
	}
}

// Feedback is anonymous: a stranger's title reaches `skiff admin feedback`
// on the operator's terminal, where an ESC sequence would be obeyed.
func TestEdgesOperatorOutputCarriesNoEscapes(t *testing.T) {
	s := startServer(t, "sqlite", "--no-local-host")
	title := "\x1b]0;owned\x07\x1b[2J\x1b[31mpwned \u009b31m\u202e \x7f"
	body, _ := json.Marshal(map[string]any{"type": "bug", "title": title, "description": "\x1b[8mhidden\x1b[0m"})
	resp, err := http.Post(s.URL+"/api/v1/feedback", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("feedback: got %d, want 201", resp.StatusCode)
	}
	for _, args := range [][]string{{"feedback"}, {"feedback", "--json"}} {
		out := s.admin(t, args...)
		if !strings.Contains(out, "pwned") {
			t.Errorf("skiff admin %v: the entry is missing:\n%q", args, out)
		}
		for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e", "\x7f"} {
			if strings.Contains(out, bad) {
				t.Errorf("skiff admin %v prints %q to the operator's terminal:\n%q", args, bad, out)
			}
		}
	}
}

// One subscriber holds a whole IPv6 /64 and can send each request from
// another address of it; the limits must count the /64. Loopback is one
// address, so the test goes through a trusted proxy (this test) that names
// the client in X-Forwarded-For.
func TestEdgesIPv6RateLimitsPerSlash64(t *testing.T) {
	s := startServer(t, "sqlite", "--no-local-host", "--trusted-proxy", "127.0.0.1", "--waitlist-rate", "3")
	join := func(client string, n int) int {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v1/waitlist",
			strings.NewReader(fmt.Sprintf(`{"email": "edges%d@example.com"}`, n)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Rotating within 2001:db8:1:2::/64: the fourth request is refused.
	for i := 1; i <= 3; i++ {
		if got := join(fmt.Sprintf("2001:db8:1:2:%x::%x", i*7, i), i); got != http.StatusCreated {
			t.Fatalf("request %d of the /64: got %d, want 201", i, got)
		}
	}
	if got := join("2001:db8:1:2:ffff:eeee:dddd:cccc", 4); got != http.StatusTooManyRequests {
		t.Errorf("fourth request from another address of the same /64: got %d, want 429", got)
	}
	// Another /64 has its own bucket; IPv4 stays per address.
	if got := join("2001:db8:1:3::1", 5); got != http.StatusCreated {
		t.Errorf("another /64: got %d, want 201", got)
	}
	for i, ip := range []string{"198.51.100.1", "198.51.100.1", "198.51.100.1", "198.51.100.2"} {
		if got := join(ip, 10+i); got != http.StatusCreated {
			t.Errorf("IPv4 request %d from %s: got %d, want 201", i+1, ip, got)
		}
	}
}

// A wallet session copied from a laptop, a log or a shell history works
// for 24 hours unless it can be revoked: after logout it is refused, on
// the API and through `skiff logout`.
func TestEdgesLoggedOutSessionIsRefused(t *testing.T) {
	engines(t, func(t *testing.T, engine string) {
		s := startServer(t, engine, "--no-local-host")
		ctx := t.Context()
		w, err := client.ParseWallet(strings.Repeat("4e", 32))
		if err != nil {
			t.Fatal(err)
		}
		in, err := client.New(s.URL, "").WalletSignIn(ctx, w, "")
		if err != nil {
			t.Fatal(err)
		}
		contract, err := apitest.ServiceContract()
		if err != nil {
			t.Fatal(err)
		}
		c := &apitest.Client{BaseURL: s.URL, Token: in.Token, Contract: contract}
		c.Get(t, "/api/v1/account/balance").Want(t, http.StatusOK)
		c.Post(t, "/api/v1/auth/logout", nil).Want(t, http.StatusNoContent)
		if env := c.Get(t, "/api/v1/account/balance").Fail(t, http.StatusUnauthorized); env.Code != "unauthenticated" {
			t.Errorf("a logged-out session: got %q, want unauthenticated", env.Code)
		}
		c.Post(t, "/api/v1/auth/logout", nil).Fail(t, http.StatusUnauthorized)
		// An API key is not a session: 422, and it keeps working.
		key := s.admin(t, "create-key", "--account", "edges-key")
		k := &apitest.Client{BaseURL: s.URL, Token: key, Contract: contract}
		if env := k.Post(t, "/api/v1/auth/logout", nil).Fail(t, http.StatusUnprocessableEntity); env.Code != "not_a_session" {
			t.Errorf("logout with an API key: got %q, want not_a_session", env.Code)
		}
		k.Get(t, "/api/v1/account/balance").Want(t, http.StatusOK)

		// Through the CLI: `skiff logout` revokes the saved session.
		home := t.TempDir()
		keyFile := filepath.Join(home, "wallet.key")
		if err := os.WriteFile(keyFile, []byte(strings.Repeat("4e", 32)), 0o600); err != nil {
			t.Fatal(err)
		}
		cli := func(args ...string) string {
			cmd := skiffCmd(args...)
			cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+home, "HOME="+home)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("skiff %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		cli("login", "--url", s.URL, "--wallet-key-file", keyFile)
		var cfg struct {
			Token string `json:"token"`
		}
		b, err := os.ReadFile(filepath.Join(home, "skiff", "config.json"))
		if err != nil || json.Unmarshal(b, &cfg) != nil || !strings.HasPrefix(cfg.Token, "fls_") {
			t.Fatalf("saved config: %s (%v)", b, err)
		}
		if out := cli("logout"); !strings.Contains(out, "revoked") {
			t.Errorf("skiff logout: got %q, want it to say the server revoked the session", out)
		}
		saved := &apitest.Client{BaseURL: s.URL, Token: cfg.Token, Contract: contract}
		saved.Get(t, "/api/v1/account/balance").Fail(t, http.StatusUnauthorized)
	})
}
