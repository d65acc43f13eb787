package httpapi

import (
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/skiffhq/skiff/internal/fault"
)

// route is one operation of the API. The table below is the only place
// routes are declared; the OpenAPI test holds it to openapi/openapi.json.
type route struct {
	method  string
	pattern string // net/http pattern; {name...} captures the rest
	access  access
	handler handlerFunc
}

// Route describes a route for tests and docs.
type Route struct{ Method, Pattern string }

// Routes lists the route table.
func (s *Server) Routes() []Route {
	var out []Route
	for _, rt := range s.routes() {
		out = append(out, Route{rt.method, rt.pattern})
	}
	return out
}

func (s *Server) routes() []route {
	return []route{
		// Discovery and ops (no auth).
		{"GET", "/health", public, s.health},
		{"GET", "/live", public, s.health},
		{"GET", "/ready", public, s.ready},
		{"GET", "/openapi.json", public, s.openAPI},
		{"GET", "/metrics", public, s.metricsGet}, // gated by metricsGet itself (spec 5.4)
		{"GET", "/{$}", public, s.landing},
		{"GET", "/docs", public, s.docsPageAt},
		{"GET", "/docs/{slug}", public, s.docsPage},
		{"GET", "/docs/projects/project-manifest", public, s.docsPageAt},
		{"GET", "/skill.md", public, s.skill},
		{"GET", "/llms.txt", public, s.llmsTxt},
		{"GET", "/llms-full.txt", public, s.llmsFull},
		{"GET", "/api/v1/docs", public, s.docsIndex},
		{"GET", "/api/v1/docs/{slug}", public, s.docsMarkdown},
		{"GET", "/console", public, s.consoleIndex},
		{"GET", "/console/{file...}", public, s.consoleFile},

		// Auth.
		{"POST", "/api/v1/auth/register", public, s.register},
		{"POST", "/api/v1/auth/wallet/challenge", public, s.walletChallenge},
		{"POST", "/api/v1/auth/wallet/verify", public, s.walletVerify},
		{"POST", "/api/v1/auth/logout", readOnly, s.logout},
		{"POST", "/api/v1/waitlist", public, s.waitlistJoin},

		// Feedback (no auth; a valid token ties the report to its account).
		{"POST", "/api/v1/feedback", public, s.feedbackSubmit},

		// Bring-your-own-hardware hosts: a machine redeems its one-time
		// code (no account); operators see the hosts.
		{"POST", "/api/v1/fleet/enrollments/redeem", public, s.enrollmentRedeem},
		{"GET", "/skiff-host", public, s.skiffHost},
		{"GET", "/skiff-host/bin/{file}", public, s.skiffHostBin},
		{"GET", "/api/v1/admin/hosts", admin, s.adminHosts},
		{"GET", "/api/v1/admin/hosts/{id}", admin, s.adminHost},

		// Account and billing.
		{"GET", "/api/v1/account/balance", readOnly, s.balance},
		{"GET", "/api/v1/account/ledger", readOnly, s.ledger},
		{"GET", "/api/v1/account/holds", readOnly, s.holds},
		{"GET", "/api/v1/account/quotes", readOnly, s.quotes},
		{"GET", "/api/v1/account/quotes/{quote_id}", readOnly, s.quoteGet},
		// Payments: a bearer token, or an MPP credential in its place.
		{"POST", "/api/v1/account/quotes/topup", public, s.topup},
		{"POST", "/api/v1/account/quotes/{quote_id}/pay/x402", public, s.payX402},

		// Projects.
		{"POST", "/api/v1/projects", write, s.projectCreate},
		{"GET", "/api/v1/projects", readOnly, s.projectList},
		{"GET", "/api/v1/projects/{name}", readOnly, s.projectGet},
		{"PUT", "/api/v1/projects/{name}", write, s.projectUpdate},
		{"DELETE", "/api/v1/projects/{name}", write, s.projectDelete},
		{"POST", "/api/v1/projects/{name}/push", write, s.projectPush},
		{"GET", "/api/v1/projects/{name}/push", readOnly, s.projectPushLatest},
		{"GET", "/api/v1/projects/{name}/pushes/{push_ref}", readOnly, s.projectPushGet},
		{"POST", "/api/v1/projects/{name}/init", write, s.projectInit},
		{"POST", "/api/v1/projects/{name}/invalidate", write, s.projectInvalidate},
		{"GET", "/api/v1/projects/{name}/status", readOnly, s.projectStatus},
		{"GET", "/api/v1/projects/{name}/status/details", readOnly, s.projectStatusDetails},
		{"GET", "/api/v1/projects/{name}/stream", readOnly, s.projectStream},
		{"GET", "/api/v1/projects/{name}/kv", readOnly, s.kvList},
		{"PUT", "/api/v1/projects/{name}/kv/{key...}", write, s.kvPut},
		{"GET", "/api/v1/projects/{name}/kv/{key...}", readOnly, s.kvGet},
		{"DELETE", "/api/v1/projects/{name}/kv/{key...}", write, s.kvDelete},
		{"PUT", "/api/v1/projects/{name}/cancel-queued", write, s.projectCancelQueued},

		// Jobs.
		{"POST", "/api/v1/jobs", write, s.jobSubmit},
		{"GET", "/api/v1/jobs", readOnly, s.jobList},
		{"POST", "/api/v1/jobs/batch", write, s.jobBatch},
		{"GET", "/api/v1/jobs/watch", readOnly, s.jobWatch},
		{"GET", "/api/v1/jobs/{id}", readOnly, s.jobGet},
		{"GET", "/api/v1/jobs/{id}/output", readOnly, s.jobOutput},
		{"GET", "/api/v1/jobs/{id}/tasks", readOnly, s.jobTasks},
		{"GET", "/api/v1/jobs/{id}/events", readOnly, s.jobEvents},
		{"GET", "/api/v1/jobs/{id}/stream", readOnly, s.jobStream},
		{"GET", "/api/v1/jobs/{id}/metrics", readOnly, s.jobMetrics},
		{"GET", "/api/v1/leases/{job_id}", readOnly, s.leaseGet},
		{"PUT", "/api/v1/jobs/{id}/cancel", write, s.jobCancel},
		{"PATCH", "/api/v1/jobs/{id}/requirements", write, s.jobEditRequirements},
		{"GET", "/api/v1/presets", readOnly, s.presets},

		// Artifacts.
		{"POST", "/api/v1/artifacts", write, s.artifactUpload},
		{"GET", "/api/v1/artifacts", readOnly, s.artifactList},
		{"POST", "/api/v1/artifacts/external", write, s.artifactExternal},
		{"GET", "/api/v1/artifacts/{id}", readOnly, s.artifactGet},
		{"GET", "/api/v1/artifacts/{id}/meta", readOnly, s.artifactMeta},
		{"DELETE", "/api/v1/artifacts/{id}", write, s.artifactDelete},
		// Retired upload paths (spec 4.7): 410 pointing at the relay.
		{"POST", "/api/v1/artifacts/direct", write, s.artifactGone},
		{"POST", "/api/v1/artifacts/direct/complete", write, s.artifactGone},
		{"POST", "/api/v1/artifacts/multipart", write, s.artifactGone},
		{"POST", "/api/v1/artifacts/multipart/part", write, s.artifactGone},
		{"POST", "/api/v1/artifacts/multipart/complete", write, s.artifactGone},
		{"POST", "/api/v1/artifacts/multipart/abort", write, s.artifactGone},
		{"GET", "/api/v1/artifacts/multipart/parts", readOnly, s.artifactGone},

		// The MCP server (docs/mcp.md): its tools call the routes above
		// with the caller's token.
		{"POST", "/mcp", write, s.mcpServe},

		// Results.
		{"GET", "/api/v1/results", readOnly, s.resultList},
		{"GET", "/api/v1/results/{job_id}", readOnly, s.resultGet},
	}
}

// methods405 are the methods answered 405 by a pattern of their own on every
// known path that does not serve them. A pattern per method, rather than
// one method-less pattern per path, keeps literal paths ahead of parameter
// paths: a method-less "/api/v1/jobs/batch" would conflict with
// "GET /api/v1/jobs/{id}" under net/http's precedence rules, and without a
// "GET /api/v1/jobs/batch" pattern that GET would look up a job "batch".
var methods405 = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// mux builds the ServeMux: each route, a 405 envelope for known paths with
// another method, and a 404 envelope for everything else. GET patterns also
// answer HEAD (net/http does that and drops the body).
func (s *Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	methods := map[string][]string{}
	var paths []string
	for _, rt := range s.routes() {
		handler := rt.handler
		if growsStorage(rt) {
			handler = s.refuseWhenDiskLow(handler)
		}
		h := s.instrument(rt.method+" "+rt.pattern, rt.pattern, s.adapt(s.authorize(rt.access, handler)))
		mux.Handle(rt.method+" "+rt.pattern, h)
		if _, seen := methods[rt.pattern]; !seen {
			paths = append(paths, rt.pattern)
		}
		methods[rt.pattern] = append(methods[rt.pattern], rt.method)
		if rt.method == "GET" {
			methods[rt.pattern] = append(methods[rt.pattern], "HEAD")
		}
	}
	sort.Strings(paths)
	// Methods outside methods405 reach the catch-all, which finds the path
	// here: method-less patterns alone never conflict.
	known := http.NewServeMux()
	for _, p := range paths {
		h := s.methodNotAllowed(methods[p])
		known.Handle(p, h)
		for _, m := range methods405 {
			if !slices.Contains(methods[p], m) {
				mux.Handle(m+" "+p, h)
			}
		}
	}
	notFound := s.instrument("unmatched", "", s.adapt(func(w http.ResponseWriter, r *http.Request) error {
		return fault.New(fault.KindNotFound, "route_not_found", "See /openapi.json for the endpoints that exist.",
			"no endpoint %s %s", r.Method, strings.TrimSpace(r.URL.Path))
	}))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, pattern := known.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		notFound.ServeHTTP(w, r)
	}))
	return mux
}
