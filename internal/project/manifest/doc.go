// Package manifest defines, parses and validates skiff.project.json, the
// file at the root of every pushed project that says how Skiff builds and
// runs it. docs/manifest.md is the user-facing reference; this package is
// its enforcement, and the two change together.
//
// Validation happens in two steps. Parse checks the file on its own (JSON
// syntax, the schema, every value's form) and fills in defaults.
// Manifest.CheckAgainst then checks the references to project files against
// what the pushed tarball really holds. Paths inside the container image
// (runtime.workdir, validation.executables, validation.files) cannot be
// checked here; the builder checks them against the built image.
//
// Both steps report every problem they find at once, as a Problems error,
// so a user fixes the file in one round instead of one push per mistake.
package manifest
