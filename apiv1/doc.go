// Package apiv1 holds the public wire types of the /api/v1 interface:
// requests, responses and the error envelope. It has no logic beyond JSON
// encoding, so that clients can import it without the server.
package apiv1
