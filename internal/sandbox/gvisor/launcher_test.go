package gvisor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/internal/testlog"
)

// TestLauncherCodeMatchesSource assembles testdata/launcher.s and compares
// it with launcherCode, so that the source stays the truth about the bytes.
func TestLauncherCodeMatchesSource(t *testing.T) {
	as, err := exec.LookPath("as")
	if err != nil {
		testenv.Skip(t, "needs the GNU assembler (binutils; scripts/setup.sh installs gcc, which brings it)")
	}
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		testenv.Skip(t, "needs objcopy (binutils)")
	}
	dir := t.TempDir()
	obj, bin := filepath.Join(dir, "launcher.o"), filepath.Join(dir, "launcher.bin")
	for _, c := range [][]string{{as, "--64", "-o", obj, "testdata/launcher.s"}, {objcopy, "-O", "binary", "-j", ".text", obj, bin}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c[0], err, out)
		}
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(launcherCode, want) {
		t.Errorf("launcherCode differs from testdata/launcher.s assembled:\n got %x\nwant %x", launcherCode, want)
	}
}

// TestLaunchMessage reads a message as the launcher does: the pointers of
// the header and arrays lead to the strings, each NUL-terminated.
func TestLaunchMessage(t *testing.T) {
	argv := []string{"/app/run", "a b", ""}
	env := []string{"A=1", "PATH=/bin"}
	msg, err := launchMessage("/app/run", argv, env, "/app")
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	at := func(addr uint64) uint64 {
		off := addr - launcherBuf
		if off >= uint64(len(msg)) {
			t.Fatalf("address %#x outside the message (%d bytes)", addr, len(msg))
		}
		return off
	}
	str := func(addr uint64) string {
		off := at(addr)
		end := bytes.IndexByte(msg[off:], 0)
		if end < 0 {
			t.Fatalf("string at %#x not terminated", addr)
		}
		return string(msg[off : off+uint64(end)])
	}
	array := func(addr uint64) []string {
		var out []string
		for off := at(addr); ; off += 8 {
			p := le.Uint64(msg[off:])
			if p == 0 {
				return out
			}
			out = append(out, str(p))
		}
	}
	if got := str(le.Uint64(msg[0:])); got != "/app/run" {
		t.Errorf("path %q", got)
	}
	if got := array(le.Uint64(msg[8:])); strings.Join(got, "|") != strings.Join(argv, "|") || len(got) != len(argv) {
		t.Errorf("argv %q, want %q", got, argv)
	}
	if got := array(le.Uint64(msg[16:])); strings.Join(got, "|") != strings.Join(env, "|") {
		t.Errorf("envp %q, want %q", got, env)
	}
	if got := str(le.Uint64(msg[24:])); got != "/app" {
		t.Errorf("cwd %q", got)
	}

	if _, err := launchMessage("/x", []string{"/x", strings.Repeat("a", launcherCap)}, nil, "/"); !errors.Is(err, errLaunchTooBig) {
		t.Errorf("a message over the buffer: got %v, want errLaunchTooBig", err)
	}
}

func TestLaunchFailure(t *testing.T) {
	report := func(errno syscall.Errno, stage uint32) []byte {
		return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(errno)), stage)
	}
	if err := launchFailure(nil, "/x", "/"); err != nil {
		t.Errorf("no report: got %v", err)
	}
	if err := launchFailure(report(syscall.ENOENT, 2), "/x", "/"); !errors.Is(err, syscall.ENOENT) || !startFailure(err.Error()) {
		t.Errorf("exec failure: got %v, want ENOENT in words startFailure knows", err)
	}
	if err := launchFailure(report(syscall.ENOTDIR, 1), "/x", "/w"); !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), "/w") {
		t.Errorf("chdir failure: got %v", err)
	}
}

// TestWarmStartFailure: a runner the launcher cannot exec fails as a cold
// start does: runsc's exit status 128, an error naming the path on stderr
// and in the outcome, and StartFailed.
func TestWarmStartFailure(t *testing.T) {
	skipWithoutWarm(t)
	d, f := newTestDriver(t)
	w := warmFirst{Driver: d, cacheRoot: t.TempDir()}
	t.Cleanup(d.warm.wg.Wait) // refills in flight, before the leak check
	for _, c := range []struct{ name, runner, cwd string }{
		{"missing", "/no/such/runner", ""},
		{"directory", "/proc", ""},
		{"cwd", sandboxtest.RunnerPath, "/no/such/dir"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := f.Spec(t, sandboxtest.Payload{})
			spec.Args, spec.Cwd = []string{c.runner}, c.cwd
			var stderr testlog.Buffer
			spec.Stderr = &stderr
			used := d.WarmUsed()
			out, err := w.Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if d.WarmUsed() != used+1 {
				t.Fatal("the attempt did not run warm")
			}
			want := c.runner
			if c.cwd != "" {
				want = c.cwd
			}
			if out.ExitCode != 128 || !out.StartFailed || !strings.Contains(out.SandboxError, want) {
				t.Errorf("got exit %d start_failed=%v sandbox error %q, want 128, true and an error naming %s",
					out.ExitCode, out.StartFailed, out.SandboxError, want)
			}
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr: got %q, want the error", stderr.String())
			}
		})
	}
}
