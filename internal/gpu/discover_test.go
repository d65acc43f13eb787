package gpu_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/gpu"
	"github.com/skiffhq/skiff/internal/gpu/gputest"
	"github.com/skiffhq/skiff/internal/sandbox"
)

var supported = gputest.Supported

func TestDiscoverFakeMachine(t *testing.T) {
	m := gputest.NewMachine(t, 2)
	stageDir := filepath.Join(t.TempDir(), "driver")
	h, err := gpu.Discover(context.Background(), gpu.Options{Root: m.Root, DriverDir: m.DriverDir, StageDir: stageDir, Supported: supported})
	if err != nil {
		t.Fatal(err)
	}
	if h.DriverVersion != gputest.Version {
		t.Errorf("driver version %q, want %q", h.DriverVersion, gputest.Version)
	}
	want := []gpu.GPU{
		{Index: 0, Device: sandbox.Device{Path: "/dev/nvidia0", Major: gputest.GPUMajor, Minor: 0}, UUID: "GPU-fake-0", Model: "NVIDIA H200"},
		{Index: 1, Device: sandbox.Device{Path: "/dev/nvidia1", Major: gputest.GPUMajor, Minor: 1}, UUID: "GPU-fake-1", Model: "NVIDIA H200"},
	}
	if !slices.Equal(h.GPUs, want) {
		t.Errorf("gpus %+v, want %+v", h.GPUs, want)
	}
	wantShared := []sandbox.Device{{Path: "/dev/nvidiactl", Major: gputest.GPUMajor, Minor: 255},
		{Path: "/dev/nvidia-uvm", Major: gputest.UVMMajor, Minor: 0}, {Path: "/dev/nvidia-uvm-tools", Major: gputest.UVMMajor, Minor: 1}}
	if !slices.Equal(h.Shared, wantShared) {
		t.Errorf("shared devices %+v, want %+v (never nvidia-modeset)", h.Shared, wantShared)
	}
	if h.MemoryMB != 81558 {
		t.Errorf("memory %d MiB, want the smaller GPU's 81558", h.MemoryMB)
	}
	if h.DriverDir != stageDir {
		t.Errorf("driver dir %q, want %q", h.DriverDir, stageDir)
	}
	for _, f := range []string{"lib64/libcuda.so", "lib64/libcuda.so.1", "lib64/libcuda.so." + gputest.Version, "lib64/libnvidia-ml.so.1",
		"lib64/libnvidia-ptxjitcompiler.so." + gputest.Version, "bin/nvidia-smi"} {
		if !slices.Contains(h.Files, f) {
			t.Errorf("files %v lack %s", h.Files, f)
		}
		b, err := os.ReadFile(filepath.Join(stageDir, f))
		if err != nil || len(b) == 0 {
			t.Errorf("gathered %s: %v", f, err)
		}
	}
	if slices.Contains(h.Files, "lib64/libunrelated.so.1") {
		t.Errorf("gathered a library that is not the driver's: %v", h.Files)
	}
	if target, err := os.Readlink(filepath.Join(stageDir, "lib64/libcuda.so.1")); err != nil || target != "libcuda.so."+gputest.Version {
		t.Errorf("libcuda.so.1 -> %q, %v; want the link kept", target, err)
	}

	// The loader cache finds the same files when no driver dir is named.
	cache := "4 libs found in cache `/etc/ld.so.cache'\n" +
		"\tlibcuda.so.1 (libc6,x86-64) => " + m.DriverDir + "/lib64/libcuda.so.1\n" +
		"\tlibnvidia-ml.so.1 (libc6,x86-64) => " + m.DriverDir + "/lib64/libnvidia-ml.so.1\n" +
		"\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"
	h2, err := gpu.Discover(context.Background(), gpu.Options{Root: m.Root, StageDir: filepath.Join(t.TempDir(), "d"), Supported: supported,
		Ldconfig: func(context.Context) ([]byte, error) { return []byte(cache), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h2.Files, h.Files) {
		t.Errorf("through the loader cache: files %v, want %v", h2.Files, h.Files)
	}
}

func TestDiscoverRefuses(t *testing.T) {
	ctx := context.Background()
	t.Run("unsupported driver", func(t *testing.T) {
		m := gputest.NewMachine(t, 1)
		_, err := gpu.Discover(ctx, gpu.Options{Root: m.Root, DriverDir: m.DriverDir, StageDir: filepath.Join(t.TempDir(), "d"),
			Supported: []string{"535.274.02", "570.86.15"}})
		if err == nil || !strings.Contains(err.Error(), "580.159.04 is not supported") || !strings.Contains(err.Error(), "535.274.02, 570.86.15") {
			t.Fatalf("got %v, want a refusal naming the driver and the supported ones", err)
		}
	})
	t.Run("no driver", func(t *testing.T) {
		_, err := gpu.Discover(ctx, gpu.Options{Root: t.TempDir(), StageDir: filepath.Join(t.TempDir(), "d"), Supported: supported})
		if !errors.Is(err, gpu.ErrNoDriver) || !strings.Contains(err.Error(), "/proc/driver/nvidia/version") {
			t.Fatalf("got %v, want ErrNoDriver saying where it looked", err)
		}
	})
	t.Run("sysfs version, no libcuda", func(t *testing.T) {
		m := gputest.NewMachine(t, 1)
		if err := os.Remove(filepath.Join(m.Root, "proc/driver/nvidia/version")); err != nil {
			t.Fatal(err)
		}
		gputest.Write(t, filepath.Join(m.Root, "sys/module/nvidia/version"), gputest.Version+"\n", 0o444)
		_, err := gpu.Discover(ctx, gpu.Options{Root: m.Root, DriverDir: t.TempDir(), StageDir: filepath.Join(t.TempDir(), "d"), Supported: supported})
		if err == nil || !strings.Contains(err.Error(), "libcuda.so.1 not found") || !strings.Contains(err.Error(), "--gpu-driver-dir") {
			t.Fatalf("got %v, want libcuda missing", err)
		}
	})
	t.Run("libraries of another version", func(t *testing.T) {
		m := gputest.NewMachine(t, 1)
		gputest.Write(t, filepath.Join(m.Root, "proc/driver/nvidia/version"), "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.178.04  x\n", 0o444)
		_, err := gpu.Discover(ctx, gpu.Options{Root: m.Root, DriverDir: m.DriverDir, StageDir: filepath.Join(t.TempDir(), "d"), Supported: supported})
		if err == nil || !strings.Contains(err.Error(), "version mismatch") && !strings.Contains(err.Error(), "kernel module is 580.178.04") {
			t.Fatalf("got %v, want a version mismatch", err)
		}
	})
	t.Run("no uvm node", func(t *testing.T) {
		m := gputest.NewMachine(t, 1)
		if err := os.Remove(filepath.Join(m.Root, "dev/nvidia-uvm")); err != nil {
			t.Fatal(err)
		}
		_, err := gpu.Discover(ctx, gpu.Options{Root: m.Root, DriverDir: m.DriverDir, StageDir: filepath.Join(t.TempDir(), "d"), Supported: supported})
		if err == nil || !strings.Contains(err.Error(), "nvidia-uvm is missing") {
			t.Fatalf("got %v, want the UVM node missing", err)
		}
	})
}

func TestAllocatorNeverShares(t *testing.T) {
	a := gpu.NewAllocator(2)
	g1, err := a.Acquire("att-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := a.Acquire("att-2", 1)
	if err != nil {
		t.Fatal(err)
	}
	if g1[0] == g2[0] {
		t.Fatalf("two attempts got GPU %d", g1[0])
	}
	if _, err := a.Acquire("att-3", 1); err == nil || !strings.Contains(err.Error(), "0 of this host's 2 are free") {
		t.Fatalf("a third attempt on a full host: %v", err)
	}
	a.Release("att-1")
	g3, err := a.Acquire("att-3", 1)
	if err != nil || g3[0] != g1[0] {
		t.Fatalf("after att-1's release: %v, %v; want its GPU %d", g3, err, g1[0])
	}
	if _, err := a.Acquire("att-4", 2); err == nil {
		t.Fatal("two GPUs granted with none free")
	}
}
