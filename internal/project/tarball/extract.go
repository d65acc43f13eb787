package tarball

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Extract reads a gzip-compressed tar stream from r and writes its entries
// under dst, which the caller has created and which must be empty.
//
// Failures caused by the pushed bytes are *Error values whose Kind tells
// the HTTP status (see Kind). Any other error (a failing read of r itself,
// such as a body over the server's size cap, a cancelled ctx, a full disk)
// is returned wrapped as is. On any error dst may hold a partial tree and the
// caller removes it.
func Extract(ctx context.Context, r io.Reader, dst string, lim Limits) (*Tree, error) {
	body := &bodyReader{r: r}
	gz, err := gzip.NewReader(body)
	if err != nil {
		if body.err != nil {
			return nil, fmt.Errorf("read push body: %w", body.err)
		}
		msg := "not a gzip stream: " + err.Error()
		if errors.Is(err, io.EOF) {
			msg = "the body is empty"
		}
		return nil, &Error{Kind: KindNotGzip, Problems: []Problem{{Message: msg}}, Err: err}
	}
	defer gz.Close()

	root, err := os.OpenRoot(dst)
	if err != nil {
		return nil, fmt.Errorf("open extraction directory: %w", err)
	}
	defer root.Close()

	lim = lim.withDefaults()
	in := &meteredReader{ctx: ctx, r: gz, max: lim.MaxBytes}
	x := &extractor{
		ctx:   ctx,
		lim:   lim,
		root:  root,
		body:  body,
		in:    in,
		tr:    tar.NewReader(in),
		buf:   make([]byte, 32<<10),
		nodes: make(map[string]node),
	}
	if err := x.run(); err != nil {
		return nil, err
	}
	return x.finish()
}

// bodyReader remembers a failure of the request body itself, so that it is
// not mistaken for corrupt gzip: a body cut off by the server's size cap is
// the server's decision to report, not a 400 "not gzip".
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

// extractor holds the state of one Extract call.
type extractor struct {
	ctx  context.Context
	lim  Limits
	root *os.Root
	body *bodyReader
	in   *meteredReader
	tr   *tar.Reader
	buf  []byte

	// nodes records every path created so far, so that duplicates, links
	// and parents are judged against what the archive made, never against
	// what happens to be on disk.
	nodes    map[string]node
	files    []File
	symlinks []Symlink
	entries  int
	written  int64
	problems problemList
}

type nodeKind uint8

const (
	nodeFile nodeKind = iota + 1
	nodeDir
	nodeImplicitDir // created for a nested entry; the archive may still list it
	nodeSymlink
)

type node struct {
	kind nodeKind
	file int // index in extractor.files, for nodeFile
}

// run reads the archive to its end. A non-nil error stops the extraction:
// a stream failure, a limit, or a server-side I/O error. Problems with
// single entries are gathered instead, up to maxProblems.
func (x *extractor) run() error {
	for !x.problems.full() {
		hdr, err := x.tr.Next()
		if err == io.EOF {
			return x.drain()
		}
		// ErrInsecurePath only appears under GODEBUG=tarinsecurepath=0; the
		// header is still valid and our own path checks judge it.
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return x.streamErr(err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // PAX global header, e.g. the commit id `git archive` writes
		}
		if err := x.entry(hdr); err != nil {
			return err
		}
	}
	return nil
}

// drain reads what follows the tar end marker, so the gzip checksum is
// verified and bytes hidden after the archive still count against the
// limit. Non-gzip bytes after a complete gzip member are ignored, as gzip(1)
// does.
func (x *extractor) drain() error {
	_, err := io.Copy(io.Discard, x.in)
	if err == nil {
		return nil
	}
	if errors.Is(x.in.srcErr, gzip.ErrHeader) && !x.in.overLimit && x.body.err == nil && x.ctx.Err() == nil {
		return nil
	}
	return x.streamErr(err)
}

// streamErr says which layer an error of the tar reader came from.
func (x *extractor) streamErr(err error) error {
	switch {
	case x.ctx.Err() != nil:
		return fmt.Errorf("extract tarball: %w", x.ctx.Err())
	case x.body.err != nil:
		return fmt.Errorf("read push body: %w", x.body.err)
	case x.in.overLimit:
		return x.fatal("", "the archive decompresses to more than %s, the limit", formatBytes(x.lim.MaxBytes))
	case x.in.srcErr != nil:
		return &Error{Kind: KindNotGzip, Err: x.in.srcErr,
			Problems: []Problem{{Message: "corrupt or truncated gzip stream: " + x.in.srcErr.Error()}}}
	default:
		return &Error{Kind: KindNotTar, Err: err, Problems: []Problem{{Message: err.Error()}}}
	}
}

// fatal records a problem that ends the extraction and returns the error
// holding every problem found so far.
func (x *extractor) fatal(path, format string, args ...any) error {
	x.problems.add(path, format, args...)
	return x.problems.err()
}

func (x *extractor) entry(hdr *tar.Header) error {
	x.entries++
	if x.entries > x.lim.MaxEntries {
		return x.fatal("", "the archive has more than %d entries, the limit", x.lim.MaxEntries)
	}
	name := hdr.Name
	p, err := cleanEntryPath(name, x.lim.MaxPathLen)
	if err != nil {
		x.problems.add(name, "%v", err)
		return nil
	}
	if p == "." {
		// "./" is how `tar -C dir .` lists the root; it is already there.
		if hdr.Typeflag != tar.TypeDir {
			x.problems.add(name, "entry names the project root but is not a directory")
		}
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(name, p)
	case tar.TypeReg:
		return x.file(hdr, name, p)
	case tar.TypeSymlink:
		return x.symlink(hdr, name, p)
	case tar.TypeLink:
		return x.hardlink(hdr, name, p)
	case tar.TypeChar, tar.TypeBlock:
		x.problems.add(name, "device entries are not allowed")
	case tar.TypeFifo:
		x.problems.add(name, "FIFO entries are not allowed")
	default:
		x.problems.add(name, "unsupported entry type %q; only files, directories and links are allowed", string(rune(hdr.Typeflag)))
	}
	return nil
}

// claim reports whether an entry may be created at p and creates the parent
// directories it needs. A parent that the archive made a symlink or a file
// refuses the entry: writing through a link the archive planted is exactly
// how an archive escapes its root.
func (x *extractor) claim(name, p string, isDir bool) (bool, error) {
	if n, ok := x.nodes[p]; ok {
		switch {
		case isDir && n.kind == nodeImplicitDir:
			return true, nil
		case n.kind == nodeImplicitDir:
			x.problems.add(name, "%q is already a directory holding earlier entries", p)
		default:
			x.problems.add(name, "duplicate entry: %q was already extracted", p)
		}
		return false, nil
	}
	for i := range len(p) {
		if p[i] != '/' {
			continue
		}
		parent := p[:i]
		n, ok := x.nodes[parent]
		if !ok {
			if err := x.mkdir(parent); err != nil {
				return false, err
			}
			x.nodes[parent] = node{kind: nodeImplicitDir}
			continue
		}
		switch n.kind {
		case nodeDir, nodeImplicitDir:
		case nodeSymlink:
			x.problems.add(name, "parent %q is a symlink; entries are never written through symlinks", parent)
			return false, nil
		default:
			x.problems.add(name, "parent %q is not a directory", parent)
			return false, nil
		}
	}
	return true, nil
}

func (x *extractor) mkdir(p string) error {
	if err := x.root.Mkdir(p, 0o755); err != nil {
		return fmt.Errorf("create directory %q: %w", p, err)
	}
	// Mkdir's mode passes through the umask; the tree's modes must not.
	if err := x.root.Chmod(p, 0o755); err != nil {
		return fmt.Errorf("set mode of directory %q: %w", p, err)
	}
	return nil
}

func (x *extractor) dir(name, p string) error {
	ok, err := x.claim(name, p, true)
	if !ok || err != nil {
		return err
	}
	if x.nodes[p].kind != nodeImplicitDir {
		if err := x.mkdir(p); err != nil {
			return err
		}
	}
	x.nodes[p] = node{kind: nodeDir}
	return nil
}

func (x *extractor) file(hdr *tar.Header, name, p string) error {
	// The header's size is checked before any byte is written so that an
	// honest oversized file fails at once, and so that a sparse file, whose
	// holes are not in the stream, cannot fill the disk.
	if hdr.Size > x.lim.MaxBytes-x.written {
		return x.fatal(name, "the archive's files total more than %s, the limit", formatBytes(x.lim.MaxBytes))
	}
	ok, err := x.claim(name, p, false)
	if !ok || err != nil {
		return err
	}
	f, err := x.writeFile(p, hdr.Mode&0o111 != 0)
	if err != nil {
		return err
	}
	x.written += f.Size
	x.nodes[p] = node{kind: nodeFile, file: len(x.files)}
	x.files = append(x.files, f)
	return nil
}

// writeFile streams the current entry's content to p, hashing it on the
// way. O_EXCL makes the open fail rather than follow anything already at p.
// Setuid, setgid and sticky bits are never kept, and group or other write
// permission is never granted: the mode is 0755 if the archive marked the
// file executable for anyone, else 0644.
func (x *extractor) writeFile(p string, executable bool) (File, error) {
	out, err := x.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return File{}, fmt.Errorf("create file %q: %w", p, err)
	}
	sum := sha256.New()
	size, readErr, writeErr := x.copyEntry(io.MultiWriter(out, sum))
	if readErr == nil && writeErr == nil {
		mode := os.FileMode(0o644)
		if executable {
			mode = 0o755
		}
		writeErr = out.Chmod(mode)
	}
	if err := out.Close(); err != nil && writeErr == nil {
		writeErr = err
	}
	if writeErr != nil {
		return File{}, fmt.Errorf("write file %q: %w", p, writeErr)
	}
	if readErr != nil {
		return File{}, x.streamErr(readErr)
	}
	return File{Path: p, Size: size, SHA256: hex.EncodeToString(sum.Sum(nil)), Executable: executable}, nil
}

// copyEntry copies the current entry to w, keeping read failures (the
// client's stream) apart from write failures (our disk).
func (x *extractor) copyEntry(w io.Writer) (n int64, readErr, writeErr error) {
	for {
		k, err := x.tr.Read(x.buf)
		if k > 0 {
			if _, werr := w.Write(x.buf[:k]); werr != nil {
				return n, nil, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, err, nil
		}
	}
}

func (x *extractor) symlink(hdr *tar.Header, name, p string) error {
	target := hdr.Linkname
	if err := checkSymlinkTarget(p, target, x.lim.MaxPathLen); err != nil {
		x.problems.add(name, "%v", err)
		return nil
	}
	ok, err := x.claim(name, p, false)
	if !ok || err != nil {
		return err
	}
	if err := x.root.Symlink(target, p); err != nil {
		return fmt.Errorf("create symlink %q: %w", p, err)
	}
	x.nodes[p] = node{kind: nodeSymlink}
	x.symlinks = append(x.symlinks, Symlink{Path: p, Target: target})
	return nil
}

// hardlink accepts only links to a regular file this archive already
// extracted: anything else could alias a file outside the root or one the
// archive never showed us.
func (x *extractor) hardlink(hdr *tar.Header, name, p string) error {
	target, err := cleanEntryPath(hdr.Linkname, x.lim.MaxPathLen)
	if err != nil {
		x.problems.add(name, "hard link target %q: %v", hdr.Linkname, err)
		return nil
	}
	n, ok := x.nodes[target]
	switch {
	case !ok:
		x.problems.add(name, "hard link target %q is not an earlier entry of the archive", hdr.Linkname)
		return nil
	case n.kind != nodeFile:
		x.problems.add(name, "hard link target %q is not a regular file", hdr.Linkname)
		return nil
	}
	ok, err = x.claim(name, p, false)
	if !ok || err != nil {
		return err
	}
	if err := x.root.Link(target, p); err != nil {
		return fmt.Errorf("create hard link %q: %w", p, err)
	}
	f := x.files[n.file]
	f.Path = p
	x.nodes[p] = node{kind: nodeFile, file: len(x.files)}
	x.files = append(x.files, f)
	return nil
}

// finish builds the Tree and runs the checks that need the whole archive.
func (x *extractor) finish() (*Tree, error) {
	t := &Tree{Files: x.files, Dirs: []string{}, Symlinks: x.symlinks}
	if t.Symlinks == nil {
		t.Symlinks = []Symlink{}
	}
	for p, n := range x.nodes {
		if n.kind == nodeDir || n.kind == nodeImplicitDir {
			t.Dirs = append(t.Dirs, p)
		}
	}
	slices.SortFunc(t.Files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	slices.Sort(t.Dirs)
	slices.SortFunc(t.Symlinks, func(a, b Symlink) int { return cmp.Compare(a.Path, b.Path) })

	for _, s := range t.Symlinks {
		if _, err := t.resolve(s.Path); err != nil {
			x.problems.add(s.Path, "symlink target %q %v", s.Target, err)
		}
	}
	if len(t.Files) == 0 {
		x.problems.add("", "the archive holds no regular files")
	}
	if err := x.problems.err(); err != nil {
		return nil, err
	}
	return t, nil
}
