package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/gvisor"
	"github.com/skiffhq/skiff/internal/sandbox/process"
	"github.com/skiffhq/skiff/internal/server"
)

// credentialFile is where `skiff host` keeps its identity, mode 0600.
const credentialFile = "host-credential.json"

// hostIdentity is what a host keeps from its redeem.
type hostIdentity struct {
	HostID     string `json:"host_id"`
	Credential string `json:"credential"`
	Name       string `json:"name"`
}

type remoteHostFlags struct {
	controllers, code, dataDir string
	codeFile                   string
	insecureHTTP               bool
	cpus, memoryGB             float64
	gpus, slots                int
	storageGB, gpuMemoryMB     int64
	runsc, driver              string
	gpuDriverDir               string
	allowUnisolated            bool
	leaseWait                  time.Duration
	data                       dataFlags
	disk                       hostDiskFlags
}

func runHost(ctx context.Context, e *env, args []string) error {
	if handled, err := hostSubcommand(ctx, e, args); handled {
		return err
	}
	fs := e.newFlags("host --controller https://URL[,URL...] (--code-file FILE | a credential in --data-dir) --data-dir DIR [--cpus N] [--memory-gb G] [--gpus K] [--gpu-memory-mb M] [--storage-gb G]",
		"Runs a bring-your-own-hardware host: it redeems the enrollment code on its first start (the credential\n"+
			"is kept in DIR/"+credentialFile+", mode 0600; later starts need no code), then only dials out to\n"+
			"the controller: register, long-poll for work, run each attempt in a gVisor sandbox, report.\n"+
			"Several --controller URLs (one PostgreSQL behind them) are tried in turn when one stops answering.\n"+
			"Plain http:// controllers are refused unless on this machine (loopback) or --insecure-http.\n"+
			"See /docs/hosting.")
	var f remoteHostFlags
	fs.StringVar(&f.controllers, "controller", "", "controller URL(s), comma-separated (required); https, or http on loopback")
	fs.StringVar(&f.codeFile, "code-file", "", "file holding the one-time enrollment code (cek_...) for the first start; must not be readable by group or others (mode 0600); removed once redeemed")
	fs.StringVar(&f.code, "code", "", "refused: the code on the command line is visible to every user in ps and kept in shell history; use --code-file")
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "allow a plain http:// controller off loopback: the code, the credential and tasks' data then cross the network in the clear")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory for the credential, image cache and attempts (required)")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU cores lent to tasks (0: the whole machine)")
	fs.Float64Var(&f.memoryGB, "memory-gb", 0, "memory in GiB lent to tasks (0: the whole machine)")
	fs.IntVar(&f.gpus, "gpus", 0, "GPUs lent to tasks, found on this machine with their driver at start (-1: all it has); see /docs/gpus")
	fs.StringVar(&f.gpuDriverDir, "gpu-driver-dir", "", "directory of the NVIDIA driver's user-space files (libcuda.so*, nvidia-smi; default: found through the loader cache)")
	fs.Int64Var(&f.gpuMemoryMB, "gpu-memory-mb", 0, "memory of each GPU in MiB, for requirements.gpu_memory_mb (0: nvidia-smi's)")
	fs.Int64Var(&f.storageGB, "storage-gb", 0, "disk in GiB lent to each task, for requirements.storage_gb (0: what is free under --data-dir)")
	fs.IntVar(&f.slots, "slots", 0, "tasks run at once (0: one per lent CPU)")
	fs.StringVar(&f.runsc, "runsc", build.DefaultRunscPath, "gVisor runsc")
	fs.StringVar(&f.driver, "driver", "gvisor", "sandbox: gvisor, or process (NOT a sandbox; needs --allow-unisolated, tests only)")
	fs.BoolVar(&f.allowUnisolated, "allow-unisolated", false, "let --driver=process run tasks unsandboxed")
	fs.DurationVar(&f.leaseWait, "lease-wait", 0, "long-poll wait asked of the controller (0: the agent's default)")
	f.data.register(fs)
	f.disk.register(fs, "--data-dir")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if err := f.data.validate(); err != nil {
		return err
	}
	if err := f.disk.validate(); err != nil {
		return err
	}
	urls := splitList(f.controllers)
	if len(urls) == 0 || f.dataDir == "" {
		fs.Usage()
		return errors.New("--controller and --data-dir are required")
	}
	for i, u := range urls {
		urls[i] = strings.TrimRight(u, "/")
		if err := agenthttp.CheckControllerURL(urls[i], f.insecureHTTP); err != nil {
			return err
		}
	}
	dataDir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewJSONHandler(e.stderr, nil)).With("component", "host")
	if f.insecureHTTP {
		log.Warn("--insecure-http: a plain http controller off loopback is allowed; the code, the credential and tasks' data cross the network in the clear")
	}
	code, err := enrollmentCode(&f, log)
	if err != nil {
		return err
	}

	if f.storageGB < 0 || f.gpuMemoryMB < 0 {
		return errors.New("--storage-gb and --gpu-memory-mb must not be negative")
	}
	// Measured before enrolling, so that the profile the controller keeps
	// for the host carries its single-core score.
	prof, err := agent.MeasureProfile(ctx, f.gpuMemoryMB)
	if err != nil {
		log.Warn("measuring this machine", "err", err)
	}
	gpus, err := hostGPUs(ctx, &f, dataDir, &prof, log)
	if err != nil {
		return err
	}
	storageGB := f.storageGB
	if storageGB == 0 {
		storageGB = freeDiskGB(f.disk.root(dataDir))
	}
	cpus, memGB := f.cpus, f.memoryGB
	if cpus <= 0 {
		cpus = float64(runtime.NumCPU())
	}
	if memGB <= 0 {
		memGB = float64(prof.MemoryTotalMB) / 1024
	}
	id, err := hostCredential(ctx, dataDir, urls, code, &apiv1.RedeemRequest{CPUs: cpus, MemoryGB: memGB, GPUs: attachable(gpus)}, prof, log)
	if err != nil {
		return err
	}
	log = log.With("host_id", id.HostID)

	// What tasks write or make this host fetch lives under the work base,
	// which --work-dir may put on a filesystem of its own.
	base := f.disk.root(dataDir)
	driver, err := remoteHostDriver(&f, dataDir, base, log)
	if err != nil {
		return err
	}
	// Reap what an earlier run of this host left: its sandboxes are
	// stopped here, and the attempts they ran, absent from the first
	// registration's running list, are declared lost by the controller and
	// requeued free.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	if err := driver.Cleanup(cctx); err != nil {
		log.Warn("cleaning up after an earlier run", "err", err)
	}
	cancel()
	// Attempts' filesystems a crash left mounted go first: RemoveAll
	// would otherwise empty them and stop at their mount points.
	if _, err := sandbox.ReapDisks(base); err != nil {
		log.Warn("unmounting attempts' disks left by an earlier run", "err", err)
	}
	for _, d := range []string{"work", "inputs"} {
		_ = os.RemoveAll(filepath.Join(base, d))
	}
	slots := f.slots
	if slots <= 0 {
		slots = max(1, int(cpus))
	}
	// The manifests' data sources are fetched once onto this host and its
	// cache mounts kept here, as on the controller's own host.
	dataSources, err := f.data.cache(filepath.Join(base, "data"), log)
	if err != nil {
		return err
	}
	cfg := agent.Config{
		Controller:  agenthttp.NewFailover(urls, id.Credential),
		DataSources: dataSources, CacheMountMaxBytes: gib(f.data.cacheMountsGB),
		Driver: driver,
		Images: &ociimage.Cache{Root: filepath.Join(base, "images"), MountPoints: sandbox.MountPoints(), Logger: log},
		// Its own seeds directory, never a path the controller names on
		// its machine; images come by URL only.
		SeedRoot:        filepath.Join(dataDir, "seeds"),
		WorkRoot:        filepath.Join(base, "work"),
		InputRoot:       filepath.Join(base, "inputs"),
		CacheRoot:       filepath.Join(base, "cache"),
		Slots:           slots,
		ImageCacheBytes: gib(f.data.imageCacheGB),
		Profile:         prof,
		Capacity:        agentproto.Capacity{CPU: cpus, MemoryMB: int64(memGB * 1024), StorageGB: storageGB},
		GPU:             gpus,
		PollWait:        f.leaseWait,
		Logger:          log,
	}
	f.disk.apply(&cfg, cfg.WorkRoot, f.driver == "gvisor")
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	log.Info("host started", "controllers", urls, "cpus", cpus, "memory_gb", memGB, "gpus", attachable(gpus), "slots", slots,
		"storage_gb", storageGB, "single_core_score", prof.SingleCoreScore, "gpu_memory_mb", prof.GPUMemoryMB, "driver", f.driver)
	err = a.Run(ctx)
	cctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if cerr := driver.Cleanup(cctx); cerr != nil {
		log.Warn("cleaning up", "err", cerr)
	}
	if ctx.Err() != nil {
		log.Info("host stopped")
		return nil
	}
	return err
}

func remoteHostDriver(f *remoteHostFlags, dataDir, workBase string, log *slog.Logger) (sandbox.Driver, error) {
	switch f.driver {
	case "gvisor":
		return gvisor.New(gvisor.Config{RunscPath: f.runsc, StateDir: filepath.Join(dataDir, "runsc"), WarmDir: filepath.Join(workBase, "warm"),
			CgroupParent: "skiff-host-" + server.CgroupSuffix(dataDir), Logger: log})
	case "process":
		return process.New(process.Config{AllowUnisolated: f.allowUnisolated, Logger: log})
	}
	return nil, fmt.Errorf("unknown --driver %q: gvisor or process", f.driver)
}

// hostCredential reads the host's identity from its data dir, or redeems
// code for one and keeps it there (mode 0600) before anything else.
func hostCredential(ctx context.Context, dataDir string, urls []string, code enrollCode, req *apiv1.RedeemRequest,
	prof agentproto.ResourceProfile, log *slog.Logger) (*hostIdentity, error) {
	path := filepath.Join(dataDir, credentialFile)
	b, err := os.ReadFile(path)
	if err == nil {
		var id hostIdentity
		if err := json.Unmarshal(b, &id); err != nil || id.Credential == "" {
			return nil, fmt.Errorf("%s is not a host credential; remove it and enroll again with a new --code", path)
		}
		if code.value != "" {
			log.Info("already enrolled: the enrollment code is not used", "path", path)
		}
		return &id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if code.value == "" {
		return nil, fmt.Errorf("no credential in %s: start with --code-file FILE, a file (mode 0600) holding the cek_... code from `skiff admin create-enrollment`", path)
	}
	req.Code = code.value
	req.Hostname, _ = os.Hostname()
	req.Profile, _ = json.Marshal(prof)
	red, err := redeem(ctx, urls, req)
	if err != nil {
		return nil, err
	}
	id := &hostIdentity{HostID: red.HostID, Credential: red.Credential, Name: red.Name}
	out, _ := json.MarshalIndent(id, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	log.Info("enrolled", "host_id", id.HostID, "name", id.Name, "credential_file", path)
	if code.file != "" {
		// Spent: nothing is left for anyone to read.
		if err := os.Remove(code.file); err != nil {
			log.Warn("remove the redeemed code file", "path", code.file, "err", err)
		}
	}
	return id, nil
}

// redeem sends the code to the first controller that answers.
func redeem(ctx context.Context, urls []string, req *apiv1.RedeemRequest) (*apiv1.RedeemResponse, error) {
	body, _ := json.Marshal(req)
	var errs []error
	for _, u := range urls {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u+"/api/v1/fleet/enrollments/redeem", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		hr.Header.Set("Content-Type", "application/json")
		resp, err := agenthttp.NewHTTPClient().Do(hr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var out apiv1.RedeemResponse
		var env struct {
			Error             string `json:"error"`
			RecommendedAction string `json:"recommended_action"`
		}
		dec := json.NewDecoder(resp.Body)
		if resp.StatusCode == http.StatusCreated {
			err = dec.Decode(&out)
		} else {
			_ = dec.Decode(&env)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			return &out, err
		}
		return nil, fmt.Errorf("enrollment refused (%d): %s. %s", resp.StatusCode, env.Error, env.RecommendedAction)
	}
	return nil, fmt.Errorf("no controller answered: %w", errors.Join(errs...))
}

// selfPath is this binary, which the controller serves to the host
// installer; "" when it cannot be found.
func selfPath() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// freeDiskGB is the space free to unprivileged users on dir's filesystem,
// in whole GiB (at least 1, so that a nearly full disk still declares a
// share that bounds placement rather than none).
func freeDiskGB(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 1
	}
	return max(int64(st.Bavail)*st.Bsize>>30, 1)
}
