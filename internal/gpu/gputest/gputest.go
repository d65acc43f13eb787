// Package gputest builds a fake GPU machine for tests that run without a
// GPU: real device nodes with made-up numbers, the driver's /proc files and
// a fake driver directory.
package gputest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Machine is a fake device tree (Root) and driver directory (DriverDir),
// built for gpu.Discover: real character device nodes (mknod, as root)
// with made-up numbers, the driver's /proc files, and a driver dir whose
// nvidia-smi is a shell script that prints what a real one would (GPU i
// has 81559-i MiB).
type Machine struct {
	Root, DriverDir string
}

// The numbers are deliberately not the usual 195/N: the spec must carry
// what stat reads, never a constant.
const (
	GPUMajor = 231
	UVMMajor = 237
	Version  = "580.159.04"
)

// Supported is a runsc's list of supported drivers that holds Version.
var Supported = []string{"535.274.02", "580.159.04", "580.178.04"}

// NewMachine builds a fake machine with gpus GPUs.
func NewMachine(t *testing.T, gpus int) *Machine {
	t.Helper()
	m := &Machine{Root: t.TempDir(), DriverDir: t.TempDir()}
	dev := filepath.Join(m.Root, "dev")
	mustMkdir(t, dev)
	node := func(name string, major, minor uint32) {
		if err := unix.Mknod(filepath.Join(dev, name), unix.S_IFCHR|0o666, int(unix.Mkdev(major, minor))); err != nil {
			t.Fatalf("mknod %s (these tests make device nodes and need root): %v", name, err)
		}
	}
	node("nvidiactl", GPUMajor, 255)
	node("nvidia-uvm", UVMMajor, 0)
	node("nvidia-uvm-tools", UVMMajor, 1)
	node("nvidia-modeset", GPUMajor, 254) // present on hosts, never given to tasks
	for i := range gpus {
		node("nvidia"+itoa(i), GPUMajor, uint32(i))
		info := filepath.Join(m.Root, "proc/driver/nvidia/gpus", "0000:1"+itoa(i)+":00.0")
		mustMkdir(t, info)
		Write(t, filepath.Join(info, "information"), "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nGPU UUID: \t GPU-fake-"+itoa(i)+
			"\nDevice Minor: \t "+itoa(i)+"\n", 0o444)
	}
	Write(t, filepath.Join(m.Root, "proc/driver/nvidia/version"),
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  "+Version+"  Thu Oct  2 12:00:00 UTC 2026\nGCC version:  gcc version 12.2.0\n", 0o444)
	lib := filepath.Join(m.DriverDir, "lib64")
	for _, base := range []string{"libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so"} {
		Write(t, filepath.Join(lib, base+"."+Version), "fake "+base, 0o755)
		mustLink(t, base+"."+Version, filepath.Join(lib, base+".1"))
	}
	mustLink(t, "libcuda.so.1", filepath.Join(lib, "libcuda.so"))
	Write(t, filepath.Join(lib, "libunrelated.so.1"), "not the driver's", 0o755)
	var mem strings.Builder
	for i := range gpus {
		mem.WriteString(strconv.Itoa(81559-i) + "\n") // the second GPU is the smaller
	}
	Write(t, filepath.Join(m.DriverDir, "bin", "nvidia-smi"), "#!/bin/sh\nprintf '"+strings.ReplaceAll(mem.String(), "\n", `\n`)+"'\n", 0o755)
	return m
}

func itoa(i int) string { return strconv.Itoa(i) }

func mustMkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

// Write writes a file of the fake machine, making its directory.
func Write(t *testing.T, p, content string, mode os.FileMode) {
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
