package manifest

import "fmt"

// FileChecker answers questions about the pushed project's files; paths
// are relative to the project root. tarball.Tree implements it.
type FileChecker interface {
	Has(path string) bool
	IsDir(path string) bool
}

// CheckAgainst checks the manifest's references to project files against
// the pushed tree: the Dockerfile, the build context, build inputs and cache
// seeds. m must come from Parse, which fills in the defaults. It returns
// Problems or nil.
func (m *Manifest) CheckAgainst(files FileChecker) error {
	c := &collector{}
	switch df := m.Build.Dockerfile; {
	case !files.Has(df) && df == DefaultDockerfile:
		c.add("build.dockerfile", "the tarball has no %s at its root; every project is built from one (set build.dockerfile if yours lives elsewhere)", DefaultDockerfile)
	case !files.Has(df):
		c.add("build.dockerfile", "%q is not in the tarball", df)
	case files.IsDir(df):
		c.add("build.dockerfile", "%q is a directory; name the Dockerfile itself", df)
	}
	if ctx := m.Build.Context; !files.IsDir(ctx) {
		c.add("build.context", "%s", missingDir(files, ctx))
	}
	for i, in := range m.Build.Inputs {
		if !files.Has(in) {
			c.add(fmt.Sprintf("build.inputs[%d]", i), "%q is not in the tarball", in)
		}
	}
	for i, cm := range m.CacheMounts {
		if cm.Seed != "" && !files.IsDir(cm.Seed) {
			c.add(fmt.Sprintf("cache_mounts[%d].seed", i), "%s", missingDir(files, cm.Seed))
		}
	}
	return c.err()
}

func missingDir(files FileChecker, p string) string {
	if files.Has(p) {
		return fmt.Sprintf("%q is a file in the tarball, not a directory", p)
	}
	return fmt.Sprintf("directory %q is not in the tarball", p)
}
