// Command testreport reads `go test -json` on stdin (other lines, such as
// make's and go vet's, pass through), prints what a plain `go test` would
// (the package lines and the output of failed tests), then one line per
// engine saying how many tests ran on it. .ci/run uses it so that a green CI
// run also shows that the PostgreSQL and gVisor halves ran rather than
// skipped.
//
//	go test -json ./... | go run ./scripts/testreport -require sqlite,postgres,gvisor
//
// A test counts for an engine when one of its name's elements is the engine
// (TestAPI/postgres/kv), or, for gVisor, its name mentions gVisor; every test
// of an engine's own package (internal/store/sqlite, internal/sandbox/gvisor,
// ...) counts for that engine. Only leaf tests count, so a parent and its
// subtests are one test per subtest. It exits 1 when a test failed or a
// required engine ran no test.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output events
	Test       string
	Output     string
}

var engines = []struct {
	name     string
	packages []string // import path suffixes whose every test runs on it
	inName   func(test string) bool
}{
	{"sqlite", []string{"internal/store/sqlite"}, element("sqlite")},
	{"postgres", []string{"internal/store/postgres", "internal/store/postgres/pgtest"}, element("postgres")},
	{"gvisor", []string{"internal/sandbox/gvisor", "internal/sandbox/gvisor/gvisortest"}, func(test string) bool {
		return strings.Contains(strings.ToLower(test), "gvisor")
	}},
}

func element(name string) func(string) bool {
	return func(test string) bool { return slices.Contains(strings.Split(test, "/"), name) }
}

type key struct{ pkg, test string }

func main() {
	require := flag.String("require", "", "comma-separated engines that must have run at least one test")
	flag.Parse()

	output := map[key][]string{} // a running test's output, printed if it fails
	result := map[key]string{}   // pass, fail or skip
	parents := map[key]bool{}
	failed := false

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		line := in.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Printf("%s\n", line)
			continue
		}
		if ev.Action == "build-output" || ev.Action == "build-fail" {
			fmt.Print(ev.Output)
			failed = failed || ev.Action == "build-fail"
			continue
		}
		if ev.Test == "" {
			// Package lines: "ok  pkg 1.2s", "FAIL", a panic outside any test.
			// A plain multi-package run prints no bare PASS line.
			if ev.Action == "output" && ev.Output != "PASS\n" {
				fmt.Print(ev.Output)
			}
			failed = failed || ev.Action == "fail"
			continue
		}
		k := key{ev.Package, ev.Test}
		switch ev.Action {
		case "run":
			for p := ev.Test; strings.Contains(p, "/"); {
				p = p[:strings.LastIndex(p, "/")]
				parents[key{ev.Package, p}] = true
			}
		case "output":
			// -json implies -v; a plain run shows no === RUN/PAUSE/CONT lines.
			if !strings.HasPrefix(strings.TrimLeft(ev.Output, " "), "=== ") {
				output[k] = append(output[k], ev.Output)
			}
		case "pass", "skip":
			result[k] = ev.Action
			delete(output, k)
		case "fail":
			result[k] = ev.Action
			failed = true
			fmt.Print(strings.Join(output[k], ""))
			delete(output, k)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "testreport: reading go test output: %v\n", err)
		os.Exit(1)
	}
	// Tests that never ended (a timeout or a crash): show what they said.
	for k, out := range output {
		if _, ok := result[k]; !ok {
			fmt.Printf("--- %s/%s did not finish:\n%s", k.pkg, k.test, strings.Join(out, ""))
		}
	}

	type tally struct{ pass, fail, skip int }
	counts := map[string]*tally{}
	var all tally
	for k, r := range result {
		if parents[k] {
			continue
		}
		switch r {
		case "pass":
			all.pass++
		case "fail":
			all.fail++
		case "skip":
			all.skip++
		}
		for _, e := range engines {
			in := e.inName(k.test)
			for _, p := range e.packages {
				in = in || k.pkg == p || strings.HasSuffix(k.pkg, "/"+p)
			}
			if !in {
				continue
			}
			if counts[e.name] == nil {
				counts[e.name] = &tally{}
			}
			switch r {
			case "pass":
				counts[e.name].pass++
			case "fail":
				counts[e.name].fail++
			case "skip":
				counts[e.name].skip++
			}
		}
	}
	fmt.Printf("tests (leaves): %d passed, %d failed, %d skipped; per engine:\n", all.pass, all.fail, all.skip)
	for _, e := range engines {
		c := counts[e.name]
		if c == nil {
			c = &tally{}
		}
		fmt.Printf("  %-9s %5d passed, %d failed, %d skipped\n", e.name, c.pass, c.fail, c.skip)
	}
	for _, name := range strings.Split(*require, ",") {
		if name == "" {
			continue
		}
		if c := counts[name]; c == nil || c.pass+c.fail == 0 {
			fmt.Printf("testreport: no test ran on %s, which is required\n", name)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
