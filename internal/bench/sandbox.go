package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor"
)

// benchSandboxParams set up the sandbox side of the latency phase.
type benchSandboxParams struct {
	Runsc     string
	Dir       string // created; everything of the bare and driver runs goes under it
	LayoutDir string // the published image's OCI layout
	Digest    string
}

// benchSandbox runs the bench image outside the service: bare `runsc run`
// and the host's gVisor driver. Both share one runsc state dir, which the
// driver's Cleanup clears.
type benchSandbox struct {
	runsc        string
	dir          string
	stateDir     string
	cgroupParent string
	img          *ociimage.Image
	driver       *gvisor.Driver
	bareBundle   string
	bareResult   string
	// floorBundle is the bare bundle with the launcher as its init: the
	// floor of a warm start (floorRun).
	floorBundle string
	floorEnv    []string
	once        sync.Once
}

func newBenchSandbox(ctx context.Context, p benchSandboxParams) (*benchSandbox, error) {
	sb := &benchSandbox{runsc: p.Runsc, dir: p.Dir, stateDir: filepath.Join(p.Dir, "runsc"),
		cgroupParent: "skiff-bench-" + strings.ToLower(rand.Text()[:10])}
	cache := &ociimage.Cache{Root: filepath.Join(p.Dir, "images"), MountPoints: sandbox.MountPoints()}
	img, err := cache.Unpack(ctx, p.LayoutDir, p.Digest)
	if err != nil {
		return nil, fmt.Errorf("unpack the bench image: %w", err)
	}
	sb.img = img
	sb.driver, err = gvisor.New(gvisor.Config{RunscPath: p.Runsc, StateDir: sb.stateDir, CgroupParent: sb.cgroupParent})
	if err != nil {
		return nil, err
	}
	if err := sb.writeBareBundle(); err != nil {
		return nil, err
	}
	if err := sb.writeFloorBundle(); err != nil {
		return nil, err
	}
	return sb, nil
}

// bareCwd is the runner's working directory, as the project's manifest and
// the driver runs have it.
const bareCwd = "/app"

// writeBareBundle writes the bare runs' OCI bundle: the image's root
// filesystem read-only, the payload and result directories bound where the
// runner protocol puts them, /proc, and nothing else: no cgroup, no limits,
// no capabilities dropped, root in the sandbox. It is what `runsc run` needs
// to run the runner, and the floor that the service's overhead is measured
// from.
func (sb *benchSandbox) writeBareBundle() error {
	bundle := filepath.Join(sb.dir, "bare")
	host := sandbox.Dirs{Payload: filepath.Join(bundle, "payload"), Result: filepath.Join(bundle, "result")}
	for _, d := range []string{host.Payload, host.Result} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(host.PayloadFile(), []byte(`{"i":0}`), 0o644); err != nil {
		return err
	}
	in := sandbox.ContainerDirs()
	spec := &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			Args: benchRunnerArgs,
			Env: []string{"PATH=/usr/bin:/bin", sandbox.EnvPayload + "=" + in.PayloadFile(),
				sandbox.EnvResult + "=" + in.ResultFile()},
			Cwd: bareCwd,
		},
		Root:     &specs.Root{Path: sb.img.RootFS, Readonly: true},
		Hostname: "bench",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: in.Payload, Type: "bind", Source: host.Payload, Options: []string{"rbind", "ro"}},
			{Destination: in.Result, Type: "bind", Source: host.Result, Options: []string{"rbind", "rw"}},
		},
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
			{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
			{Type: specs.MountNamespace}, {Type: specs.NetworkNamespace},
		}},
	}
	sb.bareBundle, sb.bareResult = bundle, host.ResultFile()
	return writeSpec(bundle, spec)
}

func writeSpec(bundle string, spec *specs.Spec) error {
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o600)
}

// writeFloorBundle writes the bundle of the warm floor's sandboxes: the
// bare bundle (the same directories), with the launcher bound read-only as
// its init.
func (sb *benchSandbox) writeFloorBundle() error {
	b, err := os.ReadFile(filepath.Join(sb.bareBundle, "config.json"))
	if err != nil {
		return err
	}
	var spec specs.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return err
	}
	bundle := filepath.Join(sb.dir, "floor")
	if err := os.MkdirAll(bundle, 0o755); err != nil {
		return err
	}
	launcher := filepath.Join(bundle, "launcher")
	if err := gvisor.WriteLauncher(launcher); err != nil {
		return err
	}
	sb.floorEnv = spec.Process.Env
	spec.Process.Args, spec.Process.Cwd = []string{gvisor.LauncherPath}, "/"
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: gvisor.LauncherPath, Type: "bind", Source: launcher,
		Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	sb.floorBundle = bundle
	return writeSpec(bundle, &spec)
}

// floorRun boots two sandboxes of the floor bundle with their launchers
// waiting (untimed), then times `runsc exec` of the runner into one, and
// handing the runner's command to the other's launcher until its `runsc
// run` exits: the floor of a warm start, and of one through runsc exec,
// each in a sandbox that has run nothing yet.
func (sb *benchSandbox) floorRun(ctx context.Context, i int) (launch, execd time.Duration, err error) {
	var res [2]*gvisor.Resident
	for j := range res {
		if res[j], err = gvisor.BootResident(sb.runsc, sb.stateDir, sb.floorBundle, fmt.Sprintf("bench-floor-%d-%d", i, j)); err != nil {
			return 0, 0, err
		}
		defer res[j].Close()
	}
	id := fmt.Sprintf("bench-floor-%d-0", i)
	if err := os.Remove(sb.bareResult); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, 0, err
	}
	args := []string{"--root", sb.stateDir, "--platform", gvisor.DefaultPlatform, "--network", "none", "exec", "--cwd", bareCwd}
	for _, kv := range sb.floorEnv {
		args = append(args, "--env", kv)
	}
	cmd := exec.CommandContext(ctx, sb.runsc, append(append(args, id), benchRunnerArgs...)...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	execd = time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("runsc exec: %w: %s", err, strings.TrimSpace(out.String()))
	}
	if err := checkBenchResult(os.ReadFile(sb.bareResult)); err != nil {
		return 0, 0, fmt.Errorf("runsc exec: %w", err)
	}
	if err := os.Remove(sb.bareResult); err != nil {
		return 0, 0, err
	}
	if _, launch, err = res[1].Launch(benchRunnerArgs[0], benchRunnerArgs, sb.floorEnv, bareCwd); err != nil {
		return 0, 0, fmt.Errorf("launcher: %w", err)
	}
	if err := checkBenchResult(os.ReadFile(sb.bareResult)); err != nil {
		return 0, 0, fmt.Errorf("launcher: %w", err)
	}
	return launch, execd, nil
}

// bareRun times one `runsc run` of the bare bundle, from the start of runsc
// to its exit, and checks the runner's result.
func (sb *benchSandbox) bareRun(ctx context.Context, i int) (time.Duration, error) {
	d, _, err := sb.bareRunCPU(ctx, i)
	return d, err
}

// bareRunCPU is bareRun with the CPU time (user and system) of runsc and
// the sandbox processes it waited for: what one start costs the machine.
func (sb *benchSandbox) bareRunCPU(ctx context.Context, i int) (wall, cpu time.Duration, err error) {
	if err := os.Remove(sb.bareResult); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, 0, err
	}
	id := fmt.Sprintf("bench-bare-%d", i)
	cmd := exec.CommandContext(ctx, sb.runsc, "--root", sb.stateDir, "--platform", gvisor.DefaultPlatform,
		"--network", "none", "run", "--bundle", sb.bareBundle, id)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("bare runsc run: %w: %s", err, strings.TrimSpace(out.String()))
	}
	if err := checkBenchResult(os.ReadFile(sb.bareResult)); err != nil {
		return 0, 0, fmt.Errorf("bare runsc run: %w", err)
	}
	return elapsed, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// driverRun times one run through the gVisor driver with the spec the host
// agent builds for a default job of the bench project.
func (sb *benchSandbox) driverRun(ctx context.Context, i int) (time.Duration, *driverStages, error) {
	id := fmt.Sprintf("bench-driver-%d", i)
	env := map[string]string{}
	for _, kv := range sb.img.Config.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	workDir := filepath.Join(sb.dir, "work", id)
	if err := os.MkdirAll(filepath.Dir(workDir), 0o700); err != nil {
		return 0, nil, err
	}
	spec := sandbox.Spec{
		AttemptID: id, TaskID: id, RootFS: sb.img.RootFS, Args: benchRunnerArgs, Cwd: bareCwd, Env: env,
		Payload: fmt.Appendf(nil, `{"i":%d}`, i), WorkDir: workDir, CacheDir: filepath.Join(sb.dir, "cache"),
		CPU: submit.DefaultCPU, MemoryMB: submit.DefaultMemoryMB, Timeout: benchJobTimeoutS * time.Second,
	}
	start := time.Now()
	out, err := sb.driver.Run(ctx, spec)
	elapsed := time.Since(start)
	if err != nil {
		return 0, nil, fmt.Errorf("driver run: %w", err)
	}
	defer os.RemoveAll(workDir)
	if out.ExitCode != 0 || out.SandboxError != "" {
		return 0, nil, fmt.Errorf("driver run: exit %d %s", out.ExitCode, out.SandboxError)
	}
	if err := checkBenchResult(out.Result, nil); err != nil {
		return 0, nil, fmt.Errorf("driver run: %w", err)
	}
	st := &driverStages{prepare: out.Stages.Prepare, collect: out.Stages.Collect,
		teardown: out.Stages.Teardown, ret: elapsed - out.Stages.Prepare - out.Stages.Sandbox - out.Stages.Collect - out.Stages.Teardown}
	// The sandbox's span, split at the runner's own start: runsc's start
	// before it, the runner and runsc's exit after it.
	st.runscStart, st.runnerToExit = out.Stages.Sandbox, 0
	var r struct {
		Started int64 `json:"started_unix_nano"`
	}
	if json.Unmarshal(out.Result, &r) == nil && r.Started > 0 {
		if runner := time.Unix(0, r.Started); runner.After(out.StartedAt) && runner.Before(out.EndedAt) {
			st.runscStart, st.runnerToExit = runner.Sub(out.StartedAt), out.EndedAt.Sub(runner)
		}
	}
	return elapsed, st, nil
}

// driverStages are one driver run's stages (sandbox.Stages, with the
// sandbox's span split at the runner's start).
type driverStages struct {
	prepare, runscStart, runnerToExit, collect, teardown time.Duration
	// ret is what is left: Run's own bookkeeping around the stages.
	ret time.Duration
}

func checkBenchResult(b []byte, err error) error {
	if err != nil {
		return fmt.Errorf("read result: %w", err)
	}
	var r struct{ OK bool }
	if json.Unmarshal(b, &r) != nil || !r.OK {
		return fmt.Errorf("got result %q, want {\"ok\":true}", b)
	}
	return nil
}

// close deletes what the runs left (containers, cgroups, runsc's network
// namespace pin under the state dir) and the cgroup parent. Idempotent.
func (sb *benchSandbox) close(progress func(string, ...any)) {
	sb.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := sb.driver.Cleanup(ctx); err != nil {
			progress("sandbox cleanup: %v", err)
		}
		removeCgroupDirs(sb.cgroupParent)
	})
}

// removeCgroupDirs removes the empty cgroup directory name at the top of
// every hierarchy (cgroup v1 and v2 mounted the usual ways), children
// first; a busy one stays.
func removeCgroupDirs(name string) {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", name))
	more, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", name))
	for _, d := range append(dirs, more...) {
		rmdirAll(d)
	}
}

func rmdirAll(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			rmdirAll(filepath.Join(dir, e.Name()))
		}
	}
	_ = syscall.Rmdir(dir)
}

// runscVersion is the version stamp that setup leaves beside runsc, or the
// first line of `runsc --version` (which a `go install`ed runsc leaves
// without a version).
func runscVersion(ctx context.Context, runsc string) string {
	if b, err := os.ReadFile(runsc + ".version"); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b))
	}
	out, err := exec.CommandContext(ctx, runsc, "--version").Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimPrefix(strings.TrimSpace(line), "runsc version ")
}
