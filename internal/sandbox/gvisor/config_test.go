package gvisor

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := (Config{}).withDefaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cases := map[string]func(*Config){
		"kvm platform":       func(c *Config) { c.Platform = "kvm" },
		"unknown platform":   func(c *Config) { c.Platform = "vm" },
		"relative runsc":     func(c *Config) { c.RunscPath = "runsc" },
		"relative state dir": func(c *Config) { c.StateDir = "state" },
		"nested cgroup":      func(c *Config) { c.CgroupParent = "a/b" },
		"--network flag":     func(c *Config) { c.ExtraFlags = []string{"--network=host"} },
		"-platform flag":     func(c *Config) { c.ExtraFlags = []string{"-platform", "kvm"} },
		"--ignore-cgroups":   func(c *Config) { c.ExtraFlags = []string{"--ignore-cgroups"} },
		"negative grace":     func(c *Config) { c.Grace = -1 },
	}
	for name, mutate := range cases {
		c := Config{}.withDefaults()
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
	c := Config{Platform: "kvm"}.withDefaults()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "kvm") {
		t.Errorf("kvm: got %v, want an error that says why", err)
	}
}

func TestNewRefusesKVM(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Platform: "kvm", RunscPath: "/bin/true"}); err == nil {
		t.Fatalf("New with kvm: got no error")
	}
}
