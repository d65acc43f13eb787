package build

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build egress under NetworkFiltered. RUN steps must reach the public
// internet (pip, npm, apt) but nothing of the operator's: the cloud metadata
// service (169.254.169.254 hands out the machine's credentials), private and
// CGNAT networks (databases, other services of the operator), loopback, and
// the build host's own addresses on any interface. gVisor's netstack does
// not filter, and a RUN step can open raw TCP or UDP to any address, so the
// filter sits on the build host's side of the RUN step's network:
//
//   - the builder gives buildah a bridge network of its own (a netavark
//     network definition in a config dir it owns, passed through
//     CONTAINERS_CONF_OVERRIDE), whose bridge is named skf<8 hex>;
//   - one nftables table, inet skiff_build_egress, shared by every builder
//     on the machine, rejects what comes in on any skf* bridge and is bound
//     elsewhere than the public internet: the forward hook refuses the
//     reserved IPv4 ranges and all IPv6, the input hook everything addressed
//     to the host itself. Only DNS (port 53) to the resolvers the build's
//     resolv.conf names is let through, since those are often private
//     addresses.
//
// The rules run in a chain of their own at a priority before the filter
// tables netavark writes, and nftables' verdicts are final across tables:
// netavark's accept cannot undo this table's reject.

// egressTable is the nftables table (family inet) that filters every
// filtered build network on the machine.
const egressTable = "skiff_build_egress"

// filteredBridgePrefix starts the name of every filtered build bridge; the
// rules match on it.
const filteredBridgePrefix = "skf"

// blockedEgressV4 are the IPv4 destinations a filtered build step may not
// reach: "this network", private (RFC 1918), CGNAT (RFC 6598), loopback,
// link-local (the metadata address), IETF protocol assignments, benchmarking,
// and multicast with the reserved range above it.
var blockedEgressV4 = []string{
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/3",
}

// filteredNetwork is one builder's filtered bridge network.
type filteredNetwork struct {
	name    string       // netavark network name, what --network names
	bridge  string       // the bridge interface, skf<hex>
	subnet  netip.Prefix // a /28 of 10.234.0.0/16
	confDir string       // network_config_dir
	conf    string       // the containers.conf override file
}

// newFilteredNetwork derives the network from the storage root, so that two
// servers on one machine get different bridges and (almost always) subnets,
// and a restarted server gets the same ones.
func newFilteredNetwork(cfg Config) filteredNetwork {
	sum := sha256.Sum256([]byte("skiff-build-network\x00" + filepath.Clean(cfg.StorageRoot)))
	tag := hex.EncodeToString(sum[:4])
	n := binary.BigEndian.Uint16(sum[4:6]) & 0x0fff // 4096 /28s in 10.234.0.0/16
	subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 234, byte(n >> 4), byte(n&0xf) << 4}), 28)
	dir := filepath.Join(cfg.RunRoot, "networks")
	return filteredNetwork{
		name:    "skiff-build-" + tag,
		bridge:  filteredBridgePrefix + tag,
		subnet:  subnet,
		confDir: dir,
		conf:    filepath.Join(cfg.RunRoot, "containers.conf"),
	}
}

// env is what buildah needs in its environment to find the network.
func (n filteredNetwork) env() []string {
	return []string{"CONTAINERS_CONF_OVERRIDE=" + n.conf}
}

// write puts the network definition and the containers.conf override that
// points buildah at it in place.
func (n filteredNetwork) write() error {
	if err := os.MkdirAll(n.confDir, 0o700); err != nil {
		return fmt.Errorf("creating build network config dir: %w", err)
	}
	sum := sha256.Sum256([]byte(n.name))
	def := map[string]any{
		"name":              n.name,
		"id":                hex.EncodeToString(sum[:]),
		"driver":            "bridge",
		"network_interface": n.bridge,
		"created":           "2026-01-01T00:00:00Z",
		"subnets":           []map[string]string{{"subnet": n.subnet.String(), "gateway": n.subnet.Addr().Next().String()}},
		"ipv6_enabled":      false,
		"internal":          false,
		"dns_enabled":       false,
		"ipam_options":      map[string]string{"driver": "host-local"},
	}
	b, err := json.MarshalIndent(def, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.confDir, n.name+".json"), b, 0o600); err != nil {
		return fmt.Errorf("writing build network: %w", err)
	}
	conf := fmt.Sprintf("[network]\nnetwork_backend = \"netavark\"\nnetwork_config_dir = %q\n", n.confDir)
	if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("writing build containers.conf: %w", err)
	}
	return nil
}

// egressRuleset is the nftables script that (re)creates the shared table in
// one transaction. resolvers are the IPv4 DNS servers a build may query.
func egressRuleset(resolvers []netip.Addr) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\ntable inet %s {\n", egressTable, egressTable, egressTable)
	fmt.Fprintf(&b, "\tset blocked4 {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { %s }\n\t}\n",
		strings.Join(blockedEgressV4, ", "))
	b.WriteString("\tchain forward {\n\t\ttype filter hook forward priority filter - 10; policy accept;\n")
	if len(resolvers) > 0 {
		addrs := make([]string, len(resolvers))
		for i, a := range resolvers {
			addrs[i] = a.String()
		}
		fmt.Fprintf(&b, "\t\tiifname \"%s*\" ip daddr { %s } meta l4proto { tcp, udp } th dport 53 accept\n",
			filteredBridgePrefix, strings.Join(addrs, ", "))
	}
	fmt.Fprintf(&b, "\t\tiifname \"%s*\" meta nfproto ipv6 reject with icmpx type admin-prohibited\n", filteredBridgePrefix)
	fmt.Fprintf(&b, "\t\tiifname \"%s*\" ip daddr @blocked4 reject with icmpx type admin-prohibited\n", filteredBridgePrefix)
	b.WriteString("\t}\n")
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority filter - 10; policy accept;\n")
	fmt.Fprintf(&b, "\t\tiifname \"%s*\" reject with icmpx type admin-prohibited\n", filteredBridgePrefix)
	b.WriteString("\t}\n}\n")
	return b.String()
}

// installEgressFilter loads the ruleset with nft.
func installEgressFilter(ctx context.Context, nft string, resolvers []netip.Addr) error {
	cmd := exec.CommandContext(ctx, nft, "-f", "-")
	cmd.Stdin = strings.NewReader(egressRuleset(resolvers))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("installing the build egress filter (nft): %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// buildResolvers returns the IPv4 name servers RUN steps will be given. buildah
// copies the host's resolv.conf, leaving out loopback servers; when nothing
// is left it reads systemd-resolved's upstream list, and failing that uses
// public servers, which need no exception.
func buildResolvers(files ...string) []netip.Addr {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if addrs := parseNameservers(string(b)); len(addrs) > 0 {
			return addrs
		}
	}
	return nil
}

// parseNameservers returns the non-loopback IPv4 nameserver lines of a
// resolv.conf.
func parseNameservers(conf string) []netip.Addr {
	var out []netip.Addr
	sc := bufio.NewScanner(strings.NewReader(conf))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(fields[1])
		if err != nil || !a.Is4() || a.IsLoopback() || a.IsUnspecified() {
			continue
		}
		out = append(out, a)
	}
	return out
}

// setUpFilteredNetwork writes the builder's network and (re)installs the
// machine's egress filter. It runs at every start: the filter lives in the
// kernel and is gone after a reboot.
func (b *Builder) setUpFilteredNetwork(ctx context.Context) error {
	nft, err := exec.LookPath(b.cfg.NftPath)
	if err != nil {
		return fmt.Errorf("nft, for the filtered build network, not found (run make setup, or choose another --build-network): %w", err)
	}
	b.network = newFilteredNetwork(b.cfg)
	if err := b.network.write(); err != nil {
		return err
	}
	resolvers := buildResolvers(b.cfg.ResolvConf...)
	if err := installEgressFilter(ctx, nft, resolvers); err != nil {
		return err
	}
	b.logger.InfoContext(ctx, "build egress filtered", "bridge", b.network.bridge, "subnet", b.network.subnet,
		"dns", resolvers, "table", "inet "+egressTable)
	return nil
}
