package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The floor of a build: `buildah bud` of the bench project's context, run
// bare with the same buildah and storage flags as the server's builder
// (--root, --runroot, --storage-driver overlay; bud --layers --iidfile), on
// a storage of its own, beside the service's push of the same context
// timed from the start of POST /projects/:name/push to the GET that shows
// it published. Every round's context carries a nonce copied in first, so
// that neither build takes a layer from a cache: each is a first build.

// benchBuildProjectName is the project the build rounds push to.
const benchBuildProjectName = "bench-build"

// buildPoll is how often a build round reads its push record: the push's
// figure includes up to one of it.
const buildPoll = 20 * time.Millisecond

// buildFloorResult is the build rounds' figures.
type buildFloorResult struct {
	Rounds int `json:"rounds"`
	// PushToPublished runs from the start of the push's POST to the GET
	// that showed it published (polled every PollMS).
	PushToPublished *latencyStat `json:"push_to_published"`
	// BareBud is `buildah bud` of the same context, timed around buildah.
	BareBud *latencyStat `json:"bare_buildah_bud"`
	PollMS  float64      `json:"poll_ms"`
}

// buildRounds runs rounds pushes and as many bare builds, alternating which
// goes first. dir is the bare builds' own: contexts and buildah storage.
func buildRounds(ctx context.Context, c *benchClient, self, buildah, dir string, rounds int, progress func(string, ...any)) (*buildFloorResult, error) {
	progress("builds: %d rounds of a push of the bench project and a bare buildah bud of it", rounds)
	if status, err := c.do(ctx, "POST", "/api/v1/projects", "application/json",
		[]byte(`{"name":"`+benchBuildProjectName+`"}`), nil); err != nil && status != 409 {
		return nil, err
	}
	global := []string{"--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run"), "--storage-driver", "overlay"}
	defer func() {
		// Leave no image or mount behind in the storage the directory removal
		// then takes away.
		_ = exec.Command(buildah, append(global, "rmi", "--all", "--force")...).Run()
	}()
	var push, bud []time.Duration
	for r := range rounds {
		files, err := benchContext(self, fmt.Sprintf("round %d at %d", r, time.Now().UnixNano()))
		if err != nil {
			return nil, err
		}
		pushRun := func() error {
			tgz, err := benchTarball(files)
			if err != nil {
				return err
			}
			start := time.Now()
			if _, err := c.pushTarball(ctx, benchBuildProjectName, tgz, buildPoll); err != nil {
				return err
			}
			push = append(push, time.Since(start))
			return nil
		}
		budRun := func() error {
			d, err := bareBud(ctx, buildah, global, filepath.Join(dir, fmt.Sprintf("ctx-%d", r)), files)
			if err != nil {
				return err
			}
			bud = append(bud, d)
			return nil
		}
		first, second := pushRun, budRun
		if r%2 == 1 {
			first, second = budRun, pushRun
		}
		if err := first(); err != nil {
			return nil, err
		}
		if err := second(); err != nil {
			return nil, err
		}
	}
	return &buildFloorResult{Rounds: rounds, PushToPublished: summarize(push), BareBud: summarize(bud), PollMS: ms(buildPoll)}, nil
}

// bareBud writes files into ctxDir and times `buildah bud` of it.
func bareBud(ctx context.Context, buildah string, global []string, ctxDir string, files []benchFile) (time.Duration, error) {
	if err := os.MkdirAll(ctxDir, 0o700); err != nil {
		return 0, err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(ctxDir, f.name), f.data, os.FileMode(f.mode)); err != nil {
			return 0, err
		}
	}
	args := append(append([]string{}, global...), "bud", "--layers", "--iidfile", filepath.Join(ctxDir, "iid"),
		"-f", filepath.Join(ctxDir, "Dockerfile"), ctxDir)
	cmd := exec.CommandContext(ctx, buildah, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+ctxDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("bare buildah bud: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return time.Since(start), nil
}
