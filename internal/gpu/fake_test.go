package gpu_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeMachine is a fake device tree and driver directory, built for
// Discover: real character device nodes (mknod, as root) with made-up
// numbers, the driver's /proc files, and a driver dir whose nvidia-smi is
// a shell script that prints what a real one would.
type fakeMachine struct {
	root, driverDir string
}

// The numbers are deliberately not the usual 195/N: the spec must carry
// what stat reads, never a constant.
const (
	fakeGPUMajor = 231
	fakeUVMMajor = 237
	fakeVersion  = "580.159.04"
)

func newFakeMachine(t *testing.T, gpus int) *fakeMachine {
	t.Helper()
	m := &fakeMachine{root: t.TempDir(), driverDir: t.TempDir()}
	dev := filepath.Join(m.root, "dev")
	mustMkdir(t, dev)
	node := func(name string, major, minor uint32) {
		if err := unix.Mknod(filepath.Join(dev, name), unix.S_IFCHR|0o666, int(unix.Mkdev(major, minor))); err != nil {
			t.Fatalf("mknod %s (these tests make device nodes and need root): %v", name, err)
		}
	}
	node("nvidiactl", fakeGPUMajor, 255)
	node("nvidia-uvm", fakeUVMMajor, 0)
	node("nvidia-uvm-tools", fakeUVMMajor, 1)
	node("nvidia-modeset", fakeGPUMajor, 254) // present on hosts, never given to tasks
	for i := range gpus {
		node("nvidia"+itoa(i), fakeGPUMajor, uint32(i))
		info := filepath.Join(m.root, "proc/driver/nvidia/gpus", "0000:1"+itoa(i)+":00.0")
		mustMkdir(t, info)
		write(t, filepath.Join(info, "information"), "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nGPU UUID: \t GPU-fake-"+itoa(i)+
			"\nDevice Minor: \t "+itoa(i)+"\n", 0o444)
	}
	write(t, filepath.Join(m.root, "proc/driver/nvidia/version"),
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  "+fakeVersion+"  Thu Oct  2 12:00:00 UTC 2026\nGCC version:  gcc version 12.2.0\n", 0o444)
	lib := filepath.Join(m.driverDir, "lib64")
	for _, base := range []string{"libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so"} {
		write(t, filepath.Join(lib, base+"."+fakeVersion), "fake "+base, 0o755)
		mustLink(t, base+"."+fakeVersion, filepath.Join(lib, base+".1"))
	}
	mustLink(t, "libcuda.so.1", filepath.Join(lib, "libcuda.so"))
	write(t, filepath.Join(lib, "libunrelated.so.1"), "not the driver's", 0o755)
	var mem strings.Builder
	for i := range gpus {
		mem.WriteString(strconv.Itoa(81559-i) + "\n") // the second GPU is the smaller
	}
	write(t, filepath.Join(m.driverDir, "bin", "nvidia-smi"), "#!/bin/sh\nprintf '"+strings.ReplaceAll(mem.String(), "\n", `\n`)+"'\n", 0o755)
	return m
}

func itoa(i int) string { return strconv.Itoa(i) }

func mustMkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
