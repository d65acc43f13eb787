package agent_test

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/datasrc"
	"github.com/skiffhq/skiff/internal/agent/datasrc/datasrctest"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor/gvisortest"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// TestAgentGVisorMounts runs tasks in real gVisor sandboxes with a url and
// a hub data source (served by the stand-in) and a cache mount: the data
// is read-only at its mount paths and fetched once for the host; what one
// task writes to the cache mount the project's next task reads, and
// another project does not see it; a wrong digest fails as a host error
// that names the source. Not parallel, like TestAgentGVisor.
func TestAgentGVisorMounts(t *testing.T) {
	d := gvisortest.Driver(t, "skiff-agent-mounts")
	img := newImage(t)
	srv := datasrctest.Start(t)
	weights := []byte(strings.Repeat("w", 10_000))
	sum := sha256.Sum256(weights)
	srv.Files["/w.bin"] = weights
	const commit = "0123456789abcdef0123456789abcdef01234567"
	srv.Repos[datasrctest.RepoKey("model", "acme/tiny", commit)] = []datasrctest.File{
		{Path: "config.json", Content: []byte(`{"layers":2}`)},
		{Path: "weights/model.safetensors", Content: []byte("tensor bytes"), LFS: true},
	}
	cache, err := datasrc.New(datasrc.Config{Root: filepath.Join(t.TempDir(), "data"), HubEndpoint: srv.URL,
		AllowPrivate: true, MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fc := newFakeController(t)
	startAgent(t, fc, d, img, func(c *agent.Config) { c.DataSources = cache })

	sources := []agentproto.DataSource{
		{Name: "weights", Source: agentproto.DataSourceURL, URI: srv.URL + "/w.bin", SHA256: hex.EncodeToString(sum[:]), MountPath: "/data/w.bin"},
		{Name: "tiny", Source: agentproto.DataSourceHuggingFace, Repo: "acme/tiny", RepoType: "model", Revision: commit, MountPath: "/models/tiny"},
	}
	caches := []agentproto.CacheMount{{Name: "kernels", Path: "/cache/kernels"}}
	run := func(project string, p sandboxtest.Payload) (*agentproto.Outcome, sandboxtest.Report) {
		t.Helper()
		asg := assignment(t, img, p)
		asg.ProjectID, asg.DataSources, asg.CacheMounts = project, sources, caches
		fc.assign(asg)
		o, _ := fc.finished(asg.AttemptID)
		if o.ExitCode != 0 || o.HostError != "" || o.SandboxError != "" {
			t.Fatalf("outcome: got %+v, want exit 0", o)
		}
		return o, sandboxtest.DecodeReport(t, o.Result)
	}

	_, r := run("prj_1", sandboxtest.Payload{
		ReadFile:  []string{"/data/w.bin", "/models/tiny/config.json", "/models/tiny/weights/model.safetensors"},
		WriteFile: []string{"/data/w.bin", "/models/tiny/new.txt", "/cache/kernels/built"},
	})
	if r.Reads["/data/w.bin"] != string(weights) || r.Reads["/models/tiny/config.json"] != `{"layers":2}` ||
		r.Reads["/models/tiny/weights/model.safetensors"] != "tensor bytes" {
		t.Errorf("reads: got %v, want the sources' bytes", r.Reads)
	}
	for _, p := range []string{"/data/w.bin", "/models/tiny/new.txt"} {
		if r.WriteErrors[p] == "" {
			t.Errorf("write %s: it worked, want a data source to be read-only", p)
		}
	}
	if e := r.WriteErrors["/cache/kernels/built"]; e != "" {
		t.Errorf("write to the cache mount: %s", e)
	}

	_, r = run("prj_1", sandboxtest.Payload{ReadFile: []string{"/cache/kernels/built", "/data/w.bin"}})
	if r.Reads["/cache/kernels/built"] != "x" {
		t.Errorf("the project's next task: got %q, want the file the first wrote", r.Reads["/cache/kernels/built"])
	}
	if n := srv.Count("/w.bin"); n != 1 {
		t.Errorf("downloads of the url source: got %d, want 1 for the host", n)
	}

	_, r = run("prj_2", sandboxtest.Payload{ReadFile: []string{"/cache/kernels/built"}})
	if got := r.Reads["/cache/kernels/built"]; !strings.HasPrefix(got, "error:") {
		t.Errorf("another project's task: got %q, want no such file", got)
	}

	bad := assignment(t, img, sandboxtest.Payload{})
	bad.DataSources = []agentproto.DataSource{{Name: "weights", Source: agentproto.DataSourceURL, URI: srv.URL + "/w.bin",
		SHA256: strings.Repeat("0", 64), MountPath: "/data/w.bin"}}
	fc.assign(bad)
	o, evs := fc.finished(bad.AttemptID)
	if !strings.Contains(o.HostError, `data source "weights"`) || !strings.Contains(o.HostError, "sha256") {
		t.Errorf("wrong digest: got host error %q, want one naming the source and the digest", o.HostError)
	}
	for _, ev := range evs {
		if ev.Kind == agentproto.EventStarted {
			t.Errorf("wrong digest: the attempt reported started, want no runner start (nothing to bill)")
		}
	}
}
