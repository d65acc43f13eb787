package manifest

import "fmt"

// checkMountPoint checks where a data source or cache is mounted.
func checkMountPoint(p string) error {
	if err := checkContainerPath(p); err != nil {
		return err
	}
	if reservedMount(p) {
		return fmt.Errorf("%q is reserved by the sandbox; mount somewhere else, such as /data or /cache", p)
	}
	return nil
}

// checkMountPoints looks at all mounts together. Two mounts at one place, or
// one inside another, depend on mount order for what a task sees; a mount
// at or above the working directory would hide the project's code.
func checkMountPoints(c *collector, m *Manifest) {
	type mount struct{ field, path string }
	var mounts []mount
	for i, ds := range m.DataSources {
		mounts = append(mounts, mount{fmt.Sprintf("data_sources[%d].mount_path", i), ds.MountPath})
	}
	for i, cm := range m.CacheMounts {
		mounts = append(mounts, mount{fmt.Sprintf("cache_mounts[%d].path", i), cm.Path})
	}
	for i, a := range mounts {
		if a.path == "" { // invalid, already reported
			continue
		}
		if w := m.Runtime.Workdir; w != "" && within(w, a.path) {
			c.add(a.field, "%q would hide runtime.workdir %q; mount it elsewhere or below the workdir", a.path, w)
		}
		for _, b := range mounts[:i] {
			if b.path != "" && (within(a.path, b.path) || within(b.path, a.path)) {
				c.add(a.field, "%q overlaps %s %q; mounts may not repeat or nest", a.path, b.field, b.path)
			}
		}
	}
}
