package build

import (
	"strings"
	"testing"
)

func TestParseDockerfile(t *testing.T) {
	t.Parallel()
	src := "# escape=`\n" +
		"FROM scratch AS base\n" +
		"# a comment\n" +
		"COPY --from=base `\n" +
		"  # comment inside a continuation\n" +
		"  /a /b\n" +
		"\n" +
		"run [\"x\"]\n"
	got := parseDockerfile(src)
	want := []dockerfileInstruction{
		{line: 2, cmd: "FROM", args: "scratch AS base"},
		{line: 4, cmd: "COPY", args: "--from=base   /a /b"},
		{line: 8, cmd: "RUN", args: `["x"]`},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d instructions %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("instruction %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestPolicyCheckDockerfile(t *testing.T) {
	t.Parallel()
	policy := imagePolicy{allowed: []string{"localhost/debian:bookworm", "docker.io/library/*"}}
	tests := []struct {
		name       string
		dockerfile string
		wantIn     []string // substrings of the problems; none means allowed
	}{
		{name: "scratch", dockerfile: "FROM scratch\nCOPY a /a\n"},
		{name: "allowed exact", dockerfile: "FROM localhost/debian:bookworm\nRUN apt-get update\n"},
		{name: "allowed prefix", dockerfile: "FROM docker.io/library/python:3.12-slim\n"},
		{name: "platform flag", dockerfile: "FROM --platform=linux/amd64 localhost/debian:bookworm AS b\n"},
		{name: "stage by name and index", dockerfile: "FROM scratch AS Build\nCOPY x /x\nFROM scratch\nCOPY --from=build /x /x\nCOPY --from=0 /x /y\n"},
		{name: "bind mount of the context", dockerfile: "FROM localhost/debian:bookworm\nRUN --mount=type=bind,source=.,target=/src make\n"},
		{name: "not allowed", dockerfile: "FROM localhost/skiff/other\n", wantIn: []string{`line 1: image "localhost/skiff/other" is not an allowed base image`}},
		{name: "image id prefix in COPY --from", dockerfile: "FROM scratch\nCOPY --from=d3c4 / /\n", wantIn: []string{`line 2: image "d3c4" looks like an image ID`}},
		{name: "image id in FROM", dockerfile: "FROM sha256:0123abcd\n", wantIn: []string{"looks like an image ID"}},
		{name: "quoted from", dockerfile: "FROM scratch\nCOPY --from=\"d3c4\" / /\n", wantIn: []string{`"d3c4" looks like an image ID`}},
		{name: "variable", dockerfile: "ARG BASE=localhost/debian:bookworm\nFROM $BASE\n", wantIn: []string{"uses a variable"}},
		{name: "stage index out of range", dockerfile: "FROM scratch\nCOPY --from=1 / /\n", wantIn: []string{`"1" is not an earlier build stage`}},
		{name: "add url", dockerfile: "FROM scratch\nADD https://example.com/x.tgz /x\n", wantIn: []string{"ADD https://example.com/x.tgz: fetching URLs is not allowed"}},
		{name: "add url json", dockerfile: "FROM scratch\nADD [\"http://169.254.169.254/\", \"/m\"]\n", wantIn: []string{"fetching URLs"}},
		{name: "cache mount", dockerfile: "FROM scratch\nRUN --mount=type=cache,target=/root/.cache [\"x\"]\n", wantIn: []string{"type=cache is not supported"}},
		{name: "mount from another image", dockerfile: "FROM scratch\nRUN --mount=type=bind,from=abc,target=/o [\"x\"]\n", wantIn: []string{`line 2: RUN --mount from=abc is not allowed`}},
		{name: "secret mount", dockerfile: "FROM scratch\nRUN --mount=type=secret,id=x [\"x\"]\n", wantIn: []string{"type=secret is not supported"}},
		{name: "run flag unknown", dockerfile: "FROM scratch\nRUN --device=/dev/kvm [\"x\"]\n", wantIn: []string{"line 2: RUN --device is not allowed"}},
		{name: "run network host", dockerfile: "FROM scratch\nRUN --network=host [\"x\"]\n", wantIn: []string{"RUN --network=host is not allowed"}},
		{name: "onbuild", dockerfile: "FROM scratch\nONBUILD COPY --from=beef / /\n", wantIn: []string{`"beef" looks like an image ID`}},
		{name: "lowercase and continuation", dockerfile: "from \\\n  scratch\ncopy \\\n --from=cafe / /\n", wantIn: []string{`line 3: image "cafe" looks like an image ID`}},
		{name: "every problem reported", dockerfile: "FROM evil/one\nFROM evil/two\n", wantIn: []string{"evil/one", "evil/two"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			problems := policy.checkDockerfile(tt.dockerfile)
			if len(tt.wantIn) == 0 {
				if len(problems) > 0 {
					t.Fatalf("got problems %q, want none", problems)
				}
				return
			}
			joined := strings.Join(problems, "\n")
			for _, want := range tt.wantIn {
				if !strings.Contains(joined, want) {
					t.Errorf("got problems %q, want one containing %q", problems, want)
				}
			}
		})
	}
}

func TestPolicyEmptyAllowsOnlyScratch(t *testing.T) {
	t.Parallel()
	problems := imagePolicy{}.checkDockerfile("FROM localhost/debian:bookworm\n")
	if len(problems) != 1 || !strings.Contains(problems[0], "only FROM scratch is allowed here") {
		t.Fatalf("got %q, want one problem saying only scratch is allowed", problems)
	}
}

func TestCheckAllowPattern(t *testing.T) {
	t.Parallel()
	for pattern, ok := range map[string]bool{
		"localhost/debian:bookworm": true,
		"docker.io/library/*":       true,
		"debian:*":                  true,
		"*":                         false,
		"abc*":                      false,
		"docker.io/*/x":             false,
		"$BASE":                     false,
		"":                          false,
	} {
		if err := checkAllowPattern(pattern); (err == nil) != ok {
			t.Errorf("checkAllowPattern(%q) = %v, want ok=%v", pattern, err, ok)
		}
	}
}

// TestPolicyRunMount: RUN --mount may only bind the build context or mount a
// tmpfs, with a short list of keys; everything else is refused with its line.
func TestPolicyRunMount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		mount string
		want  string // a substring of the one problem; "" means allowed
	}{
		{name: "bind context", mount: "type=bind,source=.,target=/src"},
		{name: "bind default type", mount: "source=go.mod,target=/m"},
		{name: "bind ro", mount: "type=bind,source=a,target=/a,ro"},
		{name: "bind readonly true", mount: "type=bind,source=a,target=/a,readonly=true"},
		{name: "bind quoted values", mount: `type="bind",source="a",target="/a"`},
		{name: "tmpfs", mount: "type=tmpfs,target=/tmp/x"},
		{name: "tmpfs size", mount: "type=tmpfs,target=/t,size=64m"},
		{name: "upper case keys", mount: "TYPE=BIND,Source=a,Target=/a"},
		{name: "from a stage", mount: "type=bind,from=s,source=/rootdir,target=/host", want: "RUN --mount from=s is not allowed"},
		{name: "from scratch", mount: "type=bind,from=scratch,target=/x", want: "from=scratch is not allowed"},
		{name: "from with default type", mount: "from=s,source=/,target=/h", want: "from=s is not allowed"},
		{name: "from on tmpfs", mount: "type=tmpfs,from=s,target=/x", want: "from=s is not allowed"},
		{name: "bind propagation", mount: "type=bind,source=a,target=/a,bind-propagation=rshared", want: "bind-propagation is not allowed"},
		{name: "bind rw", mount: "type=bind,source=a,target=/a,rw", want: `option "rw" is not allowed (allowed: readonly, ro, source, target)`},
		{name: "bind src alias", mount: "type=bind,src=a,target=/a", want: `option "src" is not allowed`},
		{name: "bind dst alias", mount: "type=bind,source=a,dst=/a", want: `option "dst" is not allowed`},
		{name: "bind relabel", mount: "type=bind,source=a,target=/a,relabel=shared", want: `option "relabel" is not allowed`},
		{name: "bind z", mount: "type=bind,source=a,target=/a,z", want: `option "z" is not allowed`},
		{name: "tmpfs source", mount: "type=tmpfs,source=a,target=/a", want: `type=tmpfs: option "source" is not allowed (allowed: size, target)`},
		{name: "tmpfs mode", mount: "type=tmpfs,target=/a,mode=777", want: `option "mode" is not allowed`},
		{name: "empty option", mount: "type=bind,,target=/a", want: "empty option"},
		{name: "cache", mount: "type=cache,target=/root/.cache", want: "type=cache is not supported"},
		{name: "secret", mount: "type=secret,id=x", want: "type=secret is not supported"},
		{name: "ssh", mount: "type=ssh", want: "type=ssh is not supported"},
		{name: "devpts", mount: "type=devpts,target=/dev/pts", want: "type=devpts is not supported"},
		{name: "unknown type", mount: "type=volume,target=/v", want: "type=volume is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := "FROM scratch AS s\nFROM scratch\nCOPY x /x\nRUN --mount=" + tt.mount + " [\"/x\"]\n"
			problems := imagePolicy{}.checkDockerfile(src)
			if tt.want == "" {
				if len(problems) > 0 {
					t.Fatalf("got problems %q, want none", problems)
				}
				return
			}
			if len(problems) != 1 {
				t.Fatalf("got problems %q, want exactly one containing %q", problems, tt.want)
			}
			if !strings.HasPrefix(problems[0], "Dockerfile line 4: ") || !strings.Contains(problems[0], tt.want) {
				t.Errorf("got %q, want it to name line 4 and contain %q", problems[0], tt.want)
			}
		})
	}
}

// TestPolicyRunMountEscapeProject is the Dockerfile of the CVE-2024-1753
// escape (issue 28), continuations and all: refused at the RUN line.
func TestPolicyRunMountEscapeProject(t *testing.T) {
	t.Parallel()
	src := "FROM scratch AS s\nCOPY mklink /mklink\nRUN [\"/mklink\"]\nFROM scratch\nCOPY reader /reader\n" +
		"RUN --mount=type=bind,\\\nfrom=s,source=/rootdir,target=/host [\"/reader\"]\nCOPY reader /runner\n"
	problems := imagePolicy{}.checkDockerfile(src)
	if len(problems) != 1 || !strings.Contains(problems[0], "Dockerfile line 6: RUN --mount from=s is not allowed") {
		t.Fatalf("got %q, want one problem naming line 6 and from=s", problems)
	}
}

// TestPolicyReadsFlagsAsBuildahDoes: the Dockerfile tricks that would hide a
// mount option from a parser looser than buildah's are all refused.
func TestPolicyReadsFlagsAsBuildahDoes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, dockerfile, want string
	}{
		{"quoted space in the flag", "FROM scratch AS s\nFROM scratch\nRUN --mount=target=\"/a b\",from=s [\"/x\"]\n", "line 3: RUN --mount from=s is not allowed"},
		{"continuation joins without a space", "FROM scratch AS s\nFROM scratch\nRUN --mount=type=bind,source=a,target=/a\\\n,from=s [\"/x\"]\n", "line 3: RUN --mount from=s is not allowed"},
		{"continuation with blanks after the escape", "FROM scratch AS s\nFROM scratch\nRUN --mount=type=bind,source=a,target=/a,\\  \t\nfrom=s [\"/x\"]\n", "from=s is not allowed"},
		{"escaped key", "FROM scratch AS s\nFROM scratch\nRUN --mount=type=bind,fr\\om=s,target=/h [\"/x\"]\n", "from=s is not allowed"},
		{"doubly escaped key", "FROM scratch AS s\nFROM scratch\nRUN --mount=type=bind,fr\\\\om=s,target=/h [\"/x\"]\n", "must be written literally"},
		{"variable in a value", "FROM scratch AS s\nFROM scratch\nARG X=a,from=s\nRUN --mount=type=bind,source=${X},target=/h [\"/x\"]\n", "line 4: RUN --mount must be written literally"},
		{"variable as the whole spec", "FROM scratch\nRUN --mount=$M [\"/x\"]\n", "must be written literally"},
		{"variable network", "FROM scratch\nRUN --network=$N [\"/x\"]\n", "RUN --network=$N is not allowed"},
		{"heredoc run", "FROM scratch\nRUN <<EOF\necho hi\nEOF\n", "line 2: RUN with a heredoc (<<) is not supported"},
		{"heredoc terminator that looks like a continuation", "FROM scratch AS s\nFROM scratch\nRUN <<'E\\'\nE\\\nRUN --mount=type=bind,from=s,source=/rootdir,target=/host [\"/r\"]\n", "line 3: RUN with a heredoc"},
		{"heredoc copy", "FROM scratch\nCOPY <<EOF /x\nhi\nEOF\n", "COPY with a heredoc"},
		{"variable in copy from", "FROM scratch\nCOPY --from=d3\\c4 / /\n", `image "d3c4" looks like an image ID`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			problems := imagePolicy{}.checkDockerfile(tt.dockerfile)
			joined := strings.Join(problems, "\n")
			if !strings.Contains(joined, tt.want) {
				t.Errorf("got problems %q, want one containing %q", problems, tt.want)
			}
		})
	}
}

func TestSplitFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args      string
		wantFlags []string
		wantRest  string
	}{
		{"--from=a /x /y", []string{"--from=a"}, "/x /y"},
		{`--mount="type=bind,source=a b" cmd`, []string{"--mount=type=bind,source=a b"}, "cmd"},
		{`--a='x y' --b=c\ d rest of it`, []string{"--a=x y", "--b=c d"}, "rest of it"},
		{"-- --not-a-flag", nil, "--not-a-flag"},
		{`["/x"]`, nil, `["/x"]`},
		{"--only", []string{"--only"}, ""},
	}
	for _, tt := range tests {
		flags, rest := splitFlags(tt.args)
		if strings.Join(flags, "|") != strings.Join(tt.wantFlags, "|") || rest != tt.wantRest {
			t.Errorf("splitFlags(%q) = %q, %q; want %q, %q", tt.args, flags, rest, tt.wantFlags, tt.wantRest)
		}
	}
}
