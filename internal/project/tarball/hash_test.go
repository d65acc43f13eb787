package tarball

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

func TestContentHashEncoding(t *testing.T) {
	t.Parallel()
	tree := &Tree{
		Files:    []File{{Path: "b", Size: 3, SHA256: "abc", Executable: true}, {Path: "d/e", Size: 0, SHA256: "e3"}},
		Dirs:     []string{"d"},
		Symlinks: []Symlink{{Path: "a", Target: "b"}},
	}
	// Written out by hand so that any change to the encoding, which would
	// change every stored content hash, fails here first.
	enc := "skiff-tree-v1\n" +
		"l\x00a\x00b\n" +
		"f\x00b\x000755\x003\x00abc\n" +
		"d\x00d\n" +
		"f\x00d/e\x000644\x000\x00e3\n"
	sum := sha256.Sum256([]byte(enc))
	if got, want := tree.ContentHash(), "sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// hashOf extracts an archive and returns its content hash.
func hashOf(t *testing.T, data []byte) string {
	t.Helper()
	tree, err := setup(t).extract(t, data, Limits{})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	return tree.ContentHash()
}

func TestContentHashIgnoresPackaging(t *testing.T) {
	t.Parallel()
	base := hashOf(t, tgz(t, dir("src/"), reg("Dockerfile", "FROM scratch\n"), exe("src/run", "#!/bin/sh\n"), sym("run", "src/run")))
	then := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	variants := map[string][]byte{
		"other order and ./ prefix": tgz(t, sym("./run", "src/run"), exe("./src/run", "#!/bin/sh\n"), reg("./Dockerfile", "FROM scratch\n")),
		"mtimes, owners and modes": tgz(t,
			entry{name: "Dockerfile", typ: tar.TypeReg, body: "FROM scratch\n", mode: 0o600, mtime: then, uid: 1000},
			entry{name: "src/run", typ: tar.TypeReg, body: "#!/bin/sh\n", mode: 0o4711, mtime: then, uid: 42},
			entry{name: "src", typ: tar.TypeDir, mode: 0o700, mtime: then},
			sym("run", "src/run")),
		"compression level": gz(t, tarBytes(t, reg("Dockerfile", "FROM scratch\n"), exe("src/run", "#!/bin/sh\n"), sym("run", "src/run")), gzip.NoCompression),
		"PAX format": tgz(t,
			entry{name: "Dockerfile", typ: tar.TypeReg, body: "FROM scratch\n", mode: 0o644, format: tar.FormatPAX},
			entry{name: "src/run", typ: tar.TypeReg, body: "#!/bin/sh\n", mode: 0o755, format: tar.FormatGNU},
			sym("run", "src/run")),
	}
	for name, data := range variants {
		if got := hashOf(t, data); got != base {
			t.Errorf("%s: got %s, want %s", name, got, base)
		}
	}
}

func TestContentHashSeesContent(t *testing.T) {
	t.Parallel()
	base := hashOf(t, tgz(t, reg("a", "1"), reg("b", "2"), sym("l", "a")))
	variants := map[string][]byte{
		"content":        tgz(t, reg("a", "1"), reg("b", "3"), sym("l", "a")),
		"name":           tgz(t, reg("a", "1"), reg("c", "2"), sym("l", "a")),
		"executable bit": tgz(t, reg("a", "1"), exe("b", "2"), sym("l", "a")),
		"link target":    tgz(t, reg("a", "1"), reg("b", "2"), sym("l", "b")),
		"empty dir":      tgz(t, reg("a", "1"), reg("b", "2"), sym("l", "a"), dir("d/")),
		"link to file":   tgz(t, reg("a", "1"), reg("b", "2"), reg("l", "a")),
	}
	for name, data := range variants {
		if got := hashOf(t, data); got == base {
			t.Errorf("%s changed but the hash did not: %s", name, got)
		}
	}
}

func TestContentHashHardLinkIsCopy(t *testing.T) {
	t.Parallel()
	linked := hashOf(t, tgz(t, reg("a", "same"), hard("b", "a")))
	copied := hashOf(t, tgz(t, reg("a", "same"), reg("b", "same")))
	if linked != copied {
		t.Errorf("hard link: got %s, want the copy's %s", linked, copied)
	}
}
