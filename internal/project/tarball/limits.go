package tarball

import "fmt"

// Default limits. A push body is at most 100 MB of gzip (spec section 8); the
// decompressed bound is what stops a gzip bomb, and the entry bound keeps the
// per-entry bookkeeping small.
const (
	DefaultMaxEntries = 10_000
	DefaultMaxBytes   = 1 << 30 // 1 GiB
	DefaultMaxPathLen = 1024
)

// maxNameLen is the longest single path component Linux filesystems accept
// (NAME_MAX); longer ones would fail at write time with a less useful error.
const maxNameLen = 255

// Limits bounds what one extraction may consume. A zero field means its
// default.
type Limits struct {
	// MaxEntries is the most archive entries (files, directories, links)
	// accepted. PAX and GNU extension headers are not counted.
	MaxEntries int
	// MaxBytes bounds both the decompressed stream (counted as it is read,
	// so a lying header cannot get past it) and the total size of the
	// files written.
	MaxBytes int64
	// MaxPathLen is the longest entry path, in bytes, accepted.
	MaxPathLen int
}

// withDefaults returns l with each zero or negative field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxPathLen <= 0 {
		l.MaxPathLen = DefaultMaxPathLen
	}
	return l
}

// formatBytes renders a limit the way a user would write it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
