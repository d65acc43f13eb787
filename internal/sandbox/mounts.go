package sandbox

import (
	"fmt"
	"path"
	"path/filepath"
)

// Mount is a host path bind-mounted into the sandbox beside the attempt's
// own directories: a project's data source (read-only, a file or a
// directory) or cache mount (a writable directory kept between attempts).
type Mount struct {
	// Source is the host path. A writable mount's directory is created if
	// missing and chowned to the runner, like CacheDir; a read-only one
	// must exist.
	Source string
	// Destination is the absolute path inside the sandbox. It must exist
	// in RootFS, as a directory or a file like Source: RootFS is mounted
	// read-only, so the driver cannot create it (the host agent does,
	// as it does the working directory).
	Destination string
	ReadOnly    bool
	// Seed, for a writable mount, is a host directory whose contents
	// fill Source while Source is missing or empty. The copy is made
	// beside Source and renamed into place, so no attempt ever sees half
	// a seed.
	Seed string
	// Bounded says Source lies on a filesystem with a size limit of its
	// own (a project's cache-mount volume): when the runner fails with it
	// full, MarkStorage names the mount in Outcome.FullMount.
	Bounded bool
}

// validMount checks one mount; the attempt's directories under
// ContainerRoot are the driver's own.
func validMount(m Mount) error {
	switch {
	case !filepath.IsAbs(m.Source):
		return fmt.Errorf("mount source %q: must be an absolute path", m.Source)
	case !path.IsAbs(m.Destination) || path.Clean(m.Destination) != m.Destination || m.Destination == "/":
		return fmt.Errorf("mount destination %q: must be a clean absolute path other than /", m.Destination)
	case m.Destination == ContainerRoot || within(ContainerRoot, m.Destination) || within(m.Destination, ContainerRoot):
		return fmt.Errorf("mount destination %q: overlaps %s, the attempt's own directories", m.Destination, ContainerRoot)
	}
	return nil
}

// within reports whether p is below dir.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}
