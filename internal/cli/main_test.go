// The tests of internal/cli run the command line in-process: flags, help,
// and the errors a command gives before it starts anything. The tests that
// run skiff as a real process (servers, hosts, clients, kill -9,
// measurements) are the system tier, in test/e2e.
package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/cli"
)

// result is a finished command.
type result struct {
	code           int
	stdout, stderr string
}

// skiff runs the command line in-process with env as its SKIFF_ variables
// (the caller's own SKIFF_ variables are not seen).
func skiff(t *testing.T, env []string, args ...string) result {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	getenv := func(k string) string {
		if strings.HasPrefix(k, "SKIFF_") {
			return vars[k]
		}
		return os.Getenv(k)
	}
	var stdout, stderr bytes.Buffer
	code := cli.MainEnv(t.Context(), args, &stdout, &stderr, getenv)
	return result{code, stdout.String(), stderr.String()}
}

// runMain runs the command line in-process with no SKIFF_ variables.
func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cli.MainEnv(context.Background(), args, &out, &errb, func(k string) string {
		if strings.HasPrefix(k, "SKIFF_") {
			return ""
		}
		return os.Getenv(k)
	})
	return code, out.String(), errb.String()
}

func envList(kv ...string) []string {
	if len(kv)%2 != 0 {
		panic("envList wants pairs")
	}
	var out []string
	for i := 0; i < len(kv); i += 2 {
		out = append(out, fmt.Sprintf("%s=%s", kv[i], kv[i+1]))
	}
	return out
}
