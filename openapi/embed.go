// Package openapi embeds the OpenAPI 3.1 description of the API, served at
// /openapi.json. It is written by hand and is the contract: tests check that
// every route is described, every described operation exists, and handler
// requests and responses validate against it.
package openapi

import _ "embed"

//go:embed openapi.json
var Document []byte
