package gvisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// RunnerUID and RunnerGID are the ids the runner runs as inside the
// sandbox (nobody). The writable bind directories are chowned to them on the
// host, because gVisor checks permissions against the host file owner.
const (
	RunnerUID = 65534
	RunnerGID = 65534
)

// cpuPeriod is the CFS period; the quota is CPU cores times this, and at
// least minCPUQuota, the kernel's floor.
const (
	cpuPeriod   = 100_000
	minCPUQuota = 1_000
)

// bundleParams is everything that goes into one attempt's config.json.
type bundleParams struct {
	Spec         *sandbox.Spec
	Host         sandbox.Dirs
	CgroupsPath  string
	NetNSPath    string // empty: a fresh, empty network namespace
	NoFile       uint64
	PidsOverhead int64
	// Launcher, when set, is the host file of a warm sandbox's launcher,
	// bound read-only at launcherPath.
	Launcher string
}

// writeBundle writes dir/config.json for p.
func writeBundle(dir string, p bundleParams) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("create bundle dir: %w", err)
	}
	b, err := json.MarshalIndent(ociSpec(p), "", "  ")
	if err != nil {
		return fmt.Errorf("encode config.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		return fmt.Errorf("write config.json: %w", err)
	}
	return nil
}

// ociSpec builds the OCI runtime config for one attempt: a read-only image
// root, the runner as nobody with no capabilities, the attempt's directories
// bind-mounted under sandbox.ContainerRoot, and the resource limits applied
// to the whole sandbox's cgroup.
func ociSpec(p bundleParams) *specs.Spec {
	s := p.Spec
	cwd := s.Cwd
	if cwd == "" {
		cwd = "/"
	}
	in := sandbox.ContainerDirs()
	noCaps := []string{}
	spec := &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			User: specs.User{UID: RunnerUID, GID: RunnerGID},
			Args: s.Args,
			Env:  sandbox.Environ(s, in),
			Cwd:  cwd,
			Capabilities: &specs.LinuxCapabilities{
				Bounding: noCaps, Effective: noCaps, Inheritable: noCaps, Permitted: noCaps, Ambient: noCaps,
			},
			NoNewPrivileges: true,
			Rlimits:         rlimits(s, p.NoFile),
		},
		Root:     &specs.Root{Path: s.RootFS, Readonly: true},
		Hostname: "skiff",
		Mounts:   append(append(mounts(p.Host, in), extraMounts(s.Mounts)...), launcherMount(p.Launcher)...),
		Linux: &specs.Linux{
			CgroupsPath: p.CgroupsPath,
			Resources:   resources(s, p.PidsOverhead),
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace},
				{Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace},
				{Type: specs.MountNamespace},
				// Always a network namespace: without one, runsc's sandbox
				// network would copy (and strip) the host's interfaces.
				{Type: specs.NetworkNamespace, Path: p.NetNSPath},
			},
		},
	}
	withGPU(spec, s.GPU)
	return spec
}

func mounts(host, in sandbox.Dirs) []specs.Mount {
	rw := []string{"rbind", "rw", "nosuid", "nodev"}
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
		{Destination: in.Payload, Type: "bind", Source: host.Payload, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}},
		{Destination: in.Result, Type: "bind", Source: host.Result, Options: rw},
		{Destination: in.Artifacts, Type: "bind", Source: host.Artifacts, Options: rw},
		{Destination: in.Scratch, Type: "bind", Source: host.Scratch, Options: rw},
		{Destination: in.Cache, Type: "bind", Source: host.Cache, Options: rw},
	}
}

// launcherMount binds a warm sandbox's launcher read-only (executable, but
// no set-id or devices); none for a cold start.
func launcherMount(hostPath string) []specs.Mount {
	if hostPath == "" {
		return nil
	}
	return []specs.Mount{{Destination: launcherPath, Type: "bind", Source: hostPath, Options: []string{"rbind", "ro", "nosuid", "nodev"}}}
}

// extraMounts bind-mounts the spec's data sources read-only and its cache
// mounts writable; neither may hold devices or set-id programs.
func extraMounts(ms []sandbox.Mount) []specs.Mount {
	var out []specs.Mount
	for _, m := range ms {
		opts := []string{"rbind", "rw", "nosuid", "nodev"}
		if m.ReadOnly {
			opts = []string{"rbind", "ro", "nosuid", "nodev"}
		}
		out = append(out, specs.Mount{Destination: m.Destination, Type: "bind", Source: m.Source, Options: opts})
	}
	return out
}

func resources(s *sandbox.Spec, pidsOverhead int64) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if s.MemoryMB > 0 {
		limit := s.MemoryMB << 20
		// Swap equal to the limit means no swap: the runner is OOM-killed at
		// the limit instead of slowing down.
		r.Memory = &specs.LinuxMemory{Limit: &limit, Swap: &limit}
	}
	if s.CPU > 0 {
		quota := max(int64(s.CPU*cpuPeriod), minCPUQuota)
		period := uint64(cpuPeriod)
		r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	if s.PidsLimit > 0 {
		limit := s.PidsLimit + pidsOverhead
		r.Pids = &specs.LinuxPids{Limit: &limit}
	}
	return r
}

// rlimits are the runner's resource limits. RLIMIT_NPROC carries the pids
// limit into the sandbox: the pids cgroup counts the sandbox's host
// threads, which gVisor keeps few whatever the runner does (a fork bomb's
// tasks are the sentry's, not the host's), so the cgroup protects the host
// but does not stop the bomb; gVisor enforces RLIMIT_NPROC on its own tasks
// (threads included, as Linux does), and a clone past it fails with EAGAIN.
func rlimits(s *sandbox.Spec, noFile uint64) []specs.POSIXRlimit {
	out := []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: noFile, Soft: noFile}}
	if s.PidsLimit > 0 {
		out = append(out, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: uint64(s.PidsLimit), Soft: uint64(s.PidsLimit)})
	}
	return out
}
