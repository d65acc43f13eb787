package httpapi_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/store"
)

func TestContact(t *testing.T) {
	runSuite(t, []apiCase{
		{"waitlist_join_once", testWaitlistJoinOnce},
		{"waitlist_invalid_email", testWaitlistInvalidEmail},
		{"waitlist_rate_limited", testWaitlistRateLimited},
		{"waitlist_form_without_js", testWaitlistForm},
		{"feedback_anonymous_and_linked", testFeedbackAnonymousAndLinked},
		{"feedback_invalid", testFeedbackInvalid},
		{"feedback_rate_limited", testFeedbackRateLimited},
	}, nil)
}

func waitlist(t *testing.T, s store.Store) []store.WaitlistEntry {
	t.Helper()
	l, err := s.WaitlistList(t.Context(), &store.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func feedbackRows(t *testing.T, s store.Store) []store.Feedback {
	t.Helper()
	l, err := s.FeedbackList(t.Context(), &store.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func testWaitlistJoinOnce(t *testing.T, f *fixture) {
	body := f.anon.Post(t, "/api/v1/waitlist", map[string]any{"email": "Ann@Example.com"}).Object(t, http.StatusCreated)
	if body["status"] != "on_waitlist" || body["email"] != "ann@example.com" || body["next_action"] == "" {
		t.Errorf("got %v, want status on_waitlist, email ann@example.com and a next_action", body)
	}
	again := f.anon.Post(t, "/api/v1/waitlist", map[string]any{"email": " ann@EXAMPLE.com "}).Object(t, http.StatusCreated)
	if again["status"] != body["status"] || again["email"] != body["email"] {
		t.Errorf("repeat answered %v, want the same answer as the first %v", again, body)
	}
	if l := waitlist(t, f.e.Store); len(l) != 1 || l[0].Email != "ann@example.com" {
		t.Errorf("stored waitlist = %+v, want one row ann@example.com", l)
	}
}

func testWaitlistInvalidEmail(t *testing.T, f *fixture) {
	for _, tc := range []struct {
		name string
		body any
		code string
	}{
		{"missing", map[string]any{}, "email_required"},
		{"empty", map[string]any{"email": ""}, "email_required"},
		{"no at", map[string]any{"email": "ann.example.com"}, "invalid_email"},
		{"no domain dot", map[string]any{"email": "ann@localhost"}, "invalid_email"},
		{"display name", map[string]any{"email": "Ann <ann@example.com>"}, "invalid_email"},
		{"two addresses", map[string]any{"email": "a@example.com, b@example.com"}, "invalid_email"},
		{"too long", map[string]any{"email": strings.Repeat("a", 250) + "@example.com"}, "invalid_email"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.e.Clock.Advance(time.Minute) // a fresh rate-limit bucket for each case
			// The document's "format: email" is looser than the server, so the
			// request is not checked against it; the answer still is.
			env := f.anon.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/waitlist", Body: tc.body, Check: apitest.Unchecked}).
				Fail(t, http.StatusUnprocessableEntity)
			if env.Code != tc.code || env.RecommendedAction == "" || env.Details["field"] != "email" {
				t.Errorf("got code %q action %q details %v, want code %s, an action and details.field email", env.Code,
					env.RecommendedAction, env.Details, tc.code)
			}
		})
	}
	if l := waitlist(t, f.e.Store); len(l) != 0 {
		t.Errorf("invalid addresses stored: %+v", l)
	}
}

func testWaitlistRateLimited(t *testing.T, f *fixture) {
	for i := range 5 {
		// Spoofed X-Forwarded-For is ignored: no proxy is trusted.
		f.anon.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/waitlist", Header: http.Header{"X-Forwarded-For": {"10.0.0." + strconv.Itoa(i)}},
			Body: map[string]any{"email": "u" + strconv.Itoa(i) + "@example.com"}}).Want(t, http.StatusCreated)
	}
	r := f.anon.Post(t, "/api/v1/waitlist", map[string]any{"email": "late@example.com"})
	env := r.Fail(t, http.StatusTooManyRequests)
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || secs < 1 || secs > 60 {
		t.Errorf("Retry-After = %q, want whole seconds between 1 and 60", r.Header.Get("Retry-After"))
	}
	if env.Code != "rate_limited" || env.RecommendedAction == "" {
		t.Errorf("429 envelope = %+v, want code rate_limited and an action", env)
	}
	if l := waitlist(t, f.e.Store); len(l) != 5 {
		t.Errorf("stored %d entries, want 5 (the refused one not stored)", len(l))
	}
	f.e.Clock.Advance(time.Duration(secs) * time.Second)
	f.anon.Post(t, "/api/v1/waitlist", map[string]any{"email": "late@example.com"}).Want(t, http.StatusCreated)
}

func formPost(t *testing.T, f *fixture, email string) *apitest.Response {
	t.Helper()
	return f.anon.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/waitlist", Check: apitest.Unchecked,
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		Body:   url.Values{"email": {email}}.Encode()})
}

func testWaitlistForm(t *testing.T, f *fixture) {
	for _, tc := range []struct{ email, want string }{
		{"form@example.com", "/?waitlist=joined#waitlist"},
		{"not an address", "/?waitlist=invalid#waitlist"},
	} {
		r := formPost(t, f, tc.email).Want(t, http.StatusSeeOther)
		if got := r.Header.Get("Location"); got != tc.want {
			t.Errorf("form post of %q: Location %q, want %q", tc.email, got, tc.want)
		}
	}
	if l := waitlist(t, f.e.Store); len(l) != 1 || l[0].Email != "form@example.com" {
		t.Errorf("stored waitlist = %+v, want the form's address once", l)
	}
	for range 3 {
		formPost(t, f, "more@example.com")
	}
	if got := formPost(t, f, "more@example.com").Header.Get("Location"); got != "/?waitlist=rate_limited#waitlist" {
		t.Errorf("form post past the limit: Location %q, want /?waitlist=rate_limited#waitlist", got)
	}
}

func testFeedbackAnonymousAndLinked(t *testing.T, f *fixture) {
	anon := f.anon.Post(t, "/api/v1/feedback", map[string]any{"type": "bug", "title": "Stream stalls",
		"description": "The job stream stops after a minute."}).Object(t, http.StatusCreated)
	if id, _ := anon["id"].(string); !strings.HasPrefix(id, "fb_") || anon["account_linked"] != false || anon["status"] != "received" {
		t.Errorf("anonymous feedback answered %v, want an fb_ id, status received, account_linked false", anon)
	}
	linked := f.viewer.Post(t, "/api/v1/feedback", map[string]any{"type": "job_type_request", "title": "Graph jobs",
		"description": "DAG jobs please.", "job_id": "job_abc", "metadata": map[string]any{"client": "sdk/0.1"}}).
		Object(t, http.StatusCreated)
	if linked["account_linked"] != true || linked["job_id"] != "job_abc" {
		t.Errorf("feedback with a viewer key answered %v, want account_linked true and the job id", linked)
	}
	rows := feedbackRows(t, f.e.Store)
	if len(rows) != 2 {
		t.Fatalf("stored %d reports, want 2", len(rows))
	}
	byID := map[string]store.Feedback{rows[0].ID: rows[0], rows[1].ID: rows[1]}
	if r := byID[anon["id"].(string)]; r.AccountID != "" || r.Title != "Stream stalls" || r.Type != store.FeedbackBug {
		t.Errorf("anonymous row = %+v, want no account and what was sent", r)
	}
	if r := byID[linked["id"].(string)]; r.AccountID != f.acct.ID || string(r.Metadata) != `{"client":"sdk/0.1"}` {
		t.Errorf("linked row = %+v, want account %s and the metadata", r, f.acct.ID)
	}
	// The endpoint needs no auth: a wrong or expired token files the report
	// anonymously, and the answer says the token was not recognised.
	for _, token := range []string{"flk_wrong", "fls_expired", "garbage"} {
		got := f.e.Client(token).Post(t, "/api/v1/feedback", map[string]any{"type": "bug", "title": "t " + token, "description": "d"}).
			Object(t, http.StatusCreated)
		if got["account_linked"] != false || !strings.Contains(got["message"].(string), "not recognised") {
			t.Errorf("feedback with token %q answered %v, want account_linked false and a message saying the token was not recognised", token, got)
		}
	}
	rows = feedbackRows(t, f.e.Store)
	if len(rows) != 5 {
		t.Fatalf("stored %d reports after three with bad tokens, want 5", len(rows))
	}
	for _, r := range rows {
		if strings.HasPrefix(r.Title, "t ") && r.AccountID != "" {
			t.Errorf("report %q filed with a bad token is linked to account %s", r.Title, r.AccountID)
		}
	}
}

func testFeedbackInvalid(t *testing.T, f *fixture) {
	ok := map[string]any{"type": "bug", "title": "t", "description": "d"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"bad type", with("type", "praise"), 422, "invalid_feedback_type"},
		{"missing type", with("type", nil), 422, "feedback_type_required"},
		{"missing title", with("title", nil), 422, "title_required"},
		{"blank title", with("title", "  "), 422, "title_required"},
		{"missing description", with("description", nil), 422, "description_required"},
		{"title too long", with("title", strings.Repeat("x", 201)), 422, "title_too_long"},
		{"metadata not an object", with("metadata", []int{1}), 422, "invalid_metadata"},
		{"metadata too large", with("metadata", map[string]any{"x": strings.Repeat("y", 9000)}), 422, "metadata_too_large"},
		{"body too large", with("description", strings.Repeat("z", 70000)), 413, "body_too_large"},
		{"not json", "{", 400, "malformed_json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.e.Clock.Advance(time.Minute)
			env := f.anon.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/feedback", Body: tc.body, Check: apitest.Unchecked}).
				Fail(t, tc.status)
			if env.Code != tc.code || env.RecommendedAction == "" {
				t.Errorf("got code %q action %q, want code %s and an action", env.Code, env.RecommendedAction, tc.code)
			}
		})
	}
	if rows := feedbackRows(t, f.e.Store); len(rows) != 0 {
		t.Errorf("refused reports stored: %+v", rows)
	}
}

func testFeedbackRateLimited(t *testing.T, f *fixture) {
	body := map[string]any{"type": "feature_request", "title": "t", "description": "d"}
	for range 10 {
		f.anon.Post(t, "/api/v1/feedback", body).Want(t, http.StatusCreated)
	}
	r := f.anon.Post(t, "/api/v1/feedback", body)
	r.Fail(t, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	// A report linked to an account counts against the account, not the
	// address: the same address still files one (the MCP tools send every
	// agent's feedback from the server's loopback address).
	f.member.Post(t, "/api/v1/feedback", body).Want(t, http.StatusCreated)
	for range 9 {
		f.member.Post(t, "/api/v1/feedback", body).Want(t, http.StatusCreated)
	}
	f.member.Post(t, "/api/v1/feedback", body).Fail(t, http.StatusTooManyRequests)
}

// TestRateLimitTrustedProxy: behind a trusted proxy each X-Forwarded-For
// client has its own bucket; the proxy's own address is not the key.
func TestRateLimitTrustedProxy(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Limits: &httpapiLimits1})
	c := e.Client("")
	post := func(xff string) *apitest.Response {
		return c.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/waitlist", Header: http.Header{"X-Forwarded-For": {xff}},
			Body: map[string]any{"email": "a@example.com"}})
	}
	post("198.51.100.1").Want(t, http.StatusCreated)
	post("198.51.100.2").Want(t, http.StatusCreated)
	post("198.51.100.1").Fail(t, http.StatusTooManyRequests)
	// A client cannot escape by prepending its own entries: the rightmost
	// untrusted hop is the client.
	post("203.0.113.50, 198.51.100.2").Fail(t, http.StatusTooManyRequests)
}

var httpapiLimits1 = httpapi.Limits{WaitlistPerMinute: 1, FeedbackPerMinute: 1}
