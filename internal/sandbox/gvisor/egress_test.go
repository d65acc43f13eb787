package gvisor

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// vethEgress gives each attempt a network namespace joined to the host by
// a veth pair on a /30: the smallest real Egress, enough to show that an
// attempt with Spec.Network reaches the host side and nothing is taken
// from the host's own interfaces. A production egress adds NAT and filters.
type vethEgress struct {
	hostIP, nsIP string
}

func (e vethEgress) Acquire(ctx context.Context, attemptID string) (string, func(context.Context) error, error) {
	suffix := strings.ToLower(rand.Text()[:6])
	ns, hostIf, nsIf := "skt-"+suffix, "skh-"+suffix, "skn-"+suffix
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", hostIf, "type", "veth", "peer", "name", nsIf},
		{"link", "set", nsIf, "netns", ns},
		{"addr", "add", e.hostIP + "/30", "dev", hostIf},
		{"link", "set", hostIf, "up"},
		{"-n", ns, "addr", "add", e.nsIP + "/30", "dev", nsIf},
		{"-n", ns, "link", "set", nsIf, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "route", "add", "default", "via", e.hostIP},
	}
	release := func(ctx context.Context) error {
		// Deleting the namespace deletes the veth pair with it.
		return ipCmd(ctx, "netns", "del", ns)
	}
	for _, s := range steps {
		if err := ipCmd(ctx, s...); err != nil {
			release(ctx)
			return "", nil, err
		}
	}
	return "/run/netns/" + ns, release, nil
}

func ipCmd(ctx context.Context, args ...string) error {
	if b, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, b)
	}
	return nil
}

func TestNetworkThroughEgress(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.Skip(t, "needs iproute2's ip to build a test network namespace")
	}
	d, f := newTestDriver(t)
	eg := vethEgress{hostIP: "10.231.77.1", nsIP: "10.231.77.2"}
	d.cfg.Egress = eg
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	hostAddrsBefore := interfaceAddrs(t)

	spec := f.Spec(t, sandboxtest.Payload{Dial: net.JoinHostPort(eg.hostIP, fmt.Sprint(port)), Interfaces: true})
	spec.Network = true
	out := run(t, d, spec)
	if out.ExitCode != 0 {
		t.Fatalf("exit %d: %s", out.ExitCode, out.SandboxError)
	}
	r := sandboxtest.DecodeReport(t, out.Result)
	if !r.DialOK {
		t.Errorf("dial the host side of the veth: got %q, want success (interfaces %q)", r.DialError, r.Interfaces)
	}
	// runsc moves the addresses of the namespace it copies; none of the
	// host's may have gone.
	after := interfaceAddrs(t)
	for _, a := range hostAddrsBefore {
		if !slices.Contains(after, a) {
			t.Errorf("host address %s: gone after the run (now %q)", a, after)
		}
	}
}

func interfaceAddrs(t *testing.T) []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
			s = append(s, a.String())
		}
	}
	return s
}
