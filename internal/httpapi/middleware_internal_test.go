package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/testlog"
)

// A panicking handler answers 500 with the envelope, the panic is logged
// with its stack and never shown, and the server keeps serving.
func TestMiddlewareRecoversPanics(t *testing.T) {
	t.Parallel()
	logs := &testlog.Buffer{}
	s := New(Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s.SetCoreStarted(true)
	mux := http.NewServeMux()
	mux.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("secret internal detail") })
	mux.HandleFunc("/panic-error", func(http.ResponseWriter, *http.Request) { panic(io.ErrUnexpectedEOF) })
	mux.HandleFunc("/panic-after-write", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("partial"))
		panic("late")
	})
	mux.HandleFunc("/abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	mux.Handle("/", s) // everything else: the real API
	ts := httptest.NewServer(s.middleware(mux))
	defer ts.Close()

	get := func(path string) (*http.Response, []byte, error) {
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	for _, path := range []string{"/panic", "/panic-error", "/panic"} {
		resp, body, err := get(path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("GET %s: got status %d, want 500", path, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s: got Content-Type %q, want application/json", path, ct)
		}
		var env map[string]any
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatalf("GET %s: body %q is not JSON: %v", path, body, err)
		}
		if env["error"] != "internal error" || env["code"] != "internal_error" || env["recommended_action"] == "" ||
			env["request_id"] != resp.Header.Get("X-Request-Id") {
			t.Errorf("GET %s: got envelope %v, want internal error with recommended_action and the request id", path, env)
		}
		if strings.Contains(string(body), "secret") || strings.Contains(string(body), "unexpected EOF") {
			t.Errorf("GET %s: the answer shows the panic value: %s", path, body)
		}
	}
	if l := logs.String(); !strings.Contains(l, "panic in handler") || !strings.Contains(l, "secret internal detail") ||
		!strings.Contains(l, "goroutine") {
		t.Errorf("got log %q, want the panic value and its stack", l)
	}

	// Once the status is out, the envelope cannot follow; the answer stays.
	resp, body, err := get("/panic-after-write")
	if err != nil {
		t.Fatalf("GET /panic-after-write: %v", err)
	}
	if resp.StatusCode != http.StatusAccepted || string(body) != "partial" {
		t.Errorf("GET /panic-after-write: got %d %q, want 202 \"partial\"", resp.StatusCode, body)
	}

	// http.ErrAbortHandler aborts the connection as net/http intends.
	if _, _, err := get("/abort"); err == nil {
		t.Errorf("GET /abort: got a response, want the connection aborted")
	}

	// The server keeps serving, the real routes included.
	for _, path := range []string{"/health", "/live", "/openapi.json"} {
		resp, _, err := get(path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s after panics: got %v, %v; want 200", path, resp, err)
		}
	}
}

// statusOf is the one map from fault kinds to status codes.
func TestStatusOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind fault.Kind
		want int
	}{
		{fault.KindInvalid, 422}, {fault.KindBadRequest, 400}, {fault.KindUnauthenticated, 401},
		{fault.KindPaymentRequired, 402}, {fault.KindForbidden, 403}, {fault.KindNotFound, 404},
		{fault.KindMethod, 405}, {fault.KindConflict, 409}, {fault.KindGone, 410}, {fault.KindTooLarge, 413},
		{fault.KindRateLimited, 429}, {fault.KindUnavailable, 503}, {fault.KindQuotaExceeded, 507},
		{fault.KindUpgradeRequired, 426}, {fault.KindBadGateway, 502},
		{fault.KindInternal, 500}, {fault.Kind("made_up"), 500},
	} {
		if got := statusOf(tc.kind); got != tc.want {
			t.Errorf("statusOf(%q): got %d, want %d", tc.kind, got, tc.want)
		}
	}
}

// An error that is not a fault is a 500 whose cause is logged, not shown;
// a fault's Fields sit beside error at the top level.
func TestWriteError(t *testing.T) {
	t.Parallel()
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	r := httptest.NewRequest("GET", "/x", nil)

	w := httptest.NewRecorder()
	writeError(w, r, log, io.ErrClosedPipe)
	if w.Code != 500 || strings.Contains(w.Body.String(), "closed pipe") || !strings.Contains(logs.String(), "closed pipe") {
		t.Errorf("plain error: got %d %s (log %q), want 500 without the cause, cause logged", w.Code, w.Body, logs)
	}

	w = httptest.NewRecorder()
	fe := fault.Conflict("push_in_progress", "Wait.", "busy").With("active_push", "psh_1")
	fe.Fields = map[string]any{"init_state": "initializing", "ready_for_jobs": false}
	writeError(w, r, log, fe)
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if w.Code != 409 || got["error"] != "busy" || got["code"] != "push_in_progress" || got["recommended_action"] != "Wait." ||
		got["init_state"] != "initializing" || got["ready_for_jobs"] != false ||
		got["details"].(map[string]any)["active_push"] != "psh_1" {
		t.Errorf("fault with fields: got %d %v", w.Code, got)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("got Content-Type %q, want application/json", ct)
	}
}
