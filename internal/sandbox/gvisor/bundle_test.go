package gvisor

import (
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/skiffhq/skiff/internal/sandbox"
)

func TestOCISpec(t *testing.T) {
	t.Parallel()
	s := &sandbox.Spec{
		AttemptID: "att_1", TaskID: "tsk_1", RootFS: "/images/abc/rootfs", Args: []string{"/usr/bin/run", "x"},
		Cwd: "/app", Env: map[string]string{"A": "1"}, WorkDir: "/work/att_1", CacheDir: "/cache/p",
		CPU: 1.5, MemoryMB: 512, PidsLimit: 100,
	}
	host := sandbox.HostDirs(s)
	got := ociSpec(bundleParams{Spec: s, Host: host, CgroupsPath: "/skiff/att_1", NoFile: 4096, PidsOverhead: 128})

	if got.Root.Path != s.RootFS || !got.Root.Readonly {
		t.Errorf("root: got %+v, want %s read-only", got.Root, s.RootFS)
	}
	p := got.Process
	if p.User.UID != RunnerUID || p.User.GID != RunnerGID || !p.NoNewPrivileges {
		t.Errorf("process user/no_new_privs: got %+v %v", p.User, p.NoNewPrivileges)
	}
	if c := p.Capabilities; c == nil || len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) != 0 {
		t.Errorf("capabilities: got %+v, want all empty", c)
	}
	if !slices.Equal(p.Args, s.Args) || p.Cwd != "/app" || !slices.Contains(p.Env, "A=1") || !slices.Contains(p.Env, "SKIFF_TASK_ID=tsk_1") {
		t.Errorf("process: got args %q cwd %q env %q", p.Args, p.Cwd, p.Env)
	}
	// The pids limit also goes in as RLIMIT_NPROC, which gVisor enforces
	// on the sandbox's own tasks.
	if len(p.Rlimits) != 2 || p.Rlimits[0].Type != "RLIMIT_NOFILE" || p.Rlimits[0].Hard != 4096 ||
		p.Rlimits[1].Type != "RLIMIT_NPROC" || p.Rlimits[1].Hard != uint64(s.PidsLimit) || p.Rlimits[1].Soft != uint64(s.PidsLimit) {
		t.Errorf("rlimits: got %+v", p.Rlimits)
	}
	l := got.Linux
	if l.CgroupsPath != "/skiff/att_1" {
		t.Errorf("cgroupsPath: got %q", l.CgroupsPath)
	}
	r := l.Resources
	if *r.Memory.Limit != 512<<20 || *r.Memory.Swap != 512<<20 {
		t.Errorf("memory: got limit %d swap %d, want both %d", *r.Memory.Limit, *r.Memory.Swap, 512<<20)
	}
	if *r.CPU.Quota != 150000 || *r.CPU.Period != 100000 {
		t.Errorf("cpu: got %d/%d, want 150000/100000", *r.CPU.Quota, *r.CPU.Period)
	}
	if *r.Pids.Limit != 228 {
		t.Errorf("pids: got %d, want 100 + 128 overhead", *r.Pids.Limit)
	}
	var netns *specs.LinuxNamespace
	for i := range l.Namespaces {
		if l.Namespaces[i].Type == specs.NetworkNamespace {
			netns = &l.Namespaces[i]
		}
	}
	if netns == nil || netns.Path != "" {
		t.Errorf("network namespace: got %+v, want a new, empty one", netns)
	}

	binds := map[string]specs.Mount{}
	for _, m := range got.Mounts {
		if m.Type == "bind" {
			binds[m.Destination] = m
		}
	}
	in := sandbox.ContainerDirs()
	for dest, src := range map[string]string{in.Payload: host.Payload, in.Result: host.Result, in.Artifacts: host.Artifacts, in.Scratch: host.Scratch, in.Cache: "/cache/p"} {
		m, ok := binds[dest]
		if !ok || m.Source != src {
			t.Errorf("bind %s: got %+v, want source %s", dest, m, src)
			continue
		}
		wantRO := dest == in.Payload
		if slices.Contains(m.Options, "ro") != wantRO || !slices.Contains(m.Options, "nosuid") || !slices.Contains(m.Options, "nodev") {
			t.Errorf("bind %s options: got %q, want ro=%v nosuid nodev", dest, m.Options, wantRO)
		}
	}
	if len(binds) != 5 {
		t.Errorf("binds: got %d, want 5", len(binds))
	}
	if filepath.Dir(host.Payload) != s.WorkDir {
		t.Errorf("host payload dir: got %s, want under %s", host.Payload, s.WorkDir)
	}

	// No limits asked, none set; a tiny CPU share still gets the kernel's
	// minimum quota rather than an invalid one.
	none := ociSpec(bundleParams{Spec: &sandbox.Spec{Args: []string{"/x"}}, NoFile: 1})
	if r := none.Linux.Resources; r.Memory != nil || r.CPU != nil || r.Pids != nil {
		t.Errorf("no limits: got %+v", r)
	}
	tiny := ociSpec(bundleParams{Spec: &sandbox.Spec{Args: []string{"/x"}, CPU: 0.001}, NoFile: 1})
	if q := *tiny.Linux.Resources.CPU.Quota; q != minCPUQuota {
		t.Errorf("tiny cpu quota: got %d, want %d", q, minCPUQuota)
	}
}
