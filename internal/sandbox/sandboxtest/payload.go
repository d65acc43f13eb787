package sandboxtest

import (
	"encoding/json"
	"testing"
)

// Payload instructs the test runner; it mirrors the payload type in
// testdata/runner/main.go (keep the two in step). Every field is optional
// and the steps run in field order.
type Payload struct {
	Stdout   string   `json:"stdout,omitempty"`
	Stderr   string   `json:"stderr,omitempty"`
	Progress []string `json:"progress,omitempty"` // JSON objects printed as SKIFF_PROGRESS: lines

	Env         []string `json:"env,omitempty"`          // variables to report
	PrintUID    bool     `json:"print_uid,omitempty"`    // (uid and gid are always reported)
	ProcVersion bool     `json:"proc_version,omitempty"` // report /proc/version
	Cwd         bool     `json:"cwd,omitempty"`
	Interfaces  bool     `json:"interfaces,omitempty"` // report network interface names
	Dial        string   `json:"dial,omitempty"`       // host:port to dial over TCP
	WriteFile   []string `json:"write_file,omitempty"` // paths to try writing
	ReadFile    []string `json:"read_file,omitempty"`  // paths to try reading

	Artifacts  map[string]string `json:"artifacts,omitempty"` // relative path -> content
	Symlinks   map[string]string `json:"symlinks,omitempty"`  // relative path -> link target
	ResultLink string            `json:"result_link,omitempty"`

	Flock *Flock `json:"flock,omitempty"`
	// Linger: a child outliving the runner appends to this artifact file
	// every millisecond until the sandbox stops it.
	Linger string `json:"linger,omitempty"`

	NoResult     bool   `json:"no_result,omitempty"`
	FailureClass string `json:"failure_class,omitempty"` // echoed into the result

	ExitUnlessResumed int      `json:"exit_unless_resumed,omitempty"` // exit code unless the payload has _resume
	Echo              []string `json:"echo,omitempty"`                // payload fields copied into the result

	ResultPad  int    `json:"result_pad,omitempty"` // bytes of padding in the result
	AllocMB    int    `json:"alloc_mb,omitempty"`
	FillMB     int    `json:"fill_mb,omitempty"`    // MiB written to scratch; a failed write exits 28
	FillCache  bool   `json:"fill_cache,omitempty"` // FillMB goes to the cache dir
	FillDir    string `json:"fill_dir,omitempty"`   // FillMB goes to this directory (a cache mount)
	ManyFiles  int    `json:"many_files,omitempty"` // empty files made in the artifact dir
	ForkBomb   bool   `json:"fork_bomb,omitempty"`  // start processes until that fails, then exit 1
	IgnoreTerm bool   `json:"ignore_term,omitempty"`
	SleepMS    int    `json:"sleep_ms,omitempty"`
	Exit       int    `json:"exit,omitempty"`
}

// Flock coordinates two runners through a lock file in the shared cache
// directory: the "hold" runner locks it, announces that in <name>.held and
// holds it for HoldMS; the "probe" runner waits for the announcement and
// tries a non-blocking lock, reporting "blocked" or "acquired".
type Flock struct {
	Role   string `json:"role"`
	Name   string `json:"name"`
	HoldMS int    `json:"hold_ms,omitempty"`
}

// Report is what the runner writes as its result.
type Report struct {
	Payload     json.RawMessage   `json:"payload"`
	Env         map[string]string `json:"env"`
	UID         int               `json:"uid"`
	GID         int               `json:"gid"`
	ProcVersion string            `json:"proc_version"`
	Cwd         string            `json:"cwd"`
	Interfaces  []string          `json:"interfaces"`
	DialError   string            `json:"dial_error"`
	DialOK      bool              `json:"dial_ok"`
	WriteErrors map[string]string `json:"write_errors"` // path -> error, "" when the write worked
	Reads       map[string]string `json:"reads"`        // path -> content, or "error: ..."
	Flock       string            `json:"flock"`
}

// Encode marshals p for Spec.Payload.
func (p Payload) Encode(t testing.TB) []byte {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DecodeReport parses a runner result.
func DecodeReport(t testing.TB, result []byte) Report {
	t.Helper()
	var r Report
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("decode runner report %q: %v", result, err)
	}
	return r
}
