package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/fault"
)

// Large submission bodies share one budget: eight 32 MiB batches fill it,
// a ninth is a 503 server_busy with Retry-After until one ends; a chunked
// body counts at its cap; small bodies never take from it.
func TestBodyBudgetBoundsLargeBodiesInFlight(t *testing.T) {
	t.Parallel()
	var b bodyBudget
	req := func(n int64) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/jobs/batch", strings.NewReader(""))
		r.ContentLength = n
		return r
	}
	const body = 32 << 20
	var releases []func()
	for i := range largeBodyBudget / body {
		release, err := b.reserve(httptest.NewRecorder(), req(body), body)
		if err != nil {
			t.Fatalf("body %d of %d: %v", i+1, largeBodyBudget/body, err)
		}
		releases = append(releases, release)
	}
	w := httptest.NewRecorder()
	_, err := b.reserve(w, req(body), body)
	if fe, ok := fault.As(err); !ok || fe.Kind != fault.KindUnavailable || fe.Code != "server_busy" || w.Header().Get("Retry-After") == "" {
		t.Fatalf("a body past the budget: got %v (Retry-After %q), want 503 server_busy with Retry-After", err, w.Header().Get("Retry-After"))
	}
	if _, err := b.reserve(httptest.NewRecorder(), req(MaxJSONBody), body); err != nil {
		t.Errorf("a small body waited on the budget: %v", err)
	}
	if _, err := b.reserve(httptest.NewRecorder(), req(-1), body); err == nil {
		t.Error("a chunked body (no length) was not counted at its cap")
	}
	releases[0]()
	releases[0]() // a second release gives nothing back twice
	if _, err := b.reserve(httptest.NewRecorder(), req(body), body); err != nil {
		t.Errorf("after one ended: %v", err)
	}
	if _, err := b.reserve(httptest.NewRecorder(), req(body), body); err == nil {
		t.Error("a double release freed two shares")
	}
}
