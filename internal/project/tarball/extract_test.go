package tarball

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExtractProject(t *testing.T) {
	t.Parallel()
	f := setup(t)
	data := tgz(t,
		dir("./"),
		reg("./Dockerfile", "FROM scratch\n"),
		reg("./skiff.project.json", `{"version": 1}`),
		dir("./src/"),
		exe("./src/runner", "#!/bin/sh\n"),
		reg("./src/lib/util.go", "package lib\n"), // parent never listed
		sym("./src/current", "runner"),
		hard("./src/runner-copy", "./src/runner"),
	)
	tree, err := f.extract(t, data, Limits{})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}

	var paths []string
	for _, file := range tree.Files {
		paths = append(paths, file.Path)
	}
	wantFiles := []string{"Dockerfile", "skiff.project.json", "src/lib/util.go", "src/runner", "src/runner-copy"}
	if !slices.Equal(paths, wantFiles) {
		t.Errorf("files: got %v, want %v", paths, wantFiles)
	}
	if want := []string{"src", "src/lib"}; !slices.Equal(tree.Dirs, want) {
		t.Errorf("dirs: got %v, want %v", tree.Dirs, want)
	}
	if want := []Symlink{{Path: "src/current", Target: "runner"}}; !slices.Equal(tree.Symlinks, want) {
		t.Errorf("symlinks: got %v, want %v", tree.Symlinks, want)
	}

	runner, _ := tree.File("src/runner")
	if !runner.Executable || runner.Size != 10 {
		t.Errorf("src/runner: got %+v, want executable, size 10", runner)
	}
	if copyOf, _ := tree.File("src/runner-copy"); copyOf.SHA256 != runner.SHA256 || !copyOf.Executable {
		t.Errorf("hard link: got %+v, want the content of %+v", copyOf, runner)
	}
	got, err := os.ReadFile(filepath.Join(f.dst, "src/current"))
	if err != nil || string(got) != "#!/bin/sh\n" {
		t.Errorf("reading through src/current: got %q, %v; want the runner", got, err)
	}
	f.assertOutsideUntouched(t)
}

func TestExtractModes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	data := tgz(t,
		entry{name: "setuid", typ: tar.TypeReg, body: "x", mode: 0o4755},
		entry{name: "setgid-noexec", typ: tar.TypeReg, body: "x", mode: 0o2666},
		entry{name: "group-exec", typ: tar.TypeReg, body: "x", mode: 0o610},
		entry{name: "unreadable", typ: tar.TypeReg, body: "x", mode: 0o000},
		entry{name: "sticky", typ: tar.TypeDir, mode: 0o1777},
		entry{name: "private", typ: tar.TypeDir, mode: 0o700},
	)
	if _, err := f.extract(t, data, Limits{}); err != nil {
		t.Fatalf("Extract: %v", err)
	}
	want := map[string]os.FileMode{
		"setuid":        0o755,
		"setgid-noexec": 0o644,
		"group-exec":    0o755,
		"unreadable":    0o644,
		"sticky":        os.ModeDir | 0o755,
		"private":       os.ModeDir | 0o755,
	}
	for name, mode := range want {
		info, err := os.Lstat(filepath.Join(f.dst, name))
		if err != nil {
			t.Fatalf("stat %s: %v", name, err)
		}
		if info.Mode() != mode {
			t.Errorf("%s: got mode %v, want %v", name, info.Mode(), mode)
		}
	}
}

func TestExtractAccepts(t *testing.T) {
	t.Parallel()
	longName := strings.Repeat("d/", 60) + "file.txt" // needs PAX or GNU long names
	limitPath := strings.Repeat(strings.Repeat("p", 199)+"/", 5) + strings.Repeat("x", DefaultMaxPathLen-1000)
	tests := []struct {
		name string
		data func(t *testing.T) []byte
		want []string // file paths
	}{
		{"no ./ prefix", func(t *testing.T) []byte { return tgz(t, reg("a", "1"), reg("b/c", "2")) }, []string{"a", "b/c"}},
		{"directory listed after its files", func(t *testing.T) []byte {
			return tgz(t, reg("a/b", "1"), dir("a/"))
		}, []string{"a/b"}},
		{"PAX long name", func(t *testing.T) []byte {
			return tgz(t, entry{name: longName, typ: tar.TypeReg, body: "x", format: tar.FormatPAX})
		}, []string{longName}},
		{"GNU long name", func(t *testing.T) []byte {
			return tgz(t, entry{name: longName, typ: tar.TypeReg, body: "x", format: tar.FormatGNU})
		}, []string{longName}},
		{"PAX global header (git archive)", func(t *testing.T) []byte {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
				PAXRecords: map[string]string{"comment": "0123456789abcdef"}})
			_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "a", Size: 1, Mode: 0o644})
			_, _ = tw.Write([]byte("1"))
			_ = tw.Close()
			return gz(t, buf.Bytes(), gzip.BestSpeed)
		}, []string{"a"}},
		{"symlink to a sibling directory's file", func(t *testing.T) []byte {
			return tgz(t, reg("data/v1.txt", "1"), sym("cfg/latest", "../data/v1.txt"), sym("cfg/up", ".."))
		}, []string{"data/v1.txt"}},
		{"dangling symlink inside the root", func(t *testing.T) []byte {
			return tgz(t, reg("a", "1"), sym("later", "not-yet/there"))
		}, []string{"a"}},
		{"garbage after the gzip stream", func(t *testing.T) []byte {
			return append(tgz(t, reg("a", "1")), []byte("\n\ntrailing junk")...)
		}, []string{"a"}},
		{"concatenated gzip members", func(t *testing.T) []byte {
			raw := tarBytes(t, reg("a", "1"), reg("b", "2"))
			half := len(raw) / 2
			return append(gz(t, raw[:half], 1), gz(t, raw[half:], 9)...)
		}, []string{"a", "b"}},
		{"path at the length limit", func(t *testing.T) []byte {
			return tgz(t, reg(limitPath, "1"))
		}, []string{limitPath}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			tree, err := f.extract(t, tt.data(t), Limits{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			var got []string
			for _, file := range tree.Files {
				got = append(got, file.Path)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("files: got %v, want %v", got, tt.want)
			}
			f.assertOutsideUntouched(t)
		})
	}
}

func TestExtractRejectsStream(t *testing.T) {
	t.Parallel()
	valid := tgz(t, reg("a", strings.Repeat("content ", 1000)))
	corrupt := bytes.Clone(valid)
	corrupt[len(corrupt)-6] ^= 0xff // inside the CRC-32 trailer

	tests := []struct {
		name string
		body []byte
		kind Kind
	}{
		{"empty body", nil, KindNotGzip},
		{"plain text", []byte("hello, this is not gzip"), KindNotGzip},
		{"uncompressed tar", tarBytes(t, reg("a", "1")), KindNotGzip},
		{"truncated gzip", valid[:len(valid)/2], KindNotGzip},
		{"bad checksum", corrupt, KindNotGzip},
		{"gzip of text", gz(t, []byte("just some text, certainly not a tar header block"), 6), KindNotTar},
		{"gzip of a truncated tar", gz(t, tarBytes(t, reg("a", strings.Repeat("x", 2000)))[:1500], 6), KindNotTar},
		{"gzip of 600 random-ish bytes", gz(t, bytes.Repeat([]byte("0123456789"), 60), 6), KindNotTar},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			_, err := f.extract(t, tt.body, Limits{})
			te := asError(t, err)
			if te.Kind != tt.kind {
				t.Fatalf("kind: got %v (%v), want %v", te.Kind, err, tt.kind)
			}
			if len(te.Details()) == 0 {
				t.Errorf("details: got none, want the decoder's complaint")
			}
			if tt.kind == KindNotTar && err.Error() != "invalid tarball" {
				t.Errorf("message: got %q, want %q", err.Error(), "invalid tarball")
			}
		})
	}
}

func TestExtractRejectsEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entries []entry
		lim     Limits
		path    string // the Problem.Path expected; "" for whole-archive problems
		msg     string // a substring of its message
	}{
		{"absolute path", []entry{reg("a", "1"), reg("/etc/cron.d/x", "1")}, Limits{}, "/etc/cron.d/x", "absolute path"},
		{"dotdot at the start", []entry{reg("../evil", "1")}, Limits{}, "../evil", "'..'"},
		{"dotdot that cleans inside", []entry{reg("a", "1"), reg("a/../b", "1")}, Limits{}, "a/../b", "'..'"},
		{"dotdot climbing out", []entry{reg("a/../../evil", "1")}, Limits{}, "a/../../evil", "'..'"},
		{"absolute symlink", []entry{reg("a", "1"), sym("etc", "/etc")}, Limits{}, "etc", "absolute"},
		{"symlink climbing out", []entry{reg("a", "1"), sym("sub/x", "../../x")}, Limits{}, "sub/x", "outside the project root"},
		{"symlink escaping through another symlink", []entry{
			reg("a", "1"), sym("sub/up", ".."), sym("sub/esc", "up/../.."),
		}, Limits{}, "sub/esc", "resolves outside"},
		{"symlink escaping through a later symlink", []entry{
			reg("a", "1"), sym("x/esc", "hop/../.."), sym("x/hop", "../y"),
		}, Limits{}, "x/esc", "resolves outside"},
		{"symlink loop", []entry{reg("a", "1"), sym("l1", "l2"), sym("l2", "l1")}, Limits{}, "l1", "too many levels"},
		{"write through an extracted symlink", []entry{
			reg("sub/a", "1"), sym("link", "sub"), reg("link/b", "2"),
		}, Limits{}, "link/b", `parent "link" is a symlink`},
		{"write below a file", []entry{reg("a", "1"), reg("a/b", "2")}, Limits{}, "a/b", `parent "a" is not a directory`},
		{"hard link to nothing", []entry{reg("a", "1"), hard("b", "ghost")}, Limits{}, "b", "not an earlier entry"},
		{"hard link to a later entry", []entry{hard("b", "a"), reg("a", "1")}, Limits{}, "b", "not an earlier entry"},
		{"hard link climbing out", []entry{reg("a", "1"), hard("b", "../../etc/passwd")}, Limits{}, "b", "'..'"},
		{"hard link absolute", []entry{reg("a", "1"), hard("b", "/etc/passwd")}, Limits{}, "b", "absolute"},
		{"hard link to a directory", []entry{reg("d/a", "1"), hard("b", "d")}, Limits{}, "b", "not a regular file"},
		{"hard link to a symlink", []entry{reg("a", "1"), sym("s", "a"), hard("b", "s")}, Limits{}, "b", "not a regular file"},
		{"character device", []entry{reg("a", "1"), {name: "null", typ: tar.TypeChar, mode: 0o666}}, Limits{}, "null", "device"},
		{"block device", []entry{reg("a", "1"), {name: "sda", typ: tar.TypeBlock, mode: 0o660}}, Limits{}, "sda", "device"},
		{"fifo", []entry{reg("a", "1"), {name: "pipe", typ: tar.TypeFifo, mode: 0o644}}, Limits{}, "pipe", "FIFO"},
		{"unsupported type", []entry{reg("a", "1"), {name: "c", typ: tar.TypeCont, mode: 0o644}}, Limits{}, "c", "unsupported entry type"},
		{"duplicate after cleaning", []entry{reg("./a", "1"), reg("a", "2")}, Limits{}, "a", "duplicate entry"},
		{"duplicate with double slash", []entry{reg("d/a", "1"), reg("d//a", "2")}, Limits{}, "d//a", "duplicate entry"},
		{"duplicate directory", []entry{dir("d/"), dir("./d"), reg("d/a", "1")}, Limits{}, "./d", "duplicate entry"},
		{"file over a directory", []entry{reg("d/a", "1"), reg("d", "2")}, Limits{}, "d", "already a directory"},
		{"symlink over a file", []entry{reg("a", "1"), sym("a", "b")}, Limits{}, "a", "duplicate entry"},
		{"root entry as a file", []entry{reg("a", "1"), reg(".", "")}, Limits{}, ".", "project root"},
		{"too many entries", []entry{reg("a", "1"), reg("b", "1"), reg("c", "1"), reg("d", "1")}, Limits{MaxEntries: 3}, "", "more than 3 entries"},
		{"one file over the size limit", []entry{reg("big", strings.Repeat("x", 2000))}, Limits{MaxBytes: 1024}, "big", "more than 1 KiB"},
		{"files together over the size limit", []entry{
			reg("a", strings.Repeat("x", 400)), reg("b", strings.Repeat("x", 400)), reg("c", strings.Repeat("x", 400)),
		}, Limits{MaxBytes: 1000}, "", "more than"},
		{"path too long", []entry{reg(strings.Repeat("x", 80)+"/"+strings.Repeat("y", 80), "1")}, Limits{MaxPathLen: 100}, strings.Repeat("x", 80) + "/" + strings.Repeat("y", 80), "the limit is 100"},
		{"component too long", []entry{reg(strings.Repeat("n", 256), "1")}, Limits{}, strings.Repeat("n", 256), "component is 256 bytes"},
		{"control character", []entry{reg("a\nb", "1")}, Limits{}, "a\nb", "control character"},
		{"invalid UTF-8", []entry{reg("a\xffb", "1")}, Limits{}, "a\xffb", "UTF-8"},
		{"symlink target with control character", []entry{reg("a", "1"), sym("s", "a\nb")}, Limits{}, "s", "control character"},
		{"no regular files", []entry{dir("a/"), sym("b", "a")}, Limits{}, "", "no regular files"},
		{"empty archive", nil, Limits{}, "", "no regular files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			_, err := f.extract(t, tgz(t, tt.entries...), tt.lim)
			te := asError(t, err)
			if te.Kind != KindInvalid {
				t.Fatalf("kind: got %v (%v), want %v", te.Kind, err, KindInvalid)
			}
			if !hasProblem(te, tt.path, tt.msg) {
				t.Errorf("problems: got %q, want one for %q containing %q", te.Details(), tt.path, tt.msg)
			}
			f.assertOutsideUntouched(t)
		})
	}
}

func TestExtractDoesNotFollowPlantedSymlinks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// The classic attack with a target we can watch: a link to a real
	// directory outside dst, then a file "inside" the link.
	data := tgz(t, reg("a", "1"), sym("link", f.outside), reg("link/passwd", "owned"),
		sym("rel", "../outside"), reg("rel/passwd", "owned"))
	_, err := f.extract(t, data, Limits{})
	te := asError(t, err)
	for _, p := range []string{"link", "rel"} {
		if !hasProblem(te, p, "symlink target") {
			t.Errorf("problems: got %q, want the symlink %q refused", te.Details(), p)
		}
	}
	f.assertOutsideUntouched(t)
}

func TestExtractCollectsProblems(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.extract(t, tgz(t, reg("/abs", "1"), reg("ok", "1"), sym("s", "/x"),
		entry{name: "dev", typ: tar.TypeChar}), Limits{})
	te := asError(t, err)
	want := []string{`"/abs": absolute path; entries must be relative to the project root`,
		`"s": symlink target "/x" is absolute; use a relative target inside the project`,
		`"dev": device entries are not allowed`}
	if !slices.Equal(te.Details(), want) {
		t.Errorf("details:\n got %q\nwant %q", te.Details(), want)
	}
	if !strings.HasPrefix(err.Error(), "invalid tarball: ") || !strings.Contains(err.Error(), `"dev": device`) {
		t.Errorf("Error(): got %q, want the summary followed by each problem", err.Error())
	}
}

func TestExtractCapsProblems(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var entries []entry
	for range maxProblems + 20 {
		entries = append(entries, entry{name: "dev", typ: tar.TypeFifo})
	}
	_, err := f.extract(t, tgz(t, entries...), Limits{})
	te := asError(t, err)
	if len(te.Problems) != maxProblems || !te.Truncated {
		t.Errorf("got %d problems (truncated %v), want %d and truncated", len(te.Problems), te.Truncated, maxProblems)
	}
	if d := te.Details(); !strings.Contains(d[len(d)-1], "only the first 50") {
		t.Errorf("last detail: got %q, want a note that more were found", d[len(d)-1])
	}
}

func TestExtractRemovableAfterRejection(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Files and directories are written before the bad entry is reached,
	// including one whose archive mode would block removal if it were kept.
	data := tgz(t, entry{name: "locked/", typ: tar.TypeDir, mode: 0o500},
		entry{name: "locked/file", typ: tar.TypeReg, body: "x", mode: 0o400},
		sym("link", "locked"), reg("/etc/evil", "x"))
	_, err := f.extract(t, data, Limits{})
	asError(t, err)
	if _, err := os.Stat(filepath.Join(f.dst, "locked/file")); err != nil {
		t.Fatalf("expected a partial tree to clean up: %v", err)
	}
	if err := os.RemoveAll(f.dst); err != nil {
		t.Fatalf("RemoveAll(dst): %v", err)
	}
	if _, err := os.Lstat(f.dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dst after RemoveAll: got %v, want not exist", err)
	}
	f.assertOutsideUntouched(t)
}

func TestExtractCancelled(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Extract(ctx, bytes.NewReader(tgz(t, reg("a", "1"))), f.dst, Limits{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	var te *Error
	if errors.As(err, &te) {
		t.Errorf("got a client error %v for a cancelled context", te)
	}
}

// A failing body (for example one cut off by http.MaxBytesReader) is the
// server's error to report, not "not gzip".
func TestExtractBodyReadError(t *testing.T) {
	t.Parallel()
	errCut := errors.New("body too large")
	data := tgz(t, reg("a", strings.Repeat("abc", 100_000)))
	for _, n := range []int{0, 5, len(data) / 2} {
		f := setup(t)
		body := io.MultiReader(bytes.NewReader(data[:n]), iotestErrReader{errCut})
		_, err := Extract(context.Background(), body, f.dst, Limits{})
		if !errors.Is(err, errCut) {
			t.Errorf("cut at %d: got %v, want the body's error", n, err)
		}
		var te *Error
		if errors.As(err, &te) {
			t.Errorf("cut at %d: got client error kind %v, want a plain wrapped error", n, te.Kind)
		}
	}
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

func TestExtractIntoMissingDir(t *testing.T) {
	t.Parallel()
	_, err := Extract(context.Background(), bytes.NewReader(tgz(t, reg("a", "1"))), filepath.Join(t.TempDir(), "nope"), Limits{})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want a not-exist error", err)
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind Kind
		str  string
		msg  string
	}{
		{KindNotGzip, "not_gzip", "request body is not valid gzip"},
		{KindNotTar, "not_tar", "invalid tarball"},
		{KindInvalid, "invalid", "invalid tarball: unsafe or unsupported entries"},
	}
	for _, tt := range tests {
		e := &Error{Kind: tt.kind}
		if e.Kind.String() != tt.str || e.Message() != tt.msg || e.RecommendedAction() == "" {
			t.Errorf("kind %d: got %q, %q, action %q; want %q, %q and an action", tt.kind, e.Kind.String(), e.Message(), e.RecommendedAction(), tt.str, tt.msg)
		}
	}
}
