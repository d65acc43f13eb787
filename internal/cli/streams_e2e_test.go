package cli_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// TestStreamSurvivesKill9 reads a job stream with the WHATWG EventSource
// client (test/sse) while the real binary runs a fan-out on its own gVisor
// host, kills the server with SIGKILL mid-stream and starts it again on
// the same data and address: the client reconnects by itself with
// Last-Event-ID and gets every frame once, in order, up to done.
func TestStreamSurvivesKill9(t *testing.T) {
	buildtest.RequireTools(t)
	runner, err := os.ReadFile(sandboxtest.BuildRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := buildtest.DataDir(t)
	args := []string{"--data-dir", dir, "--listen", addr, "--host-slots", "1"}
	srv := startServer(t, nil, args...)
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "streams").stdout)
	skiff(t, nil, "admin", "grant-credit", "--data-dir", dir, "--account", "streams", "--usd", "20")
	c := srv.client(t, key)
	publishRunner(t, c, "streams", runner)

	var items []json.RawMessage
	for i := range 4 {
		items = append(items, sandboxtest.Payload{SleepMS: 1500, Stdout: fmt.Sprintf("task %d\n", i)}.Encode(t))
	}
	job := c.Post(t, "/api/v1/jobs", map[string]any{"project": "streams", "runner_command": []string{"/runner"},
		"fan_out": map[string]any{"items": items}, "requirements": map[string]any{"cpu": 1, "memory_mb": 256}}).
		Object(t, http.StatusCreated)
	jobID := job["id"].(string)

	const wait = 3 * time.Minute
	lines := apitest.EventSource(t, srv.URL+"/api/v1/jobs/"+jobID+"/stream", key)
	var seen []apitest.ESLine
	snap := apitest.NextLine(t, lines, apiv1.FrameSnapshot, &seen, wait)
	// One task ends while the client reads, then the server dies.
	for {
		var tf apiv1.TaskFrame
		l := apitest.NextLine(t, lines, apiv1.FrameTask, &seen, wait)
		if json.Unmarshal(l.Data, &tf) == nil && tf.Event.Kind == "attempt.succeeded" {
			break
		}
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.wait(t, 10*time.Second)
	apitest.NextLine(t, lines, "error", &seen, wait)

	// The same data and address: the client's reconnects find it.
	srv = startServer(t, nil, args...)
	c = srv.client(t, key)
	done := apitest.NextLine(t, lines, apiv1.FrameDone, &seen, wait)
	var d apiv1.DoneFrame
	if err := json.Unmarshal(done.Data, &d); err != nil || d.Status != "completed" {
		t.Errorf("done: got %s, want status completed", done.Data)
	}
	var evs apiv1.JobEventList
	c.Get(t, "/api/v1/jobs/"+jobID+"/events?limit=1000").JSON(t, http.StatusOK, &evs)
	apitest.WantResumed(t, seen, snap, evs.Events)
	if code := srv.stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}
}
