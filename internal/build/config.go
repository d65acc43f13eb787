package build

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// DefaultRunscPath is where scripts/setup.sh installs the pinned runsc. The
// Debian package's runsc (/usr/bin/runsc) is too old to serve as buildah's
// runtime: its first RUN step fails with "context deadline exceeded".
const DefaultRunscPath = "/usr/local/lib/skiff/runsc"

// DefaultBuildahPath is where scripts/setup.sh installs the pinned upstream
// buildah (v1.42.1). Debian 12's /usr/bin/buildah is 1.28.2, which has
// CVE-2024-1753 (a RUN --mount from a stage whose path is a symlink to /
// binds the build host's root), CVE-2024-9407 and CVE-2024-11218 unfixed:
// never run untrusted Dockerfiles with it.
const DefaultBuildahPath = "/usr/local/lib/skiff/buildah"

// Isolation values. See Config.Isolation.
const (
	IsolationOCI    = "oci"
	IsolationChroot = "chroot"
)

// Network values. See Config.Network.
const (
	NetworkFiltered = "filtered"
	NetworkOpen     = "open"
	NetworkNone     = "none"
	NetworkHost     = "host"
	// NetworkPrivate is the old name of NetworkOpen, still accepted.
	NetworkPrivate = "private"
)

// Config is how the operator runs builds. The zero value of every field but
// StorageRoot and ImagesDir means "the default"; withDefaults fills them in
// one place.
type Config struct {
	// BuildahPath is the buildah executable, a name looked up on PATH or an
	// absolute path. Default DefaultBuildahPath, the pinned upstream build.
	BuildahPath string

	// RunscPath is the runsc that buildah uses as the OCI runtime of RUN steps.
	// It must be a current runsc (see DefaultRunscPath). Default
	// DefaultRunscPath. Unused with IsolationChroot.
	RunscPath string

	// RuntimeFlags are extra global runsc flags, without the leading dashes
	// ("platform=ptrace"). The builder already sets root=, overlay2=none
	// (which must stay: see budArgs) and, for NetworkNone and NetworkHost,
	// network=.
	RuntimeFlags []string

	// StorageRoot is buildah's --root (e.g. <data-dir>/buildah/storage). The
	// builder owns it exclusively: after a killed build it removes every
	// working container found there. Required, absolute.
	StorageRoot string

	// RunRoot is buildah's --runroot, and runsc's state lives in its runsc/
	// subdirectory. It should be on a tmpfs so that a reboot clears stale mount
	// state. Default /run/skiff/buildah-<hash of StorageRoot>, which keeps two
	// servers on one machine apart and stays short (runsc's unix socket paths
	// must fit in 108 bytes).
	RunRoot string

	// TmpDir is buildah's TMPDIR: the OCI bundles of RUN steps and other
	// scratch. Default <dir of StorageRoot>/tmp. It is emptied after every
	// build, so it must not be shared with anything else.
	TmpDir string

	// ImagesDir holds one OCI image layout per manifest digest,
	// <ImagesDir>/<hex>/, with uncompressed layers, plus the blob pool .pool/
	// that they hard-link into (layout.go). Required, absolute.
	ImagesDir string

	// Isolation is how RUN steps are isolated. IsolationOCI (the default)
	// runs them in gVisor with runsc as buildah's runtime. IsolationChroot is
	// not a sandbox (root, host network): only for trusted development, and it
	// has to be chosen explicitly.
	Isolation string

	// Network is what RUN steps can reach (egress.go). NetworkFiltered (the
	// default) is a bridge of the builder's own with NAT and gVisor's network
	// stack, behind an nftables filter: the public internet answers (package
	// installs work); link-local (the cloud metadata address), private,
	// CGNAT and loopback ranges, all IPv6 and the build host's own addresses
	// do not. NetworkOpen is buildah's default bridge with no filter: the
	// metadata address and private networks answer. NetworkNone leaves only
	// loopback. NetworkHost shares the host's network, including 127.0.0.1
	// (databases, the controller's own ports): trusted builds only.
	Network string

	// NftPath is the nft executable that installs the filter of
	// NetworkFiltered. Default "nft" on PATH.
	NftPath string

	// ResolvConf lists the resolv.conf files whose name servers a filtered
	// build may query on port 53, the first with any non-loopback IPv4 server
	// winning (buildah gives RUN steps the host's). Default /etc/resolv.conf,
	// then systemd-resolved's upstream list.
	ResolvConf []string

	// MemoryLimit is buildah's --memory for each RUN step, e.g. "2g". It also
	// covers gVisor's own sentry and gofer. Default "2g". Each of the Workers
	// builds has its own: together they may use Workers x MemoryLimit.
	MemoryLimit string

	// CPUs caps each RUN step's CPU time in cores (a cgroup CPU quota that
	// runsc applies to the whole sandbox). Default DefaultBuildCPUs: half the
	// machine's cores, at least one, so a build cannot starve the controller
	// and the tasks beside it.
	CPUs float64

	// Workers is how many builds run at once (buildah bud, export and
	// validation), each in a slot with its own runsc root and TMPDIR; more
	// wait their turn. 1 to MaxWorkers; default 1. The memory and CPU caps
	// are per build.
	Workers int

	// PullPolicy is buildah's --pull for base images: "missing" (default),
	// "never" or "always".
	PullPolicy string

	// AllowedBaseImages lists the image references a Dockerfile may name in
	// FROM, COPY --from and RUN --mount from=, besides "scratch" and its own
	// stages. An entry is an exact reference or a prefix ending in "*"
	// ("docker.io/library/*"). Empty means only scratch. Image IDs are never
	// allowed: every project's layers share StorageRoot, so an ID would read
	// another project's image.
	AllowedBaseImages []string

	// DefaultTimeout bounds a build whose Request has no Timeout. Default
	// 600 s, the spec's default setup_timeout_s.
	DefaultTimeout time.Duration

	// WaitDelay is how long to wait for buildah's output pipes to close after
	// it has been killed before giving up on them. Default 10 s.
	WaitDelay time.Duration
}

// MaxWorkers bounds Config.Workers: each running RUN step takes an address
// of the filtered build network, a /28 with 13 to hand out; and on the
// small machines Skiff targets more builds at once only slow each other.
const MaxWorkers = 8

const (
	defaultNftPath       = "nft"
	defaultMemoryLimit   = "2g"
	defaultPullPolicy    = "missing"
	defaultTimeout       = 600 * time.Second
	defaultWaitDelay     = 10 * time.Second
	defaultRunRootParent = "/run/skiff"
	runscStateDirName    = "runsc"
)

// DefaultBuildCPUs is the default CPU cap of a RUN step on a machine with
// the given number of cores: half of them, at least one.
func DefaultBuildCPUs(cores int) float64 {
	return float64(max(1, cores/2))
}

// withDefaults returns cfg with every unset field filled in.
func (cfg Config) withDefaults() Config {
	if cfg.BuildahPath == "" {
		cfg.BuildahPath = DefaultBuildahPath
	}
	if cfg.RunscPath == "" {
		cfg.RunscPath = DefaultRunscPath
	}
	if cfg.RunRoot == "" && cfg.StorageRoot != "" {
		cfg.RunRoot = DefaultRunRoot(cfg.StorageRoot)
	}
	if cfg.TmpDir == "" && cfg.StorageRoot != "" {
		cfg.TmpDir = filepath.Join(filepath.Dir(filepath.Clean(cfg.StorageRoot)), "tmp")
	}
	if cfg.Isolation == "" {
		cfg.Isolation = IsolationOCI
	}
	switch cfg.Network {
	case "":
		cfg.Network = NetworkFiltered
	case NetworkPrivate:
		cfg.Network = NetworkOpen
	}
	if cfg.NftPath == "" {
		cfg.NftPath = defaultNftPath
	}
	if cfg.ResolvConf == nil {
		cfg.ResolvConf = []string{"/etc/resolv.conf", "/run/systemd/resolve/resolv.conf"}
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = DefaultBuildCPUs(runtime.NumCPU())
	}
	if cfg.MemoryLimit == "" {
		cfg.MemoryLimit = defaultMemoryLimit
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.PullPolicy == "" {
		cfg.PullPolicy = defaultPullPolicy
	}
	if cfg.DefaultTimeout == 0 {
		cfg.DefaultTimeout = defaultTimeout
	}
	if cfg.WaitDelay == 0 {
		cfg.WaitDelay = defaultWaitDelay
	}
	return cfg
}

var memoryLimitPattern = regexp.MustCompile(`^[1-9][0-9]*[bkmgBKMG]?$`)

// Validate reports every problem with cfg at once. It checks cfg as given, so
// call it on a Config whose defaults are filled in (New does both).
func (cfg Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for _, d := range []struct{ name, dir string }{
		{"storage root", cfg.StorageRoot}, {"run root", cfg.RunRoot},
		{"tmp dir", cfg.TmpDir}, {"images dir", cfg.ImagesDir},
	} {
		if !filepath.IsAbs(d.dir) {
			add("%s %q must be an absolute path", d.name, d.dir)
		}
	}
	if cfg.BuildahPath == "" {
		add("buildah path is empty")
	}
	switch cfg.Isolation {
	case IsolationOCI:
		if cfg.RunscPath == "" {
			add("runsc path is empty")
		}
	case IsolationChroot:
	default:
		add("isolation %q: want %q or %q", cfg.Isolation, IsolationOCI, IsolationChroot)
	}
	switch cfg.Network {
	case NetworkFiltered, NetworkOpen, NetworkNone, NetworkHost:
	default:
		add("network %q: want %q, %q, %q or %q", cfg.Network, NetworkFiltered, NetworkOpen, NetworkNone, NetworkHost)
	}
	if !memoryLimitPattern.MatchString(cfg.MemoryLimit) {
		add("memory limit %q: want a number with an optional b, k, m or g suffix", cfg.MemoryLimit)
	}
	if cfg.Workers < 1 || cfg.Workers > MaxWorkers {
		add("workers %d: want 1 to %d", cfg.Workers, MaxWorkers)
	}
	if cfg.CPUs < 0.01 {
		add("cpus %v: want at least 0.01", cfg.CPUs)
	}
	switch cfg.PullPolicy {
	case "missing", "never", "always":
	default:
		add("pull policy %q: want missing, never or always", cfg.PullPolicy)
	}
	for _, flag := range cfg.RuntimeFlags {
		if flag == "" || strings.HasPrefix(flag, "-") {
			add("runtime flag %q: give it without leading dashes", flag)
		}
	}
	for _, pattern := range cfg.AllowedBaseImages {
		if err := checkAllowPattern(pattern); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.DefaultTimeout < 0 {
		add("default timeout %v must be positive", cfg.DefaultTimeout)
	}
	if cfg.WaitDelay < 0 {
		add("wait delay %v must be positive", cfg.WaitDelay)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("build config: %w", err)
	}
	return nil
}

// DefaultRunRoot is the run root of a builder whose storage root is
// storageRoot and that names none: a directory of its own under /run/skiff,
// so that two servers on one machine never share buildah's or runsc's state.
func DefaultRunRoot(storageRoot string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(storageRoot)))
	return filepath.Join(defaultRunRootParent, "buildah-"+hex.EncodeToString(sum[:4]))
}
