package manifest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fullManifest uses every field; tests start from it and break one thing.
const fullManifest = `{
  "version": 1,
  "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
  "entrypoint": {"command": ["python3", "-m", "runner"], "env": {"PYTHONUNBUFFERED": "1", "HF_HOME": "/cache/hf"}},
  "build": {
    "dockerfile": "./docker/Dockerfile",
    "context": ".",
    "target": "runtime",
    "args": {"PYTHON_VERSION": "3.12"},
    "inputs": ["requirements.txt", "./src/"]
  },
  "validation": {"executables": ["/usr/bin/python3"], "files": ["/app/runner.py"]},
  "data_sources": [
    {"name": "gpt2", "source": "huggingface", "repo": "openai-community/gpt2",
     "revision": "607a30d783dfa663caf39e06633721c8d4cfcd7e", "include": ["*.json", "*.safetensors"],
     "mount_path": "/data/gpt2"},
    {"name": "vocab", "source": "url", "uri": "https://example.com/vocab.txt",
     "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "delivery": "mount",
     "mount_path": "/data/vocab.txt"}
  ],
  "cache_mounts": [{"name": "hf", "path": "/cache/hf", "seed": "cache-seed"}]
}`

// mutate parses fullManifest, applies edits and returns the JSON.
func mutate(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(fullManifest), &m); err != nil {
		t.Fatalf("fullManifest: %v", err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return out
}

// set puts v at a dotted path; "data_sources.0.name" indexes arrays. A nil
// v deletes the field.
func set(m map[string]any, dotted string, v any) {
	parts := strings.Split(dotted, ".")
	var cur any = m
	for _, p := range parts[:len(parts)-1] {
		switch c := cur.(type) {
		case map[string]any:
			if _, ok := c[p]; !ok {
				c[p] = map[string]any{}
			}
			cur = c[p]
		case []any:
			cur = c[atoi(p)]
		}
	}
	last := parts[len(parts)-1]
	obj := cur.(map[string]any)
	if v == nil {
		delete(obj, last)
		return
	}
	obj[last] = v
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

// problemsOf returns err as Problems or fails the test.
func problemsOf(t *testing.T, err error) Problems {
	t.Helper()
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("got error %v (%T), want manifest.Problems", err, err)
	}
	return ps
}

func hasProblem(ps Problems, field, substr string) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool {
		return p.Field == field && strings.Contains(p.Message, substr)
	})
}

func TestParseMinimal(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(Minimal))
	if err != nil {
		t.Fatalf("Parse(Minimal): %v", err)
	}
	got, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"runtime":{"kind":"oci","sandbox":"gvisor","workdir":"/app"},` +
		`"entrypoint":{"command":["/runner"]},"build":{"dockerfile":"Dockerfile","context":"."},` +
		`"validation":{"executables":[],"files":[]},"data_sources":[],"cache_mounts":[]}`
	if string(got) != want {
		t.Errorf("normalised manifest:\n got %s\nwant %s", got, want)
	}
}

func TestParseFull(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(fullManifest))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if m.Build.Dockerfile != "docker/Dockerfile" || !slices.Equal(m.Build.Inputs, []string{"requirements.txt", "src"}) {
		t.Errorf("build paths: got %q and %q, want them clean", m.Build.Dockerfile, m.Build.Inputs)
	}
	if m.Build.Target != "runtime" || m.Build.Args["PYTHON_VERSION"] != "3.12" {
		t.Errorf("build: got %+v", m.Build)
	}
	hf := m.DataSources[0]
	if hf.RepoType != RepoTypeModel || hf.Delivery != DeliveryMount || len(hf.Include) != 2 {
		t.Errorf("huggingface source defaults: got %+v, want repo_type model and delivery mount", hf)
	}
	if m.DataSources[1].SHA256 == "" || m.CacheMounts[0].Seed != "cache-seed" {
		t.Errorf("got %+v and %+v", m.DataSources[1], m.CacheMounts[0])
	}
	if !slices.Equal(m.Validation.Executables, []string{"/usr/bin/python3"}) || m.Entrypoint.Env["HF_HOME"] != "/cache/hf" {
		t.Errorf("got %+v and %+v", m.Validation, m.Entrypoint)
	}
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 2000)
	tests := []struct {
		name  string
		edit  func(m map[string]any)
		field string
		msg   string
	}{
		// version
		{"version missing", func(m map[string]any) { set(m, "version", nil) }, "version", "is required"},
		{"version 2", func(m map[string]any) { set(m, "version", 2) }, "version", "unsupported manifest version 2"},
		{"version fraction", func(m map[string]any) { set(m, "version", 1.5) }, "version", "must be an integer"},
		{"version string", func(m map[string]any) { set(m, "version", "1") }, "version", "must be an integer"},
		// unknown fields
		{"unknown top-level field", func(m map[string]any) { set(m, "entrypiont", map[string]any{}) }, "entrypiont", `unknown field "entrypiont" (did you mean "entrypoint"?)`},
		{"unknown field without a near name", func(m map[string]any) { set(m, "resources", 1) }, "resources", "the fields of the manifest are: version, runtime"},
		{"unknown nested field", func(m map[string]any) { set(m, "runtime.wordkir", "/x") }, "runtime.wordkir", `did you mean "workdir"?`},
		{"unknown data source field", func(m map[string]any) { set(m, "data_sources.0.mountpath", "/x") }, "data_sources[0].mountpath", `did you mean "mount_path"?`},
		{"unknown cache mount field", func(m map[string]any) { set(m, "cache_mounts.0.size", 1) }, "cache_mounts[0].size", "unknown field"},
		// runtime
		{"runtime missing", func(m map[string]any) { set(m, "runtime", nil) }, "runtime", "is required"},
		{"runtime not an object", func(m map[string]any) { set(m, "runtime", "oci") }, "runtime", "must be an object, got a string"},
		{"kind missing", func(m map[string]any) { set(m, "runtime.kind", nil) }, "runtime.kind", `is required; set it to "oci"`},
		{"kind not oci", func(m map[string]any) { set(m, "runtime.kind", "process") }, "runtime.kind", `must be "oci", got "process"`},
		{"sandbox missing", func(m map[string]any) { set(m, "runtime.sandbox", nil) }, "runtime.sandbox", "is required"},
		{"sandbox not gvisor", func(m map[string]any) { set(m, "runtime.sandbox", "runc") }, "runtime.sandbox", `must be "gvisor"`},
		{"workdir missing", func(m map[string]any) { set(m, "runtime.workdir", nil) }, "runtime.workdir", "is required"},
		{"workdir relative", func(m map[string]any) { set(m, "runtime.workdir", "app") }, "runtime.workdir", `absolute path inside the container, such as "/app"`},
		{"workdir not clean", func(m map[string]any) { set(m, "runtime.workdir", "/app/../srv/") }, "runtime.workdir", `write "/srv"`},
		{"workdir number", func(m map[string]any) { set(m, "runtime.workdir", 7) }, "runtime.workdir", "must be a string, got a number"},
		{"init commands", func(m map[string]any) {
			set(m, "runtime.init", map[string]any{"commands": []any{"pip install torch"}})
		}, "runtime.init.commands", "installs and setup belong in the Dockerfile"},
		{"init without commands", func(m map[string]any) { set(m, "runtime.init", map[string]any{}) }, "runtime.init", "belong in the Dockerfile"},
		{"services", func(m map[string]any) { set(m, "runtime.services", []any{"redis"}) }, "runtime.services", "not allowed for user projects"},
		// entrypoint
		{"entrypoint missing", func(m map[string]any) { set(m, "entrypoint", nil) }, "entrypoint", "is required"},
		{"command missing", func(m map[string]any) { set(m, "entrypoint.command", nil) }, "entrypoint.command", "is required"},
		{"command empty", func(m map[string]any) { set(m, "entrypoint.command", []any{}) }, "entrypoint.command", "must name the program"},
		{"command a string", func(m map[string]any) { set(m, "entrypoint.command", "python3 run.py") }, "entrypoint.command", "must be an array, got a string"},
		{"command empty argument", func(m map[string]any) { set(m, "entrypoint.command", []any{"python3", ""}) }, "entrypoint.command[1]", "must not be empty"},
		{"command non-string argument", func(m map[string]any) { set(m, "entrypoint.command", []any{"sleep", 5}) }, "entrypoint.command[1]", "must be a string, got a number"},
		{"command NUL", func(m map[string]any) { set(m, "entrypoint.command", []any{"a\x00b"}) }, "entrypoint.command[0]", "NUL"},
		{"command too long", func(m map[string]any) { set(m, "entrypoint.command", manyStrings(maxCommandArgs+1)) }, "entrypoint.command", "the limit is 256"},
		{"env bad name", func(m map[string]any) { set(m, "entrypoint.env", map[string]any{"1X": "a"}) }, "entrypoint.env.1X", "not a valid variable name"},
		{"env SKIFF_ name", func(m map[string]any) { set(m, "entrypoint.env", map[string]any{"SKIFF_TASK_PAYLOAD": "/x"}) }, "entrypoint.env.SKIFF_TASK_PAYLOAD", "reserved"},
		{"env skiff_ lower case", func(m map[string]any) { set(m, "entrypoint.env", map[string]any{"skiff_x": "1"}) }, "entrypoint.env.skiff_x", "reserved"},
		{"env non-string value", func(m map[string]any) { set(m, "entrypoint.env", map[string]any{"N": 1}) }, "entrypoint.env.N", "must be a string"},
		{"env not an object", func(m map[string]any) { set(m, "entrypoint.env", []any{"A=1"}) }, "entrypoint.env", "must be an object of strings"},
		{"env value too long", func(m map[string]any) {
			set(m, "entrypoint.env", map[string]any{"A": strings.Repeat("v", maxValueLen+1)})
		}, "entrypoint.env.A", "the limit is 4096"},
		// build
		{"build not an object", func(m map[string]any) { set(m, "build", "Dockerfile") }, "build", "must be an object"},
		{"dockerfile absolute", func(m map[string]any) { set(m, "build.dockerfile", "/Dockerfile") }, "build.dockerfile", "relative to the project root"},
		{"dockerfile climbing", func(m map[string]any) { set(m, "build.dockerfile", "../Dockerfile") }, "build.dockerfile", "'..' is not allowed"},
		{"dockerfile is the root", func(m map[string]any) { set(m, "build.dockerfile", "./") }, "build.dockerfile", "must name a file"},
		{"dockerfile empty", func(m map[string]any) { set(m, "build.dockerfile", "") }, "build.dockerfile", "must not be empty"},
		{"context climbing", func(m map[string]any) { set(m, "build.context", "a/../../b") }, "build.context", "'..'"},
		{"target invalid", func(m map[string]any) { set(m, "build.target", "-bad stage") }, "build.target", "not a valid build stage name"},
		{"arg bad name", func(m map[string]any) { set(m, "build.args", map[string]any{"A-B": "1"}) }, "build.args.A-B", "not a valid build argument name"},
		{"arg non-string", func(m map[string]any) { set(m, "build.args", map[string]any{"N": true}) }, "build.args.N", "must be a string, got a boolean"},
		{"input absolute", func(m map[string]any) { set(m, "build.inputs", []any{"/etc/passwd"}) }, "build.inputs[0]", "not absolute"},
		{"input twice", func(m map[string]any) { set(m, "build.inputs", []any{"src", "./src/"}) }, "build.inputs[1]", "already listed as build.inputs[0]"},
		{"input too long", func(m map[string]any) { set(m, "build.inputs", []any{long}) }, "build.inputs[0]", "the limit is 1024"},
		{"input control character", func(m map[string]any) { set(m, "build.inputs", []any{"a\nb"}) }, "build.inputs[0]", "control characters"},
		// validation
		{"validation commands", func(m map[string]any) { set(m, "validation.commands", []any{"python3 -c 'import torch'"}) }, "validation.commands", "declare validation.executables and validation.files"},
		{"executable relative", func(m map[string]any) { set(m, "validation.executables", []any{"python3"}) }, "validation.executables[0]", "absolute path"},
		{"file not clean", func(m map[string]any) { set(m, "validation.files", []any{"/app//runner.py"}) }, "validation.files[0]", `write "/app/runner.py"`},
		{"file twice", func(m map[string]any) { set(m, "validation.files", []any{"/a", "/a"}) }, "validation.files[1]", "already listed"},
		{"executables not an array", func(m map[string]any) { set(m, "validation.executables", "/bin/sh") }, "validation.executables", "must be an array"},
		// data sources
		{"data_sources not an array", func(m map[string]any) { set(m, "data_sources", map[string]any{}) }, "data_sources", "must be an array, got an object"},
		{"data source not an object", func(m map[string]any) { set(m, "data_sources", []any{"gpt2"}) }, "data_sources[0]", "must be an object"},
		{"data source name missing", func(m map[string]any) { set(m, "data_sources.0.name", nil) }, "data_sources[0].name", "is required"},
		{"data source name invalid", func(m map[string]any) { set(m, "data_sources.0.name", "GPT 2") }, "data_sources[0].name", "1-64 characters"},
		{"data source name reused", func(m map[string]any) { set(m, "data_sources.1.name", "gpt2") }, "data_sources[1].name", "already the name of data_sources[0]"},
		{"source missing", func(m map[string]any) { set(m, "data_sources.0.source", nil) }, "data_sources[0].source", `one of "huggingface", "url"`},
		{"source unknown", func(m map[string]any) { set(m, "data_sources.0.source", "s3") }, "data_sources[0].source", `got "s3"`},
		{"delivery other than mount", func(m map[string]any) { set(m, "data_sources.0.delivery", "copy") }, "data_sources[0].delivery", `must be "mount"`},
		{"mount_path missing", func(m map[string]any) { set(m, "data_sources.0.mount_path", nil) }, "data_sources[0].mount_path", "is required"},
		{"mount_path relative", func(m map[string]any) { set(m, "data_sources.0.mount_path", "data") }, "data_sources[0].mount_path", "absolute path"},
		{"mount_path reserved", func(m map[string]any) { set(m, "data_sources.0.mount_path", "/proc/x") }, "data_sources[0].mount_path", "reserved by the sandbox"},
		{"mount_path root", func(m map[string]any) { set(m, "data_sources.0.mount_path", "/") }, "data_sources[0].mount_path", "reserved by the sandbox"},
		{"mount_path hides workdir", func(m map[string]any) { set(m, "data_sources.0.mount_path", "/app") }, "data_sources[0].mount_path", "would hide runtime.workdir"},
		{"mount_path above workdir", func(m map[string]any) { set(m, "runtime.workdir", "/data/gpt2/app") }, "data_sources[0].mount_path", "would hide runtime.workdir"},
		{"mount paths nested", func(m map[string]any) { set(m, "data_sources.1.mount_path", "/data/gpt2/vocab.txt") }, "data_sources[1].mount_path", `overlaps data_sources[0].mount_path "/data/gpt2"`},
		{"repo missing", func(m map[string]any) { set(m, "data_sources.0.repo", nil) }, "data_sources[0].repo", "is required"},
		{"repo invalid", func(m map[string]any) { set(m, "data_sources.0.repo", "a/b/c") }, "data_sources[0].repo", "not a Hugging Face repo id"},
		{"revision missing", func(m map[string]any) { set(m, "data_sources.0.revision", nil) }, "data_sources[0].revision", "40-character commit id"},
		{"revision a branch", func(m map[string]any) { set(m, "data_sources.0.revision", "main") }, "data_sources[0].revision", "git ls-remote https://huggingface.co/openai-community/gpt2 HEAD"},
		{"revision of a dataset", func(m map[string]any) {
			set(m, "data_sources.0.revision", "v1")
			set(m, "data_sources.0.repo_type", "dataset")
		}, "data_sources[0].revision", "https://huggingface.co/datasets/openai-community/gpt2"},
		{"repo_type invalid", func(m map[string]any) { set(m, "data_sources.0.repo_type", "space") }, "data_sources[0].repo_type", `must be "model" or "dataset"`},
		{"token_env holds a token", func(m map[string]any) { set(m, "data_sources.0.token_env", "hf_abc-def") }, "data_sources[0].token_env", "never in the manifest"},
		{"token_env on a url source", func(m map[string]any) { set(m, "data_sources.1.token_env", "HF_TOKEN") }, "data_sources[1].token_env", `applies only to source "huggingface"`},
		{"include bad glob", func(m map[string]any) { set(m, "data_sources.0.include", []any{"[abc"}) }, "data_sources[0].include[0]", "not a valid glob"},
		{"include climbing", func(m map[string]any) { set(m, "data_sources.0.include", []any{"../x"}) }, "data_sources[0].include[0]", "'..'"},
		{"uri on huggingface", func(m map[string]any) { set(m, "data_sources.0.uri", "https://x") }, "data_sources[0].uri", `applies only to source "url"`},
		{"sha256 on huggingface", func(m map[string]any) { set(m, "data_sources.0.sha256", "x") }, "data_sources[0].sha256", `applies only to source "url"`},
		{"repo on url", func(m map[string]any) { set(m, "data_sources.1.repo", "a/b") }, "data_sources[1].repo", `applies only to source "huggingface"`},
		{"uri missing", func(m map[string]any) { set(m, "data_sources.1.uri", nil) }, "data_sources[1].uri", "is required"},
		{"uri relative", func(m map[string]any) { set(m, "data_sources.1.uri", "vocab.txt") }, "data_sources[1].uri", "absolute https URL"},
		{"uri ftp", func(m map[string]any) { set(m, "data_sources.1.uri", "ftp://example.com/x") }, "data_sources[1].uri", "absolute https URL"},
		{"uri with credentials", func(m map[string]any) { set(m, "data_sources.1.uri", "https://u:p@example.com/x") }, "data_sources[1].uri", "must not carry credentials"},
		{"http without sha256", func(m map[string]any) {
			set(m, "data_sources.1.uri", "http://example.com/x")
			set(m, "data_sources.1.sha256", nil)
		}, "data_sources[1].uri", "must use https, or come with a sha256"},
		{"sha256 invalid", func(m map[string]any) { set(m, "data_sources.1.sha256", "ABC") }, "data_sources[1].sha256", "64 lowercase hex"},
		{"too many data sources", func(m map[string]any) { set(m, "data_sources", manyObjects(maxDataSources+1)) }, "data_sources", "the limit is 32"},
		// cache mounts
		{"cache name missing", func(m map[string]any) { set(m, "cache_mounts.0.name", nil) }, "cache_mounts[0].name", "is required"},
		{"cache name reused", func(m map[string]any) {
			set(m, "cache_mounts", []any{map[string]any{"name": "a", "path": "/c1"}, map[string]any{"name": "a", "path": "/c2"}})
		}, "cache_mounts[1].name", "already the name of cache_mounts[0]"},
		{"cache path missing", func(m map[string]any) { set(m, "cache_mounts.0.path", nil) }, "cache_mounts[0].path", "is required"},
		{"cache path relative", func(m map[string]any) { set(m, "cache_mounts.0.path", ".cache") }, "cache_mounts[0].path", "absolute path"},
		{"cache path reserved", func(m map[string]any) { set(m, "cache_mounts.0.path", "/dev/shm") }, "cache_mounts[0].path", "reserved"},
		{"cache path on a data mount", func(m map[string]any) { set(m, "cache_mounts.0.path", "/data/gpt2") }, "cache_mounts[0].path", "overlaps data_sources[0].mount_path"},
		{"cache seed absolute", func(m map[string]any) { set(m, "cache_mounts.0.seed", "/seed") }, "cache_mounts[0].seed", "not absolute"},
		{"too many cache mounts", func(m map[string]any) { set(m, "cache_mounts", manyObjects(maxCacheMounts+1)) }, "cache_mounts", "the limit is 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse(mutate(t, tt.edit))
			if m != nil {
				t.Errorf("got a manifest alongside the error")
			}
			ps := problemsOf(t, err)
			if !hasProblem(ps, tt.field, tt.msg) {
				t.Errorf("problems: got %q, want one for %q containing %q", ps.Details(), tt.field, tt.msg)
			}
		})
	}
}

func manyStrings(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = "x"
	}
	return out
}

func manyObjects(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{}
	}
	return out
}

func TestParseCollectsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"version": 2, "runtime": {"kind": "docker", "sandbox": "gvisor", "workdir": "app"},
		"entrypoint": {"command": []}, "extra": true}`))
	ps := problemsOf(t, err)
	want := []string{"extra", "version", "runtime.kind", "runtime.workdir", "entrypoint.command"}
	var got []string
	for _, p := range ps {
		got = append(got, p.Field)
	}
	if !slices.Equal(got, want) {
		t.Errorf("fields: got %q, want %q (details %q)", got, want, ps.Details())
	}
	if !strings.HasPrefix(err.Error(), "invalid skiff.project.json: extra: unknown field") {
		t.Errorf("Error(): got %q", err.Error())
	}
}

func TestParseDocument(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		msg  string // "" means the document parses
	}{
		{"byte order mark", "\xef\xbb\xbf" + Minimal, ""},
		{"empty", "", "is empty; the smallest valid manifest is"},
		{"whitespace", " \n", "is empty"},
		{"syntax error position", "{\n  \"version\": 1,\n  \"runtime\": {,\n}", "invalid JSON at line 3, column 15"},
		{"trailing comma", `{"version": 1,}`, "invalid JSON at line 1"},
		{"array", `[1]`, "must hold a JSON object, got an array"},
		{"null", `null`, "must hold a JSON object, got null"},
		{"two documents", Minimal + Minimal, "invalid JSON"},
		{"too large", `{"pad": "` + strings.Repeat(" ", MaxSize) + `"}`, "the limit is 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.data))
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			ps := problemsOf(t, err)
			if len(ps) != 1 || ps[0].Field != "" || !strings.Contains(ps[0].Message, tt.msg) {
				t.Errorf("got %q, want one file-level problem containing %q", ps.Details(), tt.msg)
			}
		})
	}
}

func TestParseNullMeansAbsent(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(`{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
		"entrypoint": {"command": ["/runner"], "env": null}, "build": null, "validation": null,
		"data_sources": null, "cache_mounts": null}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if m.Build.Dockerfile != DefaultDockerfile || m.DataSources == nil {
		t.Errorf("got %+v, want the defaults", m)
	}
}

func TestMissingFile(t *testing.T) {
	t.Parallel()
	ps := problemsOf(t, MissingFile())
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "no skiff.project.json") || !strings.Contains(ps[0].Message, Minimal) {
		t.Errorf("got %q, want a message naming the file and quoting the minimal manifest", ps.Details())
	}
	if ps.RecommendedAction() == "" {
		t.Errorf("RecommendedAction: got empty")
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"entrypiont", "entrypoint", 2}, {"workdir", "wordkir", 2}, {"kind", "kind", 0}} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q): got %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
