// Package diskfree is the free-disk watermark: under it a host takes no
// work and the controller refuses writes (507), so that no tenant can fill
// the disk the database, the artifacts or the attempts live on.
package diskfree

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Watermark is the least free space a directory's filesystem must keep:
// Bytes, or Percent of the filesystem's size, whichever is larger. The zero
// value checks nothing.
type Watermark struct {
	Bytes   int64
	Percent float64
}

// DefaultWatermark is the flags' default: 5% of the filesystem, and at
// least 1 GiB.
var DefaultWatermark = Watermark{Bytes: 1 << 30, Percent: 5}

// Parse reads a watermark: "5%", "2GiB", "500MB", "1073741824" (bytes),
// "1GiB,5%" (both: the larger wins) or "0" (none).
func Parse(s string) (Watermark, error) {
	var w Watermark
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		if p, ok := strings.CutSuffix(part, "%"); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || v < 0 || v >= 100 {
				return Watermark{}, fmt.Errorf("free-disk watermark %q: want a percentage from 0 to 99", part)
			}
			w.Percent = v
			continue
		}
		b, err := parseBytes(part)
		if err != nil {
			return Watermark{}, fmt.Errorf("free-disk watermark %q: %w", part, err)
		}
		w.Bytes = b
	}
	return w, nil
}

var units = []struct {
	suffix string
	mult   int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for _, u := range units {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(v), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, errors.New("want bytes (e.g. 2GiB, 500MB) or a percentage (e.g. 5%)")
	}
	return int64(v * float64(mult)), nil
}

// String is the watermark as Parse reads it.
func (w Watermark) String() string {
	var parts []string
	if w.Bytes > 0 {
		parts = append(parts, formatBytes(w.Bytes))
	}
	if w.Percent > 0 {
		parts = append(parts, strconv.FormatFloat(w.Percent, 'f', -1, 64)+"%")
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ",")
}

func formatBytes(b int64) string {
	for _, u := range units[:4] {
		if b >= u.mult && b%u.mult == 0 {
			return strconv.FormatInt(b/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(b, 10)
}

// Set implements flag.Value.
func (w *Watermark) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*w = v
	return nil
}

// Min is the least free bytes a filesystem of total bytes must keep.
func (w Watermark) Min(total uint64) uint64 {
	return max(uint64(w.Bytes), uint64(w.Percent/100*float64(total)))
}

// Reading is a filesystem's free space (to an unprivileged user) and size.
type Reading struct {
	Free, Total uint64
}

// StatFunc reads the filesystem holding dir; tests inject one to fake a
// full disk.
type StatFunc func(dir string) (Reading, error)

// Statfs is the real StatFunc.
func Statfs(dir string) (Reading, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Reading{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return Reading{Free: st.Bavail * uint64(st.Bsize), Total: st.Blocks * uint64(st.Bsize)}, nil
}

// Checker watches one directory's filesystem against a watermark.
type Checker struct {
	// Dir is the directory watched (the data dir, the work dir).
	Dir string
	// Min is the watermark; the zero value checks nothing.
	Min Watermark
	// Stat reads the filesystem; nil means Statfs.
	Stat StatFunc
}

// Low reports whether the filesystem is under the watermark, and if so a
// sentence that says so with the figures. A filesystem that cannot be
// read is not reported low: the watermark guards against filling a disk,
// and an unreadable one is another failure, logged where it matters.
func (c *Checker) Low() (bool, string) {
	if c == nil || c.Min == (Watermark{}) {
		return false, ""
	}
	stat := c.Stat
	if stat == nil {
		stat = Statfs
	}
	r, err := stat(c.Dir)
	if err != nil {
		return false, ""
	}
	min := c.Min.Min(r.Total)
	if r.Free >= min {
		return false, ""
	}
	return true, fmt.Sprintf("%s has %s free of %s, under the free-disk watermark of %s (%s)",
		c.Dir, human(r.Free), human(r.Total), human(min), c.Min)
}

// human is a byte count for people.
func human(b uint64) string {
	switch {
	case b >= 1<<30:
		return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB"
	case b >= 1<<20:
		return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatUint(b, 10) + " B"
}
