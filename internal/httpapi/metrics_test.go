package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// TestMetrics: GET /metrics serves the Prometheus exposition that promtool
// accepts, with the figures of what the server did, to admins and the
// metrics token only: once a token is configured, loopback is not enough.
func TestMetrics(t *testing.T) {
	onEnginesWithTool(t, "promtool", "promtool not installed (Debian package prometheus; make setup installs it)", apitest.Options{MetricsToken: "mtk_secret"}, func(t *testing.T, f *fixture, promtool string) {
		j := submitJob(t, f.member, fanOut(2))
		s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
		snapshotOf(t, s)
		runAttempt(t, f, j.ID, 3*time.Second, succeed)
		runAttempt(t, f, j.ID, 5*time.Second, fail)
		readUntilDone(t, s) // every event is through the broker

		get := func(header http.Header) (int, string) {
			t.Helper()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.e.URL+"/metrics", nil)
			for k, v := range header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		// A token is configured: loopback alone is not enough (issue 28).
		if status, body := get(nil); status != http.StatusUnauthorized {
			t.Fatalf("loopback without the configured token: got %d %s, want 401", status, body)
		}
		status, body := get(http.Header{"Authorization": {"Bearer mtk_secret"}})
		if status != http.StatusOK {
			t.Fatalf("loopback with the token: got %d %s", status, body)
		}
		cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out.String())
		}
		for _, want := range []string{
			`skiff_jobs_admitted_total 1`,
			`skiff_jobs_ended_total{status="partial"} 1`,
			`skiff_holds_settled_total{status="partial"} 1`,
			`skiff_attempts_ended_total{outcome="succeeded"} 1`,
			`skiff_attempts_ended_total{outcome="failed"} 1`,
			`skiff_task_start_latency_seconds_count 2`,
			`skiff_task_run_seconds_sum{outcome="failed"} 5`,
			`skiff_task_run_seconds_sum{outcome="succeeded"} 3`,
			`skiff_http_requests_total{route="POST /api/v1/jobs",status="201"} 1`,
			`skiff_http_request_duration_seconds_count{route="POST /api/v1/jobs"} 1`,
			`skiff_http_requests_total{route="GET /api/v1/jobs/{id}/stream",status="200"} 1`,
			`skiff_open_streams 0`,
			`skiff_queue_depth 0`,
		} {
			if !strings.Contains(body, want+"\n") {
				t.Errorf("metrics lack %q", want)
			}
		}
		if strings.Contains(body, `skiff_http_request_duration_seconds_count{route="GET /api/v1/jobs/{id}/stream"}`) {
			t.Error("streams are timed")
		}

		forwarded := func(auth string) http.Header {
			h := http.Header{"X-Forwarded-For": {"203.0.113.9"}}
			if auth != "" {
				h.Set("Authorization", "Bearer "+auth)
			}
			return h
		}
		for _, tc := range []struct {
			name, auth string
			want       int
		}{
			{"a remote request without credentials", "", http.StatusUnauthorized},
			{"a member key", f.acct.Member, http.StatusUnauthorized},
			{"a wrong token", "mtk_wrong", http.StatusUnauthorized},
			{"an admin key", f.acct.Admin, http.StatusOK},
			{"the metrics token", "mtk_secret", http.StatusOK},
		} {
			status, body := get(forwarded(tc.auth))
			if status != tc.want {
				t.Errorf("%s: got %d, want %d", tc.name, status, tc.want)
			}
			if status == http.StatusUnauthorized {
				var e apiv1.Error
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != "unauthenticated" || e.RecommendedAction == "" {
					t.Errorf("%s: got %s, want the envelope", tc.name, body)
				}
			}
		}
	})
}
