package e2e_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/testenv"
)

// netns is a network namespace the test made, joined to this one by a
// veth pair: HostIP is this side's address, reachable from inside.
type netns struct {
	t      *testing.T
	Name   string
	HostIP string
	peer   string // the veth end inside the namespace
}

// newNetns makes a namespace and its veth pair on a /30 of its own; both
// are deleted when the test ends.
func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "making network namespaces needs root")
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skipf(t, "%s is not installed (iproute2, util-linux)", tool)
		}
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	tag := hex.EncodeToString(b) // 8 characters: device names stay under 16
	n := &netns{t: t, Name: "skiffcut-" + tag, peer: "skp" + tag}
	outer := "skc" + tag
	// A /30 in 10.231/16 chosen at random: two tests at once rarely meet.
	sub := fmt.Sprintf("10.231.%d.%d", b[0], b[1]&^3)
	n.HostIP = sub[:strings.LastIndex(sub, ".")+1] + fmt.Sprint(int(b[1]&^3)+1)
	inner := sub[:strings.LastIndex(sub, ".")+1] + fmt.Sprint(int(b[1]&^3)+2)
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "delete", n.Name).Run() // deletes the veth pair with it
		_ = exec.Command("ip", "link", "delete", outer).Run()
	})
	n.ip("netns", "add", n.Name)
	n.ip("link", "add", outer, "type", "veth", "peer", "name", n.peer)
	n.ip("link", "set", n.peer, "netns", n.Name)
	n.ip("addr", "add", n.HostIP+"/30", "dev", outer)
	n.ip("link", "set", outer, "up")
	n.ip("-n", n.Name, "addr", "add", inner+"/30", "dev", n.peer)
	n.ip("-n", n.Name, "link", "set", n.peer, "up")
	n.ip("-n", n.Name, "link", "set", "lo", "up")
	return n
}

func (n *netns) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// cut takes the namespace's side of the link down: nothing passes either
// way until restore.
func (n *netns) cut()     { n.ip("-n", n.Name, "link", "set", n.peer, "down") }
func (n *netns) restore() { n.ip("-n", n.Name, "link", "set", n.peer, "up") }

// A host whose network is cut for longer than its lease, in a network
// namespace the test made: the controller declares it lost and requeues its
// attempt, free, on the other host; the cut-off host finishes the attempt
// meanwhile and reports it when it is back, which changes nothing (one
// result per task, the job charged once); it registers again and takes
// work as before.
func TestHostsNetworkCutLongerThanLease(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) { testHostsNetworkCut(t, engine) })
	}
}

func testHostsNetworkCut(t *testing.T, engine string) {
	ns := newNetns(t)
	// A heartbeat of 1 s: a host silent for 3 s is lost.
	f, _ := newFleetAt(t, engine, ns.HostIP, []string{"--host-heartbeat", "1s"})
	cutHost := f.addHost("cut", ns.Name)

	job := f.submit(1, 4000, "cut")
	// Cut once the host said the attempt started: it has the image and
	// its sandbox runs, so it finishes whatever the network does.
	waitJSON(t, f.c, "/api/v1/jobs/"+job+"/tasks", 2*time.Minute, func(m map[string]any) bool {
		atts := m["tasks"].([]any)[0].(map[string]any)["attempts"].([]any)
		return len(atts) == 1 && atts[0].(map[string]any)["status"] == "running"
	})
	ns.cut()
	cutOff := true
	defer func() {
		if cutOff {
			ns.restore()
		}
	}()
	other := f.addHost("other", "")
	// Lost on the controller, requeued and run on the other host; the
	// cut-off host finishes its attempt all the same.
	waitJSON(t, f.c, "/api/v1/jobs/"+job+"/tasks", 2*time.Minute, func(m map[string]any) bool {
		atts := m["tasks"].([]any)[0].(map[string]any)["attempts"].([]any)
		return len(atts) == 2 && atts[0].(map[string]any)["status"] == "lost" && atts[1].(map[string]any)["worker_handle"] == other
	})
	f.hosts[cutHost].waitLog(t, "attempt finished", time.Minute)
	ns.restore()
	cutOff = false

	f.waitCompleted(job)
	// Back, it registers again (the controller forgot it) and delivers
	// the end it could not send, which the controller, having declared
	// the attempt lost, takes as news of an ended attempt: one success,
	// the lost attempt free, one charge.
	f.hosts[cutHost].waitLog(t, "controller forgot this host; registering again", 2*time.Minute)
	f.hosts[cutHost].waitLogged(t, "report of an attempt the controller had already ended", "kind", "finished", 2*time.Minute)
	if ran := f.checkOnceEach(job, "cut"); len(ran) != 1 || ran[0] != other {
		t.Errorf("the task succeeded on %v, want once, on the other host %s", ran, other)
	}

	// Back for good: with the other host drained, new work runs on it.
	f.admin("drain-host", other)
	after := f.submit(2, 100, "after")
	f.waitCompleted(after)
	for _, w := range f.checkOnceEach(after, "after") {
		if w != cutHost {
			t.Errorf("a task after the cut ran on %s, want the host that came back (%s)", w, cutHost)
		}
	}
}
