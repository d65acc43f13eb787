package build

import (
	"strings"
	"testing"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := Config{StorageRoot: "/data/buildah/storage", ImagesDir: "/data/images"}.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	for _, c := range []struct{ field, got, want string }{
		{"isolation", cfg.Isolation, IsolationOCI},
		{"network", cfg.Network, NetworkFiltered},
		{"nft", cfg.NftPath, "nft"},
		{"runsc", cfg.RunscPath, DefaultRunscPath},
		{"buildah", cfg.BuildahPath, DefaultBuildahPath},
		{"tmp dir", cfg.TmpDir, "/data/buildah/tmp"},
		{"memory", cfg.MemoryLimit, "2g"},
	} {
		if c.got != c.want {
			t.Errorf("default %s: got %q, want %q", c.field, c.got, c.want)
		}
	}
	if cfg.CPUs < 1 {
		t.Errorf("default cpus: got %v, want at least 1", cfg.CPUs)
	}
	if got := (Config{Network: NetworkPrivate}).withDefaults().Network; got != NetworkOpen {
		t.Errorf("network %q: got %q, want it read as %q", NetworkPrivate, got, NetworkOpen)
	}
	if !strings.HasPrefix(cfg.RunRoot, "/run/skiff/buildah-") {
		t.Errorf("default run root: got %q, want one under /run/skiff", cfg.RunRoot)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	cfg := Config{
		StorageRoot: "relative", ImagesDir: "/i", Isolation: "none", Network: "bridge",
		MemoryLimit: "lots", PullPolicy: "sometimes", CPUs: -1,
		AllowedBaseImages: []string{"*"}, RuntimeFlags: []string{"--debug"},
	}.withDefaults()
	err := cfg.Validate()
	if err == nil {
		t.Fatal("got nil, want errors")
	}
	for _, want := range []string{"storage root", "isolation", "network", "memory limit",
		"pull policy", "allowed base image", "runtime flag", "cpus"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to mention %s", err, want)
		}
	}
}

func TestDefaultBuildCPUs(t *testing.T) {
	t.Parallel()
	for cores, want := range map[int]float64{1: 1, 2: 1, 3: 1, 4: 2, 16: 8} {
		if got := DefaultBuildCPUs(cores); got != want {
			t.Errorf("DefaultBuildCPUs(%d) = %v, want %v", cores, got, want)
		}
	}
}
