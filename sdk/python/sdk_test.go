// Package python holds the tests of the Python SDK (sdk/python), run by Go
// against a real server so that `go test ./...` covers them.
package python

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// sdkServer starts a server on eng with an account, credit, a published
// project "p" and a stand-in host running every task; it returns the
// environment python3 needs.
func sdkServer(t *testing.T, eng apitest.Engine) []string {
	t.Helper()
	e := apitest.Start(t, apitest.Options{Store: eng.Open(t)})
	a := e.NewAccount(t, "py")
	c := client.New(e.URL, a.Member)
	if _, err := c.CreateProject(t.Context(), &apiv1.ProjectWrite{Name: client.Ptr("p"),
		Manifest: json.RawMessage(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`)}); err != nil {
		t.Fatal(err)
	}
	e.Publish(t, a.ID, "p")
	e.Grant(t, a.ID, 100_000_000)
	done := make(chan error, 1)
	go func() { done <- e.Worker().Serve(t.Context(), 20*time.Millisecond) }()
	t.Cleanup(func() {
		if err := <-done; err != nil && t.Context().Err() == nil {
			t.Errorf("worker: %v", err)
		}
	})
	return append(os.Environ(), "SKIFF_URL="+e.URL, "SKIFF_TOKEN="+a.Member, "SKIFF_TEST_PROJECT=p", "PYTHONPATH=.",
		"PYTHONDONTWRITEBYTECODE=1")
}

func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Skip(t, "skipping: python3 is not installed")
	}
	out, err := exec.Command(py, "-c", "import sys; assert sys.version_info >= (3, 11), sys.version").CombinedOutput()
	if err != nil {
		testenv.Skip(t, "skipping: the SDK needs Python 3.11 or newer: "+string(out))
	}
	return py
}

// TestSDK runs the SDK's unittest suite (sdk/python/tests) against a real
// server on each engine.
func TestSDK(t *testing.T) {
	py := python3(t)
	for _, eng := range apitest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			if eng.Skip != "" {
				testenv.Skip(t, eng.Skip)
			}
			cmd := exec.CommandContext(t.Context(), py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
			cmd.Env = sdkServer(t, eng)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python3 -m unittest: %v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}
