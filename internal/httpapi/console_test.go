package httpapi_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// TestConsoleFiles holds the console's static files to what a browser
// needs: each module the page loads, and each module those import, is
// served with its content type, the strict CSP and no framing, and is
// revalidated by ETag; anything else under /console is a 404 envelope.
func TestConsoleFiles(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.Options{})
	anon := e.Client("")

	const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	check := func(path, ctype string) *apitest.Response {
		t.Helper()
		r := anon.Get(t, path).Want(t, http.StatusOK)
		for k, want := range map[string]string{
			"Content-Type":            ctype,
			"Content-Security-Policy": csp,
			"X-Frame-Options":         "DENY",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           "no-cache",
		} {
			if got := r.Header.Get(k); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, k, got, want)
			}
		}
		if r.Header.Get("ETag") == "" {
			t.Errorf("GET %s: no ETag", path)
		}
		if r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("GET %s: CORS header %q; the console is same-origin only", path, r.Header.Get("Access-Control-Allow-Origin"))
		}
		return r
	}

	page := string(check("/console", "text/html; charset=utf-8").Body)
	// /console/ is the page too (a plain client: OpenAPI cannot describe
	// an empty path parameter).
	if res, err := http.Get(e.URL + "/console/"); err != nil || res.StatusCode != http.StatusOK ||
		res.Header.Get("Content-Security-Policy") != csp {
		t.Errorf("GET /console/: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	// No inline script anywhere (the CSP would refuse it) and the page
	// loads its module and styles from here.
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(page) || strings.Contains(page, " on") && regexp.MustCompile(`\son[a-z]+=`).MatchString(page) {
		t.Error("the console page has inline script or an inline event handler")
	}
	for _, want := range []string{`<script type="module" src="/console/app.js">`, `href="/console/console.css"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the console page does not have %s", want)
		}
	}
	check("/console/console.css", "text/css; charset=utf-8")

	// Every module reachable from app.js is served as JavaScript; none
	// names another origin.
	imports := regexp.MustCompile(`(?m)^import [^"]*"\./([a-z0-9_-]+\.js)";`)
	seen := map[string]bool{}
	todo := []string{"app.js"}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		body := string(check("/console/"+name, "text/javascript; charset=utf-8").Body)
		for _, m := range imports.FindAllStringSubmatch(body, -1) {
			todo = append(todo, m[1])
		}
		if strings.Contains(body, "https://") || strings.Contains(strings.ReplaceAll(body, `"http://www.w3.org/2000/svg"`, ""), "http://") {
			t.Errorf("%s names another origin", name)
		}
		if strings.Contains(body, "innerHTML") || strings.Contains(body, "insertAdjacentHTML") || strings.Contains(body, "document.write") {
			t.Errorf("%s parses strings as HTML; the console renders text only", name)
		}
		if strings.Contains(body, "document.cookie") || strings.Contains(body, "localStorage") {
			t.Errorf("%s keeps state in cookies or localStorage; the token belongs in sessionStorage", name)
		}
	}
	if len(seen) < 10 {
		t.Errorf("app.js reaches %d modules, want the whole console: %v", len(seen), seen)
	}

	// A second load revalidates: 304 with no body.
	r := anon.Get(t, "/console/app.js")
	again := anon.Do(t, apitest.Request{Method: "GET", Path: "/console/app.js", Header: http.Header{"If-None-Match": {r.Header.Get("ETag")}}})
	if again.Status != http.StatusNotModified || len(again.Body) != 0 {
		t.Errorf("If-None-Match: got %d with %d bytes, want 304 and none", again.Status, len(again.Body))
	}
	if head := anon.Do(t, apitest.Request{Method: "HEAD", Path: "/console/app.js"}); head.Status != http.StatusOK || len(head.Body) != 0 {
		t.Errorf("HEAD: got %d with %d bytes", head.Status, len(head.Body))
	}

	// Files that are not the console's are not found, whatever the reason.
	for _, p := range []string{"/console/nope.js", "/console/console_test.go", "/console/app.js.map",
		"/console/sub/app.js", "/console/%2e%2e/console.go"} {
		env := anon.Do(t, apitest.Request{Method: "GET", Path: p}).Fail(t, http.StatusNotFound)
		if env.Code != "console_file_not_found" {
			t.Errorf("GET %s: code %q, want console_file_not_found", p, env.Code)
		}
	}
	if env := anon.Do(t, apitest.Request{Method: "POST", Path: "/console", Check: apitest.MustViolate}).Fail(t, http.StatusMethodNotAllowed); env.Code != "method_not_allowed" {
		t.Errorf("POST /console: code %q", env.Code)
	}

	// CORS stays closed: another origin's preflight or read gets no
	// Access-Control-Allow-Origin, so its page cannot read the answer.
	acct := e.NewAccount(t, "cors")
	for _, method := range []string{"GET", "OPTIONS"} {
		req, _ := http.NewRequestWithContext(t.Context(), method, e.URL+"/api/v1/account/balance", nil)
		req.Header.Set("Origin", "https://elsewhere.example")
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Authorization", "Bearer "+acct.Member)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if v := res.Header.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("%s from another origin: Access-Control-Allow-Origin %q, want none", method, v)
		}
	}
}
