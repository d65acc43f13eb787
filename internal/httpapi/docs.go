package httpapi

import (
	"net/http"

	"github.com/skiffhq/skiff/docs"
	"github.com/skiffhq/skiff/internal/fault"
)

// markdownPage serves one embedded documentation page.
func markdownPage(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		data, err := docs.Pages.ReadFile(name)
		if err != nil {
			return fault.NotFound("page", name)
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, err = w.Write(data)
		return err
	}
}
