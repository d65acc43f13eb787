package tarball

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// cleanEntryPath checks an archive entry name and returns its clean,
// slash-separated form relative to the project root ("." for the root
// itself, which `tar -C dir -czf x.tgz .` writes as "./").
//
// Names are refused rather than repaired: an archive that needs "../" or a
// leading "/" to mean what it says was not made from a project directory, and
// silently rewriting it would hide that from the user.
func cleanEntryPath(name string, maxLen int) (string, error) {
	if err := checkPathText(name, maxLen); err != nil {
		return "", err
	}
	if strings.HasPrefix(name, "/") {
		return "", errors.New("absolute path; entries must be relative to the project root")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", errors.New("path has a '..' component")
		}
		if len(part) > maxNameLen {
			return "", fmt.Errorf("a path component is %d bytes long; the limit is %d", len(part), maxNameLen)
		}
	}
	return path.Clean(name), nil
}

// checkSymlinkTarget refuses targets that leave the project by their own
// text. Escapes through other symlinks are caught once the whole tree is
// known (see Tree.resolve), because a later entry can change what a
// component of the target is.
func checkSymlinkTarget(linkPath, target string, maxLen int) error {
	if err := checkPathText(target, maxLen); err != nil {
		return fmt.Errorf("symlink target: %w", err)
	}
	if path.IsAbs(target) {
		return fmt.Errorf("symlink target %q is absolute; use a relative target inside the project", target)
	}
	if escapes(path.Join(path.Dir(linkPath), target)) {
		return fmt.Errorf("symlink target %q points outside the project root", target)
	}
	return nil
}

// checkPathText applies the rules every stored path obeys. Control
// characters are refused because paths end up in JSON, logs and Dockerfile
// COPY lines, and because the canonical tree encoding relies on paths never
// holding NUL or newline.
func checkPathText(p string, maxLen int) error {
	if p == "" {
		return errors.New("empty path")
	}
	if len(p) > maxLen {
		return fmt.Errorf("path is %d bytes long; the limit is %d", len(p), maxLen)
	}
	if !utf8.ValidString(p) {
		return errors.New("path is not valid UTF-8")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return errors.New("path contains a control character")
		}
	}
	return nil
}

// escapes reports whether a cleaned relative path climbs above the root.
func escapes(clean string) bool {
	return clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean)
}
