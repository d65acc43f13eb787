package buildtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/internal/testenv"
)

// runnerSource is a static program for FROM scratch images, which have no
// shell: run bare it prints a greeting, and its subcommands give RUN steps in
// exec form something to do.
const runnerSource = `package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("hello from the skiff test runner")
		return
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "cat": // print each file, or why it cannot be read
		for _, p := range args {
			b, err := os.ReadFile(p)
			if err != nil {
				fmt.Printf("cat %s: %v\n", p, err)
				continue
			}
			fmt.Printf("cat %s: %s\n", p, b)
		}
	case "ls":
		for _, p := range args {
			entries, err := os.ReadDir(p)
			fmt.Printf("ls %s: err=%v\n", p, err)
			for _, e := range entries {
				fmt.Printf("  %s\n", e.Name())
			}
		}
	case "copy": // copy SRC DST
		b, err := os.ReadFile(args[0])
		if err == nil {
			err = os.WriteFile(args[1], b, 0o644)
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	case "write": // write PATH TEXT
		if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	case "sleep": // sleep SECONDS
		n, _ := strconv.Atoi(args[0])
		time.Sleep(time.Duration(n) * time.Second)
	case "fail": // fail MESSAGE: print it and exit 3
		fmt.Println(args[0])
		os.Exit(3)
	case "alloc": // alloc MiB: touch that much memory
		n, _ := strconv.Atoi(args[0])
		var keep [][]byte
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println("allocated MiB", len(keep))
	default:
		fmt.Println("unknown command", os.Args[1])
		os.Exit(2)
	}
}
`

// StaticRunner compiles the runner (CGO_ENABLED=0, so it needs nothing from
// the image) into a temporary directory and returns its path. Subcommands:
// cat FILE..., ls DIR..., copy SRC DST, write PATH TEXT, sleep SECONDS,
// fail MESSAGE (exit 3), alloc MIB.
func StaticRunner(t testing.TB) string {
	t.Helper()
	return StaticProgram(t, "runner", runnerSource)
}

// StaticProgram compiles one main package (CGO_ENABLED=0, standard library
// only) into a temporary directory and returns the binary's path: the
// programs that RUN steps of FROM scratch test images run.
func StaticProgram(t testing.TB, name, source string) string {
	t.Helper()
	src := t.TempDir()
	for file, body := range map[string]string{
		"go.mod":  "module " + name + "\n\ngo 1.22\n",
		"main.go": source,
	} {
		if err := os.WriteFile(filepath.Join(src, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		testenv.Skip(t, "skipping: the go tool is not on PATH to compile the test program")
	}
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling %s: %v\n%s", name, err, out)
	}
	return bin
}

// ScratchDockerfile is the build file of ScratchProject.
const ScratchDockerfile = `FROM scratch
COPY runner /usr/local/bin/runner
WORKDIR /app
ENTRYPOINT ["/usr/local/bin/runner"]
`

// ScratchProject returns a build context holding the static runner and a
// FROM scratch Dockerfile (ScratchDockerfile, or dockerfile when given) that
// installs it as /usr/local/bin/runner.
func ScratchProject(t testing.TB, dockerfile string) string {
	t.Helper()
	if dockerfile == "" {
		dockerfile = ScratchDockerfile
	}
	dir := t.TempDir()
	runner, err := os.ReadFile(StaticRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, dir, "runner", string(runner), 0o755)
	WriteFile(t, dir, "Dockerfile", dockerfile, 0o644)
	return dir
}

// WriteFile writes one file of a build context, creating its directories.
func WriteFile(t testing.TB, dir, name, body string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}
