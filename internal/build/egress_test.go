package build

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseNameservers(t *testing.T) {
	t.Parallel()
	conf := "# generated\nsearch example.internal\nnameserver 127.0.0.53\nnameserver 10.255.255.53\nnameserver ::1\nnameserver 2001:db8::53\nnameserver 169.254.169.253\noptions edns0\nnameserver\n"
	got := parseNameservers(conf)
	want := []netip.Addr{netip.MustParseAddr("10.255.255.53"), netip.MustParseAddr("169.254.169.253")}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v (IPv4, loopback left out)", got, want)
	}
	if got := parseNameservers("nameserver 127.0.0.53\n"); len(got) != 0 {
		t.Errorf("loopback only: got %v, want none", got)
	}
}

func TestFilteredNetworkIsStablePerStorageRoot(t *testing.T) {
	t.Parallel()
	a := newFilteredNetwork(Config{StorageRoot: "/data/a/buildah/storage", RunRoot: "/run/skiff/x"})
	again := newFilteredNetwork(Config{StorageRoot: "/data/a/buildah/storage/", RunRoot: "/run/skiff/x"})
	b := newFilteredNetwork(Config{StorageRoot: "/data/b/buildah/storage", RunRoot: "/run/skiff/y"})
	if a != again {
		t.Errorf("same storage root, different networks: %+v, %+v", a, again)
	}
	if a.bridge == b.bridge || a.name == b.name {
		t.Errorf("two storage roots share a bridge or name: %+v, %+v", a, b)
	}
	for _, n := range []filteredNetwork{a, b} {
		if !strings.HasPrefix(n.bridge, filteredBridgePrefix) || len(n.bridge) > 15 {
			t.Errorf("bridge %q: want %s<hex>, at most 15 bytes (IFNAMSIZ)", n.bridge, filteredBridgePrefix)
		}
		if n.subnet.Bits() != 28 || !netip.MustParsePrefix("10.234.0.0/16").Contains(n.subnet.Addr()) || n.subnet.Masked() != n.subnet {
			t.Errorf("subnet %v: want a /28 of 10.234.0.0/16", n.subnet)
		}
	}
}

// TestEgressRuleset checks the rules' text; TestBuildEgress (egress_ns_test.go)
// proves them against real traffic.
func TestEgressRuleset(t *testing.T) {
	t.Parallel()
	rules := egressRuleset([]netip.Addr{netip.MustParseAddr("10.255.255.53")})
	for _, want := range []string{
		"delete table inet skiff_build_egress",
		"169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8",
		`iifname "skf*" ip daddr { 10.255.255.53 } meta l4proto { tcp, udp } th dport 53 accept`,
		`iifname "skf*" meta nfproto ipv6 reject`,
		"type filter hook input priority filter - 10",
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, rules)
		}
	}
	// The DNS exception comes before the rejects, or it would never match.
	if strings.Index(rules, "dport 53 accept") > strings.Index(rules, "@blocked4 reject") {
		t.Errorf("DNS accept after the reject:\n%s", rules)
	}
	if strings.Contains(egressRuleset(nil), "dport 53") {
		t.Error("no resolvers, yet a DNS exception")
	}
}

// TestBudArgsNetworkAndCPUs: each network mode and the CPU cap reach
// buildah's command line.
func TestBudArgsNetworkAndCPUs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		network, wantNetwork, wantRuntimeNet string
		wantOverride                         bool
	}{
		{NetworkFiltered, "skiff-build-", "", true},
		{NetworkOpen, "private", "", false},
		{NetworkNone, "none", "network=none", false},
		{NetworkHost, "host", "network=host", false},
	} {
		cfg := Config{StorageRoot: "/d/buildah/storage", ImagesDir: "/d/images", Network: tt.network, CPUs: 1.5}.withDefaults()
		b := &Builder{cfg: cfg, buildahPath: cfg.BuildahPath, network: newFilteredNetwork(cfg)}
		c := b.buildah(b.budArgs(slotsFor(cfg).all[0], Request{ContextDir: "/ctx", Dockerfile: "Dockerfile"}, "/tmp/iid")...)
		line := strings.Join(c.args, " ")
		if !strings.Contains(line, "--network "+tt.wantNetwork) {
			t.Errorf("%s: %q lacks --network %s", tt.network, line, tt.wantNetwork)
		}
		if tt.wantRuntimeNet != "" && !strings.Contains(line, "--runtime-flag "+tt.wantRuntimeNet) {
			t.Errorf("%s: %q lacks --runtime-flag %s", tt.network, line, tt.wantRuntimeNet)
		}
		if tt.wantRuntimeNet == "" && strings.Contains(line, "--runtime-flag network=") {
			t.Errorf("%s: %q sets runsc's network; gVisor's netstack must stay on the bridge", tt.network, line)
		}
		if got := strings.Contains(strings.Join(c.env, " "), "CONTAINERS_CONF_OVERRIDE="+b.network.conf); got != tt.wantOverride {
			t.Errorf("%s: env %q: override present %v, want %v", tt.network, c.env, got, tt.wantOverride)
		}
		if !strings.Contains(line, "--cpu-period 100000 --cpu-quota 150000") {
			t.Errorf("%s: %q lacks the CPU cap of 1.5 cores", tt.network, line)
		}
		if c.path != DefaultBuildahPath {
			t.Errorf("buildah %q, want the pinned %q", c.path, DefaultBuildahPath)
		}
	}
}
