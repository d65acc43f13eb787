package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// benchServerParams start a throwaway `skiff server`.
type benchServerParams struct {
	Binary      string // the skiff binary
	DataDir     string // absolute
	Runsc       string
	Buildah     string // "": the server's default
	LogPath     string // the server's JSON log is copied here
	NoLocalHost bool
	HostSlots   int // the local host's slots; 0: the server's default
}

// benchServer is a `skiff server` subprocess in its own process group, so
// that a Ctrl-C on the terminal reaches only the bench, which then stops the
// server in order (its local host first, as a SIGTERM does).
type benchServer struct {
	URL  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	once sync.Once

	mu   sync.Mutex
	tail []string // the last lines of its log, for errors
}

// benchServerStartTimeout bounds the server's start-up, which includes
// cleaning up sandboxes and checking buildah.
const benchServerStartTimeout = 2 * time.Minute

func startBenchServer(ctx context.Context, p benchServerParams) (*benchServer, error) {
	args := []string{"server", "--listen", "127.0.0.1:0", "--data-dir", p.DataDir, "--runsc", p.Runsc, "--log-level", "info"}
	if p.NoLocalHost {
		args = append(args, "--no-local-host")
	}
	if p.Buildah != "" {
		args = append(args, "--buildah", p.Buildah)
	}
	if p.HostSlots > 0 {
		args = append(args, "--host-slots", strconv.Itoa(p.HostSlots))
	}
	cmd := exec.Command(p.Binary, args...)
	// The caller's SKIFF_* settings are for the bench, not for its server:
	// everything the server needs is on its command line.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKIFF_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Pdeathsig: a bench killed outright (SIGKILL) still stops its server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p.LogPath), 0o700); err != nil {
		return nil, err
	}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start skiff server: %w", err)
	}
	s := &benchServer{cmd: cmd, done: make(chan struct{})}
	listen := make(chan string, 1)
	go s.readLog(stderr, logFile, listen)

	timer := time.NewTimer(benchServerStartTimeout)
	defer timer.Stop()
	select {
	case addr := <-listen:
		s.URL = "http://" + addr
	case <-s.done:
		return nil, fmt.Errorf("skiff server exited (%v) before it started; its log ends:\n%s", cmd.ProcessState, s.logTail())
	case <-timer.C:
		s.stop(func(string, ...any) {})
		return nil, fmt.Errorf("skiff server did not start within %s; its log ends:\n%s", benchServerStartTimeout, s.logTail())
	case <-ctx.Done():
		s.stop(func(string, ...any) {})
		return nil, ctx.Err()
	}
	return s, nil
}

// readLog copies the server's log to w, keeps its tail and reports the
// listen address from the start-up line. Only that line is decoded, so
// that a busy server's log costs the bench little.
func (s *benchServer) readLog(r io.Reader, w io.WriteCloser, listen chan<- string) {
	defer close(s.done)
	defer w.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	started := false
	for sc.Scan() {
		line := sc.Bytes()
		_, _ = w.Write(append(line, '\n'))
		s.mu.Lock()
		if len(s.tail) == 30 {
			s.tail = s.tail[1:]
		}
		s.tail = append(s.tail, string(line))
		s.mu.Unlock()
		if !started && bytes.Contains(line, []byte(`"skiff server started"`)) {
			var m struct{ Listen string }
			if json.Unmarshal(line, &m) == nil && m.Listen != "" {
				started = true
				listen <- m.Listen
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
	_ = s.cmd.Wait()
}

func (s *benchServer) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// Pid is the server's process id.
func (s *benchServer) Pid() int { return s.cmd.Process.Pid }

// benchServerStopTimeout is how long a SIGTERM gets before the process
// group is killed: the server drains requests and stops its sandboxes.
const benchServerStopTimeout = 45 * time.Second

// stop sends SIGTERM and waits; if the server hangs, its whole process
// group is killed. It is idempotent.
func (s *benchServer) stop(progress func(string, ...any)) {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(benchServerStopTimeout):
			progress("skiff server did not stop within %s; killing it", benchServerStopTimeout)
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	})
}

// benchAccount is the bench's account name.
const benchAccountName = "bench"

// benchAccount creates the bench account's key and credit through the
// operator commands, against the server's store.
func benchAccount(ctx context.Context, bin, dataDir string) (string, error) {
	admin := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, append([]string{"admin"}, append(args, "--data-dir", dataDir)...)...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "SKIFF_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("skiff admin %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(stdout.String()), nil
	}
	key, err := admin("create-key", "--account", benchAccountName)
	if err != nil {
		return "", err
	}
	// Enough for any hold the bench's jobs can take.
	if _, err := admin("grant-credit", "--account", benchAccountName, "--usd", "1000000", "--note", "skiff bench"); err != nil {
		return "", err
	}
	if !strings.HasPrefix(key, "flk_") {
		return "", errors.New("skiff admin create-key printed no flk_ key")
	}
	return key, nil
}
