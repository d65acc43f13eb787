package sandbox

import (
	"path/filepath"
	"slices"
	"strings"
)

// The runner protocol's environment variables (spec section 2.10, with the
// SKIFF_ prefix).
const (
	EnvPayload     = "SKIFF_TASK_PAYLOAD"
	EnvResult      = "SKIFF_TASK_RESULT"
	EnvArtifactDir = "SKIFF_ARTIFACT_DIR"
	EnvScratchDir  = "SKIFF_TASK_SCRATCH_DIR"
	EnvCacheDir    = "SKIFF_TASK_CACHE_DIR"
	EnvTaskID      = "SKIFF_TASK_ID"

	// ProgressPrefix starts a stdout line that carries a progress JSON object.
	ProgressPrefix = "SKIFF_PROGRESS:"
)

// Names of the per-attempt directories under Spec.WorkDir, and of the files
// in them.
const (
	PayloadDirName  = "payload"
	ResultDirName   = "result"
	ArtifactDirName = "artifacts"
	ScratchDirName  = "scratch"
	PayloadFileName = "payload.json"
	ResultFileName  = "result.json"
	// DiskDirName is where an attempt with a storage quota mounts its own
	// filesystem, holding its result, artifact and scratch directories;
	// DiskImageName is that filesystem's image file.
	DiskDirName   = "disk"
	DiskImageName = "disk.img"
)

// ContainerRoot is where a sandboxed runner finds the attempt's directories.
// The paths are stable so that logs and error messages read the same for
// every attempt; runners should still use the environment variables.
const ContainerRoot = "/run/skiff"

// defaultPath is used when neither the image nor the project sets PATH;
// runtimes (like Docker) do the same, and many runners shell out.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Dirs is one attempt's directory layout as seen from one side: host paths
// for the driver, or the paths a runner sees.
type Dirs struct {
	Payload   string // directory holding the payload file (read-only to the runner)
	Result    string // directory holding the result file
	Artifacts string
	Scratch   string
	Cache     string
}

// HostDirs is the host-side layout of spec's attempt. With a storage
// quota the writable directories are on the attempt's own filesystem,
// mounted at DiskDirName; the payload stays outside it, so that inputs are
// hard-linked, not copied, and do not count against the quota.
func HostDirs(spec *Spec) Dirs {
	writable := spec.WorkDir
	if spec.StorageBytes > 0 {
		writable = filepath.Join(spec.WorkDir, DiskDirName)
	}
	return Dirs{
		Payload:   filepath.Join(spec.WorkDir, PayloadDirName),
		Result:    filepath.Join(writable, ResultDirName),
		Artifacts: filepath.Join(writable, ArtifactDirName),
		Scratch:   filepath.Join(writable, ScratchDirName),
		Cache:     spec.CacheDir,
	}
}

// ContainerDirs is the layout a sandboxed runner sees under ContainerRoot.
func ContainerDirs() Dirs {
	return Dirs{
		Payload:   ContainerRoot + "/" + PayloadDirName,
		Result:    ContainerRoot + "/" + ResultDirName,
		Artifacts: ContainerRoot + "/" + ArtifactDirName,
		Scratch:   ContainerRoot + "/" + ScratchDirName,
		Cache:     ContainerRoot + "/cache",
	}
}

// PayloadFile is the payload file's path in this layout.
func (d Dirs) PayloadFile() string { return filepath.Join(d.Payload, PayloadFileName) }

// ResultFile is the result file's path in this layout.
func (d Dirs) ResultFile() string { return filepath.Join(d.Result, ResultFileName) }

// Environ is the runner's environment, as KEY=VALUE entries sorted by key:
// spec.Env, a default PATH and HOME when missing, then the SKIFF_* variables
// pointing into the runner's view d, which win over spec.Env.
func Environ(spec *Spec, d Dirs) []string {
	env := make(map[string]string, len(spec.Env)+8)
	env["PATH"] = defaultPath
	// HOME is often unset in images; tools that write to ~ then fail on the
	// read-only root, so point it at the scratch directory.
	env["HOME"] = d.Scratch
	for k, v := range spec.Env {
		// SKIFF_ARTIFACT_* names inputs only; the protocol variables
		// below win over an input whose name collides with them
		// (an input named "dir").
		if !strings.HasPrefix(k, EnvArtifactPrefix) {
			env[k] = v
		}
	}
	for _, in := range spec.Inputs {
		env[InputEnvName(in.Name)] = d.InputFile(in.Name)
	}
	env[EnvPayload] = d.PayloadFile()
	env[EnvResult] = d.ResultFile()
	env[EnvArtifactDir] = d.Artifacts
	env[EnvScratchDir] = d.Scratch
	env[EnvCacheDir] = d.Cache
	env[EnvTaskID] = spec.TaskID
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// MountPoints are the directories that the gvisor driver bind-mounts over
// in the image root. runsc creates missing ones in the root filesystem on
// the host, which is shared and meant to stay untouched, so the image
// cache creates them at unpack time (ociimage.Cache.MountPoints).
func MountPoints() []string {
	d := ContainerDirs()
	return []string{d.Payload, d.Result, d.Artifacts, d.Scratch, d.Cache}
}
