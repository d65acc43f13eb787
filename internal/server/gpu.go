package server

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/gpu"
)

// localHostGPUs is what the server's local host lends (--host-gpus): like
// a remote host's, except that a failure only leaves it without GPUs, said
// loudly in the log, as a builder or host that cannot start does.
func localHostGPUs(ctx context.Context, f *Config, dataDir string, prof *agentproto.ResourceProfile, log *slog.Logger) *gpu.Host {
	if f.Host.GPUs == 0 {
		return nil
	}
	h, err := gpu.DiscoverLent(ctx, f.Build.Runsc, f.Host.GPUDriverDir, filepath.Join(dataDir, "host", "gpu-driver"), f.Host.GPUs)
	if err != nil {
		log.Error("local host: no GPUs lent: GPU tasks wait for a host that has them", "err", err)
		return nil
	}
	if h.MemoryMB > 0 {
		prof.GPUMemoryMB = h.MemoryMB
	}
	log.Info("local host: gpus found", "gpus", len(h.GPUs), "driver_version", h.DriverVersion, "gpu_memory_mb", h.MemoryMB)
	return h
}
