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
		{"network", cfg.Network, NetworkPrivate},
		{"runsc", cfg.RunscPath, DefaultRunscPath},
		{"buildah", cfg.BuildahPath, DefaultBuildahPath},
		{"tmp dir", cfg.TmpDir, "/data/buildah/tmp"},
		{"memory", cfg.MemoryLimit, "2g"},
	} {
		if c.got != c.want {
			t.Errorf("default %s: got %q, want %q", c.field, c.got, c.want)
		}
	}
	if !strings.HasPrefix(cfg.RunRoot, "/run/skiff/buildah-") {
		t.Errorf("default run root: got %q, want one under /run/skiff", cfg.RunRoot)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	cfg := Config{
		StorageRoot: "relative", ImagesDir: "/i", Isolation: "none", Network: "bridge",
		MemoryLimit: "lots", PullPolicy: "sometimes",
		AllowedBaseImages: []string{"*"}, RuntimeFlags: []string{"--debug"},
	}.withDefaults()
	err := cfg.Validate()
	if err == nil {
		t.Fatal("got nil, want errors")
	}
	for _, want := range []string{"storage root", "isolation", "network", "memory limit",
		"pull policy", "allowed base image", "runtime flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to mention %s", err, want)
		}
	}
}
