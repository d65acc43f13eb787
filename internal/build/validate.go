package build

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The manifest's validation.executables and validation.files are checked
// against the image's flattened file tree, read layer by layer from the OCI
// layout; nothing is unpacked to disk and only metadata is kept, one small
// entry per path. Layers are applied the way go-containerregistry's
// mutate.Extract (what hosts unpack with) applies them: whiteouts and opaque
// directories hide lower layers, and links whose relative target climbs out
// of the root are dropped. Trees are cached by their chain of layer diff IDs,
// so validating a rebuild reads only the layers that changed.

// imageEntry is what validation needs to know about one path in the image.
type imageEntry struct {
	typ      byte
	mode     int64
	linkname string // symlink target, as written
}

// imageTree is an image's flattened file tree, keyed by absolute clean path.
type imageTree map[string]imageEntry

// maxSymlinkHops matches Linux's limit on symlinks followed in one lookup.
const maxSymlinkHops = 40

func newImageTree() imageTree {
	return imageTree{"/": {typ: tar.TypeDir, mode: 0o755}}
}

// readImageTree flattens img's layers, starting from the longest chain of
// them that cache already holds.
func readImageTree(img v1.Image, cache *treeCache) (imageTree, error) {
	layers, diffIDs, err := layersWithDiffIDs(img)
	if err != nil {
		return nil, err
	}
	chains := make([]string, len(layers))
	chain := ""
	for i, diffID := range diffIDs {
		sum := sha256.Sum256([]byte(chain + " " + diffID.String()))
		chain = hex.EncodeToString(sum[:])
		chains[i] = chain
	}
	done, tree := cache.longestPrefix(chains)
	for i := done; i < len(layers); i++ {
		if err := applyLayer(tree, layers[i]); err != nil {
			return nil, fmt.Errorf("reading image layer %d: %w", i, err)
		}
		cache.add(chains[i], tree)
	}
	return tree, nil
}

// layersWithDiffIDs returns img's layers and their diff IDs, taken from the
// config: Layer.DiffID hashes the whole blob of an uncompressed layer.
func layersWithDiffIDs(img v1.Image) ([]v1.Layer, []v1.Hash, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, fmt.Errorf("reading image layers: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, nil, fmt.Errorf("reading image config: %w", err)
	}
	if len(cfg.RootFS.DiffIDs) != len(layers) {
		return nil, nil, fmt.Errorf("image has %d layers but its config lists %d diff ids", len(layers), len(cfg.RootFS.DiffIDs))
	}
	return layers, cfg.RootFS.DiffIDs, nil
}

func applyLayer(tree imageTree, l v1.Layer) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	return tree.apply(rc)
}

// apply adds one layer (an uncompressed tar) on top of the tree. A layer's
// whiteouts hide only lower layers, so they are applied before its entries.
func (t imageTree) apply(r io.Reader) error {
	type add struct {
		path  string
		entry imageEntry
	}
	var adds []add
	var opaque, whiteouts []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.ReplaceAll(hdr.Name, "\\", "/"))
		if name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("unsafe tar path %q", hdr.Name)
		}
		p := path.Clean("/" + name)
		dir, base := path.Dir(p), path.Base(p)
		switch {
		case base == ".wh..wh..opq":
			opaque = append(opaque, dir)
		case strings.HasPrefix(base, ".wh."):
			whiteouts = append(whiteouts, path.Join(dir, strings.TrimPrefix(base, ".wh.")))
		case (hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink) && linkEscapes(name, hdr.Linkname):
			// mutate.Extract drops these, so hosts never see them.
		default:
			e := imageEntry{typ: hdr.Typeflag, mode: hdr.Mode, linkname: hdr.Linkname}
			if e.typ == tar.TypeLink { // a hard link is its target's inode: a file
				e.typ = tar.TypeReg
			}
			adds = append(adds, add{p, e})
		}
	}
	for _, dir := range opaque {
		t.removeBelow(dir)
	}
	for _, p := range whiteouts {
		delete(t, p)
		t.removeBelow(p)
	}
	for _, a := range adds {
		if old, ok := t[a.path]; ok && old.typ == tar.TypeDir && a.entry.typ != tar.TypeDir {
			t.removeBelow(a.path)
		}
		t[a.path] = a.entry
		// Layers may omit parent directories; they exist all the same.
		for dir := path.Dir(a.path); dir != "/"; dir = path.Dir(dir) {
			if _, ok := t[dir]; ok {
				break
			}
			t[dir] = imageEntry{typ: tar.TypeDir, mode: 0o755}
		}
	}
	return nil
}

// linkEscapes is mutate.Extract's test for a link whose relative target,
// taken from the link's own directory, leaves the root.
func linkEscapes(name, linkname string) bool {
	target := path.Clean(strings.ReplaceAll(linkname, "\\", "/"))
	if path.IsAbs(target) {
		return false
	}
	return strings.HasPrefix(path.Clean(path.Join(path.Dir(name), target)), "..")
}

func (t imageTree) removeBelow(dir string) {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for p := range t {
		if strings.HasPrefix(p, prefix) {
			delete(t, p)
		}
	}
}

// resolve follows symlinks in p, staying inside the image as a chroot would,
// and returns the entry p finally names. ok is false when it does not exist
// (or a symlink loop or a non-directory stands in the way).
func (t imageTree) resolve(p string) (entry imageEntry, resolved string, ok bool) {
	pending := splitPath(p)
	cur := "/"
	hops := 0
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, name)
		e, found := t[next]
		if !found {
			return imageEntry{}, next, false
		}
		if e.typ == tar.TypeSymlink {
			if hops++; hops > maxSymlinkHops {
				return imageEntry{}, next, false
			}
			if path.IsAbs(e.linkname) {
				cur = "/"
			}
			pending = append(splitPath(e.linkname), pending...)
			continue
		}
		if len(pending) > 0 && e.typ != tar.TypeDir {
			return imageEntry{}, next, false
		}
		cur = next
	}
	return t[cur], cur, true
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

// validation is what an image must contain.
type validation struct {
	executables []string
	files       []string
}

func (v validation) empty() bool { return len(v.executables) == 0 && len(v.files) == 0 }

// check returns one message per missing or unusable path, in the order given.
// Relative paths are taken from the image's working directory; an executable
// named without a slash is looked up on the image's PATH, as a shell would.
func (v validation) check(tree imageTree, cfg *v1.Config) []string {
	workdir, searchPath := "/", defaultSearchPath
	if cfg != nil {
		if cfg.WorkingDir != "" {
			workdir = cfg.WorkingDir
		}
		for _, kv := range cfg.Env {
			if p, ok := strings.CutPrefix(kv, "PATH="); ok {
				searchPath = p
			}
		}
	}
	var problems []string
	for _, name := range v.executables {
		if problem := checkExecutable(tree, name, workdir, searchPath); problem != "" {
			problems = append(problems, problem)
		}
	}
	for _, name := range v.files {
		if _, _, ok := tree.resolve(inImage(name, workdir)); !ok {
			problems = append(problems, fmt.Sprintf("file %s not found", name))
		}
	}
	return problems
}

// defaultSearchPath is the PATH a container gets when its image sets none.
const defaultSearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func checkExecutable(tree imageTree, name, workdir, searchPath string) string {
	candidates := []string{inImage(name, workdir)}
	if !strings.Contains(name, "/") {
		candidates = nil
		for _, dir := range strings.Split(searchPath, ":") {
			if dir != "" {
				candidates = append(candidates, path.Join(inImage(dir, workdir), name))
			}
		}
	}
	problem := fmt.Sprintf("executable %s not found", name)
	for _, c := range candidates {
		e, _, ok := tree.resolve(c)
		switch {
		case !ok:
			continue
		case e.typ != tar.TypeReg:
			problem = fmt.Sprintf("executable %s is not a regular file", name)
		case e.mode&0o111 == 0:
			problem = fmt.Sprintf("executable %s is not executable (mode %04o)", name, e.mode&0o7777)
		default:
			return ""
		}
	}
	return problem
}

func inImage(p, workdir string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(workdir, p)
}
