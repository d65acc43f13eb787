package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// attempt is one assignment on this host.
type attempt struct {
	a         *Agent
	asg       agentproto.Assignment
	rep       *reporter
	out       *output
	cancelCtx context.CancelFunc

	mu       sync.Mutex
	shutdown bool // killed because the host shuts down, not by the controller

	// ended is set (under the agent's mu) once the sandbox is gone and
	// before the finished report is queued.
	ended bool
	// workDir is the attempt's directory once execute made it; run
	// removes it after queuing the finished report.
	workDir string
	// pins release the attempt's hold on its image and inputs in the
	// host's caches (cachetrim.go) when execute returns.
	pins []func()
}

// kill stops the attempt; shutdown says whether the host is going away
// (an infrastructure failure) rather than the controller cancelling it.
// The caller may hold a.mu.
func (at *attempt) kill(shutdown bool) {
	at.mu.Lock()
	at.shutdown = at.shutdown || shutdown
	at.mu.Unlock()
	at.cancelCtx()
}

func (at *attempt) killedByShutdown() bool {
	at.mu.Lock()
	defer at.mu.Unlock()
	return at.shutdown
}

// run executes the attempt and hands its outcome to the reporter. refuse,
// when set, is a host error to report without running anything.
func (at *attempt) run(ctx context.Context, refuse string) {
	log := at.a.log.With("attempt_id", at.asg.AttemptID)
	now := at.a.clk.Now
	out := at.out
	var o *agentproto.Outcome
	if refuse != "" {
		o = &agentproto.Outcome{HostError: refuse, StartedAt: now(), EndedAt: now()}
	} else {
		var err error
		o, err = at.execute(ctx, out)
		switch {
		case err != nil && ctx.Err() != nil:
			// Stopped before the runner started (a cancel or shutdown
			// that raced the start): killed, and nothing ran.
			log.Info("attempt stopped before it started", "err", err)
			t := now()
			o = &agentproto.Outcome{Killed: true, StartedAt: t, EndedAt: t}
		case errors.As(err, new(*inputDigestError)):
			// Content that does not match the digest the user gave will
			// not match on another host either: the task fails at once,
			// like a declared upload that breaks the rules.
			log.Warn("attempt input refused", "err", err)
			t := now()
			o = &agentproto.Outcome{ArtifactError: err.Error(), StartedAt: t, EndedAt: t}
		case err != nil:
			log.Warn("attempt failed on the host", "err", err)
			t := now()
			o = &agentproto.Outcome{HostError: err.Error(), StartedAt: t, EndedAt: t}
		}
	}
	if o.Killed && at.killedByShutdown() && o.HostError == "" {
		o.HostError = "host shut down while the attempt ran"
	}
	o.Stdout, o.StdoutTruncated, o.Stderr = out.final()
	log.Info("attempt finished", "exit_code", o.ExitCode, "timed_out", o.TimedOut, "killed", o.Killed, "host_error", o.HostError)
	at.a.mu.Lock()
	at.ended = true
	at.a.mu.Unlock()
	at.rep.finish(o, out.tail())
	if at.workDir != "" {
		if err := sandbox.RemoveWorkDir(at.workDir); err != nil {
			log.Warn("remove work dir", "err", err)
		}
	}
}

// execute prepares the image and directories, runs the sandbox and turns
// its outcome into the wire outcome. An error is a host failure.
func (at *attempt) execute(ctx context.Context, out *output) (*agentproto.Outcome, error) {
	asg := &at.asg
	cfg := &at.a.cfg
	if !sandbox.ValidAttemptID(asg.AttemptID) {
		return nil, fmt.Errorf("invalid attempt id %q", asg.AttemptID)
	}
	if !sandbox.ValidAttemptID(asg.ProjectID) {
		return nil, fmt.Errorf("invalid project id %q", asg.ProjectID)
	}
	defer at.releasePins()
	at.pin(cfg.Images.Pin(asg.ImageDigest))
	var img *ociimage.Image
	var err error
	switch {
	case asg.ImageLayoutDir != "" && !cfg.LayoutsInPlace:
		err = fmt.Errorf("the assignment names an image directory (%s); this host takes images only by URL", asg.ImageLayoutDir)
	case asg.ImageLayoutDir != "":
		img, err = cfg.Images.Unpack(ctx, asg.ImageLayoutDir, asg.ImageDigest)
	case asg.ImageURL != "":
		img, err = at.a.images.prepare(ctx, cfg.Controller, cfg.Images, asg.ImageDigest, asg.ImageURL)
	default:
		err = errors.New("assignment names no image")
	}
	if err != nil {
		return nil, fmt.Errorf("prepare image: %w", err)
	}

	args := asg.Args
	if len(args) == 0 {
		args = append(append([]string(nil), img.Config.Entrypoint...), img.Config.Cmd...)
	}
	cwd := asg.Cwd
	if cwd == "" {
		cwd = img.Config.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	// Like `docker run`, a WORKDIR the image lacks is created (a FROM
	// scratch build does not put it in a layer); the sandbox mounts the
	// root read-only and could not. os.Root keeps it inside the rootfs
	// whatever links the image holds.
	if err := ensureDir(img.RootFS, cwd); err != nil {
		return nil, fmt.Errorf("prepare working directory %s: %w", cwd, err)
	}
	env := make(map[string]string, len(img.Config.Env)+len(asg.Env))
	for _, kv := range img.Config.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range asg.Env {
		env[k] = v
	}

	workDir := filepath.Join(cfg.WorkRoot, asg.AttemptID)
	// A directory left by an earlier run of this agent is stale: the
	// attempt is ours now.
	if err := os.RemoveAll(workDir); err != nil {
		return nil, fmt.Errorf("clear work dir: %w", err)
	}
	if err := os.MkdirAll(cfg.WorkRoot, 0o700); err != nil {
		return nil, fmt.Errorf("create work root: %w", err)
	}
	// Removed once the outcome is on its way (run), not before: the
	// removal need not delay the report.
	at.workDir = workDir

	inputs, err := at.resolveInputs(ctx)
	if err != nil {
		return nil, err
	}
	// What this attempt uses is pinned: the caches make room around it.
	at.a.trimCaches(ctx)
	// Before the sandbox starts, so the fetch is neither metered nor
	// counted against the task's timeout.
	mounts, release, err := at.mounts(ctx, img.RootFS)
	if err != nil {
		return nil, err
	}
	defer release()
	// With a controller that takes uploads, the whole output is kept
	// beside the work dir (outside what the runner sees) and results
	// beyond the inline limit are spilled instead of dropped.
	_, transfers := cfg.Controller.(ArtifactTransfer)
	var maxResult int64
	logPath := workDir + ".output.log"
	if transfers {
		maxResult = agentproto.ResultInlineMaxBytes
		lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("create output log: %w", err)
		}
		defer os.Remove(logPath)
		defer lf.Close()
		out.keepFull(lf, FullOutputMaxBytes)
	}

	spec := sandbox.Spec{
		AttemptID:      asg.AttemptID,
		TaskID:         asg.TaskID,
		RootFS:         img.RootFS,
		Args:           args,
		Cwd:            cwd,
		Env:            env,
		Payload:        asg.Payload,
		Inputs:         inputs,
		WorkDir:        workDir,
		MaxResultBytes: maxResult,
		CacheDir:       filepath.Join(cfg.CacheRoot, asg.ProjectID),
		Mounts:         mounts,
		CPU:            asg.CPU,
		MemoryMB:       asg.MemoryMB,
		Network:        asg.Network,
		PidsLimit:      max(cfg.PidsLimit, 0),
		StorageBytes:   at.storageBytes(),
		CacheBytes:     at.cacheBytes(),
		MaxOutputFiles: cfg.MaxOutputFiles,
		MaxOutputBytes: cfg.MaxOutputBytes,
		Timeout:        time.Duration(asg.TimeoutS) * time.Second,
		Stdout:         out.stdoutWriter(),
		Stderr:         out.stderrWriter(),
	}
	// Held until execute returns, after the sandbox is gone (gpu.go).
	gpus, releaseGPUs, err := at.attachGPUs(img.RootFS)
	if err != nil {
		return nil, err
	}
	defer releaseGPUs()
	spec.GPU = gpus
	if ctx.Err() != nil {
		return nil, errors.New("attempt cancelled before it started")
	}
	at.rep.started()
	so, err := cfg.Driver.Run(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	out.flush()
	o := &agentproto.Outcome{
		ExitCode:       so.ExitCode,
		TimedOut:       so.TimedOut,
		OOMKilled:      so.OOMKilled,
		Killed:         so.Killed,
		SandboxError:   so.SandboxError,
		StartFailed:    so.StartFailed,
		StartedAt:      so.StartedAt,
		EndedAt:        so.EndedAt,
		ResultTooLarge: so.ResultTooLarge,
		ResultRejected: so.ResultRejected,
		GPUsAttached:   attachedGPUs(gpus),
	}
	if so.Result != nil {
		if json.Valid(so.Result) {
			o.Result = so.Result
			o.FailureClass = failureClass(so.Result)
		} else {
			o.ResultRejected = "result file is not valid JSON"
		}
	}
	o.StorageError = at.storageError(so, &spec)
	if so.OutputRejected != "" {
		o.ArtifactError = "outputs refused: " + so.OutputRejected
	}
	if transfers && !so.Killed && so.OutputRejected == "" {
		at.uploadOutputs(context.WithoutCancel(ctx), o, so, sandbox.HostDirs(&spec), logPath, out.needsFull())
	}
	return o, nil
}

// storageBytes is the attempt's storage quota in bytes, 0 when the host
// sets none.
func (at *attempt) storageBytes() int64 {
	if !at.a.cfg.StorageQuota {
		return 0
	}
	gb := at.asg.StorageGB
	if gb <= 0 {
		gb = DefaultStorageGB
	}
	return gb << 30
}

// storageError says in words which quota the runner used up, "" when
// none: its attempt's storage_gb, or its project's cache mounts on this
// host.
func (at *attempt) storageError(so *sandbox.Outcome, spec *sandbox.Spec) string {
	switch {
	case so.StorageExceeded:
		return fmt.Sprintf("the task used up its storage quota of %d GiB (requirements.storage_gb): writes past it failed with \"no space left on device\"; ask for more storage_gb or write less to the scratch and artifact directories", spec.StorageBytes>>30)
	case so.FullMount != "":
		return fmt.Sprintf("the task filled its cache mount %s: the project's cache mounts may hold %s on this host, shared by all of them, and writes past it failed with \"no space left on device\"; write less to the cache mounts, or remove what the task no longer needs from them (POST /api/v1/projects/{name}/invalidate starts them empty)", so.FullMount, sizeWords(at.a.cacheMounts.volumeBytes))
	}
	return ""
}

// sizeWords is n bytes in GiB, or MiB under 1 GiB.
func sizeWords(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%g GiB", float64(n)/(1<<30))
}

// cacheBytes is the project cache's quota, 0 when the host sets none.
func (at *attempt) cacheBytes() int64 {
	if !at.a.cfg.StorageQuota {
		return 0
	}
	return at.a.cfg.CacheBytes
}

// FullOutputMaxBytes bounds the full output kept of one attempt.
const FullOutputMaxBytes = 1 << 30

// failureClass is FailureClassInfra when result is an object whose
// failure_class says so.
func failureClass(result []byte) string {
	var r struct {
		FailureClass string `json:"failure_class"`
	}
	if json.Unmarshal(result, &r) == nil && r.FailureClass == agentproto.FailureClassInfra {
		return agentproto.FailureClassInfra
	}
	return ""
}

// ensureDir creates dir (absolute, inside the image) under rootfs.
func ensureDir(rootfs, dir string) error {
	rel := strings.TrimPrefix(filepath.Clean("/"+dir), "/")
	if rel == "" {
		return nil
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.MkdirAll(rel, 0o755)
}
