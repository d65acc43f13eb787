package security_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
)

// hostsRun runs cmd to its end (within a minute) and returns its combined
// output and whether it exited 0.
func hostsRun(t *testing.T, cmd *exec.Cmd) (string, bool) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err == nil
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v: still running after a minute:\n%s", cmd.Args, out.String())
	}
	return "", false
}

// hostsCodeFile writes a code file as its owner should: mode 0600.
func hostsCodeFile(t *testing.T, code string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "code")
	if err := os.WriteFile(p, []byte(code+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// `skiff host` will not speak plain http to a controller off this machine
// (the code, the credential and every task's data would cross the network
// in the clear) unless the operator says --insecure-http; a code file
// others can read is refused.
func TestHostsRefusePlainHTTP(t *testing.T) {
	code := hostsCodeFile(t, "cek_notarealcodenotarealcode")
	data := t.TempDir()
	out, ok := hostsRun(t, skiffCmd("host", "--controller", "http://skiff-controller.invalid:8080", "--code-file", code,
		"--data-dir", data, "--driver", "process", "--allow-unisolated"))
	if ok || !strings.Contains(out, "plain http off this machine") || !strings.Contains(out, "--insecure-http") {
		t.Fatalf("skiff host with a plain http controller off loopback: ok=%v\n%s\nwant a refusal naming --insecure-http", ok, out)
	}
	// With --insecure-http it goes on to redeem (and fails only because
	// the name does not resolve).
	out, _ = hostsRun(t, skiffCmd("host", "--controller", "http://skiff-controller.invalid:8080", "--code-file", code,
		"--data-dir", data, "--driver", "process", "--allow-unisolated", "--insecure-http"))
	if strings.Contains(out, "plain http off this machine") || !strings.Contains(out, "no controller answered") {
		t.Errorf("with --insecure-http: %s\nwant the redeem tried", out)
	}
	if err := os.Chmod(code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, ok = hostsRun(t, skiffCmd("host", "--controller", "http://127.0.0.1:9", "--code-file", code,
		"--data-dir", data, "--driver", "process", "--allow-unisolated"))
	if ok || !strings.Contains(out, "chmod 600") {
		t.Errorf("a code file of mode 0644: ok=%v\n%s\nwant refused", ok, out)
	}
	// The code on the command line (every user reads it in ps) is refused.
	out, ok = hostsRun(t, skiffCmd("host", "--controller", "http://127.0.0.1:9", "--code", "cek_notarealcodenotarealcode",
		"--data-dir", t.TempDir(), "--driver", "process", "--allow-unisolated"))
	if ok || !strings.Contains(out, "--code-file") || strings.Contains(out, "no controller answered") {
		t.Errorf("--code on the command line: ok=%v\n%s\nwant refused before any redeem, naming --code-file", ok, out)
	}
}

// The installer refuses a plain http controller off loopback without
// --insecure-http, and on loopback installs a unit that names a 0600 code
// file, never the code: the code is in no command line and no unit file.
func TestHostsInstaller(t *testing.T) {
	buildtest.RequireTools(t)
	s := startServer(t, "sqlite", "--no-local-host")
	resp, err := http.Get(s.URL + "/skiff-host")
	if err != nil {
		t.Fatal(err)
	}
	script, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	install := func(args ...string) (string, bool) {
		cmd := exec.Command("sh", append([]string{"-s", "--"}, args...)...)
		cmd.Stdin = bytes.NewReader(script)
		return hostsRun(t, cmd)
	}
	code := s.admin(t, "create-enrollment", "--name", "sec-host")
	codeFile := hostsCodeFile(t, code)

	prefix := t.TempDir()
	out, ok := install("--controller", "http://skiff-controller.invalid:8080", "--code-file", codeFile, "--prefix", prefix)
	if ok || !strings.Contains(out, "plain http off this machine") {
		t.Fatalf("installer with a plain http controller off loopback: ok=%v\n%s\nwant refused", ok, out)
	}
	if _, err := os.Stat(filepath.Join(prefix, "bin", "skiff")); err == nil {
		t.Errorf("the refused installer still installed a binary")
	}

	out, ok = install("--code", code, "--prefix", prefix)
	if ok || !strings.Contains(out, "--code-file") {
		t.Errorf("installer given the code on its command line: ok=%v\n%s\nwant refused, naming --code-file", ok, out)
	}

	out, ok = install("--code-file", codeFile, "--prefix", prefix)
	if !ok {
		t.Fatalf("installer on loopback: %s", out)
	}
	unit, err := os.ReadFile(filepath.Join(prefix, "etc", "systemd", "system", "skiff-host.service"))
	if err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join(prefix, "var", "lib", "skiff-host", "enrollment-code")
	if strings.Contains(string(unit), code) || !strings.Contains(string(unit), "--code-file "+stored) {
		t.Errorf("unit:\n%s\nwant --code-file %s and not the code", unit, stored)
	}
	if strings.Contains(out, code) {
		t.Errorf("the installer printed the code:\n%s", out)
	}
	fi, err := os.Stat(stored)
	b, _ := os.ReadFile(stored)
	if err != nil || fi.Mode().Perm() != 0o600 || strings.TrimSpace(string(b)) != code {
		t.Errorf("code file %s: %v %v, holds %q; want mode 0600 with the code", stored, fi, err, b)
	}
}
