package docs

// Page is one page of the documentation: a markdown file of this directory
// and the addresses it is served at.
type Page struct {
	// Slug names the page in /docs/{slug} and /api/v1/docs/{slug}.
	Slug string
	// File is the markdown file in this directory.
	File string
	// Path is where people read it as HTML (and where agents that do not
	// ask for HTML get the markdown).
	Path string
}

// Catalog lists every published page in reading order. A markdown file not
// listed here is not served; a test checks that none is left out.
func Catalog() []Page {
	p := func(slug, file string) Page { return Page{Slug: slug, File: file, Path: "/docs/" + slug} }
	return []Page{
		{Slug: "index", File: "index.md", Path: "/docs"},
		p("skill", "skill.md"),
		p("access", "access.md"),
		p("workflows", "workflows.md"),
		p("jobs", "jobs.md"),
		p("job-types", "job-types.md"),
		p("runner", "runner.md"),
		p("builds", "builds.md"),
		p("gpus", "gpus.md"),
		{Slug: "project-manifest", File: "manifest.md", Path: "/docs/projects/project-manifest"},
		p("pricing", "pricing.md"),
		p("billing", "billing.md"),
		p("payments", "payments.md"),
		p("artifacts", "artifacts.md"),
		p("streams", "streams.md"),
		p("limits", "limits.md"),
		p("console", "console.md"),
		p("metrics", "metrics.md"),
		p("cli", "cli.md"),
		p("python-sdk", "python-sdk.md"),
		p("mcp", "mcp.md"),
		p("hosting", "hosting.md"),
		p("scaling", "scaling.md"),
		p("security", "security.md"),
		p("architecture", "architecture.md"),
		p("changelog", "changelog.md"),
		p("bench", "bench.md"),
	}
}
