package e2e_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/testenv"
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
			checkInstaller(t, srv)
			srv.stop(t, 10*time.Second)
		})
	}
}

// checkInstaller fetches the installer and the binaries it downloads: the
// script names this controller and passes Debian's shellcheck; the binary
// served is this server's own, matching the sha256 served beside it.
func checkInstaller(t *testing.T, srv *server) {
	t.Helper()
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
		}
		return b
	}
	script := get("/skiff-host")
	if !bytes.HasPrefix(script, []byte("#!/bin/sh")) || !bytes.Contains(script, []byte("CONTROLLER='"+srv.URL+"'")) {
		t.Errorf("installer does not name this controller %s:\n%.300s", srv.URL, script)
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		testenv.Skip(t, "shellcheck is not installed (scripts/setup.sh installs it)")
	} else {
		cmd := exec.Command("shellcheck", "-s", "sh", "-")
		cmd.Stdin = bytes.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("shellcheck of the served installer: %v\n%s", err, out)
		}
	}
	platform := runtime.GOOS + "-" + runtime.GOARCH
	bin := get("/skiff-host/bin/" + platform)
	sum := sha256.Sum256(bin)
	if want := strings.TrimSpace(string(get("/skiff-host/bin/" + platform + ".sha256"))); hex.EncodeToString(sum[:]) != want {
		t.Errorf("binary sha256 %x, served sum %s", sum, want)
	}
	self, _ := os.ReadFile(os.Args[0])
	if !bytes.Equal(self, bin) {
		t.Errorf("served binary (%d bytes) is not the running skiff (%d bytes)", len(bin), len(self))
	}
	resp, err := http.Get(srv.URL + "/skiff-host/bin/plan9-mips")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another platform: %d, want 404", resp.StatusCode)
	}
}
