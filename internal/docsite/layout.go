package docsite

// pageTemplate is the HTML of every docs page. Everything it needs is
// inline: no fonts, scripts or images from anywhere.
const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.HTMLTitle}}</title>
<meta name="description" content="{{.Summary}}">
<link rel="alternate" type="text/markdown" href="{{.MarkdownPath}}">
<style>{{.CSS}}</style>
</head>
<body>
<a class="skip" href="#content">Skip to content</a>
<header class="top">
<nav aria-label="Site">
<a class="brand" href="/">Skiff</a>
<a href="/docs">Docs</a>
<a href="/docs/pricing">Pricing</a>
<a href="/openapi.json">OpenAPI</a>
<a href="/llms.txt">llms.txt</a>
</nav>
</header>
<div class="docs">
<nav class="sidebar" aria-label="Documentation pages">
<ul>
{{- range .Pages}}
<li><a href="{{.Path}}"{{if eq .Slug $.Current}} aria-current="page"{{end}}>{{.Title}}</a></li>
{{- end}}
</ul>
</nav>
<main id="content">
{{- if .TOC}}
<nav class="toc" aria-labelledby="toc-title">
<h2 id="toc-title">On this page</h2>
<ul>
{{- range .TOC}}
<li class="toc-{{.Level}}"><a href="#{{.ID}}">{{.Text}}</a></li>
{{- end}}
</ul>
</nav>
{{- end}}
<article>
{{.Body}}
</article>
<p class="source">This page as markdown: <a href="{{.MarkdownPath}}">{{.MarkdownPath}}</a></p>
</main>
</div>
</body>
</html>
`

// SiteCSS styles the docs and the landing page. Colours meet WCAG AA
// contrast on their backgrounds; focus is always visible.
const SiteCSS = `
:root{--fg:#1b1f24;--muted:#4a5360;--bg:#fff;--accent:#0b5cad;--line:#d5dbe2;--code:#f3f5f7;--ok:#116329;--err:#a40e26}
*{box-sizing:border-box}
body{margin:0;font:16px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible{outline:3px solid #f0b400;outline-offset:2px}
.skip{position:absolute;left:-999px}
.skip:focus{left:8px;top:8px;background:#fff;padding:4px 8px;z-index:2}
.top{border-bottom:1px solid var(--line);padding:0 16px}
.top nav{display:flex;gap:20px;align-items:center;max-width:1200px;margin:0 auto;min-height:52px;flex-wrap:wrap}
.brand{font-weight:700;font-size:1.15rem;text-decoration:none;color:var(--fg)}
.docs{display:flex;max-width:1200px;margin:0 auto;gap:32px;padding:16px}
.sidebar{flex:0 0 220px}
.sidebar ul{list-style:none;padding:0;margin:0}
.sidebar li a{display:block;padding:4px 8px;border-radius:4px;text-decoration:none}
.sidebar a[aria-current=page]{background:var(--code);font-weight:600;color:var(--fg)}
main{flex:1;min-width:0}
.toc{border:1px solid var(--line);border-radius:6px;padding:8px 16px;margin-bottom:16px}
.toc h2{font-size:1rem;margin:4px 0}
.toc ul{margin:0;padding-left:18px}
.toc .toc-3{margin-left:16px}
pre{background:var(--code);padding:12px;overflow-x:auto;border-radius:6px}
code{background:var(--code);padding:1px 4px;border-radius:3px;font-size:.92em}
pre code{padding:0}
table{border-collapse:collapse;display:block;overflow-x:auto}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
.source{color:var(--muted);font-size:.9rem;border-top:1px solid var(--line);padding-top:8px}
@media (max-width:800px){.docs{flex-direction:column}.sidebar{flex:none}}
`
