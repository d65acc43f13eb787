package build

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"golang.org/x/sys/unix"
)

// How buildah is driven. The built image is never given a name in buildah's
// storage: a name is something another project's Dockerfile could say, and
// the layer cache (--layers) works on unnamed images all the same. The image
// is passed on by ID (--iidfile) to `buildah push`.

// buildah returns a buildah subcommand run against the builder's storage.
func (b *Builder) buildah(args ...string) command {
	global := []string{
		"--root", b.cfg.StorageRoot,
		"--runroot", b.cfg.RunRoot,
		"--storage-driver", "overlay",
	}
	env := []string{"TMPDIR=" + b.cfg.TmpDir}
	if b.cfg.Network == NetworkFiltered {
		env = append(env, b.network.env()...)
	}
	return command{
		path:      b.buildahPath,
		args:      append(global, args...),
		env:       env,
		waitDelay: b.cfg.WaitDelay,
	}
}

// buildahIn returns a buildah subcommand of a build in slot sl: its TMPDIR
// (where RUN steps' bundles go) is the slot's.
func (b *Builder) buildahIn(sl *slot, args ...string) command {
	c := b.buildah(args...)
	c.env = append(c.env, "TMPDIR="+sl.tmpDir) // the last one wins
	return c
}

// runsc returns a runsc command against a runsc state root the builder gives
// buildah's RUN steps.
func (b *Builder) runsc(root string, args ...string) command {
	return command{
		path:      b.cfg.RunscPath,
		args:      append([]string{"--root", root}, args...),
		waitDelay: b.cfg.WaitDelay,
	}
}

// budArgs is the `buildah bud` command line after the global flags, for a
// build in slot sl.
func (b *Builder) budArgs(sl *slot, req Request, iidFile string) []string {
	args := []string{
		"bud",
		"--layers",   // cache every step: a code-only change rebuilds in about a second
		"--force-rm", // remove the working containers of failed builds too
		"--pull=" + b.cfg.PullPolicy,
		"--iidfile", iidFile,
		"--isolation", b.cfg.Isolation,
		"--memory", b.cfg.MemoryLimit,
		"-f", filepath.Join(req.ContextDir, req.Dockerfile),
	}
	if b.cfg.CPUs > 0 {
		const period = 100000
		args = append(args, "--cpu-period", strconv.Itoa(period),
			"--cpu-quota", strconv.Itoa(int(b.cfg.CPUs*period)))
	}
	if b.cfg.Isolation == IsolationChroot {
		args = append(args, ChrootUlimits()...)
	}
	if b.cfg.Isolation == IsolationOCI {
		// NetworkFiltered and NetworkOpen leave runsc's network at its
		// default, gVisor's own netstack inside a bridge namespace: the
		// builder's filtered network or buildah's default one.
		network := b.cfg.Network
		switch network {
		case NetworkFiltered:
			network = b.network.name
		case NetworkOpen:
			network = "private"
		}
		args = append(args, "--network", network,
			"--runtime", b.cfg.RunscPath,
			"--runtime-flag", "root="+sl.runscRoot,
			// runsc's default, overlay2=root:self, keeps rootfs writes in a
			// sandbox-private filestore: the RUN step succeeds but buildah
			// commits none of its changes. Writes must reach the host rootfs.
			"--runtime-flag", "overlay2=none")
		if b.cfg.Network == NetworkNone || b.cfg.Network == NetworkHost {
			args = append(args, "--runtime-flag", "network="+b.cfg.Network)
		}
		for _, f := range b.cfg.RuntimeFlags {
			args = append(args, "--runtime-flag", f)
		}
	}
	keys := make([]string, 0, len(req.BuildArgs))
	for k := range req.BuildArgs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--build-arg", k+"="+req.BuildArgs[k])
	}
	if req.Target != "" {
		args = append(args, "--target", req.Target)
	}
	return append(args, req.ContextDir)
}

// ChrootUlimits are the --ulimit flags that pin RUN steps' nproc and nofile
// limits to the calling process's own under chroot isolation (the builder's
// and the test helpers' trusted builds). Unless told, buildah 1.42 raises
// both to 1048576 there, which fails without CAP_SYS_RESOURCE ("setting RLIMIT_NPROC limit
// ... operation not permitted"), as it is in many containers. (Under gVisor
// the sandbox applies them and nothing needs raising.)
func ChrootUlimits() []string {
	var args []string
	for _, l := range []struct {
		name     string
		resource int
	}{{"nproc", unix.RLIMIT_NPROC}, {"nofile", unix.RLIMIT_NOFILE}} {
		var r unix.Rlimit
		if err := unix.Getrlimit(l.resource, &r); err != nil || r.Max == unix.RLIM_INFINITY || r.Cur == unix.RLIM_INFINITY {
			continue // buildah's default is then no raise
		}
		args = append(args, "--ulimit", fmt.Sprintf("%s=%d:%d", l.name, r.Cur, r.Max))
	}
	return args
}

// bud runs `buildah bud` and returns the built image's ID.
func (b *Builder) bud(ctx context.Context, sl *slot, req Request, out io.Writer) (string, error) {
	iidFile := filepath.Join(sl.tmpDir, "iid-"+rand.Text())
	defer os.Remove(iidFile)
	cmd := b.buildahIn(sl, b.budArgs(sl, req, iidFile)...)
	cmd.out = out
	cmd.onKill = func() { b.killSandboxes(ctx, sl.runscRoot) }
	if err := cmd.run(ctx); err != nil {
		return "", err
	}
	id, err := os.ReadFile(iidFile)
	if err != nil {
		return "", fmt.Errorf("reading built image id: %w", err)
	}
	imageID := strings.TrimSpace(string(id))
	if !digestPattern.MatchString(imageID) {
		return "", fmt.Errorf("built image id %q is not a sha256 digest", imageID)
	}
	return imageID, nil
}

// export pushes the image into the pool, normalises it (layout.go) and
// writes it as a fresh OCI layout under ImagesDir. It returns the layout's
// directory and the manifest digest. Exports take turns: every push names
// the same reference in the pool's index (a concurrent one would replace
// this one's before normalize reads it), and normalize removes the blobs
// buildah pushed, which a concurrent push may be reusing.
func (b *Builder) export(ctx context.Context, sl *slot, imageID, tag string, out io.Writer) (dir string, digest v1.Hash, err error) {
	b.exportMu.Lock()
	defer b.exportMu.Unlock()
	digestFile := filepath.Join(sl.tmpDir, "digest-"+rand.Text())
	defer os.Remove(digestFile)
	fmt.Fprintf(out, "skiff: exporting image %s\n", imageID)
	cmd := b.buildahIn(sl, "push", "--quiet",
		// The pool keeps layers uncompressed (hosts unpack them at once):
		// compressing them here only to decompress them in normalize cost
		// about a third of the export.
		"--disable-compression",
		"--digestfile", digestFile,
		imageID, "oci:"+b.poolDir()+":"+poolRefName)
	cmd.out = out
	if err := cmd.run(ctx); err != nil {
		return "", v1.Hash{}, fmt.Errorf("exporting image: %w", err)
	}
	pushed, err := readDigestFile(digestFile)
	if err != nil {
		return "", v1.Hash{}, err
	}
	manifest, err := b.normalize(pushed)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("exporting image: %w", err)
	}
	dir = filepath.Join(b.cfg.ImagesDir, ".tmp-"+rand.Text())
	if digest, err = b.writeLayout(dir, manifest, tag); err != nil {
		os.RemoveAll(dir)
		return "", v1.Hash{}, fmt.Errorf("exporting image: %w", err)
	}
	return dir, digest, nil
}

// validateLayout checks v against the image in the layout at dir.
func (b *Builder) validateLayout(dir string, digest v1.Hash, v validation) ([]string, error) {
	if v.empty() {
		return nil, nil
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("opening image layout: %w", err)
	}
	img, err := p.Image(digest)
	if err != nil {
		return nil, fmt.Errorf("reading image %s: %w", digest, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading image config: %w", err)
	}
	tree, err := readImageTree(img, b.trees)
	if err != nil {
		return nil, err
	}
	return v.check(tree, &cfg.Config), nil
}

// ResetLayerCache removes every image the builder has made from buildah's
// storage: the whole --layers cache, which otherwise only grows. Named images
// (the operator's base images) stay, and so do published layouts. The next
// build of each project runs all its steps again. It waits until no build
// runs (a running one may be using those images), and builds wait for it.
func (b *Builder) ResetLayerCache(ctx context.Context) error {
	if err := b.slots.acquireAll(ctx); err != nil {
		return err
	}
	defer b.slots.releaseAll()
	b.sweepIfPending(ctx)
	// The builder never names its images, so "dangling" is exactly its own.
	if _, err := b.buildah("rmi", "--prune", "--force").output(ctx); err != nil {
		return fmt.Errorf("resetting the layer cache: %w", err)
	}
	return nil
}
