package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Builder turns a project's build context into a published OCI image layout.
// It runs up to Config.Workers builds at once, each in a slot of its own
// (slots.go), so that one build's cleanup after a kill never reaches a
// neighbour's sandboxes.
type Builder struct {
	cfg         Config
	logger      *slog.Logger
	buildahPath string          // resolved
	network     filteredNetwork // with NetworkFiltered
	policy      imagePolicy
	trees       *treeCache // flattened layers, for validation
	slots       *slots
	// exportMu makes exports (push into the blob pool, normalize, link the
	// layout) and PruneBlobPool take turns: they share the pool.
	exportMu sync.Mutex
	// sweepPending is set by a failed build whose working containers may be
	// left in storage; the next moment no build runs, they are removed.
	sweepPending atomic.Bool
}

// Request is one build.
type Request struct {
	// ContextDir is the extracted project, the build context. Required.
	ContextDir string
	// Dockerfile is the build file's path inside ContextDir. Default
	// "Dockerfile".
	Dockerfile string
	// Tag names the image in its layout's index (the
	// org.opencontainers.image.ref.name annotation), in ImageRef and in logs:
	// 1-128 characters from [A-Za-z0-9_.-], e.g. "<project>-<hash prefix>".
	Tag string
	// BuildArgs are passed as --build-arg.
	BuildArgs map[string]string
	// Target, when set, is the stage to build (--target): the manifest's
	// build.target.
	Target string
	// Timeout bounds the whole build, export and validation included: the
	// project's setup_timeout_s. Zero means Config.DefaultTimeout.
	Timeout time.Duration
	// ValidateExecutables must exist in the image as regular files (or
	// symlinks to them) with an exec bit. A name without "/" is looked up on
	// the image's PATH; a relative path starts at its working directory.
	ValidateExecutables []string
	// ValidateFiles must exist in the image.
	ValidateFiles []string
	// Log receives the build's output as it happens: buildah's combined
	// stdout and stderr and the builder's own "skiff:" lines. It may be nil.
	// Write errors are ignored; a Write that blocks stalls the build.
	Log io.Writer
}

// Result is a published image.
type Result struct {
	// ImageRef is "localhost/skiff/<tag>@<digest>". It names the image for
	// people; hosts fetch it by ImageDigest.
	ImageRef string
	// ImageDigest is the manifest digest, "sha256:<hex>".
	ImageDigest string
	// LayoutDir is the image's OCI layout, <ImagesDir>/<hex>: read it with
	// go-containerregistry's layout.FromPath and mutate.Extract.
	LayoutDir string
	// Reused is true when this digest had already been published (an
	// unchanged rebuild).
	Reused bool
	// Duration is the whole build; Timings splits it.
	Duration time.Duration
	Timings  Timings
}

// Timings splits a build's duration into its phases.
type Timings struct {
	Build    time.Duration // buildah bud
	Export   time.Duration // buildah push into the pool, new layers decompressed
	Validate time.Duration
}

// New checks cfg, prepares the builder's directories and clears whatever a
// build killed with the previous server process left behind.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Builder, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	buildahPath, err := exec.LookPath(cfg.BuildahPath)
	if err != nil {
		return nil, fmt.Errorf("buildah not found (run make setup): %w", err)
	}
	if cfg.Isolation == IsolationOCI {
		if err := checkExecutableFile(cfg.RunscPath); err != nil {
			return nil, fmt.Errorf("runsc for builds (run make setup): %w", err)
		}
	} else {
		logger.WarnContext(ctx, "build RUN steps are NOT sandboxed: isolation is chroot, for trusted development only")
	}
	switch cfg.Network {
	case NetworkHost:
		logger.WarnContext(ctx, "build RUN steps share the host network, including its loopback services")
	case NetworkOpen:
		logger.WarnContext(ctx, "build RUN steps reach every address the host can route to, the cloud metadata service and private networks included")
	}
	b := &Builder{
		cfg:         cfg,
		logger:      logger,
		buildahPath: buildahPath,
		policy:      imagePolicy{allowed: cfg.AllowedBaseImages},
		trees:       newTreeCache(maxCachedTreeEntries),
		slots:       slotsFor(cfg),
	}
	for _, dir := range []string{cfg.StorageRoot, cfg.RunRoot, runscBaseRoot(cfg), cfg.TmpDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating build directory: %w", err)
		}
	}
	if cfg.Network == NetworkFiltered && cfg.Isolation == IsolationOCI {
		if err := b.setUpFilteredNetwork(ctx); err != nil {
			return nil, err
		}
	}
	for _, dir := range []string{cfg.ImagesDir, b.poolDir()} { // hosts read these
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating images directory: %w", err)
		}
	}
	b.recoverAll(ctx)
	for _, sl := range b.slots.all { // after recoverAll, which empties TmpDir
		for _, dir := range []string{sl.runscRoot, sl.tmpDir} {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("creating build directory: %w", err)
			}
		}
	}
	return b, nil
}

func checkExecutableFile(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// Config returns the builder's configuration with its defaults filled in.
func (b *Builder) Config() Config { return b.cfg }

var (
	tagPattern      = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	buildArgPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Build builds req's context, exports the image, validates it and publishes
// its layout. A *UserError (see AsUserError) means the project's build failed;
// any other error is the build host's.
func (b *Builder) Build(ctx context.Context, req Request) (*Result, error) {
	start := time.Now()
	if req.Dockerfile == "" {
		req.Dockerfile = "Dockerfile"
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = b.cfg.DefaultTimeout
	}
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	dockerfile, err := readDockerfile(req.ContextDir, req.Dockerfile)
	if err != nil {
		return nil, err
	}
	if problems := b.policy.checkDockerfile(dockerfile); len(problems) > 0 {
		return nil, &UserError{Kind: FailureRejected, Message: strings.Join(problems, "; ")}
	}

	sl, err := b.slots.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer b.finish(ctx, sl)
	// The timeout starts once the build runs, not while it waits its turn.
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	tail := NewTailWriter(DefaultLogTailBytes)
	out := io.MultiWriter(safeWriter{req.Log}, tail)
	res := &Result{}
	logger := b.logger.With("tag", req.Tag, "slot", sl.index)

	phase := time.Now()
	imageID, err := b.bud(runCtx, sl, req, out)
	res.Timings.Build = time.Since(phase)
	if err != nil {
		return nil, b.failed(ctx, runCtx, sl, out, err, timeout, func() error {
			return classifyBuildahFailure(err, tail.String(), b.cfg.MemoryLimit)
		})
	}

	phase = time.Now()
	tmpLayout, digest, err := b.export(runCtx, sl, imageID, req.Tag, out)
	res.Timings.Export = time.Since(phase)
	if err != nil {
		return nil, b.failed(ctx, runCtx, sl, out, err, timeout, func() error { return err })
	}
	defer os.RemoveAll(tmpLayout) // gone already once published

	phase = time.Now()
	v := validation{executables: req.ValidateExecutables, files: req.ValidateFiles}
	problems, err := b.validateLayout(tmpLayout, digest, v)
	res.Timings.Validate = time.Since(phase)
	if err != nil {
		return nil, b.failed(ctx, runCtx, sl, out, err, timeout, func() error { return err })
	}
	if len(problems) > 0 {
		msg := "image validation failed: " + strings.Join(problems, "; ")
		fmt.Fprintf(out, "skiff: %s\n", msg)
		return nil, &UserError{Kind: FailureValidation, Message: msg, Missing: problems}
	}

	res.LayoutDir = filepath.Join(b.cfg.ImagesDir, digest.Hex)
	if res.Reused, err = publishLayout(tmpLayout, res.LayoutDir); err != nil {
		return nil, err
	}
	res.ImageDigest = digest.String()
	res.ImageRef = "localhost/skiff/" + req.Tag + "@" + res.ImageDigest
	res.Duration = time.Since(start)
	fmt.Fprintf(out, "skiff: published %s in %s\n", digest, res.Duration.Round(time.Millisecond))
	logger.InfoContext(ctx, "image built", "digest", res.ImageDigest, "reused", res.Reused,
		"duration", res.Duration, "build", res.Timings.Build, "export", res.Timings.Export,
		"validate", res.Timings.Validate)
	return res, nil
}

// failed turns an error from a build phase into Build's error. When the
// build's own timeout ended it, that is the project's failure; when the
// caller's context did (shutdown), it is not. Either way the kill may have
// left sandboxes and working containers behind: the slot's sandboxes go now,
// the working containers once no build runs (finish).
func (b *Builder) failed(ctx, runCtx context.Context, sl *slot, out io.Writer, err error, timeout time.Duration, classify func() error) error {
	switch {
	case ctx.Err() != nil:
		b.killSandboxes(ctx, sl.runscRoot)
		b.cleanSlot(ctx, sl)
		fmt.Fprintf(out, "skiff: build interrupted: %v\n", ctx.Err())
		return fmt.Errorf("build interrupted: %w", errors.Join(ctx.Err(), err))
	case runCtx.Err() != nil:
		b.killSandboxes(ctx, sl.runscRoot)
		b.cleanSlot(ctx, sl)
		msg := fmt.Sprintf("build ran past its timeout of %s and was stopped", timeout)
		fmt.Fprintf(out, "skiff: %s\n", msg)
		return &UserError{Kind: FailureTimeout, Message: msg, Err: err}
	}
	b.cleanSlot(ctx, sl)
	return classify()
}

// checkRequest rejects requests that are the caller's mistake.
func checkRequest(req Request) error {
	if !filepath.IsAbs(req.ContextDir) {
		return fmt.Errorf("build context %q must be an absolute path", req.ContextDir)
	}
	if !tagPattern.MatchString(req.Tag) {
		return fmt.Errorf("build tag %q: want 1-128 characters from [A-Za-z0-9_.-]", req.Tag)
	}
	for k := range req.BuildArgs {
		if !buildArgPattern.MatchString(k) {
			return fmt.Errorf("build arg name %q is not an identifier", k)
		}
	}
	return nil
}

// maxDockerfileBytes bounds what the policy check reads.
const maxDockerfileBytes = 1 << 20

// readDockerfile reads the build file through an os.Root, so that neither
// "../" nor a symlink can point it outside the context.
func readDockerfile(contextDir, name string) (string, error) {
	root, err := os.OpenRoot(contextDir)
	if err != nil {
		return "", fmt.Errorf("opening build context: %w", err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return "", &UserError{Kind: FailureRejected, Message: fmt.Sprintf("build file %s: %v", name, errors.Unwrap(err)), Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDockerfileBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading build file: %w", err)
	}
	if len(b) > maxDockerfileBytes {
		return "", &UserError{Kind: FailureRejected, Message: fmt.Sprintf("build file %s is larger than 1 MiB", name)}
	}
	return string(b), nil
}
