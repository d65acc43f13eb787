package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// InputsDirName is the directory under the payload directory that holds
// the attempt's artifact inputs: read-only to the runner, like the payload.
const InputsDirName = "inputs"

// EnvArtifactPrefix starts the variable that names a single-file artifact
// input: SKIFF_ARTIFACT_<NAME> (spec 2.10).
const EnvArtifactPrefix = "SKIFF_ARTIFACT_"

// Input is one artifact input of an attempt.
type Input struct {
	// Name is the file's name in the inputs directory: a plain name,
	// unique within the attempt (ValidInputName).
	Name string
	// HostPath is the content on the host (the host's input cache). It is
	// hard-linked (or copied) into the attempt, never moved.
	HostPath string
}

// ValidInputName reports whether name is a plain file name.
func ValidInputName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00") && len(name) <= 255
}

// InputFile is where input name is in this layout.
func (d Dirs) InputFile(name string) string { return filepath.Join(d.Payload, InputsDirName, name) }

// InputEnvName is the SKIFF_ARTIFACT_<NAME> variable of an input: its
// name upper-cased, each character other than A-Z and 0-9 as '_'.
func InputEnvName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return EnvArtifactPrefix + b.String()
}

// payloadWithLocalPaths sets payload._artifacts.local_paths to the inputs'
// paths in the runner's view. A payload that is not a JSON object is left
// as it is.
func payloadWithLocalPaths(payload []byte, inputs []Input, runner Dirs) []byte {
	if len(inputs) == 0 {
		return payload
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(payload, &top) != nil || top == nil {
		return payload
	}
	arts := map[string]json.RawMessage{}
	if raw, ok := top["_artifacts"]; ok {
		_ = json.Unmarshal(raw, &arts)
		if arts == nil {
			arts = map[string]json.RawMessage{}
		}
	}
	paths := make([]string, len(inputs))
	for i, in := range inputs {
		paths[i] = runner.InputFile(in.Name)
	}
	arts["local_paths"], _ = json.Marshal(paths)
	top["_artifacts"], _ = json.Marshal(arts)
	out, err := json.Marshal(top)
	if err != nil {
		return payload
	}
	return out
}

// placeInputs links each input into the inputs directory, read-only.
func placeInputs(d Dirs, inputs []Input) error {
	if len(inputs) == 0 {
		return nil
	}
	dir := filepath.Join(d.Payload, InputsDirName)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("create inputs dir: %w", err)
	}
	for _, in := range inputs {
		if !ValidInputName(in.Name) {
			return fmt.Errorf("input name %q is not a plain file name", in.Name)
		}
		dst := filepath.Join(dir, in.Name)
		// A hard link shares the cached bytes; the cache is on the same
		// filesystem as the work root in the usual layout. Otherwise copy.
		if err := os.Link(in.HostPath, dst); err != nil {
			if err := copyFile(in.HostPath, dst); err != nil {
				return fmt.Errorf("place input %s: %w", in.Name, err)
			}
		}
		if err := os.Chmod(dst, 0o444); err != nil {
			return err
		}
	}
	return os.Chmod(dir, 0o555)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
