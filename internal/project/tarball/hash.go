package tarball

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strconv"
)

// treeEncodingVersion opens the canonical encoding so that a future change
// to it yields different hashes instead of colliding with old ones.
const treeEncodingVersion = "skiff-tree-v1\n"

// ContentHash identifies the tree's content: "sha256:" and the hex digest of
// a canonical encoding of every entry, sorted by path. It covers each path,
// its type, a file's executable bit, size and content digest, and a link's
// target, and nothing else, so archives of the same project made in any
// entry order, with any mtimes, owners or compression level hash the same.
// A hard link counts as a copy of its target's content.
//
// The encoding is one line per entry with NUL-separated fields:
//
//	d\0<path>\n
//	f\0<path>\0<0644|0755>\0<size>\0<sha256 hex>\n
//	l\0<path>\0<target>\n
//
// Paths and targets never hold NUL or newline (Extract refuses control
// characters), so the encoding is unambiguous.
func (t *Tree) ContentHash() string {
	h := sha256.New()
	t.encode(h)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func (t *Tree) encode(w io.Writer) {
	type line struct {
		path string
		text string
	}
	lines := make([]line, 0, len(t.Files)+len(t.Dirs)+len(t.Symlinks))
	for _, d := range t.Dirs {
		lines = append(lines, line{d, "d\x00" + d + "\n"})
	}
	for _, f := range t.Files {
		mode := "0644"
		if f.Executable {
			mode = "0755"
		}
		lines = append(lines, line{f.Path, "f\x00" + f.Path + "\x00" + mode + "\x00" + strconv.FormatInt(f.Size, 10) + "\x00" + f.SHA256 + "\n"})
	}
	for _, s := range t.Symlinks {
		lines = append(lines, line{s.Path, "l\x00" + s.Path + "\x00" + s.Target + "\n"})
	}
	// Sorting the merged list, not each kind apart, keeps the encoding
	// independent of how entries are grouped in the Tree.
	slices.SortFunc(lines, func(a, b line) int { return cmp.Compare(a.path, b.path) })
	io.WriteString(w, treeEncodingVersion)
	for _, l := range lines {
		io.WriteString(w, l.text)
	}
}
