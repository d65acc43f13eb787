// Package cli is the skiff command line: the server, operator commands and
// client commands. cmd/skiff/main.go only calls Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Version is set at build time with -ldflags "-X ...cli.Version=...".
var Version = "dev"

// env is the process environment and standard streams, injected so tests
// can run commands in-process.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	stdin          io.Reader // nil: os.Stdin
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"server", "run the controller with its local host (and 'server migrate')", runServer},
		{"admin", "operator commands on the store: create-key, grant-credit, create-enrollment, hosts ...", runAdmin},
		{"host", "run a bring-your-own-hardware host that dials out to the controller", runHost},
		{"bench", "measure job latency over bare gVisor and submissions per second", runBench},
		// Client commands (docs/cli.md).
		{"login", "save the server address and an API key or a wallet session", runLogin},
		{"logout", "forget the saved token", runLogout},
		{"whoami", "show the account the credential acts as", runWhoami},
		{"init", "write a starter project (Dockerfile, manifest, Python runner)", runInit},
		{"project", "create, list, show, delete projects: create|ls|show|rm|prepare", runProject},
		{"push", "pack a directory, push it and follow the build", runPush},
		{"status", "a project's readiness and builds (or every project's)", runStatus},
		{"kv", "a project's shared state: get|put|ls|rm", runKV},
		{"run", "submit a job and follow it live; exits 0 only if it completed", runRun},
		{"jobs", "ls|show|cancel|watch|logs|tasks", runJobs},
		{"results", "a job's result, or the recent results", runResults},
		{"artifacts", "put|get|ls|rm files, with transfer progress", runArtifacts},
		{"balance", "the account's balance", runBalance},
		{"ledger", "the account's ledger entries", runLedger},
		{"topup", "pay a top-up quote with your wallet over x402", runTopup},
		{"mcp", "serve Skiff's tools to an agent host over MCP on stdio", runMCP},
		{"version", "print the version", func(_ context.Context, e *env, _ []string) error {
			fmt.Fprintln(e.stdout, Version)
			return nil
		}},
	}
}

// Main runs the command line and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainEnv(ctx, args, stdout, stderr, os.Getenv)
}

// MainEnv is Main with the environment read through getenv instead of the
// process's: the flag and help tests run the command line in-process, each
// with an environment of its own.
func MainEnv(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: getenv}
	return e.main(ctx, args)
}

func (e *env) main(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		e.usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, e, args[1:])
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			}
			fmt.Fprintf(e.stderr, "skiff %s: %v\n", c.name, err)
			return exitCodeOf(err)
		}
	}
	fmt.Fprintf(e.stderr, "skiff: unknown command %q\n\n", args[0])
	e.usage()
	return 2
}

func (e *env) usage() {
	fmt.Fprintf(e.stderr, `skiff: a self-hostable compute job service.

Usage:
  skiff <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(e.stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(e.stderr, "\nRun 'skiff <command> --help' for the flags of a command.\n")
}

// errUsage means the usage was already printed.
var errUsage = errors.New("usage")

// newFlags makes a flag set whose usage names the command and lists each
// flag with its environment twin.
func (e *env) newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: skiff %s\n\n%s\n\nFlags:\n", name, synopsis)
		// parse fills every flag from its twin, so every flag names it.
		fs.VisitAll(func(f *flag.Flag) {
			if twin := envName(f.Name); !strings.Contains(f.Usage, twin) {
				f.Usage += " (env " + twin + ")"
			}
		})
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, then fills every flag not given on the command line
// from its environment twin SKIFF_<FLAG_NAME>.
func (e *env) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []string
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		if v := e.getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q: %v", envName(f.Name), v, err))
			}
		}
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("bad environment: %s", strings.Join(errs, "; "))
	}
	return nil
}

// envName is a flag's environment twin: --data-dir is SKIFF_DATA_DIR.
func envName(flagName string) string {
	return "SKIFF_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
