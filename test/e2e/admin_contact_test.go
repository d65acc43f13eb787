package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
)

// What strangers send through the public endpoints reaches the operator:
// `admin waitlist` and `admin feedback` list it, as a table and as JSON
// lines, on both stores.
func TestAdminListsWaitlistAndFeedback(t *testing.T) {
	t.Parallel()
	for _, eng := range []string{"sqlite", "postgres"} {
		t.Run(eng, func(t *testing.T) {
			t.Parallel()
			// The server always gets its own --data-dir: with PostgreSQL its
			// builds and local host still keep files there.
			storeArgs := []string{"--data-dir", t.TempDir()}
			if eng == "postgres" {
				storeArgs = append(storeArgs, "--database-url", pgtest.NewDatabase(t))
			}
			srv := startServer(t, nil, append(storeArgs, "--listen", "127.0.0.1:0")...)
			r := skiff(t, nil, append([]string{"admin", "create-key", "--account", "acme"}, storeArgs...)...)
			if r.code != 0 {
				t.Fatalf("create-key: exit %d, stderr %q", r.code, r.stderr)
			}
			key := strings.TrimSpace(r.stdout)

			// An empty list prints only the header.
			r = skiff(t, nil, append([]string{"admin", "waitlist"}, storeArgs...)...)
			if r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "ID") {
				t.Errorf("empty waitlist: got exit %d, stdout %q; want just the header", r.code, r.stdout)
			}

			anon := srv.client(t, "")
			anon.Post(t, "/api/v1/waitlist", map[string]any{"email": "first@example.com"}).Want(t, http.StatusCreated)
			anon.Post(t, "/api/v1/waitlist", map[string]any{"email": "second@example.com"}).Want(t, http.StatusCreated)
			anon.Post(t, "/api/v1/waitlist", map[string]any{"email": "FIRST@example.com"}).Want(t, http.StatusCreated)
			anon.Post(t, "/api/v1/feedback", map[string]any{"type": "bug", "title": "Anonymous\nreport", "description": "d1"}).
				Want(t, http.StatusCreated)
			time.Sleep(2 * time.Millisecond) // distinct created_at, so "newest first" is defined
			srv.client(t, key).Post(t, "/api/v1/feedback", map[string]any{"type": "provisioning", "title": "No GPUs",
				"description": "d2", "job_id": "job_1", "metadata": map[string]any{"region": "eu"}}).Want(t, http.StatusCreated)

			r = skiff(t, nil, append([]string{"admin", "waitlist", "--json"}, storeArgs...)...)
			var emails []string
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				var e struct{ ID, Email, CreatedAt string }
				if err := json.Unmarshal([]byte(line), &e); err != nil || !strings.HasPrefix(e.ID, "wl_") {
					t.Fatalf("waitlist --json line %q: %v; want a JSON object with a wl_ id", line, err)
				}
				emails = append(emails, e.Email)
			}
			if len(emails) != 2 || !strings.Contains(strings.Join(emails, ","), "first@example.com") ||
				!strings.Contains(strings.Join(emails, ","), "second@example.com") {
				t.Errorf("waitlist --json emails = %v, want first and second once each", emails)
			}

			r = skiff(t, nil, append([]string{"admin", "feedback", "--json"}, storeArgs...)...)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if r.code != 0 || len(lines) != 2 {
				t.Fatalf("feedback --json: exit %d, stdout %q, stderr %q; want 2 lines", r.code, r.stdout, r.stderr)
			}
			var newest map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &newest); err != nil {
				t.Fatal(err)
			}
			if newest["type"] != "provisioning" || newest["account_name"] != "acme" || newest["job_id"] != "job_1" ||
				newest["metadata"].(map[string]any)["region"] != "eu" || newest["description"] != "d2" {
				t.Errorf("newest feedback = %v, want the provisioning report of acme with its job and metadata", newest)
			}
			r = skiff(t, nil, append([]string{"admin", "feedback"}, storeArgs...)...)
			if !strings.Contains(r.stdout, "Anonymous report") || !strings.Contains(r.stdout, "acme") ||
				strings.Count(r.stdout, "\n") != 3 {
				t.Errorf("feedback table = %q, want a header and two rows, titles on one line, the account named", r.stdout)
			}
			r = skiff(t, nil, append([]string{"admin", "feedback", "--limit", "0"}, storeArgs...)...)
			if r.code == 0 || !strings.Contains(r.stderr, "--limit") {
				t.Errorf("--limit 0: got exit %d, stderr %q; want a failure naming --limit", r.code, r.stderr)
			}
			srv.stop(t, 10*time.Second)
		})
	}
}
