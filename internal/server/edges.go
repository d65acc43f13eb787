package server

import (
	"context"
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

// EdgeConfig configure what the HTTP server lets a stranger hold: idle
// connections, slow bodies, and connections at all (docs/access.md).
type EdgeConfig struct {
	IdleTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	BodyMinRate       int64
	BodyRateWindow    time.Duration
	MaxConns          int
	MaxConnsPerClient int
}

func (f *EdgeConfig) validate() error {
	switch {
	case f.IdleTimeout <= 0 || f.ReadHeaderTimeout <= 0:
		return fmt.Errorf("--idle-timeout and --read-header-timeout must be positive")
	case f.BodyMinRate < 0 || (f.BodyMinRate > 0 && f.BodyRateWindow < time.Second):
		return fmt.Errorf("--body-min-rate must be 0 (off) or more, with a --body-rate-window of at least 1s")
	case f.MaxConns < 0 || f.MaxConnsPerClient < 0:
		return fmt.Errorf("--max-connections and --max-connections-per-client must be 0 (unlimited) or more")
	}
	return nil
}

func (f *EdgeConfig) bodyRate() httpapi.BodyRate {
	return httpapi.BodyRate{MinBytesPerSecond: f.BodyMinRate, Window: f.BodyRateWindow}
}

// listener caps the connections ln hands to the server.
func (f *EdgeConfig) listener(ln net.Listener, proxies []netip.Prefix, log *slog.Logger) net.Listener {
	return ratelimit.LimitListener(ln, ratelimit.ConnLimits{Max: f.MaxConns, PerClient: f.MaxConnsPerClient, Exempt: proxies,
		Refusal: httpapi.ConnRefusal(),
		OnRefuse: func(peer, limit string) {
			log.Warn("connection refused: over the connection cap", "peer", peer, "limit", limit)
		}})
}

// server is the HTTP server with the edges' timeouts. It sets no
// ReadTimeout or WriteTimeout: those would cut event streams, long polls
// and large uploads; slow bodies are MinBodyRate's, idle connections
// IdleTimeout's.
func (f *EdgeConfig) server(h http.Handler, errLog *stdlog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: f.ReadHeaderTimeout, IdleTimeout: f.IdleTimeout, ErrorLog: errLog}
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
