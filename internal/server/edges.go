package server

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/ratelimit"
)

// listen opens the API's listener, capped as Edges says, and sets the URL.
func (s *Server) listen() error {
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cmp.Or(s.cfg.Listen, "127.0.0.1:0")); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	s.url = "http://" + ln.Addr().String()
	log := s.log.With("component", "http")
	e := s.cfg.Edges
	s.ln = ratelimit.LimitListener(ln, ratelimit.ConnLimits{Max: e.MaxConns, PerClient: e.MaxConnsPerClient,
		Exempt: s.cfg.Front.TrustedProxies, Refusal: httpapi.ConnRefusal(),
		OnRefuse: func(peer, limit string) {
			log.Warn("connection refused: over the connection cap", "peer", peer, "limit", limit)
		}})
	return nil
}

// httpServer is the HTTP server with the edges' timeouts. It sets no
// ReadTimeout or WriteTimeout: those would cut event streams, long polls
// and large uploads; slow bodies are MinBodyRate's, idle connections
// IdleTimeout's.
func (s *Server) httpServer(h http.Handler) *http.Server {
	e := s.cfg.Edges
	log := s.log.With("component", "http")
	return &http.Server{Handler: httpapi.MinBodyRate(e.BodyRate, log, h),
		ReadHeaderTimeout: cmp.Or(e.ReadHeaderTimeout, 10*time.Second), IdleTimeout: cmp.Or(e.IdleTimeout, 2*time.Minute),
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
}
