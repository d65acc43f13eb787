package cli

import (
	"flag"

	"github.com/skiffhq/skiff/internal/server"
)

func registerEdges(fs *flag.FlagSet, f *server.EdgeConfig) {
	fs.DurationVar(&f.IdleTimeout, "idle-timeout", f.IdleTimeout, "how long a keep-alive connection may sit idle between requests before the server closes it (event streams and long polls are requests, not idle) (env SKIFF_IDLE_TIMEOUT)")
	fs.DurationVar(&f.ReadHeaderTimeout, "read-header-timeout", f.ReadHeaderTimeout, "how long a client may take to send a request's headers (env SKIFF_READ_HEADER_TIMEOUT)")
	fs.Int64Var(&f.BodyMinRate, "body-min-rate", f.BodyMinRate, "least pace of a request body in bytes per second, measured over --body-rate-window; a body that falls behind is cut off with 408 body_too_slow; 0: off (env SKIFF_BODY_MIN_RATE)")
	fs.DurationVar(&f.BodyRateWindow, "body-rate-window", f.BodyRateWindow, "span over which --body-min-rate is measured; the first is the grace a body gets to start (env SKIFF_BODY_RATE_WINDOW)")
	fs.IntVar(&f.MaxConns, "max-connections", f.MaxConns, "most HTTP connections the server holds at once; one more is answered 503 too_many_connections and closed; 0: unlimited (env SKIFF_MAX_CONNECTIONS)")
	fs.IntVar(&f.MaxConnsPerClient, "max-connections-per-client", f.MaxConnsPerClient, "most HTTP connections one client (an IPv4 address or an IPv6 /64; --trusted-proxy peers are exempt) holds at once; 0: unlimited (env SKIFF_MAX_CONNECTIONS_PER_CLIENT)")
}
