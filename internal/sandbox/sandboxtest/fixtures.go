package sandboxtest

import (
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox"
)

// Fixtures is what the suite needs besides the driver.
type Fixtures struct {
	// RootFS holds the runner at RunnerPath; RunnerRootFS makes one.
	RootFS string
	// Grace is the driver's SIGTERM-to-SIGKILL grace period, so the suite
	// knows how long a stop may take. Keep it short in tests.
	Grace time.Duration
	// SharedLocks says advisory locks on the cache directory exclude
	// across concurrent attempts. gVisor keeps file locks inside each
	// sandbox, so it is false there.
	SharedLocks bool
	// Unisolated says the driver runs plain host processes: a child the
	// runner starts in its own session escapes it, and only a sandbox
	// (its own pid namespace, its cgroup) stops it with the runner.
	Unisolated bool
}

// Spec returns a spec that runs the runner with p, in fresh directories
// under t.TempDir(), with a unique attempt id and a one-minute timeout.
func (f Fixtures) Spec(t testing.TB, p Payload) sandbox.Spec {
	t.Helper()
	dir := t.TempDir()
	return sandbox.Spec{
		AttemptID: "att_" + strings.ToLower(rand.Text()),
		TaskID:    "tsk_" + strings.ToLower(rand.Text()),
		RootFS:    f.RootFS,
		Args:      []string{RunnerPath},
		Cwd:       "/",
		Payload:   p.Encode(t),
		WorkDir:   filepath.Join(dir, "attempt"),
		CacheDir:  filepath.Join(dir, "cache"),
		Timeout:   time.Minute,
	}
}
