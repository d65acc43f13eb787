package httpapi

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/docsite"
)

// landing serves GET /: what Skiff is, the live prices, how to start, and
// the waitlist form. The form works without JavaScript (a form post that
// comes back here with ?waitlist=<outcome>) and, with it, shows the outcome
// in place. Everything is inline: no external fonts, scripts or images.
func (s *Server) landing(w http.ResponseWriter, r *http.Request) error {
	data := landingData{CSS: template.CSS(docsite.SiteCSS + landingCSS), JS: template.JS(landingJS)}
	if s.jobs != nil {
		l := s.views.PresetList()
		data.Pricing = l.Pricing
		for _, p := range l.Presets {
			data.Presets = append(data.Presets, landingPreset{Name: p.Name, Shape: shape(p.Requirements),
				Rate: p.RateUSDPerHour.String(), Minimum: p.MinimumAttemptUSD.String()})
		}
		mr := l.Pricing.MarketRates
		for _, u := range []struct {
			name string
			usd  apiv1.USD
		}{{"CPU core", mr.CPUCoreHourUSD}, {"GiB of memory", mr.MemoryGBHourUSD}, {"GPU", mr.GPUHourUSD}} {
			data.Units = append(data.Units, landingUnit{Name: u.name, Market: u.usd.String(), Billed: withMarkup(u.usd).String()})
		}
		data.HasRates = true
	}
	switch r.URL.Query().Get("waitlist") {
	case "joined":
		data.Outcome, data.OutcomeOK = "You are on the waitlist. We will write to you when your API key is ready.", true
	case "invalid":
		data.Outcome = "That does not look like an email address. Please check it and send it again."
	case "rate_limited":
		data.Outcome = "Too many sign-ups from your network just now. Please wait a minute and try again."
	}
	var b bytes.Buffer
	if err := landingTemplate.Execute(&b, data); err != nil {
		return err
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	w.Header().Add("Vary", "Accept")
	serveBytes(w, r, typeHTML, b.Bytes())
	return nil
}

type landingData struct {
	CSS       template.CSS
	JS        template.JS
	HasRates  bool
	Pricing   apiv1.Pricing
	Units     []landingUnit
	Presets   []landingPreset
	Outcome   string
	OutcomeOK bool
}

type landingPreset struct{ Name, Shape, Rate, Minimum string }

type landingUnit struct{ Name, Market, Billed string }

func shape(r apiv1.JobRequirements) string {
	var s string
	if r.CPU != nil {
		s = fmt.Sprintf("%g CPU", *r.CPU)
	}
	if r.MemoryMB != nil {
		s += fmt.Sprintf(", %g GiB", float64(*r.MemoryMB)/1024)
	}
	if r.GPUCount != nil && *r.GPUCount > 0 {
		s += fmt.Sprintf(", %d GPU", *r.GPUCount)
	}
	return s
}

var landingTemplate = template.Must(template.New("landing").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Skiff: compute jobs in gVisor, paid per second</title>
<meta name="description" content="Push a project, run typed jobs in gVisor sandboxes, read JSON results, pay per second of runtime.">
<link rel="alternate" type="text/markdown" href="/llms.txt" title="llms.txt">
<style>{{.CSS}}</style>
</head>
<body>
<a class="skip" href="#content">Skip to content</a>
<header class="top">
<nav aria-label="Site">
<a class="brand" href="/">Skiff</a>
<a href="/docs">Docs</a>
<a href="/docs/pricing">Pricing</a>
<a href="/docs/skill">For agents</a>
<a href="/console">Console</a>
<a href="/openapi.json">OpenAPI</a>
</nav>
</header>
<main id="content" class="landing">
<section class="hero" aria-labelledby="what">
<h1 id="what">Compute jobs in a sandbox, paid by the second</h1>
<p class="lead">Skiff runs your code on demand. <strong>Push a project</strong> (a Dockerfile, a
<code>skiff.project.json</code> and your code), <strong>submit typed jobs</strong> &mdash; one task, a
fan-out over a dataset, a parameter sweep, map_reduce or a benchmark &mdash; and each task runs in a
<strong>gVisor sandbox</strong>. You read JSON results and <strong>pay per second</strong> of runtime
from a prepaid balance. No subscriptions, no idle charges.</p>
<p><a class="button" href="/docs/skill">Get started</a> <a class="button secondary" href="/docs">Read the docs</a>
<a class="button secondary" href="/console">Open the console</a></p>
</section>

<section aria-labelledby="pricing">
<h2 id="pricing">Pricing</h2>
{{- if .HasRates}}
<p>The live market rate of the capacity you ask for plus a {{.Pricing.MarkupPercent}}% service markup, metered per
{{.Pricing.MeteredPer}} with at least {{.Pricing.MinBilledSeconds}} seconds per attempt. Queue time is never charged.</p>
<table>
<caption>Billed rates right now, in USD</caption>
<thead><tr><th scope="col">unit</th><th scope="col">market per hour</th><th scope="col">billed per hour</th></tr></thead>
<tbody>
{{- range .Units}}
<tr><th scope="row">{{.Name}}</th><td>{{.Market}}</td><td>{{.Billed}}</td></tr>
{{- end}}
</tbody>
</table>
{{- if .Presets}}
<table>
<caption>Presets</caption>
<thead><tr><th scope="col">preset</th><th scope="col">shape</th><th scope="col">USD per hour</th><th scope="col">least one attempt costs</th></tr></thead>
<tbody>
{{- range .Presets}}
<tr><th scope="row"><code>{{.Name}}</code></th><td>{{.Shape}}</td><td>{{.Rate}}</td><td>{{.Minimum}}</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
{{- end}}
<p><a href="/docs/pricing">Pricing in detail</a>, or <code>GET /api/v1/presets</code> for the same in JSON.</p>
</section>

<section aria-labelledby="start">
<h2 id="start">How to start</h2>
<ol>
<li><strong>Sign in with any wallet</strong>: ask for a challenge, sign it, get a session token. No approval needed.
Or use an <strong>API key</strong> from the operator, or from the waitlist below.</li>
<li><strong>Fund your account</strong> in USDC, over x402 or the Machine Payments Protocol.</li>
<li><strong>Push a project</strong> and <strong>submit a job</strong>; poll it, then read its result.</li>
</ol>
<p>Agents: read <a href="/skill.md">/skill.md</a> and <a href="/llms.txt">/llms.txt</a>.</p>
</section>

<section aria-labelledby="waitlist" id="waitlist-section">
<h2 id="waitlist">Ask for an API key</h2>
<form id="waitlist-form" method="post" action="/api/v1/waitlist">
<label for="email">Email address</label>
<div class="row">
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254" aria-describedby="email-help">
<button type="submit">Join the waitlist</button>
</div>
<p id="email-help" class="help">We use it only to send you your key.</p>
</form>
<p id="waitlist-outcome" role="status" aria-live="polite" class="outcome{{if .Outcome}}{{if .OutcomeOK}} ok{{else}} err{{end}}{{end}}">{{.Outcome}}</p>
</section>
</main>
<footer class="foot"><p>Skiff is open source and self-hostable: <a href="/docs/hosting">run your own</a>.
Found a problem? <a href="/docs/access#send-feedback">Send feedback</a>.</p></footer>
<script>{{.JS}}</script>
</body>
</html>
`))

const landingCSS = `
.landing{max-width:900px;margin:0 auto;padding:16px}
.hero h1{font-size:2rem;line-height:1.25;margin:24px 0 8px}
.lead{font-size:1.1rem}
.button{display:inline-block;background:var(--accent);color:#fff;padding:8px 16px;border-radius:6px;text-decoration:none;font-weight:600}
.button.secondary{background:#fff;color:var(--accent);border:2px solid var(--accent)}
caption{text-align:left;font-weight:600;padding:4px 0}
table{margin:8px 0 16px}
form label{display:block;font-weight:600;margin-bottom:4px}
.row{display:flex;gap:8px;flex-wrap:wrap}
input[type=email]{font:inherit;padding:8px;border:2px solid var(--muted);border-radius:6px;min-width:260px;flex:1}
button{font:inherit;font-weight:600;padding:8px 16px;border:0;border-radius:6px;background:var(--accent);color:#fff;cursor:pointer}
.help{color:var(--muted);font-size:.9rem}
.outcome.ok{color:var(--ok);font-weight:600}
.outcome.err{color:var(--err);font-weight:600}
.foot{border-top:1px solid var(--line);color:var(--muted);text-align:center;padding:8px 16px}
`

// landingJS posts the form as JSON and shows the answer in the live
// region; without it the browser posts the form and the server redirects
// back with the outcome.
const landingJS = `
(function () {
  var form = document.getElementById('waitlist-form');
  var out = document.getElementById('waitlist-outcome');
  if (!form || !window.fetch) { return; }
  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    var button = form.querySelector('button');
    button.disabled = true;
    out.className = 'outcome';
    out.textContent = 'Sending...';
    fetch(form.action, {
      method: 'POST',
      headers: {'Content-Type': 'application/json', 'Accept': 'application/json'},
      body: JSON.stringify({email: form.email.value})
    }).then(function (res) {
      return res.json().then(function (body) { return {status: res.status, body: body}; });
    }).then(function (r) {
      if (r.status === 201) {
        out.className = 'outcome ok';
        out.textContent = 'You are on the waitlist as ' + r.body.email + '. We will write to you when your API key is ready.';
        form.reset();
      } else {
        out.className = 'outcome err';
        out.textContent = (r.body.error || 'Something went wrong') + '. ' + (r.body.recommended_action || '');
      }
    }).catch(function () {
      out.className = 'outcome err';
      out.textContent = 'The request did not reach the server. Please try again.';
    }).then(function () { button.disabled = false; });
  });
})();
`
