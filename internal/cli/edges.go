package cli

import (
	"context"
	"flag"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/ratelimit"
	"github.com/skiffhq/skiff/internal/store"
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

// listener caps the connections ln hands to the server.
func (f *edgeFlags) listener(ln net.Listener, proxies []netip.Prefix, log *slog.Logger) net.Listener {
	return ratelimit.LimitListener(ln, ratelimit.ConnLimits{Max: f.maxConns, PerClient: f.maxConnsPerClient, Exempt: proxies,
		Refusal: httpapi.ConnRefusal(),
		OnRefuse: func(peer, limit string) {
			log.Warn("connection refused: over the connection cap", "peer", peer, "limit", limit)
		}})
}

// server is the HTTP server with the edges' timeouts. It sets no
// ReadTimeout or WriteTimeout: those would cut event streams, long polls
// and large uploads; slow bodies are MinBodyRate's, idle connections
// IdleTimeout's.
func (f *edgeFlags) server(h http.Handler, errLog *stdlog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: f.readHeaderTimeout, IdleTimeout: f.idleTimeout, ErrorLog: errLog}
}

// expirySweepTasks purge what strangers create for free once it expired:
// wallet challenges and sessions, and unpaid quotes a day after expiry.
func expirySweepTasks(a *auth.Service, db store.Store, clk clock.Clock) []artifact.SweepTask {
	return []artifact.SweepTask{
		{Name: "wallet_expiry", Run: a.PurgeExpired},
		{Name: "quote_expiry", Run: func(ctx context.Context, batch int) (int, error) {
			return db.QuotePurgeExpired(ctx, clk.Now().Add(-store.ExpiredQuoteRetention), batch)
		}},
	}
}
