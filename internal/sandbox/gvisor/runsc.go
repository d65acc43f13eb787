package gvisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// runscTimeout bounds the short runsc commands (kill, delete, list), which
// take tens of milliseconds; a hung one must not hang the agent.
const runscTimeout = 30 * time.Second

// runsc builds invocations of the runsc CLI with the driver's global flags.
type runsc struct {
	path     string
	root     string
	platform string
	extra    []string
}

func newRunsc(c Config) runsc {
	return runsc{path: c.RunscPath, root: c.StateDir, platform: c.Platform, extra: c.ExtraFlags}
}

// args returns the global flags followed by the subcommand and its args.
// network is runsc's --network value ("none" or "sandbox").
func (r runsc) args(network string, sub ...string) []string {
	a := []string{"--root", r.root, "--platform", r.platform, "--network", network}
	a = append(a, r.extra...)
	return append(a, sub...)
}

// runArgs is the `runsc run` command line for one attempt. runsc's own
// errors go to stderr (which the runner's user sees) and, as JSON, to
// logPath, where the driver can tell them apart from the runner's output.
func (r runsc) runArgs(network, bundle, logPath, id string) []string {
	a := []string{"--root", r.root, "--platform", r.platform, "--network", network,
		"--log", logPath, "--log-format", "json"}
	a = append(a, r.extra...)
	return append(a, "run", "--bundle", bundle, id)
}

// exec runs a short runsc command and returns its stdout; the error carries
// stderr.
func (r runsc) exec(ctx context.Context, sub ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, runscTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.path, r.args("none", sub...)...)
	// A sandbox process started by the command would inherit the output
	// pipes and keep Wait from returning; none of these commands start one,
	// but a hang here would hang the agent.
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("runsc %s: %w: %s", strings.Join(sub, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// execQuiet runs a runsc command that starts a sandbox (create, start):
// its output goes to the file errPath, never to a pipe, which the sandbox
// would inherit and hold open. The error carries the file's content.
func (r runsc) execQuiet(ctx context.Context, errPath string, sub ...string) error {
	ctx, cancel := context.WithTimeout(ctx, runscTimeout)
	defer cancel()
	f, err := os.Create(errPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, r.path, r.args("none", sub...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(errPath)
		return fmt.Errorf("runsc %s: %w: %s", strings.Join(sub, " "), err, strings.TrimSpace(string(msg)))
	}
	return nil
}

// warmRunArgs is the `runsc run` command line that boots a warm sandbox:
// as runArgs, with the launcher's pipes passed to its init as the same
// descriptor numbers.
func (r runsc) warmRunArgs(bundle, logPath, id string) []string {
	a := r.runArgs("none", bundle, logPath, id)
	fds := []string{"--pass-fd", fmt.Sprintf("%d:%d", launcherCmdFD, launcherCmdFD),
		"--pass-fd", fmt.Sprintf("%d:%d", launcherStatusFD, launcherStatusFD)}
	return append(a[:len(a)-1:len(a)-1], append(fds, id)...)
}

// kill signals the container's init process (the runner).
func (r runsc) kill(ctx context.Context, id string, sig syscall.Signal) error {
	_, err := r.exec(ctx, "kill", id, fmt.Sprint(int(sig)))
	return err
}

// forceDelete stops and removes the container. It is idempotent in effect:
// deleting a container that no longer exists fails harmlessly.
func (r runsc) forceDelete(ctx context.Context, id string) error {
	_, err := r.exec(ctx, "delete", "--force", id)
	return err
}

// container is the part of `runsc list --format=json` we use.
type container struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (r runsc) list(ctx context.Context) ([]container, error) {
	out, err := r.exec(ctx, "list", "--format=json")
	if err != nil {
		return nil, err
	}
	var cs []container
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(out, &cs); err != nil {
		return nil, fmt.Errorf("decode runsc list: %w", err)
	}
	return cs, nil
}
