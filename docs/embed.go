// Package docs embeds the documentation pages the server publishes under
// /docs, so what users read online is what the repository holds.
package docs

import "embed"

// Pages holds the markdown pages of this directory.
//
//go:embed *.md
var Pages embed.FS
