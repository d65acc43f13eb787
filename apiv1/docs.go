package apiv1

// DocsIndex answers GET /api/v1/docs: every documentation page with its
// addresses, and the other discovery addresses.
type DocsIndex struct {
	Pages    []DocsPage `json:"pages"`
	Count    int        `json:"count"`
	OpenAPI  string     `json:"openapi_url"`
	LLMsTxt  string     `json:"llms_txt_url"`
	LLMsFull string     `json:"llms_full_txt_url"`
	Skill    string     `json:"skill_url"`
}

// DocsPage is one page of the index.
type DocsPage struct {
	Slug        string `json:"slug"`
	Title       string `json:"title"`
	Summary     string `json:"summary"`
	URL         string `json:"url"`          // HTML for browsers, markdown otherwise
	MarkdownURL string `json:"markdown_url"` // always markdown
}
