package httpapi_test

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/docs"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// The landing page, the console page and every docs page, as browsers get them, pass
// html-validate's recommended rules (test/openapi/.htmlvalidate.json):
// valid HTML, labelled controls, no duplicate ids, and so on.
func TestHTMLValid(t *testing.T) {
	t.Parallel()
	dir := testenv.NodeProject(t)
	e := apitest.Start(t, apitest.Options{})
	c := e.Client("")
	out := t.TempDir()
	paths := []string{"/", "/?waitlist=joined", "/?waitlist=invalid", "/console"}
	for _, p := range docs.Catalog() {
		paths = append(paths, p.Path)
	}
	var files []string
	for i, p := range paths {
		r := c.Do(t, apitest.Request{Method: "GET", Path: p, Header: http.Header{"Accept": {"text/html"}}}).Want(t, http.StatusOK)
		name := filepath.Join(out, strings.NewReplacer("/", "_", "?", "_", "=", "_").Replace(p)+".html")
		if i == 0 {
			name = filepath.Join(out, "landing.html")
		}
		writeFile(t, name, r.Body)
		files = append(files, name)
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join(dir, "node_modules", ".bin", "html-validate"),
		append([]string{"--config", filepath.Join(dir, ".htmlvalidate.json"), "--formatter", "text"}, files...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("html-validate: %v\n%s", err, b)
	}
}
