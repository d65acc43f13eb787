package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

type ctxKey int

const (
	ctxRequestID ctxKey = iota
	ctxPrincipal
)

func requestID(ctx context.Context) string {
	v, _ := ctx.Value(ctxRequestID).(string)
	return v
}

func principal(ctx context.Context) *store.Principal {
	p, _ := ctx.Value(ctxPrincipal).(*store.Principal)
	return p
}

// statusRecorder remembers the status for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush on the real writer (SSE).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// middleware adds a request id, an access log line and panic recovery.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := r.Header.Get("X-Request-Id")
		if rid == "" || len(rid) > 64 {
			rid = id.New("req_")
		}
		w.Header().Set("X-Request-Id", rid)
		r = r.WithContext(context.WithValue(r.Context(), ctxRequestID, rid))
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic in handler", "request_id", rid, "panic", fmt.Sprint(v),
					"stack", string(debug.Stack()))
				if rec.status == 0 {
					writeError(rec, r, s.log, fault.Internal(fmt.Errorf("panic: %v", v)))
				}
			}
			s.log.InfoContext(r.Context(), "http request", "request_id", rid, "method", r.Method, "path", r.URL.Path,
				"status", rec.status, "bytes", rec.bytes, "duration_ms", time.Since(start).Milliseconds())
		}()
		next.ServeHTTP(rec, r)
	})
}

// access says who may call a route.
type access int

const (
	public   access = iota // no credentials
	readOnly               // any authenticated role, including viewer
	write                  // member or admin: viewers get 403
	admin                  // admin only
)

// authorize resolves the bearer token and checks the role against the route.
func (s *Server) authorize(acc access, h handlerFunc) handlerFunc {
	if acc == public {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		if isHostCredential(r) {
			// Named, so that an operator who pasted it here learns why;
			// never looked up, so it proves nothing on this API.
			w.Header().Set("WWW-Authenticate", `Bearer realm="skiff"`)
			return errHostCredential
		}
		p, err := s.auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skiff"`)
			return err
		}
		switch {
		case acc == admin && p.Key.Role != store.RoleAdmin:
			return fault.Forbidden("admin_required", "Use an admin key for operator endpoints.", "this endpoint needs the admin role")
		case acc == write && p.Key.Role == store.RoleViewer:
			return fault.Forbidden("read_only_key", "Use a member key to change anything; viewer keys can only read.",
				"viewer keys are read-only")
		}
		return h(w, r.WithContext(context.WithValue(r.Context(), ctxPrincipal, p)))
	}
}

// handlerFunc is a handler that may fail; the error becomes the envelope.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) adapt(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, r, s.log, s.payable(w, err))
		}
	}
}

// methodNotAllowed answers a known path with a method it does not serve.
func (s *Server) methodNotAllowed(allowed []string) http.HandlerFunc {
	allow := strings.Join(allowed, ", ")
	return s.adapt(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Allow", allow)
		return fault.New(fault.KindMethod, "method_not_allowed", "Use one of: "+allow+".",
			"method %s is not allowed on %s", r.Method, r.URL.Path).With("allowed_methods", allowed)
	})
}
