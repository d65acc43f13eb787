package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// The hardened untar. Every filesystem call goes through an os.Root opened
// on the destination, which refuses any path that would resolve outside
// it: through "..", an absolute symlink, or a symlink planted by an
// earlier entry. On top of that:
//   - names with ".." components are refused outright;
//   - an entry replaces whatever is at its path without following it;
//   - hard links must point at a regular file already unpacked;
//   - device nodes and FIFOs are skipped (the sandbox's /dev is a tmpfs);
//   - setuid and setgid bits are dropped: the runner runs with
//     no_new_privs, and a setuid-root binary on the host disk is a risk;
//   - owners are applied only when running as root.

// untarLimits bounds what one archive may write.
type untarLimits struct {
	maxBytes   int64
	maxEntries int
}

// dirMeta is applied to directories after all entries are written, since
// writing a child changes the directory's mtime and a read-only mode would
// get in the way.
type dirMeta struct {
	name     string
	mode     fs.FileMode
	uid, gid int
	mtime    time.Time
}

// untar extracts the tar stream r into the existing directory dest.
func untar(ctx context.Context, r io.Reader, dest string, lim untarLimits, log *slog.Logger) error {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return fmt.Errorf("open unpack root: %w", err)
	}
	defer root.Close()
	u := &untarrer{root: root, lim: lim, chown: os.Geteuid() == 0}
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if u.entries++; u.entries > lim.maxEntries {
			return fmt.Errorf("image has over %d entries", lim.maxEntries)
		}
		if err := u.entry(ctx, hdr, tr); err != nil {
			return fmt.Errorf("unpack %q: %w", hdr.Name, err)
		}
	}
	if u.skipped > 0 {
		log.Debug("skipped special files", "count", u.skipped)
	}
	return u.finishDirs()
}

type untarrer struct {
	root    *os.Root
	lim     untarLimits
	chown   bool
	entries int
	written int64
	skipped int
	dirs    []dirMeta
}

func (u *untarrer) entry(ctx context.Context, hdr *tar.Header, r io.Reader) error {
	name, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	mode := safeMode(hdr.Mode)
	if name == "." {
		if hdr.Typeflag == tar.TypeDir {
			u.dirs = append(u.dirs, dirMeta{name: ".", mode: mode, uid: hdr.Uid, gid: hdr.Gid, mtime: hdr.ModTime})
		}
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return u.dir(name, hdr, mode)
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA still occurs in old archives
		return u.file(ctx, name, hdr, mode, r)
	case tar.TypeSymlink:
		return u.symlink(name, hdr)
	case tar.TypeLink:
		return u.hardlink(name, hdr)
	default:
		// Devices, FIFOs and anything newer: nothing a runner needs.
		u.skipped++
		return nil
	}
}

// cleanName turns a tar entry name into a slash-separated path relative to
// the root ("." for the root itself), refusing ".." components.
func cleanName(name string) (string, error) {
	if slices.Contains(strings.Split(name, "/"), "..") {
		return "", errors.New(`name has a ".." component`)
	}
	clean := strings.TrimPrefix(path.Clean("/"+name), "/")
	if clean == "" {
		return ".", nil
	}
	return clean, nil
}

// safeMode keeps the permission and sticky bits and drops setuid/setgid.
func safeMode(m int64) fs.FileMode {
	mode := fs.FileMode(m) & fs.ModePerm
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// prepare makes name's parent exist and removes whatever is at name,
// unless keepDir and it is a directory. It reports whether a directory was
// kept.
func (u *untarrer) prepare(name string, keepDir bool) (kept bool, err error) {
	if dir := path.Dir(name); dir != "." {
		if err := u.root.MkdirAll(dir, 0o755); err != nil {
			return false, fmt.Errorf("create parent: %w", err)
		}
	}
	fi, err := u.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("lstat: %w", err)
	case keepDir && fi.IsDir():
		return true, nil
	}
	if err := u.root.RemoveAll(name); err != nil {
		return false, fmt.Errorf("replace existing: %w", err)
	}
	return false, nil
}

func (u *untarrer) dir(name string, hdr *tar.Header, mode fs.FileMode) error {
	kept, err := u.prepare(name, true)
	if err != nil {
		return err
	}
	if !kept {
		if err := u.root.Mkdir(name, 0o700); err != nil {
			return fmt.Errorf("mkdir: %w", err)
		}
	}
	u.dirs = append(u.dirs, dirMeta{name: name, mode: mode, uid: hdr.Uid, gid: hdr.Gid, mtime: hdr.ModTime})
	return nil
}

func (u *untarrer) file(ctx context.Context, name string, hdr *tar.Header, mode fs.FileMode, r io.Reader) error {
	if hdr.Size < 0 || u.written+hdr.Size > u.lim.maxBytes {
		return fmt.Errorf("image is over %d bytes", u.lim.maxBytes)
	}
	if _, err := u.prepare(name, false); err != nil {
		return err
	}
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	n, err := copyCtx(ctx, f, io.LimitReader(r, hdr.Size))
	u.written += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if n != hdr.Size {
		return fmt.Errorf("short file: %d of %d bytes", n, hdr.Size)
	}
	return u.meta(name, mode, hdr.Uid, hdr.Gid, hdr.ModTime)
}

func (u *untarrer) symlink(name string, hdr *tar.Header) error {
	if _, err := u.prepare(name, false); err != nil {
		return err
	}
	// The target is stored as is: it resolves inside the sandbox's root,
	// and nothing on the host follows it except through an os.Root.
	if err := u.root.Symlink(hdr.Linkname, name); err != nil {
		return fmt.Errorf("symlink: %w", err)
	}
	if u.chown {
		if err := u.root.Lchown(name, hdr.Uid, hdr.Gid); err != nil {
			return fmt.Errorf("lchown: %w", err)
		}
	}
	return nil
}

func (u *untarrer) hardlink(name string, hdr *tar.Header) error {
	target, err := cleanName(hdr.Linkname)
	if err != nil {
		return fmt.Errorf("link target: %w", err)
	}
	fi, err := u.root.Lstat(target)
	if err != nil {
		return fmt.Errorf("link target %q: %w", hdr.Linkname, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("link target %q is not a regular file", hdr.Linkname)
	}
	if target == name {
		return nil
	}
	if _, err := u.prepare(name, false); err != nil {
		return err
	}
	if err := u.root.Link(target, name); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	return nil
}

// meta applies owner, mode and mtime; chown first, because it clears
// mode bits.
func (u *untarrer) meta(name string, mode fs.FileMode, uid, gid int, mtime time.Time) error {
	if u.chown {
		if err := u.root.Lchown(name, uid, gid); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	if err := u.root.Chmod(name, mode); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if err := u.root.Chtimes(name, mtime, mtime); err != nil {
		return fmt.Errorf("chtimes: %w", err)
	}
	return nil
}

// finishDirs applies directory metadata, deepest first so that a parent's
// mtime is set after its children are done.
func (u *untarrer) finishDirs() error {
	for _, d := range slices.Backward(u.dirs) {
		if err := u.meta(d.name, d.mode, d.uid, d.gid, d.mtime); err != nil {
			return fmt.Errorf("directory %q: %w", d.name, err)
		}
	}
	return nil
}
