package httpapi_test

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/docs"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// missingClaim finds a sentence that says something is not there yet.
var missingClaim = regexp.MustCompile(`(?i)\b(not (in this server|in skiff|served|implemented|available|supported|shipped)( yet)?|not yet (served|implemented|available|supported|shipped|in this server)|coming soon|planned for a later release)\b`)

// featureRoutes ties the names a page uses for a part of the API to a
// route that serves it: a page that says "wallet sign-in is not in this
// server yet" is wrong as soon as that route exists.
var featureRoutes = []struct {
	words []string
	route httpapi.Route
}{
	{[]string{"wallet sign-in", "wallet sign in", "wallet login"}, httpapi.Route{Method: "POST", Pattern: "/api/v1/auth/wallet/verify"}},
	{[]string{"payment endpoint", "payments", "top-up", "topup", "x402", "mpp"}, httpapi.Route{Method: "POST", Pattern: "/api/v1/account/quotes/{id}/pay/x402"}},
	{[]string{"event stream", "streams", "server-sent"}, httpapi.Route{Method: "GET", Pattern: "/api/v1/jobs/{id}/stream"}},
	{[]string{"artifacts", "artifact upload"}, httpapi.Route{Method: "POST", Pattern: "/api/v1/artifacts"}},
	{[]string{"host enrollment", "host enrolment", "enrollment", "bring-your-own host"}, httpapi.Route{Method: "POST", Pattern: "/api/v1/fleet/enrollments/redeem"}},
	{[]string{"mcp"}, httpapi.Route{Method: "POST", Pattern: "/mcp"}},
	{[]string{"feedback"}, httpapi.Route{Method: "POST", Pattern: "/api/v1/feedback"}},
	{[]string{"waitlist"}, httpapi.Route{Method: "POST", Pattern: "/api/v1/waitlist"}},
}

// apiPath is an address a page names: /api/v1/..., /skill.md, /mcp.
var apiPath = regexp.MustCompile("(/api/v1/[A-Za-z0-9_./{}:-]*[A-Za-z0-9_}]|/skill\\.md|/llms(-full)?\\.txt|/mcp\\b|/skiff-host)")

// falseMissingClaims lists the sentences of page that say a part of the
// API is missing while routes serve it.
func falseMissingClaims(page string, routes []httpapi.Route) []string {
	served := func(r httpapi.Route) bool {
		return slices.ContainsFunc(routes, func(x httpapi.Route) bool {
			return x.Method == r.Method && normalizePattern(x.Pattern) == normalizePattern(r.Pattern)
		})
	}
	servedPath := func(p string) bool {
		p = normalizePattern(strings.TrimRight(p, "."))
		return slices.ContainsFunc(routes, func(x httpapi.Route) bool { return normalizePattern(x.Pattern) == p })
	}
	var out []string
	// Sentences: a page's paragraphs joined, cut at full stops.
	text := strings.Join(strings.Fields(page), " ")
	for _, s := range regexp.MustCompile(`[.!?](\s|$)`).Split(text, -1) {
		if !missingClaim.MatchString(s) {
			continue
		}
		lower := strings.ToLower(s)
		for _, p := range apiPath.FindAllString(s, -1) {
			if servedPath(p) {
				out = append(out, s+" ("+p+" is served)")
			}
		}
		for _, f := range featureRoutes {
			for _, w := range f.words {
				if strings.Contains(lower, w) && served(f.route) {
					out = append(out, s+" ("+f.route.Method+" "+f.route.Pattern+" is served)")
					break
				}
			}
		}
	}
	return out
}

// normalizePattern names every path parameter the same way, so that the
// route table's {quote_id} and a page's {id} or :id compare equal.
func normalizePattern(p string) string {
	p = regexp.MustCompile(`\{[^}]*\}|:[a-z_]+`).ReplaceAllString(p, "{}")
	return strings.TrimSuffix(p, "/")
}

// No docs page says a part of the API is missing that the server serves:
// the changelog once told agents (through /llms-full.txt) that wallet
// sign-in, payments, streams, artifacts and host enrollment were "not in
// this server yet" long after they shipped.
func TestDocsClaimNothingServedIsMissing(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{})
	routes := e.Server.Routes()
	files, err := fs.Glob(docs.Pages, "*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := fs.ReadFile(docs.Pages, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range falseMissingClaims(string(b), routes) {
			t.Errorf("docs/%s says something served is missing: %s", f, c)
		}
	}
}

// The check finds the sentence that started it, and spares a page that
// says an unserved thing is missing.
func TestFalseMissingClaimsFindsStaleSentences(t *testing.T) {
	t.Parallel()
	routes := []httpapi.Route{
		{Method: "POST", Pattern: "/api/v1/auth/wallet/verify"},
		{Method: "GET", Pattern: "/api/v1/jobs/{id}/stream"},
		{Method: "GET", Pattern: "/api/v1/jobs/{id}/events"},
	}
	stale := "Not in this server yet: wallet sign-in and payment endpoints, event streams,\nartifacts and host enrollment. Each is listed here when it ships."
	if got := falseMissingClaims(stale, routes); len(got) != 2 {
		t.Errorf("stale changelog sentence: got %d findings %q, want 2 (wallet sign-in, streams)", len(got), got)
	}
	if got := falseMissingClaims("GET /api/v1/jobs/:id/events is not implemented yet.", routes); len(got) != 1 {
		t.Errorf("a served path named as missing: got %q, want one finding", got)
	}
	if got := falseMissingClaims("Artifacts are not in this server yet. Streams are served.", routes[:1]); len(got) != 0 {
		t.Errorf("an unserved feature named as missing: got %q, want none", got)
	}
}
