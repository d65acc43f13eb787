package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Everything under the result and artifact directories was written by
// untrusted code, and the host reads it as root. So nothing there is
// followed: a symlink named result.json pointing at /etc/shadow must not
// leak the host's file, and a FIFO must not block the agent.

// Collect fills o's result and artifact fields from the host layout d,
// with spec's result cap.
func Collect(o *Outcome, spec *Spec, d Dirs) error {
	res, err := ReadResult(d.ResultFile(), spec.maxResultBytes())
	if err != nil {
		return err
	}
	o.Result, o.ResultTooLarge, o.ResultRejected = res.Data, res.TooLarge, res.Rejected
	arts, skipped, err := collectArtifacts(d.Artifacts, spec.maxOutputFiles(), spec.maxOutputBytes())
	var over *outputCapError
	if errors.As(err, &over) {
		o.OutputRejected = over.Error()
		return nil
	}
	if err != nil {
		return err
	}
	o.Artifacts, o.SkippedArtifacts = arts, skipped
	return nil
}

// outputCapError is an artifact directory over the output caps.
type outputCapError struct{ msg string }

func (e *outputCapError) Error() string { return e.msg }

// ResultFile is what ReadResult found.
type ResultFile struct {
	Data     []byte // nil when absent or rejected
	TooLarge bool
	Rejected string // why a present file was not read
}

// ReadResult reads the result file at path if it is a regular file of at
// most max bytes. A missing file is not an error: the runner may not write
// one.
func ReadResult(path string, max int64) (ResultFile, error) {
	// O_NOFOLLOW refuses a symlink as the last component; O_NONBLOCK keeps
	// a FIFO from blocking the open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ResultFile{}, nil
	case errors.Is(err, syscall.ELOOP):
		return ResultFile{Rejected: "result file is a symlink"}, nil
	case err != nil:
		return ResultFile{}, fmt.Errorf("open result: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ResultFile{}, fmt.Errorf("stat result: %w", err)
	}
	if !st.Mode().IsRegular() {
		return ResultFile{Rejected: "result file is not a regular file"}, nil
	}
	if st.Size() > max {
		return ResultFile{TooLarge: true, Rejected: fmt.Sprintf("result file is %d bytes, over the %d byte cap", st.Size(), max)}, nil
	}
	// Read one byte past the cap in case the file grew after Stat (it
	// cannot once the sandbox is gone, but the check costs nothing).
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return ResultFile{}, fmt.Errorf("read result: %w", err)
	}
	if int64(len(data)) > max {
		return ResultFile{TooLarge: true, Rejected: fmt.Sprintf("result file is over the %d byte cap", max)}, nil
	}
	return ResultFile{Data: data}, nil
}

// CollectArtifacts lists the regular files under dir, sorted by relative
// path, and the relative paths of entries it skipped. WalkDir does not follow
// symlinks, so nothing outside dir is listed; symlinks, FIFOs, sockets and
// devices are skipped (spec 2.10 rule 6 rejects symlinks).
func CollectArtifacts(dir string) (arts []Artifact, skipped []string, err error) {
	return collectArtifacts(dir, DefaultMaxOutputFiles, DefaultMaxOutputBytes)
}

// collectArtifacts is CollectArtifacts with caps: past maxFiles entries
// (files, skipped entries and directories all count, since each costs the
// walk and memory) or maxBytes of regular files it stops with an
// *outputCapError, so a runner that leaves a million files cannot make the
// host list them all.
func collectArtifacts(dir string, maxFiles int, maxBytes int64) (arts []Artifact, skipped []string, err error) {
	entries := 0
	var total int64
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			if entries++; entries > maxFiles {
				return &outputCapError{fmt.Sprintf("the artifact directory holds more than %d files and directories, over the host's cap on output files; write fewer, larger files (an archive)", maxFiles)}
			}
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			skipped = append(skipped, rel)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		if total > maxBytes {
			return &outputCapError{fmt.Sprintf("the artifact directory holds more than %d bytes, over the host's cap on output bytes; write less, or keep large data elsewhere", maxBytes)}
		}
		arts = append(arts, Artifact{Path: rel, Size: info.Size(), HostPath: path})
		return nil
	})
	var over *outputCapError
	if errors.As(err, &over) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("collect artifacts: %w", err)
	}
	slices.SortFunc(arts, func(a, b Artifact) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(skipped)
	return arts, skipped, nil
}
