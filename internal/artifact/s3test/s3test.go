// Package s3test starts a real S3-compatible server for tests: versitygw
// with its posix backend, on 127.0.0.1, in a temporary directory. `make
// setup` installs it with `go install`; tests skip without it, and fail
// under SKIFF_TEST_REQUIRE_ALL=1.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/artifact/s3blob"
	"github.com/skiffhq/skiff/internal/testenv"
)

// EnvBinary names the versitygw binary; default: versitygw on PATH, then
// $(go env GOPATH)/bin/versitygw, then /usr/local/lib/skiff/versitygw.
const EnvBinary = "SKIFF_VERSITYGW"

const (
	accessKey = "skifftestaccess"
	secretKey = "skifftestsecretkey"
	region    = "us-east-1"
)

// Binary finds versitygw, or "" when it is not installed.
func Binary() string {
	if p := os.Getenv(EnvBinary); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	candidates := []string{"/usr/local/lib/skiff/versitygw"}
	if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		candidates = append([]string{filepath.Join(strings.TrimSpace(string(gp)), "bin", "versitygw")}, candidates...)
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// Server is a running versitygw.
type Server struct {
	Endpoint string // http://127.0.0.1:port
	Root     string // the posix backend's directory: one subdirectory per bucket
}

// Start runs versitygw until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		testenv.Skip(t, "S3 tests skipped: versitygw is not installed (make setup installs it; or set "+EnvBinary+")")
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	root := t.TempDir()
	cmd := exec.Command(bin, "--access", accessKey, "--secret", secretKey, "--region", region, "--port", addr, "posix", root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("versitygw log:\n%s", b)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("versitygw exited at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s within 30s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &Server{Endpoint: "http://" + addr, Root: root}
}

// Bucket makes a fresh bucket and returns its name.
func (s *Server) Bucket(t testing.TB) string {
	t.Helper()
	bucket := fmt.Sprintf("b%d", time.Now().UnixNano())
	if err := os.Mkdir(filepath.Join(s.Root, bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	return bucket
}

// Env is the environment a process needs to reach s: the credentials, as
// AWS_ variables.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + secretKey}
}

// Blob returns a blob store in a fresh bucket of s under prefix.
func (s *Server) Blob(t testing.TB, prefix string) *s3blob.S3 {
	t.Helper()
	bucket := s.Bucket(t)
	b, err := s3blob.NewS3(context.Background(), s3blob.S3Config{Endpoint: s.Endpoint, Region: region, Bucket: bucket,
		Prefix: prefix, AccessKey: accessKey, SecretKey: secretKey, PartSize: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
