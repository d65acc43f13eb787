package httpapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/skiffhq/skiff/internal/testenv"
)

// TestBrowser opens the landing page, /docs and /docs/pricing in headless
// Chromium (Debian's chromium, driven by chromedp) as a person would: it
// reads them, moves through the landing page with the keyboard, signs up
// on the waitlist with JavaScript and without it, and checks that the page
// shows the outcome and that the row exists. Screenshots go to the test's
// artifact directory (kept with go test -artifacts -outputdir DIR).
func TestBrowser(t *testing.T) {
	runSuite(t, []apiCase{{"landing_docs_waitlist", testBrowser}}, nil)
}

func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Skip(t, "no chromium: scripts/setup.sh installs Debian's chromium package")
	return ""
}

// browser starts a headless Chromium for the test, with JavaScript on or
// off. Each step is bounded by the test's own deadline, not a timer here.
func browser(t *testing.T, js bool) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // tests run as root, where Chromium's own sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled,
		emulation.SetScriptExecutionDisabledParams{Value: !js}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100)) // 100 is PNG; less is JPEG
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s: %d bytes", path, len(png))
}

type css = chromedp.CSS

func testBrowser(t *testing.T, f *fixture) {
	ctx := browser(t, true)

	// The landing page says what Skiff is and shows the live prices.
	do(t, ctx, "open /", chromedp.Navigate(f.e.URL+"/"))
	h1 := get(t, ctx, "h1", chromedp.Text(css("h1")))
	pricing := get(t, ctx, "pricing", chromedp.Text(css("#pricing + p")))
	if !strings.Contains(h1, "Compute jobs") || !strings.Contains(pricing, "35%") {
		t.Errorf("landing: h1 %q, pricing %q; want what Skiff is and the 35%% markup", h1, pricing)
	}
	if n := get(t, ctx, "unlabelled inputs", chromedp.Evaluate[int](
		`[...document.querySelectorAll('input')].filter(e => e.labels.length === 0).length`)); n != 0 {
		t.Errorf("landing: %d inputs without a label", n)
	}
	if n := get(t, ctx, "external resources", chromedp.Evaluate[int](
		`performance.getEntriesByType('resource').filter(r => !r.name.startsWith(location.origin)).length`)); n != 0 {
		t.Errorf("landing loaded %d resources from elsewhere, want none", n)
	}
	screenshot(t, ctx, "landing")

	// Keyboard: the first Tab reaches the skip link; the form is filled
	// and sent from the keyboard.
	do(t, ctx, "tab", chromedp.KeyEvent("\t"))
	if focused := get(t, ctx, "focus", chromedp.Evaluate[string](`document.activeElement.textContent`)); !strings.Contains(focused, "Skip to content") {
		t.Errorf("first Tab focused %q, want the skip link", focused)
	}
	do(t, ctx, "join with JavaScript",
		chromedp.Focus(css("#email")),
		chromedp.SendKeys(css("#email"), "browser@example.com"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(css("#waitlist-outcome.ok")))
	if out := get(t, ctx, "outcome", chromedp.Text(css("#waitlist-outcome"))); !strings.Contains(out, "on the waitlist as browser@example.com") {
		t.Errorf("after joining with JavaScript the page says %q", out)
	}
	if url := get(t, ctx, "location", chromedp.Location()); url != f.e.URL+"/" {
		t.Errorf("joining with JavaScript moved the page to %s; want no reload", url)
	}
	screenshot(t, ctx, "landing-joined-js")

	// An address the server refuses is reported in place, with what to do.
	do(t, ctx, "invalid with JavaScript",
		chromedp.SetAttributeValue(css("#email"), "type", "text"), // past the browser's own check
		chromedp.SetValue(css("#email"), "not-an-address"),
		chromedp.Click(css("#waitlist-form button")),
		chromedp.WaitVisible(css("#waitlist-outcome.err")))
	if out := get(t, ctx, "outcome", chromedp.Text(css("#waitlist-outcome"))); !strings.Contains(out, "not a valid address") {
		t.Errorf("after an invalid address the page says %q", out)
	}

	// Without JavaScript the form still works: a post, then a redirect back
	// that names the outcome.
	nojs := browser(t, false)
	do(t, nojs, "join without JavaScript",
		chromedp.Navigate(f.e.URL+"/"),
		chromedp.SendKeys(css("#email"), "nojs@example.com"),
		chromedp.Click(css("#waitlist-form button")),
		chromedp.WaitVisible(css("#waitlist-outcome.ok")))
	out := get(t, nojs, "outcome", chromedp.Text(css("#waitlist-outcome")))
	url := get(t, nojs, "location", chromedp.Location())
	if !strings.Contains(out, "You are on the waitlist") || !strings.HasSuffix(url, "/?waitlist=joined#waitlist") {
		t.Errorf("without JavaScript: page says %q at %s; want the outcome at /?waitlist=joined#waitlist", out, url)
	}
	screenshot(t, nojs, "landing-joined-nojs")

	var emails []string
	for _, w := range waitlist(t, f.e.Store) {
		emails = append(emails, w.Email)
	}
	if got := strings.Join(emails, ","); len(emails) != 2 || !strings.Contains(got, "browser@example.com") ||
		!strings.Contains(got, "nojs@example.com") {
		t.Errorf("waitlist rows %v, want browser@example.com and nojs@example.com", emails)
	}

	// The docs read as HTML, with a table of contents that links into the page.
	for _, page := range []struct{ path, title, shot string }{
		{"/docs", "Skiff documentation", "docs"},
		{"/docs/pricing", "Pricing", "docs-pricing"},
	} {
		do(t, ctx, "open "+page.path, chromedp.Navigate(f.e.URL+page.path))
		title := get(t, ctx, "title", chromedp.Text(css("article h1")))
		toc := get(t, ctx, "toc", chromedp.Evaluate[int](
			`[...document.querySelectorAll('.toc a')].filter(a => document.getElementById(a.hash.slice(1))).length`))
		rows := get(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('article table tr').length`))
		if title != page.title || toc < 2 {
			t.Errorf("%s: h1 %q with %d working table-of-contents links; want %q and its sections", page.path, title, toc, page.title)
		}
		if page.path == "/docs/pricing" && rows < 4 {
			t.Errorf("/docs/pricing shows %d table rows, want the live rate tables", rows)
		}
		screenshot(t, ctx, page.shot)
	}
}
