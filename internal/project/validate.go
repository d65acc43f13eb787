package project

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
)

// Limits of project metadata (spec 2.3 and 8, plus bounds the spec leaves
// open, documented in docs/projects.md).
const (
	MaxNameLen           = 64
	DefaultSetupTimeoutS = 600
	MaxSetupTimeoutS     = 6 * 3600
	MaxEnvVars           = 128
	MaxEnvBytes          = 32 << 10
	MaxMetadataJSON      = 64 << 10
)

var (
	nameRe   = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	envKeyRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// codeFields are fields that carry code, which only a push may change.
var codeFields = []string{"tarball", "content_hash", "code", "files", "dockerfile", "archive", "source", "push"}

// problems collects every validation failure of a request, so the caller
// learns about all of them at once.
type problems map[string]string

func (p problems) add(field, msg string) { p[field] = msg }

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	fields := make([]string, 0, len(p))
	for f := range p {
		fields = append(fields, f)
	}
	details := map[string]any{}
	for f, m := range p {
		details[f] = m
	}
	msg := "invalid project: "
	if len(p) == 1 {
		for f, m := range p {
			msg += f + ": " + m
		}
	} else {
		msg += "several fields are invalid (see details)"
	}
	return &fault.Error{Kind: fault.KindInvalid, Code: "invalid_project", Message: msg,
		Action: "Fix the fields named in details and resend.", Details: map[string]any{"fields": details}}
}

// ValidName reports whether name is a valid project name.
func ValidName(name string) bool { return nameRe.MatchString(name) }

func validate(w *apiv1.ProjectWrite, creating bool, raw map[string]json.RawMessage) error {
	p := problems{}
	for _, f := range codeFields {
		if _, ok := raw[f]; ok {
			p.add(f, "code is changed only by pushing a tarball to POST /api/v1/projects/{name}/push")
		}
	}
	switch {
	case w.Name == nil && creating:
		p.add("name", "required")
	case w.Name != nil && !nameRe.MatchString(*w.Name):
		p.add("name", "must be 1-64 characters from a-z, 0-9, underscore, hyphen")
	}
	// remote_dir, image_ref, image_digest and cache_policy (spec 2.3) name
	// ways of preparing a project that Skiff does not have: it runs only
	// the image it built from the pushed tarball, prepared where the
	// Dockerfile says, with the caches skiff.project.json declares. Taking
	// them and then ignoring them would lie to the caller, so a value is
	// refused; empty ones (what GET shows) may be sent back.
	if w.RemoteDir != nil && *w.RemoteDir != "" {
		p.add("remote_dir", "is not supported: Skiff prepares a project by building its Dockerfile into an image; "+
			"set where the runner starts with WORKDIR, or runtime.workdir in skiff.project.json, and leave remote_dir out")
	}
	if w.Env != nil {
		size := 0
		if len(w.Env) > MaxEnvVars {
			p.add("env", "at most 128 variables")
		}
		for k, v := range w.Env {
			size += len(k) + len(v)
			switch {
			case !envKeyRe.MatchString(k):
				p.add("env."+k, "variable names are letters, digits and underscores, not starting with a digit")
			case strings.HasPrefix(k, "SKIFF_"):
				p.add("env."+k, "SKIFF_ variables are set by the service")
			case strings.ContainsRune(v, 0):
				p.add("env."+k, "values may not contain NUL")
			}
		}
		if size > MaxEnvBytes {
			p.add("env", "at most 32 KiB in all")
		}
	}
	if w.SetupTimeoutS != nil && (*w.SetupTimeoutS <= 0 || *w.SetupTimeoutS > MaxSetupTimeoutS) {
		p.add("setup_timeout_s", "must be > 0 and at most 21600")
	}
	if w.RuntimeKind != nil && *w.RuntimeKind != "oci" {
		p.add("runtime_kind", "must be oci")
	}
	const ownImage = "is not supported: Skiff runs only the image it builds from your pushed project; push a tarball " +
		"whose Dockerfile starts FROM the image you want. The published image's ref and digest are on the push record " +
		"(GET /api/v1/projects/{name}/push)"
	if w.ImageRef != nil && *w.ImageRef != "" {
		p.add("image_ref", ownImage)
	}
	if w.ImageDigest != nil && *w.ImageDigest != "" {
		p.add("image_digest", ownImage)
	}
	checkObject(p, "manifest", w.Manifest)
	if c := strings.TrimSpace(string(w.CachePolicy)); c != "" && c != "null" && c != "{}" {
		p.add("cache_policy", "is not supported: declare caches in skiff.project.json (cache_mounts keep a directory "+
			"across a host's tasks; build layers are cached by the builder) and leave cache_policy out")
	}
	checkObject(p, "cache_policy", w.CachePolicy)
	if w.RuntimeVersion != nil && *w.RuntimeVersion <= 0 {
		p.add("runtime_version", "must be a positive integer")
	}
	return p.err()
}

func checkObject(p problems, field string, raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	if len(raw) > MaxMetadataJSON {
		p.add(field, "at most 64 KiB")
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		p.add(field, "must be a JSON object")
	}
}
