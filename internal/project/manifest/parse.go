package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Parse checks a manifest on its own and returns it with defaults filled
// in. On failure the error is Problems listing everything wrong. File
// references are checked afterwards with CheckAgainst.
func Parse(data []byte) (*Manifest, error) {
	c := &collector{}
	root := c.document(data)
	if root == nil {
		return nil, c.err()
	}
	root.rejectUnknown("version", "runtime", "entrypoint", "build", "validation", "data_sources", "cache_mounts")
	m := &Manifest{
		Version:     parseVersion(root),
		Runtime:     parseRuntime(root),
		Entrypoint:  parseEntrypoint(root),
		Build:       parseBuild(root),
		Validation:  parseValidation(root),
		DataSources: parseDataSources(root),
		CacheMounts: parseCacheMounts(root),
	}
	checkMountPoints(c, m)
	if err := c.err(); err != nil {
		return nil, err
	}
	return m, nil
}

// document checks the file as JSON and returns its top-level object.
func (c *collector) document(data []byte) *object {
	if len(data) > MaxSize {
		c.add("", "%s is %d bytes; the limit is %d", FileName, len(data), MaxSize)
		return nil
	}
	// Editors on Windows save JSON with a byte order mark; it carries no
	// meaning, so it is not worth a failed push.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		c.add("", "%s is empty; the smallest valid manifest is %s", FileName, Minimal)
		return nil
	}
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			c.add("", "invalid JSON at line %d, column %d: %v", line, col, se)
		} else {
			c.add("", "invalid JSON: %v", err)
		}
		return nil
	}
	if t := jsonType(raw); t != "an object" {
		c.add("", "%s must hold a JSON object, got %s", FileName, t)
		return nil
	}
	return c.object("", raw)
}

// position turns a json.SyntaxError offset, which counts the offending
// byte, into the 1-based line and column an editor shows for that byte.
func position(data []byte, offset int64) (line, col int) {
	before := data[:min(max(offset-1, 0), int64(len(data)))]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func parseVersion(root *object) int {
	if !root.require("version", fmt.Sprintf("; set it to %d", Version)) {
		return 0
	}
	v, ok := root.integer("version")
	if ok && v != Version {
		root.c.add("version", "unsupported manifest version %d; this server supports version %d", v, Version)
	}
	return v
}

// sub returns a nested object field, or nil when it is absent or not an
// object (reported).
func (o *object) sub(key string) *object {
	raw, ok := o.take(key)
	if !ok {
		return nil
	}
	return o.c.object(o.at(key), raw)
}
