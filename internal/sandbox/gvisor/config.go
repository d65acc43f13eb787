package gvisor

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// Defaults filled in by Config.withDefaults.
const (
	DefaultRunscPath    = "/usr/local/lib/skiff/runsc"
	DefaultStateDir     = "/run/skiff/runsc"
	DefaultPlatform     = "systrap"
	DefaultCgroupParent = "skiff"
	// DefaultCgroupRegistry is machine-wide: every driver on the machine
	// must use the same one to find the parents of dead ones.
	DefaultCgroupRegistry = "/run/skiff/cgroups"
	DefaultGrace          = 5 * time.Second
	DefaultKillWait       = 10 * time.Second
	DefaultWaitDelay      = 5 * time.Second
	DefaultNoFile         = 4096
	// DefaultPidsOverhead: the pids cgroup counts the sandbox's host
	// threads (sentry, gofer, systrap stubs), 31 for an idle Go runner on 2
	// cores and more on bigger hosts; a sandbox started under 32 fails with
	// exit 128 before the runner runs.
	DefaultPidsOverhead = 128
)

// Config configures the gvisor driver. The zero value (with a logger) is a
// working production configuration.
type Config struct {
	// RunscPath is the pinned runsc binary. Debian's runsc is too old (no
	// systrap); setup installs a current one at DefaultRunscPath.
	RunscPath string
	// StateDir is runsc's --root: its container state, owned by this driver
	// alone. Cleanup deletes every container it finds there.
	StateDir string
	// WarmDir holds the warm sandboxes' directories, which are renamed to
	// their attempts' work directories: it must be on the work
	// directories' filesystem. Empty means StateDir + ".warm".
	WarmDir string
	// Platform is runsc's --platform: "systrap" (default) or "ptrace".
	// "kvm" is refused: it hangs on the hosts we run on.
	Platform string
	// CgroupParent names the cgroup directory that holds one child per
	// attempt (linux.cgroupsPath = /<CgroupParent>/<attempt id>). Cleanup
	// removes empty children of it and then the parent itself, so give
	// each driver its own.
	CgroupParent string
	// CgroupRegistry is where the driver claims CgroupParent for the life
	// of its process, and where Cleanup finds the parents of drivers that
	// were killed and removes their cgroups (cgroupowner.go).
	CgroupRegistry string
	// ExtraFlags are added to every runsc invocation before the subcommand
	// (e.g. "--debug", "--debug-log=/var/log/runsc/"). Flags this driver
	// owns (--root, --platform, --network) are refused.
	ExtraFlags []string

	// Grace is how long a runner gets between SIGTERM and SIGKILL when it
	// is stopped for a timeout or cancellation.
	Grace time.Duration
	// KillWait is how long after SIGKILL the driver waits before it kills
	// `runsc run` itself and force-deletes the container.
	KillWait time.Duration
	// WaitDelay bounds how long stdout/stderr may stay open after `runsc
	// run` exits (exec.Cmd.WaitDelay).
	WaitDelay time.Duration
	// NoFile is the runner's RLIMIT_NOFILE (soft and hard).
	NoFile uint64
	// PidsOverhead is added to Spec.PidsLimit for the sandbox's own
	// threads, so that the limit approximates what the runner can use.
	PidsOverhead int64

	// Egress, when set, gives attempts with Spec.Network a network
	// namespace to use; without it such attempts are refused. The driver
	// never lets runsc's sandbox network use the host's namespace: runsc
	// moves the IP addresses of the namespace it copies into the sandbox,
	// which would take the host's own addresses away.
	Egress Egress

	Logger *slog.Logger
}

// withDefaults returns c with every unset field filled in.
func (c Config) withDefaults() Config {
	if c.RunscPath == "" {
		c.RunscPath = DefaultRunscPath
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.WarmDir == "" {
		c.WarmDir = c.StateDir + ".warm"
	}
	if c.Platform == "" {
		c.Platform = DefaultPlatform
	}
	if c.CgroupParent == "" {
		c.CgroupParent = DefaultCgroupParent
	}
	if c.CgroupRegistry == "" {
		c.CgroupRegistry = DefaultCgroupRegistry
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.KillWait == 0 {
		c.KillWait = DefaultKillWait
	}
	if c.WaitDelay == 0 {
		c.WaitDelay = DefaultWaitDelay
	}
	if c.NoFile == 0 {
		c.NoFile = DefaultNoFile
	}
	if c.PidsOverhead == 0 {
		c.PidsOverhead = DefaultPidsOverhead
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks a configuration after defaults are applied.
func (c Config) Validate() error {
	var errs []error
	if !filepath.IsAbs(c.RunscPath) {
		errs = append(errs, fmt.Errorf("runsc path %q: must be absolute", c.RunscPath))
	}
	if !filepath.IsAbs(c.StateDir) {
		errs = append(errs, fmt.Errorf("state dir %q: must be absolute", c.StateDir))
	}
	switch c.Platform {
	case "systrap", "ptrace":
	case "kvm":
		errs = append(errs, errors.New(`platform "kvm": refused, it hangs on our hosts; use systrap`))
	default:
		errs = append(errs, fmt.Errorf("platform %q: want systrap or ptrace", c.Platform))
	}
	if !sandbox.ValidAttemptID(c.CgroupParent) {
		errs = append(errs, fmt.Errorf("cgroup parent %q: want one path component of [A-Za-z0-9_.-]", c.CgroupParent))
	}
	for _, f := range c.ExtraFlags {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if slices.Contains([]string{"root", "platform", "network", "ignore-cgroups", "rootless"}, name) {
			errs = append(errs, fmt.Errorf("extra flag %q: set by the driver (or unsafe), not configurable", f))
		}
	}
	if c.Grace < 0 || c.KillWait < 0 || c.WaitDelay < 0 || c.PidsOverhead < 0 {
		errs = append(errs, errors.New("durations and overheads: must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid gvisor config: %w", err)
	}
	return nil
}
