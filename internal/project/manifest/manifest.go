package manifest

// FileName is where the manifest lives: the root of the project tarball.
const FileName = "skiff.project.json"

// Version is the only manifest version this server understands. A new
// version is introduced only for a change old servers would misread.
const Version = 1

// MaxSize bounds the manifest file. Callers reading it from a tree should
// read at most MaxSize+1 bytes and let Parse report the excess.
const MaxSize = 1 << 20

// Minimal is the smallest valid manifest, quoted in messages and docs.
const Minimal = `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`

// Values of the enumerated fields.
const (
	RuntimeKindOCI    = "oci"
	SandboxGVisor     = "gvisor"
	SourceHuggingFace = "huggingface"
	SourceURL         = "url"
	DeliveryMount     = "mount"
	RepoTypeModel     = "model"
	RepoTypeDataset   = "dataset"
)

// Defaults of the build section.
const (
	DefaultDockerfile = "Dockerfile"
	DefaultContext    = "."
)

// Manifest is a parsed and validated skiff.project.json with its defaults
// filled in. Its JSON encoding is the normalised manifest, fit to store as
// the project's manifest object. Project-relative paths are stored clean
// ("./Dockerfile" becomes "Dockerfile").
type Manifest struct {
	Version     int          `json:"version"`
	Runtime     Runtime      `json:"runtime"`
	Entrypoint  Entrypoint   `json:"entrypoint"`
	Build       Build        `json:"build"`
	Validation  Validation   `json:"validation"`
	DataSources []DataSource `json:"data_sources"`
	CacheMounts []CacheMount `json:"cache_mounts"`
}

// Runtime says how tasks run. Only OCI images in gVisor are offered to user
// projects.
type Runtime struct {
	Kind    string `json:"kind"`
	Sandbox string `json:"sandbox"`
	// Workdir is the absolute directory in the image where the entrypoint
	// starts; the builder checks that the image has it.
	Workdir string `json:"workdir"`
}

// Entrypoint is the process that starts the project's runner.
type Entrypoint struct {
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
}

// Build says how the image is built from the tarball. Every path is
// relative to the project root.
type Build struct {
	Dockerfile string            `json:"dockerfile"`
	Context    string            `json:"context"`
	Target     string            `json:"target,omitempty"`
	Args       map[string]string `json:"args,omitempty"`
	// Inputs are files or directories the build needs; a push without
	// them is refused before a build is queued.
	Inputs []string `json:"inputs,omitempty"`
}

// Validation lists paths the built image must have; the builder checks them
// after the build and fails it with a clear message otherwise.
type Validation struct {
	Executables []string `json:"executables"`
	Files       []string `json:"files"`
}

// DataSource is an immutable remote input fetched once per revision and
// mounted read-only into every task.
type DataSource struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Repo, RepoType, Revision and Include apply to source "huggingface".
	Repo     string   `json:"repo,omitempty"`
	RepoType string   `json:"repo_type,omitempty"`
	Revision string   `json:"revision,omitempty"`
	Include  []string `json:"include,omitempty"`
	// TokenEnv (huggingface) names the project env variable holding the
	// tenant's own hub token for this source; empty means HF_TOKEN, as
	// the hub's own clients read it. The manifest names the variable,
	// never the token: it is stored and shown in plain text.
	TokenEnv string `json:"token_env,omitempty"`
	// URI and SHA256 apply to source "url".
	URI       string `json:"uri,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	Delivery  string `json:"delivery"`
	MountPath string `json:"mount_path"`
}

// CacheMount is a writable directory kept between tasks of the project on
// the same host, for caches a program fills at run time.
type CacheMount struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Seed is a project directory copied into the cache when the cache is
	// empty.
	Seed string `json:"seed,omitempty"`
}
