// Command runner is the task runner used by the sandbox tests. It is built as
// a static binary (CGO_ENABLED=0) and placed in a FROM-scratch image, so it
// must depend on nothing but the kernel interface. What it does is chosen by
// the payload, and what it observes is written to the result file, so a test
// can assert on the sandbox from the outside.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// payload is the test's instruction. Every field is optional; the steps run
// in the order of the fields below.
type payload struct {
	Stdout   string   `json:"stdout"`
	Stderr   string   `json:"stderr"`
	Progress []string `json:"progress"` // raw JSON objects printed as SKIFF_PROGRESS lines

	Env         []string `json:"env"`          // variables to report
	PrintUID    bool     `json:"print_uid"`    // report uid/gid
	ProcVersion bool     `json:"proc_version"` // report /proc/version
	Cwd         bool     `json:"cwd"`          // report the working directory
	Interfaces  bool     `json:"interfaces"`   // report network interface names
	Dial        string   `json:"dial"`         // host:port to dial, reporting the error
	WriteFile   []string `json:"write_file"`   // paths to try writing, reporting errors
	ReadFile    []string `json:"read_file"`    // paths to try reading, reporting content or error

	Artifacts  map[string]string `json:"artifacts"`   // relative path -> content, under SKIFF_ARTIFACT_DIR
	Symlinks   map[string]string `json:"symlinks"`    // relative link path -> target, under SKIFF_ARTIFACT_DIR
	ResultLink string            `json:"result_link"` // make the result file a symlink to this target instead of writing it

	Flock *flockStep `json:"flock"`
	// Linger starts a child that outlives the runner, appending a line to
	// this file under SKIFF_ARTIFACT_DIR every millisecond until it is
	// stopped; the runner exits once the first line is there.
	Linger string `json:"linger"`

	NoResult     bool   `json:"no_result"`
	FailureClass string `json:"failure_class"` // written into the result, e.g. "infra"

	ResultPad int `json:"result_pad"` // bytes of padding added to the result to exceed caps
	AllocMB   int `json:"alloc_mb"`   // touch this much memory, 1 MiB at a time
	// FillMB writes this many MiB of data to scratch/fill, 1 MiB at a
	// time; a failed write is printed to stderr and the runner exits 28
	// (ENOSPC's number) after writing its result.
	FillMB int `json:"fill_mb"`
	// FillCache writes the FillMB to the cache directory instead.
	FillCache bool `json:"fill_cache"`
	// FillDir, when set, is the directory FillMB goes to instead (a
	// cache mount's path).
	FillDir string `json:"fill_dir"`
	// ManyFiles creates this many empty files in the artifact directory.
	ManyFiles int `json:"many_files"`
	// ForkBomb starts copies of the runner that sleep, until a start
	// fails; it reports how many started on stdout and exits 1.
	ForkBomb   bool `json:"fork_bomb"`
	IgnoreTerm bool `json:"ignore_term"`
	SleepMS    int  `json:"sleep_ms"`
	Exit       int  `json:"exit"`
	// ExitUnlessResumed is the exit code of an attempt whose payload has
	// no _resume (a first attempt of a checkpointed task); a resumed one
	// exits 0.
	ExitUnlessResumed int `json:"exit_unless_resumed"`
	// Echo copies these payload fields to the top level of the result, so
	// that merges and rankings have fields to read.
	Echo []string `json:"echo"`
}

// flockStep coordinates two runners through files in the shared cache dir:
// the holder takes an exclusive lock and announces it; the prober waits for
// the announcement and tries a non-blocking lock.
type flockStep struct {
	Role   string `json:"role"` // "hold" or "probe"
	Name   string `json:"name"` // lock file name under SKIFF_TASK_CACHE_DIR
	HoldMS int    `json:"hold_ms"`
}

type report struct {
	Payload     json.RawMessage   `json:"payload"`
	Env         map[string]string `json:"env,omitempty"`
	UID         int               `json:"uid"`
	GID         int               `json:"gid"`
	ProcVersion string            `json:"proc_version,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	Interfaces  []string          `json:"interfaces,omitempty"`
	DialError   string            `json:"dial_error,omitempty"`
	DialOK      bool              `json:"dial_ok,omitempty"`
	WriteErrors map[string]string `json:"write_errors,omitempty"`
	Reads       map[string]string `json:"reads,omitempty"`
	Flock       string            `json:"flock,omitempty"`
	Pad         string            `json:"pad,omitempty"`
	// FailureClass echoes the payload's, so a runner can ask for a free
	// requeue (spec 2.10 rule 3).
	FailureClass string `json:"failure_class,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(70)
	}
}

// lingerEnv marks the child that Linger starts, with the file it writes.
const lingerEnv = "SKIFF_TEST_LINGER_FILE"

func run() error {
	if path := os.Getenv(lingerEnv); path != "" {
		linger(path)
	}
	if os.Getenv(bombEnv) != "" {
		select {} // a bomb's child: hold a process slot
	}
	raw, err := os.ReadFile(os.Getenv("SKIFF_TASK_PAYLOAD"))
	if err != nil {
		return fmt.Errorf("read payload: %w", err)
	}
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	if p.IgnoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if p.Stdout != "" {
		fmt.Fprint(os.Stdout, p.Stdout)
	}
	if p.Stderr != "" {
		fmt.Fprint(os.Stderr, p.Stderr)
	}
	for _, pr := range p.Progress {
		fmt.Fprintf(os.Stdout, "SKIFF_PROGRESS:%s\n", pr)
	}

	r := report{Payload: raw, UID: os.Getuid(), GID: os.Getgid()}
	if len(p.Env) > 0 {
		r.Env = map[string]string{}
		for _, k := range p.Env {
			if v, ok := os.LookupEnv(k); ok {
				r.Env[k] = v
			}
		}
	}
	if p.ProcVersion {
		b, err := os.ReadFile("/proc/version")
		if err != nil {
			r.ProcVersion = "error: " + err.Error()
		} else {
			r.ProcVersion = strings.TrimSpace(string(b))
		}
	}
	if p.Cwd {
		r.Cwd, _ = os.Getwd()
	}
	if p.Interfaces {
		ifs, err := net.Interfaces()
		if err != nil {
			r.Interfaces = []string{"error: " + err.Error()}
		}
		for _, i := range ifs {
			r.Interfaces = append(r.Interfaces, i.Name)
		}
	}
	if p.Dial != "" {
		c, err := net.DialTimeout("tcp", p.Dial, 3*time.Second)
		if err != nil {
			r.DialError = err.Error()
		} else {
			r.DialOK = true
			c.Close()
		}
	}
	for _, path := range p.WriteFile {
		if r.WriteErrors == nil {
			r.WriteErrors = map[string]string{}
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			r.WriteErrors[path] = err.Error()
		} else {
			r.WriteErrors[path] = ""
		}
	}
	for _, path := range p.ReadFile {
		if r.Reads == nil {
			r.Reads = map[string]string{}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			r.Reads[path] = "error: " + err.Error()
		} else {
			r.Reads[path] = string(b)
		}
	}
	if err := writeArtifacts(p); err != nil {
		return err
	}
	for i := range p.ManyFiles {
		if err := os.WriteFile(filepath.Join(os.Getenv("SKIFF_ARTIFACT_DIR"), fmt.Sprintf("f%06d", i)), nil, 0o644); err != nil {
			return fmt.Errorf("many files: %w", err)
		}
	}
	var fillErr error
	if p.FillMB > 0 {
		dir := os.Getenv("SKIFF_TASK_SCRATCH_DIR")
		if p.FillCache {
			dir = os.Getenv("SKIFF_TASK_CACHE_DIR")
		}
		if p.FillDir != "" {
			dir = p.FillDir
		}
		fillErr = fill(filepath.Join(dir, "fill"), p.FillMB)
		if fillErr != nil {
			fmt.Fprintln(os.Stderr, "fill:", fillErr)
		}
	}
	if p.ForkBomb {
		n, err := forkBomb()
		fmt.Printf("started %d processes before: %v\n", n, err)
		os.Exit(1)
	}
	if p.Flock != nil {
		r.Flock = doFlock(*p.Flock)
	}
	if p.Linger != "" {
		if err := startLinger(filepath.Join(os.Getenv("SKIFF_ARTIFACT_DIR"), p.Linger)); err != nil {
			return err
		}
	}
	if p.ResultPad > 0 {
		r.Pad = strings.Repeat("x", p.ResultPad)
	}
	if err := writeResult(p, r); err != nil && fillErr == nil {
		return err
	}
	if fillErr != nil {
		os.Exit(28)
	}
	if p.AllocMB > 0 {
		allocate(p.AllocMB)
	}
	if p.SleepMS > 0 {
		time.Sleep(time.Duration(p.SleepMS) * time.Millisecond)
	}
	if p.ExitUnlessResumed != 0 && !resumed(raw) {
		os.Exit(p.ExitUnlessResumed)
	}
	os.Exit(p.Exit)
	return nil
}

func writeArtifacts(p payload) error {
	dir := os.Getenv("SKIFF_ARTIFACT_DIR")
	for rel, content := range p.Artifacts {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("artifact dir: %w", err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("artifact: %w", err)
		}
	}
	for rel, target := range p.Symlinks {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("symlink dir: %w", err)
		}
		if err := os.Symlink(target, path); err != nil {
			return fmt.Errorf("symlink: %w", err)
		}
	}
	return nil
}

func writeResult(p payload, r report) error {
	path := os.Getenv("SKIFF_TASK_RESULT")
	if p.ResultLink != "" {
		if err := os.Symlink(p.ResultLink, path); err != nil {
			return fmt.Errorf("result symlink: %w", err)
		}
		return nil
	}
	if p.NoResult {
		return nil
	}
	r.FailureClass = p.FailureClass
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if len(p.Echo) > 0 {
		var out, in map[string]json.RawMessage
		_ = json.Unmarshal(b, &out)
		_ = json.Unmarshal(r.Payload, &in)
		for _, k := range p.Echo {
			if v, ok := in[k]; ok {
				out[k] = v
			}
		}
		if b, err = json.Marshal(out); err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// allocate touches memory until it has mb MiB, keeping every page live so
// the memory limit, not the garbage collector, decides the outcome.
func allocate(mb int) {
	var keep [][]byte
	for i := 0; i < mb; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		keep = append(keep, b)
	}
	fmt.Fprintf(os.Stdout, "allocated %d MiB\n", len(keep))
}

func doFlock(s flockStep) string {
	dir := os.Getenv("SKIFF_TASK_CACHE_DIR")
	f, err := os.OpenFile(filepath.Join(dir, s.Name), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return "open: " + err.Error()
	}
	defer f.Close()
	announce := filepath.Join(dir, s.Name+".held")
	switch s.Role {
	case "hold":
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			return "lock: " + err.Error()
		}
		if err := os.WriteFile(announce, []byte("held"), 0o644); err != nil {
			return "announce: " + err.Error()
		}
		time.Sleep(time.Duration(s.HoldMS) * time.Millisecond)
		return "held"
	case "probe":
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := os.Stat(announce); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return "timeout waiting for holder"
			}
			time.Sleep(20 * time.Millisecond)
		}
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EWOULDBLOCK):
			return "blocked"
		case err != nil:
			return "error: " + err.Error()
		default:
			return "acquired"
		}
	}
	return "unknown role " + s.Role
}

// resumed reports whether the payload carries a _resume checkpoint.
func resumed(raw []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && len(m["_resume"]) > 0
}

// startLinger starts this program again as a child in its own session,
// writing path, and waits for its first line.
func startLinger(path string) error {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), lingerEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start lingering child: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the lingering child wrote nothing")
		}
	}
}

// linger appends a numbered line to path every millisecond, forever.
func linger(path string) {
	for i := 0; ; i++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d\n", i)
			f.Close()
		}
		time.Sleep(time.Millisecond)
	}
}

// bombEnv marks the children that ForkBomb starts.
const bombEnv = "SKIFF_TEST_BOMB"

// forkBomb starts sleeping copies of the runner until a start fails, and
// says how many started. The children are left running: the sandbox's end
// must stop them.
func forkBomb() (int, error) {
	for n := 0; ; n++ {
		cmd := exec.Command("/proc/self/exe")
		cmd.Env = append(os.Environ(), bombEnv+"=1")
		if err := cmd.Start(); err != nil {
			return n, err
		}
		if n%50 == 0 {
			fmt.Printf("bomb: %d started\n", n)
		}
		if n > 100000 {
			return n, errors.New("no limit met")
		}
	}
}

// fill writes mb MiB to path, synced, 1 MiB at a time.
func fill(path string, mb int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for range mb {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
