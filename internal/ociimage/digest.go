package ociimage

import (
	"fmt"
	"regexp"
	"strings"
)

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// digestHex checks that digest is "sha256:" and 64 lowercase hex digits,
// the only form we produce and the only one safe to use as a file name,
// and returns the hex part.
func digestHex(digest string) (string, error) {
	if !digestPattern.MatchString(digest) {
		return "", fmt.Errorf("image digest %q: want sha256:<64 lowercase hex>", digest)
	}
	return strings.TrimPrefix(digest, "sha256:"), nil
}
