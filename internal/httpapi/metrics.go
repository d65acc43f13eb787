package httpapi

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// instrument counts and times a route's requests under its route label
// (method and pattern: never the raw path, so labels stay few).
func (s *Server) instrument(route, pattern string, h http.HandlerFunc) http.HandlerFunc {
	if s.metrics == nil {
		return h
	}
	stream := strings.HasSuffix(pattern, "/stream") || pattern == "/api/v1/jobs/watch"
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		h(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		s.metrics.ObserveHTTP(route, status, time.Since(start), stream)
	}
}

// metricsGet serves GET /metrics to an admin key or the bearer
// --metrics-token (spec 5.4); without a --metrics-token, also to a request
// from loopback that no proxy forwarded. Once an operator configured a
// token it is required: a proxy on this machine that forwards without
// X-Forwarded-For, or a tenant's process that reaches loopback, must not
// read the metrics. Anyone else gets 401.
func (s *Server) metricsGet(w http.ResponseWriter, r *http.Request) error {
	if s.metrics == nil {
		return fault.New(fault.KindUnavailable, "metrics_unavailable", "Start the server with metrics enabled.",
			"metrics are not served by this server")
	}
	if !s.metricsAllowed(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="skiff-metrics"`)
		return fault.New(fault.KindUnauthenticated, "unauthenticated",
			"Send the server's --metrics-token (or an admin API key) as a bearer token.",
			"GET /metrics needs operator credentials")
	}
	s.metrics.Handler().ServeHTTP(w, r)
	return nil
}

func (s *Server) metricsAllowed(r *http.Request) bool {
	header := r.Header.Get("Authorization")
	if token, ok := strings.CutPrefix(header, "Bearer "); ok && s.metricsToken != "" &&
		subtle.ConstantTimeCompare([]byte(token), []byte(s.metricsToken)) == 1 {
		return true
	}
	if header != "" {
		p, err := s.auth.Authenticate(r.Context(), header)
		return err == nil && p.Key.Role == store.RoleAdmin
	}
	if s.metricsToken != "" {
		return false // configured: the token (or an admin key) is required
	}
	if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "" {
		return false // a proxy on this machine: the client is elsewhere
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}
