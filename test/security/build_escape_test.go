package security_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 28, part 1: a build step must not reach the build host, neither its
// files nor its network.

// buildsLinkSource is the first stage's program: the symlink /rootdir -> /.
const buildsLinkSource = `package main

import "os"

func main() {
	if err := os.Symlink("/", "/rootdir"); err != nil {
		panic(err)
	}
}
`

// buildsReaderSource lists /host and prints /host/etc/os-release.
const buildsReaderSource = `package main

import (
	"fmt"
	"os"
)

func main() {
	entries, err := os.ReadDir("/host")
	for _, e := range entries {
		fmt.Println("host entry:", e.Name())
	}
	fmt.Println("listing /host:", err)
	b, err := os.ReadFile("/host/etc/os-release")
	fmt.Printf("os-release: %s (%v)\n", b, err)
}
`

// buildsEscapeDockerfile is the project, as pushed.
const buildsEscapeDockerfile = `FROM scratch AS s
COPY mklink /mklink
RUN ["/mklink"]
FROM scratch
COPY reader /reader
RUN --mount=type=bind,from=s,source=/rootdir,target=/host ["/reader"]
COPY reader /runner
`

// TestBuildEscapeMountFromStage pushes the CVE-2024-1753 project through the
// real binary: the push fails with the policy's message naming line 6, and
// nothing of the host's root shows in the build log.
func TestBuildEscapeMountFromStage(t *testing.T) {
	mklink, reader := program(t, buildsLinkSource), program(t, buildsReaderSource)
	hostOS, err := os.ReadFile("/etc/os-release")
	if err != nil {
		t.Fatal(err)
	}
	hostLine := strings.SplitN(string(hostOS), "\n", 2)[0] // PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
	engines(t, func(t *testing.T, engine string) {
		s := startServer(t, engine)
		c := s.account(t, "mallory", "10")
		rec := push(t, c, "escape", map[string]file{
			"Dockerfile": {Body: []byte(buildsEscapeDockerfile)},
			"mklink":     {Body: mklink, Mode: 0o755},
			"reader":     {Body: reader, Mode: 0o755},
		}, 3*time.Minute)
		logTail, _ := rec["log_tail"].(string)
		errText, _ := rec["error"].(string)
		for _, leak := range []string{hostLine, "host entry: etc", "host entry: usr", "host entry: " + buildsDataDirTop(s.Dir)} {
			if strings.Contains(logTail, leak) || strings.Contains(errText, leak) {
				t.Fatalf("the build showed the host's files (%q):\nerror: %s\nlog: %s", leak, errText, logTail)
			}
		}
		if rec["status"] != "failed" {
			t.Fatalf("push ended %v, want failed; record %v", rec["status"], rec)
		}
		if want := "Dockerfile line 6: RUN --mount from=s is not allowed"; !strings.Contains(errText, want) {
			t.Errorf("push error %q, want it to contain %q", errText, want)
		}
		if na, _ := rec["next_action"].(string); na == "" {
			t.Errorf("failed push has no next_action: %v", rec)
		}
	})
}

// buildsDataDirTop is the first component of the server's data dir (e.g.
// "tmp"), a name the host's / lists.
func buildsDataDirTop(dir string) string {
	return strings.SplitN(strings.TrimPrefix(dir, "/"), "/", 2)[0]
}

// buildsDialSource dials each argument over TCP and says what happened; it
// exits 0 either way, so the build publishes and its log can be read.
const buildsDialSource = `package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	for _, addr := range os.Args[1:] {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			fmt.Printf("dial %s: refused: %v\n", addr, err)
			continue
		}
		c.Close()
		fmt.Printf("dial %s: connected\n", addr)
	}
}
`

// TestBuildEgressReachesNoHostAddress pushes, through the real binary with
// its default --build-network (filtered), a project whose RUN step dials a
// listener on the build host's own (non-loopback) address: the step must be
// refused and the listener must never see a connection. (Metadata, private
// and CGNAT addresses are proved in network namespaces by TestBuildEgress in
// internal/build; here nothing may leave the machine, so the target is the
// host itself.)
func TestBuildEgressReachesNoHostAddress(t *testing.T) {
	hostIP := buildsHostAddress(t)
	dial := program(t, buildsDialSource)
	engines(t, func(t *testing.T, engine string) {
		ln, err := net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var accepted atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		target := ln.Addr().String()

		s := startServer(t, engine)
		c := s.account(t, "mallory", "10")
		rec := push(t, c, "egress", map[string]file{
			"Dockerfile": {Body: []byte(fmt.Sprintf("FROM scratch\nCOPY dial /dial\nRUN [\"/dial\", %q]\nCOPY dial /runner\n", target))},
			"dial":       {Body: dial, Mode: 0o755},
		}, 3*time.Minute)
		logTail, _ := rec["log_tail"].(string)
		if rec["status"] != "published" {
			t.Fatalf("push ended %v, want published; record %v", rec["status"], rec)
		}
		if !strings.Contains(logTail, "dial "+target+": refused") {
			t.Errorf("build log lacks the refused dial of %s:\n%s", target, logTail)
		}
		if n := accepted.Load(); n != 0 {
			t.Errorf("the host's listener on %s accepted %d connections from a build step", target, n)
		}
	})
}

// buildsHostAddress is one of the machine's own global IPv4 addresses.
func buildsHostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("skipping: this machine has no global IPv4 address to listen on")
	return ""
}
