package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// TestStreamSurvivesKill9 reads a job stream with the WHATWG EventSource
// client (test/sse) while the real binary runs a fan-out on its own gVisor
// host, kills the server with SIGKILL mid-stream and starts it again on
// the same data and address: the client reconnects by itself with
// Last-Event-ID and gets every frame once, in order, up to done.
func TestStreamSurvivesKill9(t *testing.T) {
	runner := realRunner(t)
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
	if err := srv.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
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

// TestStreamsEndOnShutdown opens a project stream with curl on the real
// binary and stops the server with SIGTERM: the stream ends at once with a
// timeout frame of reason server_shutdown naming where to resume, curl
// sees the end of the response, and the server exits cleanly without
// waiting out its drain timeout for the open stream.
func TestStreamsEndOnShutdown(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		testenv.Skip(t, "curl not installed")
	}
	dir := t.TempDir()
	srv := startServer(t, nil, "--data-dir", dir, "--listen", "127.0.0.1:0", "--no-local-host", "--drain-timeout", "20s")
	key := strings.TrimSpace(skiff(t, nil, "admin", "create-key", "--data-dir", dir, "--account", "shutdown").stdout)
	c := srv.client(t, key)
	c.Post(t, "/api/v1/projects", map[string]any{"name": "quiet"}).Want(t, http.StatusCreated)

	cmd := exec.CommandContext(t.Context(), curl, "-sS", "-N", "--max-time", "60", "-H", "Authorization: Bearer "+key,
		srv.URL+"/api/v1/projects/quiet/stream")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() (string, bool) {
		select {
		case l, ok := <-lines:
			return l, ok
		case <-time.After(30 * time.Second):
			t.Fatal("curl read nothing for 30 s")
			return "", false
		}
	}
	for l, ok := next(); l != "event: snapshot"; l, ok = next() {
		if !ok {
			t.Fatal("the stream ended before its snapshot")
		}
	}
	snapID := ""
	if err := srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var frame []string
	for {
		l, ok := next()
		if !ok {
			t.Fatalf("the stream ended without a timeout frame; got %q", frame)
		}
		if l == "event: timeout" {
			data, _ := next()
			var tf apiv1.TimeoutFrame
			if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &tf); err != nil {
				t.Fatalf("timeout data %q: %v", data, err)
			}
			if tf.Reason != apiv1.TimeoutServerShutdown || tf.LastEventID == "" || !strings.Contains(tf.RecommendedAction, tf.LastEventID) {
				t.Errorf("timeout frame: got %+v, want reason %s and where to resume", tf, apiv1.TimeoutServerShutdown)
			}
			snapID = tf.LastEventID
			break
		}
		frame = append(frame, l)
	}
	for l, ok := next(); ok; l, ok = next() {
		if strings.HasPrefix(l, "event: ") {
			t.Errorf("frame after the timeout frame: %s", l)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("curl: %v (the response should end cleanly)", err)
	}
	if code := srv.wait(t, 30*time.Second); code != 0 {
		t.Errorf("exit: %d", code)
	}
	if log := srv.logText(); strings.Contains(log, "drain incomplete") {
		t.Errorf("the server waited out its drain timeout for the stream:\n%s", log)
	}
	if snapID == "" {
		t.Error("no position to resume from")
	}
}
