package tarball

import (
	"cmp"
	"errors"
	"path"
	"slices"
	"strings"
)

// Tree describes what Extract wrote. Each list is sorted by path, paths are
// clean and relative to the project root, and a Tree never holds the root
// itself. The sorted lists are the whole state: lookups binary-search them,
// so a Tree decoded from JSON works like one returned by Extract.
type Tree struct {
	// Files are the regular files; a hard link appears as a file of its
	// own with its target's content.
	Files []File `json:"files"`
	// Dirs includes directories the archive never listed but that its
	// nested entries needed.
	Dirs     []string  `json:"dirs"`
	Symlinks []Symlink `json:"symlinks"`
}

// File is one extracted regular file.
type File struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256"` // lowercase hex of the content
	Executable bool   `json:"executable"`
}

// Symlink is one extracted symbolic link. Its target is relative and stays
// inside the project.
type Symlink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// maxSymlinkHops matches Linux's limit on links followed in one lookup
// (MAXSYMLINKS), so that anything the kernel could resolve, this can too.
const maxSymlinkHops = 40

var (
	errEscapes     = errors.New("resolves outside the project root")
	errSymlinkLoop = errors.New("too many levels of symbolic links")
)

type entryKind uint8

const (
	kindNone entryKind = iota
	kindFile
	kindDir
	kindSymlink
)

// Has reports whether p (relative to the project root; "./" prefixes are
// fine) names a file or directory of the tree. Symlinks are followed, so a
// dangling link does not count.
func (t *Tree) Has(p string) bool {
	k, _ := t.resolvedKind(p)
	return k == kindFile || k == kindDir
}

// IsDir reports whether p names a directory of the tree, following
// symlinks. "." is the root and always a directory.
func (t *Tree) IsDir(p string) bool {
	k, _ := t.resolvedKind(p)
	return k == kindDir
}

// File returns the file at p without following symlinks.
func (t *Tree) File(p string) (File, bool) {
	i, ok := slices.BinarySearchFunc(t.Files, path.Clean(p), func(f File, p string) int { return cmp.Compare(f.Path, p) })
	if !ok {
		return File{}, false
	}
	return t.Files[i], true
}

func (t *Tree) resolvedKind(p string) (entryKind, error) {
	if p == "" || path.IsAbs(p) {
		return kindNone, errEscapes
	}
	r, err := t.resolve(path.Clean(p))
	if err != nil {
		return kindNone, err
	}
	if r == "." {
		return kindDir, nil
	}
	return t.kind(r), nil
}

// kind looks p up without following symlinks.
func (t *Tree) kind(p string) entryKind {
	if _, ok := slices.BinarySearchFunc(t.Files, p, func(f File, p string) int { return cmp.Compare(f.Path, p) }); ok {
		return kindFile
	}
	if _, ok := slices.BinarySearch(t.Dirs, p); ok {
		return kindDir
	}
	if _, ok := t.symlinkTarget(p); ok {
		return kindSymlink
	}
	return kindNone
}

func (t *Tree) symlinkTarget(p string) (string, bool) {
	i, ok := slices.BinarySearchFunc(t.Symlinks, p, func(s Symlink, p string) int { return cmp.Compare(s.Path, p) })
	if !ok {
		return "", false
	}
	return t.Symlinks[i].Target, true
}

// resolve follows p through the tree's symlinks the way the kernel would
// (a link's target replaces it, relative to the link's directory, and ".."
// after a link climbs from the target) and returns the resulting path. It
// fails when any step climbs above the root, so a chain such as
// "sub/up -> .." plus "sub/esc -> up/../.." is caught even though each
// target looks harmless on its own. Components missing from the tree are
// taken literally.
func (t *Tree) resolve(p string) (string, error) {
	var (
		done []string // resolved components, none of them a symlink
		todo = splitPath(p)
		hops int
	)
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", errEscapes
			}
			done = done[:len(done)-1]
			continue
		}
		cur := c
		if len(done) > 0 {
			cur = strings.Join(done, "/") + "/" + c
		}
		target, ok := t.symlinkTarget(cur)
		if !ok {
			done = append(done, c)
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", errSymlinkLoop
		}
		if path.IsAbs(target) {
			return "", errEscapes
		}
		todo = append(splitPath(target), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

func splitPath(p string) []string {
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}
