package cli_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
)

// The operator's host commands, end to end on both stores: a code made by
// `admin create-enrollment` is redeemed over HTTP, `admin hosts` lists the
// host, `drain-host` and `remove-host` change its state, and a removed
// host's credential stops working on the host protocol at once.
func TestAdminHostCommands(t *testing.T) {
	t.Parallel()
	for _, eng := range []string{"sqlite", "postgres"} {
		t.Run(eng, func(t *testing.T) {
			t.Parallel()
			storeArgs := []string{"--data-dir", t.TempDir()}
			if eng == "postgres" {
				storeArgs = append(storeArgs, "--database-url", pgtest.NewDatabase(t))
			}
			srv := startServer(t, nil, append(storeArgs, "--listen", "127.0.0.1:0", "--no-local-host")...)
			r := skiff(t, nil, append([]string{"admin", "create-enrollment", "--name", "garage", "--work", "cpu", "--rate-percent", "55"}, storeArgs...)...)
			code := strings.TrimSpace(r.stdout)
			if r.code != 0 || !strings.HasPrefix(code, "cek_") || strings.Contains(code, "\n") {
				t.Fatalf("create-enrollment: exit %d, stdout %q, stderr %q; want only a cek_ code", r.code, r.stdout, r.stderr)
			}
			if r := skiff(t, nil, append([]string{"admin", "create-enrollment", "--work", "tpu"}, storeArgs...)...); r.code == 0 {
				t.Errorf("create-enrollment --work tpu succeeded; want refused")
			}
			var red struct {
				HostID     string `json:"host_id"`
				Credential string `json:"credential"`
			}
			srv.client(t, "").Post(t, "/api/v1/fleet/enrollments/redeem", map[string]any{"code": code, "cpus": 2, "memory_gb": 3}).
				JSON(t, http.StatusCreated, &red)

			r = skiff(t, nil, append([]string{"admin", "hosts"}, storeArgs...)...)
			if r.code != 0 || !strings.Contains(r.stdout, red.HostID) || !strings.Contains(r.stdout, "garage") ||
				!strings.Contains(r.stdout, "active") || strings.Count(r.stdout, "\n") != 2 {
				t.Errorf("admin hosts: exit %d, stdout %q; want a header and the garage host, active", r.code, r.stdout)
			}
			if strings.Contains(r.stdout, red.Credential) {
				t.Error("admin hosts shows the credential")
			}
			r = skiff(t, nil, append([]string{"admin", "drain-host", red.HostID}, storeArgs...)...)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "draining" {
				t.Errorf("drain-host: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			register := func() int {
				req, _ := http.NewRequest("POST", srv.URL+"/agent/v1/register", strings.NewReader(`{"protocol_version":3,"capacity":{"cpu":1,"memory_mb":512,"slots":1}}`))
				req.Header.Set("Authorization", "Bearer "+red.Credential)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if st := register(); st != http.StatusOK {
				t.Fatalf("register with the enrolled credential: %d, want 200", st)
			}
			r = skiff(t, nil, append([]string{"admin", "remove-host", red.HostID}, storeArgs...)...)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "removed" {
				t.Errorf("remove-host: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if st := register(); st != http.StatusUnauthorized {
				t.Errorf("register after remove-host: %d, want 401", st)
			}
			r = skiff(t, nil, append([]string{"admin", "hosts", "--json"}, storeArgs...)...)
			var v map[string]any
			if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &v); err != nil || v["state"] != "removed" || v["last_seen_at"] == nil {
				t.Errorf("hosts --json = %q, %v; want the removed host, last seen set", r.stdout, err)
			}
			if r := skiff(t, nil, append([]string{"admin", "drain-host", red.HostID}, storeArgs...)...); r.code == 0 {
				t.Error("drain-host of a removed host succeeded")
			}
			srv.stop(t, 10*time.Second)
		})
	}
}
