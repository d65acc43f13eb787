package build

// BareBudCommand returns the buildah command line Build runs for req, so that
// a benchmark can time buildah on its own with exactly the same flags.
func (b *Builder) BareBudCommand(req Request, iidFile string) (path string, args, env []string) {
	if req.Dockerfile == "" {
		req.Dockerfile = "Dockerfile"
	}
	sl := b.slots.all[0]
	c := b.buildahIn(sl, b.budArgs(sl, req, iidFile)...)
	return c.path, c.args, c.env
}

// BareBuildah returns a buildah command line against the builder's storage.
func (b *Builder) BareBuildah(args ...string) (path string, fullArgs, env []string) {
	c := b.buildah(args...)
	return c.path, c.args, c.env
}
