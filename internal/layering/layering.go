// Package layering holds no code: its test keeps the module's layers apart,
// in the spirit of tailscale's tstest/deptest, so that the layering of
// docs/architecture.md holds by itself rather than by review. It holds the
// domain packages under internal/ free of the adapters (net/http, the store
// engines, httpapi, the composition root), the public packages (apiv1,
// client, paywire) and the host protocol's wire free of internal/, and the
// host side free of the store, money and the controller's domain.
package layering
