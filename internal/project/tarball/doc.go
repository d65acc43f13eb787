// Package tarball unpacks a pushed project (a gzip-compressed tar stream)
// into a directory without letting the archive reach outside it, and
// describes what was unpacked as a Tree with a content hash that depends only
// on the files, never on how the archive was made.
//
// The archive is untrusted input: every entry is checked before anything is
// written, writes go through an os.Root so that no path can escape the
// destination even if a check were wrong, and nothing is ever written through
// a symlink that the archive itself created. Memory use does not grow with
// the archive: file contents are streamed to disk and hashed on the way.
//
// Extract never removes what it wrote. When it returns an error the
// destination may hold a partial tree, and the caller, who created the
// directory, removes it (os.RemoveAll(dst)); every file and directory
// Extract creates is writable by its owner, so that removal cannot fail on
// permissions.
package tarball
