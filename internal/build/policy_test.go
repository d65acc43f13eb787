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
		{line: 4, cmd: "COPY", args: "--from=base    /a /b"},
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
		{name: "mount from another image", dockerfile: "FROM scratch\nRUN --mount=type=bind,from=abc,target=/o [\"x\"]\n", wantIn: []string{`"abc" looks like an image ID`}},
		{name: "secret mount", dockerfile: "FROM scratch\nRUN --mount=type=secret,id=x [\"x\"]\n", wantIn: []string{"type=secret is not supported"}},
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
