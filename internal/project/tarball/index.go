package tarball

import (
	"slices"
)

// FileIndex is what a revision must keep to compare the next push with it:
// stored as JSON next to the revision, it is all Diff needs.
type FileIndex struct {
	// Files maps each regular file's path to the hex sha256 of its content.
	Files map[string]string `json:"files"`
	// Executable lists, sorted, the paths of Files that are executable.
	Executable []string `json:"executable,omitempty"`
	// Symlinks maps each symlink's path to its target.
	Symlinks map[string]string `json:"symlinks,omitempty"`
}

// Changes is the difference between two revisions' files and symlinks, each
// list sorted. Directories are left out: a directory's appearance shows
// through the files in it. The JSON shape is the push record's
// tarball_diff.
type Changes struct {
	AddedFiles   []string `json:"added_files"`
	RemovedFiles []string `json:"removed_files"`
	ChangedFiles []string `json:"changed_files"`
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.AddedFiles) == 0 && len(c.RemovedFiles) == 0 && len(c.ChangedFiles) == 0
}

// Index returns the tree's FileIndex.
func (t *Tree) Index() FileIndex {
	idx := FileIndex{Files: make(map[string]string, len(t.Files))}
	for _, f := range t.Files {
		idx.Files[f.Path] = f.SHA256
		if f.Executable {
			idx.Executable = append(idx.Executable, f.Path)
		}
	}
	if len(t.Symlinks) > 0 {
		idx.Symlinks = make(map[string]string, len(t.Symlinks))
		for _, s := range t.Symlinks {
			idx.Symlinks[s.Path] = s.Target
		}
	}
	return idx
}

// Diff compares two revisions. A nil prev means there was no earlier
// revision, so everything in next is added; a nil next means everything was
// removed. A path counts as changed when its content, executable bit or link
// target changed, or when it turned from a file into a symlink or back.
func Diff(prev, next *FileIndex) Changes {
	before, after := fingerprints(prev), fingerprints(next)
	c := Changes{AddedFiles: []string{}, RemovedFiles: []string{}, ChangedFiles: []string{}}
	for p, fp := range after {
		old, ok := before[p]
		switch {
		case !ok:
			c.AddedFiles = append(c.AddedFiles, p)
		case old != fp:
			c.ChangedFiles = append(c.ChangedFiles, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			c.RemovedFiles = append(c.RemovedFiles, p)
		}
	}
	slices.Sort(c.AddedFiles)
	slices.Sort(c.RemovedFiles)
	slices.Sort(c.ChangedFiles)
	return c
}

// fingerprint is everything about one path that a change to shows in Diff.
type fingerprint struct {
	symlink    bool
	value      string // content digest, or link target
	executable bool
}

func fingerprints(idx *FileIndex) map[string]fingerprint {
	if idx == nil {
		return nil
	}
	out := make(map[string]fingerprint, len(idx.Files)+len(idx.Symlinks))
	for p, sum := range idx.Files {
		out[p] = fingerprint{value: sum}
	}
	for _, p := range idx.Executable {
		if fp, ok := out[p]; ok {
			fp.executable = true
			out[p] = fp
		}
	}
	for p, target := range idx.Symlinks {
		out[p] = fingerprint{symlink: true, value: target}
	}
	return out
}
