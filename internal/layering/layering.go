// Package layering holds no code: its test keeps the domain packages free of
// the adapters (net/http, the store engines, httpapi), in the spirit of
// tailscale's tstest/deptest, so that design.md's layering holds by itself
// rather than by review.
package layering
