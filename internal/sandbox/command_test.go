package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/testlog"
)

// A runner command written as users write it (["python", "main.py"]) is
// found on the image's PATH inside the rootfs; one found nowhere is an exit
// 127 with the reason on stderr, not a host error.
func TestResolveCommand(t *testing.T) {
	rootfs := t.TempDir()
	for _, d := range []string{"usr/bin", "usr/local/bin", "opt/tools"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(rootfs, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/bin/python3", 0o755)
	write("usr/local/bin/notes", 0o644) // not executable: skipped
	write("opt/tools/notes", 0o755)
	// An absolute link, as images have; the runtime follows it inside the sandbox.
	if err := os.Symlink("/usr/bin/python3", filepath.Join(rootfs, "usr/local/bin/python")); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args []string
		path string
		want string
	}{
		{[]string{"/runner", "x"}, "", "/runner"},
		{[]string{"python", "main.py"}, "", "/usr/local/bin/python"},
		{[]string{"python3"}, "/usr/local/bin:/usr/bin", "/usr/bin/python3"},
		{[]string{"notes"}, "relative/dir:/usr/local/bin:/opt/tools", "/opt/tools/notes"},
		{[]string{"bin/run"}, "", "/app/bin/run"},
	} {
		args := slices.Clone(tc.args)
		spec := sandbox.Spec{RootFS: rootfs, Args: args, Cwd: "/app", Env: map[string]string{}}
		if tc.path != "" {
			spec.Env["PATH"] = tc.path
		}
		if o := sandbox.ResolveCommand(&spec); o != nil {
			t.Errorf("%q: got outcome %+v, want it resolved", tc.args, o)
			continue
		}
		if spec.Args[0] != tc.want || !slices.Equal(spec.Args[1:], tc.args[1:]) {
			t.Errorf("%q with PATH %q: got %q, want %s first", tc.args, tc.path, spec.Args, tc.want)
		}
		if !slices.Equal(args, tc.args) {
			t.Errorf("%q: the caller's slice became %q", tc.args, args)
		}
	}

	var stderr testlog.Buffer
	spec := sandbox.Spec{RootFS: rootfs, Args: []string{"node", "main.js"}, Env: map[string]string{"PATH": "/usr/bin"}, Stderr: &stderr}
	o := sandbox.ResolveCommand(&spec)
	if o == nil || o.ExitCode != sandbox.ExitCommandNotFound || o.OOMKilled || !strings.Contains(o.SandboxError, "node") {
		t.Fatalf("got %+v, want exit 127 naming the command", o)
	}
	if !strings.Contains(stderr.String(), "node: command not found") {
		t.Errorf("stderr: %q, want the reason", stderr.String())
	}
}
