// Package build turns a project's extracted build context into an OCI image
// layout on local disk, addressed by its manifest digest.
//
// A user's Dockerfile is untrusted code. Its RUN steps run under `buildah bud
// --isolation oci` with a current runsc as the OCI runtime, so each step is a
// gVisor sandbox with a memory limit, in buildah's private network (or none),
// and it sees none of the controller's data directory. Before buildah runs, a
// policy check (policy.go) refuses what would reach past the build context:
// other images in the shared storage, ADD from URLs, cache mounts. Builds run
// one at a time, in a process group that a timeout or shutdown kills whole
// together with the sandboxes runsc started outside it (cleanup.go).
//
// The built image is pushed into a blob pool and published as
// <ImagesDir>/<hex>/ with uncompressed layers hard-linked from the pool
// (layout.go), then checked against the manifest's declared executables and
// files (validate.go). Build distinguishes the project's failures (*UserError,
// with a short message for the push record) from the machine's.
//
// The package knows nothing of HTTP or the store.
package build
