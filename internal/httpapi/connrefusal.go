package httpapi

import (
	"encoding/json"
	"fmt"

	"github.com/skiffhq/skiff/apiv1"
)

// ConnRefusal is the whole HTTP/1.1 answer written to a connection past
// the server's connection caps (ratelimit.ConnLimits.Refusal) before it is
// closed: 503 with the error envelope and Retry-After, so that a client
// learns why instead of seeing a reset.
func ConnRefusal() []byte {
	body, _ := json.Marshal(apiv1.Error{Code: "too_many_connections",
		Error:             "the server holds as many connections as it allows (in all, or from your address)",
		RecommendedAction: "Retry in a few seconds; reuse one connection (HTTP keep-alive) instead of opening many."})
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}
