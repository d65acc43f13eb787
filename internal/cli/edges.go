package cli

import (
	"flag"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/server"
)

// edgeFlags configure what the HTTP server lets a stranger hold: idle
// connections, slow bodies, and connections at all (docs/access.md).
type edgeFlags struct {
	idleTimeout       time.Duration
	readHeaderTimeout time.Duration
	bodyMinRate       int64
	bodyRateWindow    time.Duration
	maxConns          int
	maxConnsPerClient int
}

func (f *edgeFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 2*time.Minute, "how long a keep-alive connection may sit idle between requests before the server closes it (event streams and long polls are requests, not idle) (env SKIFF_IDLE_TIMEOUT)")
	fs.DurationVar(&f.readHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers (env SKIFF_READ_HEADER_TIMEOUT)")
	fs.Int64Var(&f.bodyMinRate, "body-min-rate", httpapi.DefaultBodyRate.MinBytesPerSecond, "least pace of a request body in bytes per second, measured over --body-rate-window; a body that falls behind is cut off with 408 body_too_slow; 0: off (env SKIFF_BODY_MIN_RATE)")
	fs.DurationVar(&f.bodyRateWindow, "body-rate-window", httpapi.DefaultBodyRate.Window, "span over which --body-min-rate is measured; the first is the grace a body gets to start (env SKIFF_BODY_RATE_WINDOW)")
	fs.IntVar(&f.maxConns, "max-connections", 4096, "most HTTP connections the server holds at once; one more is answered 503 too_many_connections and closed; 0: unlimited (env SKIFF_MAX_CONNECTIONS)")
	fs.IntVar(&f.maxConnsPerClient, "max-connections-per-client", 256, "most HTTP connections one client (an IPv4 address or an IPv6 /64; --trusted-proxy peers are exempt) holds at once; 0: unlimited (env SKIFF_MAX_CONNECTIONS_PER_CLIENT)")
}

func (f *edgeFlags) validate() error {
	switch {
	case f.idleTimeout <= 0 || f.readHeaderTimeout <= 0:
		return fmt.Errorf("--idle-timeout and --read-header-timeout must be positive")
	case f.bodyMinRate < 0 || (f.bodyMinRate > 0 && f.bodyRateWindow < time.Second):
		return fmt.Errorf("--body-min-rate must be 0 (off) or more, with a --body-rate-window of at least 1s")
	case f.maxConns < 0 || f.maxConnsPerClient < 0:
		return fmt.Errorf("--max-connections and --max-connections-per-client must be 0 (unlimited) or more")
	}
	return nil
}

func (f *edgeFlags) bodyRate() httpapi.BodyRate {
	return httpapi.BodyRate{MinBytesPerSecond: f.bodyMinRate, Window: f.bodyRateWindow}
}

// config is the edges part of the server's configuration.
func (f *edgeFlags) config() server.EdgesConfig {
	return server.EdgesConfig{IdleTimeout: f.idleTimeout, ReadHeaderTimeout: f.readHeaderTimeout, BodyRate: f.bodyRate(),
		MaxConns: f.maxConns, MaxConnsPerClient: f.maxConnsPerClient}
}
