package tarball

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzExtract feeds arbitrary archives to Extract and checks that nothing
// is ever written outside dst, and that an accepted tree holds no link that
// leads out of it. The input is a tar stream that the harness compresses,
// so the fuzzer works on tar structure; with raw set it is used as the
// body directly, to exercise the gzip layer too.
//
//	go test ./internal/project/tarball -run '^$' -fuzz FuzzExtract -fuzztime 60s -fuzzminimizetime 50x
//
// (Bounding minimisation keeps the run from stalling on each new input:
// every execution extracts to disk, so the default 60 s of minimising is
// long.)
func FuzzExtract(f *testing.F) {
	seeds := [][]byte{
		tarBytes(f, reg("./Dockerfile", "FROM scratch\n"), dir("src/"), exe("src/run", "x"), sym("l", "src/run"), hard("h", "src/run")),
		tarBytes(f, reg("a", "1"), sym("link", "/etc"), reg("link/passwd", "x")),
		tarBytes(f, reg("a", "1"), sym("sub/up", ".."), sym("sub/esc", "up/../.."), reg("sub/esc/x", "1")),
		tarBytes(f, reg("../evil", "1"), reg("/abs", "1"), hard("h", "../../etc/passwd")),
		tarBytes(f, reg("a", "1"), reg("./a", "2"), dir("a/")),
	}
	for _, s := range seeds {
		f.Add(s, false)
	}
	f.Add(gz(f, seeds[0], gzip.BestSpeed), true)

	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		body := data
		if !raw {
			body = gz(t, data, gzip.BestSpeed)
		}
		fx := setup(t)
		tree, err := Extract(context.Background(), bytes.NewReader(body), fx.dst, Limits{MaxBytes: 1 << 20, MaxEntries: 200})
		fx.assertOutsideUntouched(t)
		var te *Error
		if err != nil && !errors.As(err, &te) {
			t.Fatalf("got a non-client error for client bytes: %v", err)
		}
		if err != nil {
			return
		}
		if tree.ContentHash() == "" || len(tree.Files) == 0 {
			t.Fatalf("accepted tree without files: %+v", tree)
		}
		// Check every link on disk with a resolver written apart from
		// Tree.resolve, so a bug there cannot hide itself.
		walkErr := filepath.WalkDir(fx.dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				rel, _ := filepath.Rel(fx.dst, p)
				if escapesOnDisk(fx.dst, rel) {
					t.Errorf("accepted symlink %q leads outside dst", rel)
				}
			}
			if d.Type()&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("accepted %q with mode %v", p, d.Type())
			}
			return nil
		})
		if walkErr != nil {
			t.Fatalf("walk dst: %v", walkErr)
		}
	})
}

// escapesOnDisk follows rel inside root the way the kernel does, using only
// the filesystem, and reports whether it climbs above root.
func escapesOnDisk(root, rel string) bool {
	todo := strings.Split(filepath.ToSlash(rel), "/")
	var done []string
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return true
			}
			done = done[:len(done)-1]
			continue
		}
		next := filepath.Join(append([]string{root}, append(done, c)...)...)
		target, err := os.Readlink(next)
		if err != nil { // not a link, or missing: take it literally
			done = append(done, c)
			continue
		}
		if hops++; hops > 40 || filepath.IsAbs(target) {
			return true
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return false
}
