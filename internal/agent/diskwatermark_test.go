package agent_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/diskfree"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// Under the work dir's free-disk watermark the host says in its lease
// requests (its heartbeat) why it takes no work, and refuses an assignment
// a controller that does not know that sends anyway; over it again it
// asks for work and runs it. The low reading is faked through Stat.
func TestAgentTakesNoWorkUnderTheDiskWatermark(t *testing.T) {
	img := newImage(t)
	fc := newFakeController(t)
	var free atomic.Uint64
	free.Store(1 << 30)
	startAgent(t, fc, processDriver(t), img, func(c *agent.Config) {
		c.DiskFree = &diskfree.Checker{Dir: c.WorkRoot, Min: diskfree.Watermark{Bytes: 2 << 30},
			Stat: func(string) (diskfree.Reading, error) {
				return diskfree.Reading{Free: free.Load(), Total: 100 << 30}, nil
			}}
	})
	paused := func() string {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			fc.mu.Lock()
			n := len(fc.leases)
			var last agentproto.PollRequest
			if n > 0 {
				last = fc.leases[n-1]
			}
			fc.mu.Unlock()
			if n > 0 {
				return last.Paused
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no poll")
		return ""
	}
	if p := paused(); !strings.Contains(p, "taking no work") || !strings.Contains(p, "under the free-disk watermark") {
		t.Fatalf("lease request paused = %q, want the reason", p)
	}
	asg := assignment(t, img, sandboxtest.Payload{Stdout: "ran\n"})
	fc.assign(asg)
	o, _ := fc.finished(asg.AttemptID)
	if !strings.Contains(o.HostError, "free-disk watermark") || strings.Contains(o.Stdout, "ran") {
		t.Fatalf("outcome under the watermark: %+v, want a host error naming it and nothing run", o)
	}

	free.Store(50 << 30)
	asg = assignment(t, img, sandboxtest.Payload{Stdout: "ran\n"})
	fc.assign(asg)
	o, _ = fc.finished(asg.AttemptID)
	if o.HostError != "" || o.ExitCode != 0 || !strings.Contains(o.Stdout, "ran") {
		t.Fatalf("outcome over the watermark: %+v, want it run", o)
	}
}
