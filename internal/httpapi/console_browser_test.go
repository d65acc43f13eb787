package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/testenv"
)

// TestConsoleBrowser drives the web console in headless Chromium against a
// real server, as a person would: signs in with an API key and with a
// wallet, watches a fan-out's tasks turn green through the job stream while
// the test runs them, opens a failed task's log, cancels a job, downloads an
// artifact, reads the ledger after a job's hold is captured and asks for a top-up
// quote. Names, tags and output full of HTML render as text. Screenshots of
// each page go to the test's artifact directory (go test -artifacts).
func TestConsoleBrowser(t *testing.T) {
	t.Parallel()
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			t.Run("key", func(t *testing.T) {
				t.Parallel()
				f := setupWith(t, eng, apitest.Options{AuthRatePerAddress: -1, AuthRatePerIP: -1,
					// Quotes need payments on; nothing is paid, so the
					// facilitator is never asked.
					Payments: &payment.Config{FacilitatorURL: "http://127.0.0.1:1", Network: "eip155:8453", Asset: testAsset,
						AssetName: "Test USD", AssetVersion: "2", PayTo: testPayTo}})
				funded(100_000_000)(t, f)
				testConsoleWithKey(t, f)
			})
			t.Run("wallet", func(t *testing.T) {
				t.Parallel()
				f := setupWith(t, eng, apitest.Options{AuthRatePerAddress: -1, AuthRatePerIP: -1})
				testConsoleWallet(t, f)
			})
		})
	}
}

// cspRecorder keeps every Content-Security-Policy violation of the page in
// window.__cspViolations, so a test can say none happened.
const cspRecorder = `window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI));`

// consoleBrowser is a JavaScript browser that records CSP violations and
// saves downloads in the directory it returns.
func consoleBrowser(t *testing.T, scripts ...string) (context.Context, string) {
	t.Helper()
	ctx := browser(t, true)
	dir := t.TempDir()
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
		t.Fatalf("download behaviour: %v", err)
	}
	for _, src := range append([]string{cspRecorder}, scripts...) {
		if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
			t.Fatalf("add script: %v", err)
		}
	}
	return ctx, dir
}

// waitJS waits until the JavaScript expression is truthy. The limit is
// generous (a stall, not a speed, fails it) so that a stuck page reports
// what it shows rather than holding the test until its deadline.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + "\n" + document.body.innerText`))
		t.Fatalf("wait for %s (%s): %v; the page shows:\n%s", what, expr, err, shown)
	}
}

// step is do with waitJS's limit and report.
func step(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + "\n" + document.body.innerText`))
		t.Fatalf("%s: %v; the page shows:\n%s", what, err, shown)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// noCSPViolations fails t when the page broke its own policy.
func noCSPViolations(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	if v := get(t, ctx, "csp violations", chromedp.Evaluate[[]string](`window.__cspViolations || []`)); len(v) != 0 {
		t.Errorf("%s: CSP violations %v", where, v)
	}
	if n := get(t, ctx, "external resources", chromedp.Evaluate[int](
		`performance.getEntriesByType('resource').filter(r => !r.name.startsWith(location.origin)).length`)); n != 0 {
		t.Errorf("%s loaded %d resources from elsewhere, want none", where, n)
	}
}

const xss = `<img src=x onerror="window.__xss=1">`

func testConsoleWithKey(t *testing.T, f *fixture) {
	ctx, downloads := consoleBrowser(t)
	base := f.e.URL + "/console"

	// Signed out, every address shows the sign-in form.
	step(t, ctx, "open the console", chromedp.Navigate(base+"#/balance"), chromedp.WaitVisible(css("#key-form")))
	if n := get(t, ctx, "unlabelled inputs", chromedp.Evaluate[int](
		`[...document.querySelectorAll('input')].filter(e => e.labels.length === 0).length`)); n != 0 {
		t.Errorf("sign-in: %d inputs without a label", n)
	}
	step(t, ctx, "tab", chromedp.KeyEvent("\t"))
	if focused := get(t, ctx, "focus", chromedp.Evaluate[string](`document.activeElement.textContent`)); !strings.Contains(focused, "Skip to content") {
		t.Errorf("first Tab focused %q, want the skip link", focused)
	}
	screenshot(t, ctx, "console-signin")

	// A wrong key is refused in place; the right one signs in.
	step(t, ctx, "wrong key",
		chromedp.SendKeys(css("#api-key"), "flk_not_a_key"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(css("#signin-outcome.err")))
	if out := get(t, ctx, "outcome", chromedp.Text(css("#signin-outcome"))); !strings.Contains(out, "not accepted") {
		t.Errorf("wrong key: page says %q", out)
	}
	step(t, ctx, "sign in with a key",
		chromedp.SetValue(css("#api-key"), f.acct.Member),
		chromedp.Click(css("#key-form button")),
		chromedp.WaitVisible(css("#available")))
	waitJS(t, ctx, "who", `document.getElementById('who').textContent.includes('acme')`)
	where := get(t, ctx, "location", chromedp.Location())
	stored := get(t, ctx, "storage", chromedp.Evaluate[string](`sessionStorage.getItem('skiff.console.token') || ''`))
	cookies := get(t, ctx, "cookies", chromedp.Evaluate[string](`document.cookie`))
	if stored != f.acct.Member || cookies != "" || strings.Contains(where, "flk_") || !strings.HasSuffix(where, "#/balance") {
		t.Errorf("after sign-in: at %s, sessionStorage %q, cookies %q; want the page asked for, the key in sessionStorage only", where, stored, cookies)
	}

	// A job whose client ref, tags, payload and output are HTML.
	evil := submitJob(t, f.member, map[string]any{"client_ref": xss, "tags": []string{xss, "plain"},
		"payload": map[string]any{"html": xss}})
	a := claimAttempt(t, f, evil.ID)
	start := f.e.Clock.Now()
	if err := f.e.Jobs.AttemptStarted(t.Context(), a, start); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Jobs.AttemptProgress(t.Context(), a, nil, xss+"\n"); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "open the jobs", chromedp.Navigate(base+"#/jobs"), chromedp.WaitVisible(css("#jobs")))
	if got := get(t, ctx, "jobs table", chromedp.Text(css("#jobs tbody"))); !strings.Contains(got, xss) {
		t.Errorf("jobs table shows %q, want the client ref as text %q", got, xss)
	}
	step(t, ctx, "open the HTML job", chromedp.Navigate(base+"#/jobs/"+evil.ID), chromedp.WaitVisible(css("#task-output")))
	waitJS(t, ctx, "output tail", `document.getElementById('task-output').textContent.includes('onerror')`)
	if n := get(t, ctx, "injected", chromedp.Evaluate[int](`document.querySelectorAll('img').length + (window.__xss ? 100 : 0)`)); n != 0 {
		t.Errorf("HTML from the API became elements (%d images, or it ran)", n)
	}
	for _, sel := range []string{"#job-ref", "#job-tags", "#task-output"} {
		if got := get(t, ctx, sel, chromedp.Text(css(sel))); !strings.Contains(got, xss) {
			t.Errorf("%s shows %q, want %q as text", sel, got, xss)
		}
	}
	screenshot(t, ctx, "console-job-html-as-text")

	// A fan-out watched live: the page is opened once and every change
	// arrives through the stream.
	j := submitJob(t, f.member, map[string]any{"fan_out": map[string]any{"items": []any{
		map[string]any{"i": 0}, map[string]any{"i": 1}, map[string]any{"i": 2}, map[string]any{"i": 3}}},
		"timeout_s": 600, "tags": []string{"browser"}})
	// An artifact the job's own code would have uploaded.
	up := f.member.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/artifacts", Body: []byte("hello from the artifact\n"),
		Header: http.Header{"Content-Type": {"application/octet-stream"}, "X-Artifact-Filename": {"report.txt"}, "X-Artifact-Job-Id": {j.ID}}})
	up.Want(t, http.StatusCreated)
	step(t, ctx, "open the fan-out", chromedp.Navigate(base+"#/jobs/"+j.ID))
	waitJS(t, ctx, "stream live", `document.getElementById('stream-state')?.dataset.state === 'live'`)
	waitJS(t, ctx, "four queued cells", `document.querySelectorAll('#task-grid .cell.queued').length === 4`)
	step(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.__samePage = true`))

	// Task 0 runs and reports progress; the grid and the detail follow.
	runEvil := func() { // the HTML job must not hold the only worker slot
		o := succeed
		o.StartedAt, o.EndedAt = start, f.e.Clock.Now()
		if err := f.e.Jobs.AttemptFinished(t.Context(), a, &o, nil, xss); err != nil {
			t.Fatal(err)
		}
	}
	runEvil()
	a0 := claimAttempt(t, f, j.ID)
	s0 := f.e.Clock.Now()
	if err := f.e.Jobs.AttemptStarted(t.Context(), a0, s0); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Jobs.AttemptProgress(t.Context(), a0, json.RawMessage(`{"pct": 40, "stage": "train"}`), "epoch 1 of 3\n"); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "task 0 running", `document.querySelector('#task-grid .cell[data-index="0"]')?.dataset.status === 'running'`)
	waitJS(t, ctx, "job running", `document.getElementById('job-status')?.textContent === 'running'`)
	// Keyboard: the task's cell is a button; Enter opens it.
	step(t, ctx, "choose task 0 from the keyboard", chromedp.Focus(css(`#task-grid .cell[data-index="0"]`)), chromedp.KeyEvent("\r"))
	waitJS(t, ctx, "task 0 live tail", `document.getElementById('task-output')?.textContent.includes('epoch 1 of 3')`)
	if pct := get(t, ctx, "progress", chromedp.Evaluate[float64](`document.getElementById('task-progress').value`)); pct != 40 {
		t.Errorf("task 0 progress bar at %v, want 40", pct)
	}
	screenshot(t, ctx, "console-job-running")

	// The rest end: 0, 1 and 3 succeed, 2 fails with its stderr.
	f.e.Clock.Advance(90 * time.Second)
	o := succeed
	o.StartedAt, o.EndedAt = s0, f.e.Clock.Now()
	if err := f.e.Jobs.AttemptFinished(t.Context(), a0, &o, json.RawMessage(`{"pct": 100}`), "epoch 3 of 3\n"); err != nil {
		t.Fatal(err)
	}
	runAttempt(t, f, j.ID, 30*time.Second, succeed)
	failed := fail
	failed.Stderr = "Traceback: boom at step 7 <b>bold?</b>"
	runAttempt(t, f, j.ID, 20*time.Second, failed)
	runAttempt(t, f, j.ID, 10*time.Second, succeed)
	final := getJob(t, f.member, j.ID)
	waitJS(t, ctx, "job ended", `document.getElementById('job-status')?.textContent === `+jsString(final.Status))
	waitJS(t, ctx, "three green, one red", `document.querySelectorAll('#task-grid .cell.succeeded').length === 3 &&
		document.querySelectorAll('#task-grid .cell.failed').length === 1`)
	waitJS(t, ctx, "stream ended", `document.getElementById('stream-state').dataset.state === 'ended'`)
	if same := get(t, ctx, "same page", chromedp.Evaluate[bool](`window.__samePage === true`)); !same {
		t.Error("the job page reloaded; want every change through the stream")
	}
	green := get(t, ctx, "colour", chromedp.Evaluate[string](`getComputedStyle(document.querySelector('#task-grid .cell.succeeded')).backgroundColor`))
	if green != "rgb(17, 99, 41)" {
		t.Errorf("a succeeded task is %s, want green rgb(17, 99, 41)", green)
	}

	// The failed task's log and its attempt: exit 1, 60 billed seconds.
	step(t, ctx, "open the failed task", chromedp.Click(css(`#task-grid .cell.failed`)), chromedp.WaitVisible(css("#task-error")))
	if got := get(t, ctx, "stderr", chromedp.Text(css("#task-error"))); !strings.Contains(got, "boom at step 7 <b>bold?</b>") {
		t.Errorf("failed task's log reads %q", got)
	}
	attempts := get(t, ctx, "attempts", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#attempts tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|'))`))
	if len(attempts) != 1 || !strings.HasPrefix(attempts[0], "1|failed|exit|1|") || !strings.Contains(attempts[0], "|60|") {
		t.Errorf("failed task's attempts %q, want one: failed, exit, code 1, 60 billed seconds", attempts)
	}
	waitJS(t, ctx, "result shown", `document.getElementById('result-h') !== null`)
	screenshot(t, ctx, "console-job-ended")

	// The artifact downloads with the token, under its name.
	step(t, ctx, "download the artifact", chromedp.Click(css(`#artifact-list button`)))
	var file []byte
	for stall := time.Now().Add(2 * time.Minute); file == nil; {
		if b, err := os.ReadFile(filepath.Join(downloads, "report.txt")); err == nil && len(b) > 0 {
			file = b
		} else if time.Now().After(stall) {
			t.Fatal("the artifact never arrived in the download directory")
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if string(file) != "hello from the artifact\n" {
		t.Errorf("downloaded %q", file)
	}

	// Cancel a job from its page: ask, confirm, and the stream shows it.
	c := submitJob(t, f.member, fanOut(3))
	step(t, ctx, "open the job to cancel", chromedp.Navigate(base+"#/jobs/"+c.ID), chromedp.WaitVisible(css("#cancel")))
	step(t, ctx, "cancel", chromedp.Click(css("#cancel")), chromedp.WaitVisible(css("#cancel-confirm")))
	screenshot(t, ctx, "console-job-cancel-confirm")
	step(t, ctx, "confirm", chromedp.Click(css("#cancel-confirm")))
	waitJS(t, ctx, "cancelled", `document.getElementById('job-status')?.textContent === 'cancelled'`)
	if st := getJob(t, f.member, c.ID).Status; st != "cancelled" {
		t.Errorf("after cancelling in the console the API says %s", st)
	}

	// A sweep's leaderboard is a table that sorts by any column.
	sw := submitJob(t, f.member, map[string]any{"type": "sweep", "parameters": map[string]any{"lr": []any{0.1, 0.01, 0.001}},
		"rank_by": "val_loss", "rank_order": "asc", "timeout_s": 600})
	for _, loss := range []string{"0.5", "0.2", "0.9"} {
		o := succeed
		o.Result = json.RawMessage(`{"val_loss": ` + loss + `}`)
		runAttempt(t, f, sw.ID, 10*time.Second, o)
	}
	step(t, ctx, "open the sweep", chromedp.Navigate(base+"#/jobs/"+sw.ID), chromedp.WaitVisible(css("#leaderboard")))
	column := func(name string) []string {
		return get(t, ctx, "column "+name, chromedp.Evaluate[[]string](`(() => {
			const i = [...document.querySelectorAll('#leaderboard thead th')].findIndex(th => th.textContent === `+jsString(name)+`);
			return [...document.querySelectorAll('#leaderboard tbody tr')].map(r => r.cells[i].textContent);
		})()`))
	}
	if got := strings.Join(column("value"), " "); got != "0.2 0.5 0.9" {
		t.Errorf("leaderboard values %q, want best first: 0.2 0.5 0.9", got)
	}
	step(t, ctx, "sort by value", chromedp.Click(css(`#leaderboard th:nth-child(`+fmt.Sprint(1+slices.Index(
		get(t, ctx, "headers", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#leaderboard thead th')].map(th => th.textContent)`)), "value"))+`) button`)))
	step(t, ctx, "sort by value again", chromedp.Click(css(`#leaderboard th[aria-sort="ascending"] button`)))
	if got := strings.Join(column("value"), " "); got != "0.9 0.5 0.2" {
		t.Errorf("leaderboard sorted by value, descending: %q", got)
	}
	screenshot(t, ctx, "console-sweep-leaderboard")

	// The jobs list filters by tag and status.
	step(t, ctx, "type a tag", chromedp.Navigate(base+"#/jobs"), chromedp.WaitVisible(css("#f-tag")),
		chromedp.SendKeys(css("#f-tag"), "browser"))
	// On a loaded machine the last keystroke can land after a click sent
	// at once: filter once the field holds the whole word, as a person would.
	waitJS(t, ctx, "typed", `document.querySelector('#f-tag').value === 'browser'`)
	step(t, ctx, "filter", chromedp.Click(css(".filters button")))
	waitJS(t, ctx, "filtered", `location.hash.includes('tag=browser') && document.querySelectorAll('#jobs tbody tr').length === 1`)
	if got := get(t, ctx, "filtered row", chromedp.Text(css("#jobs tbody"))); !strings.Contains(got, j.ID) {
		t.Errorf("tag filter shows %q, want %s only", got, j.ID)
	}
	screenshot(t, ctx, "console-jobs")

	// The balance after the job's hold was captured: the ledger's charge, the same
	// available amount as the API, and a top-up quote.
	bal := balanceOf(t, f.member)
	step(t, ctx, "open the balance", chromedp.Navigate(base+"#/balance"), chromedp.WaitVisible(css("#ledger")))
	got := get(t, ctx, "available", chromedp.Text(css("#available")))
	if v, err := strconv.ParseFloat(strings.TrimPrefix(got, "$"), 64); err != nil || int64(math.Round(v*1e6)) != int64(bal.AvailableUSD) {
		t.Errorf("available shows %q, API says %s", got, bal.AvailableUSD)
	}
	ledger := get(t, ctx, "ledger", chromedp.Text(css("#ledger tbody")))
	if !strings.Contains(ledger, "job_charge") || !strings.Contains(ledger, j.ID) {
		t.Errorf("ledger shows %q, want the fan-out's job_charge", ledger)
	}
	if n := get(t, ctx, "spend bars", chromedp.Evaluate[int](`document.querySelectorAll('#spend svg rect.bar').length`)); n != 1 {
		t.Errorf("spend chart has %d bars, want 1 (one day of charges)", n)
	}
	step(t, ctx, "top up", chromedp.SetValue(css("#topup-amount"), "25"), chromedp.Click(css("#topup button")),
		chromedp.WaitVisible(css("#quote-facts")))
	var quotes apiv1.QuotePage
	f.member.Get(t, "/api/v1/account/quotes").JSON(t, http.StatusOK, &quotes)
	facts := get(t, ctx, "quote", chromedp.Text(css("#quote-facts")))
	if len(quotes.Quotes) != 1 || !strings.Contains(facts, quotes.Quotes[0].ID) || !strings.Contains(facts, "$25") ||
		!strings.Contains(facts, "eip155:8453") || !strings.Contains(facts, "25000000") {
		t.Errorf("quote shows %q; quotes %+v", facts, quotes.Quotes)
	}
	screenshot(t, ctx, "console-balance")

	// Projects: readiness and the latest push.
	step(t, ctx, "open the projects", chromedp.Navigate(base+"#/projects"), chromedp.WaitVisible(css("#projects")),
		chromedp.Click(css(`#projects a[href="#/projects/alpha"]`)), chromedp.WaitVisible(css("#push-h")))
	if got := get(t, ctx, "project", chromedp.Text(css("main"))); !strings.Contains(got, "published") || !strings.Contains(got, "Ready for jobs") {
		t.Errorf("project page shows %q", got)
	}
	screenshot(t, ctx, "console-project")

	// At 360 px wide nothing overflows the page sideways.
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: 360, Height: 740, DeviceScaleFactor: 1, Mobile: true}); err != nil {
		t.Fatal(err)
	}
	for _, route := range []struct{ hash, ready, shot string }{
		{"#/jobs/" + j.ID, "#task-grid .cell", "console-job-360"},
		{"#/balance", "#ledger", "console-balance-360"},
		{"#/jobs", "#jobs", "console-jobs-360"},
	} {
		step(t, ctx, "open "+route.hash+" narrow", chromedp.Navigate(base+route.hash), chromedp.WaitVisible(css(route.ready)))
		if w := get(t, ctx, "width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
			t.Errorf("%s at 360 px is %d px wide", route.hash, w)
		}
		screenshot(t, ctx, route.shot)
	}
	noCSPViolations(t, ctx, "console")

	// Sign out: the token is gone from the tab.
	step(t, ctx, "sign out", chromedp.Click(css("#signout")), chromedp.WaitVisible(css("#key-form")))
	if left := get(t, ctx, "storage", chromedp.Evaluate[int](`sessionStorage.length`)); left != 0 {
		t.Errorf("after signing out sessionStorage holds %d items", left)
	}
}

// testWalletProvider is a test double of an EIP-1193 browser wallet: the
// page script answers eth_requestAccounts with the test wallet's address
// and hands personal_sign's message to the test (window.skiffTestSign),
// which signs it with the test wallet's known key as a wallet would.
const testWalletProvider = `window.ethereum = {
  isSkiffTestDouble: true,
  async request({ method, params }) {
    if (method === "eth_requestAccounts" || method === "eth_accounts") return [%s];
    if (method === "personal_sign") {
      const [hex, address] = params;
      const bytes = new Uint8Array(hex.slice(2).match(/../g).map((b) => parseInt(b, 16)));
      return window.skiffTestSign({ message: new TextDecoder().decode(bytes), address });
    }
    throw Object.assign(new Error("the test wallet does not do " + method), { code: 4200 });
  },
};`

func testConsoleWallet(t *testing.T, f *fixture) {
	w := newTestWallet(t, 7)
	ctx, _ := consoleBrowser(t, fmt.Sprintf(testWalletProvider, jsString(w.addr.Checksum())))
	var signed []string
	sign := func(_ context.Context, in struct {
		Message string `json:"message"`
		Address string `json:"address"`
	}) (string, error) {
		if !strings.EqualFold(in.Address, w.addr.Hex()) {
			return "", fmt.Errorf("asked to sign for %s", in.Address)
		}
		signed = append(signed, in.Message)
		return w.personalSign(in.Message), nil
	}
	step(t, ctx, "wallet sign-in",
		chromedp.ExposeFunc("skiffTestSign", sign),
		chromedp.Navigate(f.e.URL+"/console#/jobs"),
		chromedp.WaitVisible(css("#wallet-signin:not([disabled])")),
		chromedp.Click(css("#wallet-signin")))
	waitJS(t, ctx, "signed in or refused", `(sessionStorage.getItem('skiff.console.token') !== null &&
		document.getElementById('who').textContent !== '') || document.querySelector('#signin-outcome.err') !== null`)
	if msg := get(t, ctx, "refusal", chromedp.Evaluate[string](`document.querySelector('#signin-outcome.err')?.textContent || ''`)); msg != "" {
		t.Fatalf("wallet sign-in refused: %s", msg)
	}
	screenshot(t, ctx, "console-wallet-signed-in")

	// The token the page holds is the verify endpoint's session: it reads
	// the wallet's own account, the one a direct sign-in reaches.
	token := get(t, ctx, "token", chromedp.Evaluate[string](`sessionStorage.getItem('skiff.console.token')`))
	var b apiv1.BalanceResponse
	f.e.Client(token).Get(t, "/api/v1/account/balance").JSON(t, http.StatusOK, &b)
	direct := signIn(t, f.e, w)
	if !strings.HasPrefix(token, "fls_") || b.Account.ID != direct.Account.ID || b.Account.ID == f.acct.ID || b.Account.Role != "member" {
		t.Errorf("console wallet session %q reads account %+v; a direct sign-in reaches %+v", token[:min(len(token), 4)], b.Account, direct.Account)
	}
	if len(signed) != 1 || !strings.Contains(signed[0], w.addr.Checksum()) || !strings.Contains(signed[0], f.e.URL) {
		t.Errorf("the wallet was asked to sign %q, want one challenge naming the wallet and this server", signed)
	}
	if who := get(t, ctx, "who", chromedp.Text(css("#who"))); !strings.Contains(who, b.Account.Name) {
		t.Errorf("header says %q, want the wallet account %q", who, b.Account.Name)
	}
	noCSPViolations(t, ctx, "wallet sign-in")
}
