package build_test

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// The egress test builds in a pair of network namespaces it creates, so that
// no packet leaves the machine:
//
//	builder namespace (stands in for the build host)        world namespace
//	  buildah, runsc, the build bridge, the nft filter  --veth--  169.254.169.254 "metadata"
//	  own address 198.51.100.1 (an HTTP listener)               203.0.113.10    "public"
//	  default route via 198.51.100.2                             10.99.0.10, 172.20.0.10,
//	                                                             192.168.77.10, 100.64.0.10
//
// Every world address answers TCP port 80 with "hello <addr>" and echoes UDP
// on port 9999. A RUN step dials each; the build log says what answered.

// egressProbeSource is the RUN step: it dials every TCP and UDP target and
// prints one line per target, "probe <target> ok <reply>" or "probe <target>
// refused <error>". It always exits 0 so that the build gets to report.
const egressProbeSource = `package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

func main() {
	for _, target := range os.Args[1:] {
		proto, addr, _ := strings.Cut(target, "/")
		c, err := net.DialTimeout(proto, addr, 3*time.Second)
		if err != nil {
			fmt.Printf("probe %s refused %v\n", target, err)
			continue
		}
		c.SetDeadline(time.Now().Add(3 * time.Second))
		if proto == "tcp" {
			fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
		} else {
			c.Write([]byte("ping"))
		}
		b, err := io.ReadAll(io.LimitReader(c, 512))
		c.Close()
		if len(b) == 0 {
			fmt.Printf("probe %s refused no reply: %v\n", target, err)
			continue
		}
		fmt.Printf("probe %s ok %q\n", target, b)
	}
}
`

const (
	egressHostAddr = "198.51.100.1" // the builder namespace's own address
	egressPeerAddr = "198.51.100.2"
	egressPublic   = "203.0.113.10"
	egressMetadata = "169.254.169.254"
)

// egressWorld are the world's addresses, each with whether a filtered build
// may reach it.
var egressWorld = map[string]bool{
	egressPublic:    true,
	egressMetadata:  false,
	"10.99.0.10":    false,
	"172.20.0.10":   false,
	"192.168.77.10": false,
	"100.64.0.10":   false,
}

func TestBuildEgress(t *testing.T) {
	buildtest.RequireTools(t)
	if _, err := exec.LookPath("nft"); err != nil {
		testenv.Skip(t, "skipping: nft is not installed (run make setup)")
	}
	builderNS, _ := egressNamespaces(t)

	probe, err := os.ReadFile(buildtest.StaticProgram(t, "probe", egressProbeSource))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for addr := range egressWorld {
		targets = append(targets, "tcp/"+addr+":80", "udp/"+addr+":9999")
	}
	targets = append(targets, "tcp/"+egressHostAddr+":80", "tcp/[fd00:99::10]:80")
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = `"` + tg + `"`
	}

	for _, mode := range []string{build.NetworkFiltered, build.NetworkNone, build.NetworkOpen} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			buildtest.WriteFile(t, dir, "probe", string(probe), 0o755)
			buildtest.WriteFile(t, dir, "Dockerfile", "FROM scratch\nCOPY probe /probe\n# mode "+mode+"\nENV MODE="+mode+"\n"+
				"RUN [\"/probe\", "+strings.Join(quoted, ", ")+"]\n", 0o644)
			cfg := buildtest.Config(t)
			cfg.Network = mode
			cfg.ResolvConf = []string{filepath.Join(dir, "no-resolv.conf")}
			log := build.NewTailWriter(build.DefaultLogTailBytes)
			inNetns(t, builderNS, func() {
				b, err := build.New(t.Context(), cfg, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if _, err := b.Build(t.Context(), build.Request{ContextDir: dir, Tag: "egress-" + mode, Log: log, Timeout: 5 * time.Minute}); err != nil {
					t.Fatalf("Build: %v\n%s", err, log)
				}
			})
			got := probeResults(log.String())
			want := func(target string, reachable bool) {
				t.Helper()
				line, ok := got[target]
				switch {
				case !ok:
					t.Errorf("%s: no probe line for %s in the log:\n%s", mode, target, log)
				case reachable && !strings.Contains(line, "ok"):
					t.Errorf("%s: %s should answer, got %q", mode, target, line)
				case !reachable && !strings.HasPrefix(line, "refused"):
					t.Errorf("%s: %s should be refused, got %q", mode, target, line)
				}
			}
			for addr, public := range egressWorld {
				reachable := mode == build.NetworkOpen || mode == build.NetworkFiltered && public
				want("tcp/"+addr+":80", reachable)
				want("udp/"+addr+":9999", reachable)
			}
			want("tcp/"+egressHostAddr+":80", mode == build.NetworkOpen)
			want("tcp/[fd00:99::10]:80", false)
		})
	}
}

// probeResults maps each probe target to the rest of its line.
func probeResults(log string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "probe ")
		if !ok {
			continue
		}
		if target, result, ok := strings.Cut(rest, " "); ok && (strings.HasPrefix(result, "ok") || strings.HasPrefix(result, "refused")) {
			out[target] = result
		}
	}
	return out
}

// egressNamespaces creates the builder and world namespaces, joined by a
// veth, with the world's listeners running; all is removed when t ends.
func egressNamespaces(t *testing.T) (builderNS, worldNS string) {
	t.Helper()
	suffix := strings.ToLower(rand.Text()[:6])
	builderNS, worldNS = "builds-eg-b-"+suffix, "builds-eg-w-"+suffix
	vb, vw := "bldegb"+suffix, "bldegw"+suffix
	for _, ns := range []string{builderNS, worldNS} {
		ip(t, "netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("removing namespace %s: %v: %s", ns, err, out)
			}
		})
	}
	ip(t, "link", "add", vb, "netns", builderNS, "type", "veth", "peer", "name", vw, "netns", worldNS)
	ip(t, "-n", builderNS, "addr", "add", egressHostAddr+"/24", "dev", vb)
	ip(t, "-n", worldNS, "addr", "add", egressPeerAddr+"/24", "dev", vw)
	for _, l := range [][2]string{{builderNS, vb}, {builderNS, "lo"}, {worldNS, vw}, {worldNS, "lo"}} {
		ip(t, "-n", l[0], "link", "set", l[1], "up")
	}
	ip(t, "-n", builderNS, "route", "add", "default", "via", egressPeerAddr)
	ip(t, "-n", worldNS, "-6", "addr", "add", "fd00:99::10/128", "dev", "lo")
	for addr := range egressWorld {
		ip(t, "-n", worldNS, "addr", "add", addr+"/32", "dev", "lo")
	}

	inNetns(t, worldNS, func() {
		for addr := range egressWorld {
			serveHello(t, addr)
		}
		serveHello(t, "fd00:99::10")
	})
	inNetns(t, builderNS, func() { serveHello(t, egressHostAddr) })
	return builderNS, worldNS
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// serveHello answers TCP on addr:80 with "hello <addr>" and echoes UDP on
// addr:9999, until t ends.
func serveHello(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "80"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "hello %s", addr)
			c.Close()
		}
	}()
	if strings.Contains(addr, ":") {
		return
	}
	pc, err := net.ListenPacket("udp", net.JoinHostPort(addr, "9999"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte("echo "+addr+" "+string(buf[:n])), from)
		}
	}()
}

// inNetns runs fn on an OS thread moved into the named network namespace:
// sockets fn opens and processes it starts (buildah, nft, runsc) live there.
// If the thread cannot be moved back it is left locked, and Go ends it with
// the goroutine.
func inNetns(t *testing.T, name string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + name)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer target.Close()
	if err := setns(target); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("entering namespace %s: %v", name, err)
	}
	defer func() {
		if err := setns(orig); err != nil {
			t.Errorf("leaving namespace %s: %v", name, err)
			return // the thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
	}()
	fn()
}

// sysSetns is setns(2) on linux/amd64 and arm64 (the syscall package has no
// name for it).
var sysSetns = map[string]uintptr{"amd64": 308, "arm64": 268}[runtime.GOARCH]

func setns(f *os.File) error {
	if sysSetns == 0 {
		return fmt.Errorf("setns: unknown syscall number on %s", runtime.GOARCH)
	}
	if _, _, errno := syscall.RawSyscall(sysSetns, f.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
		return errno
	}
	return nil
}
