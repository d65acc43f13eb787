package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/openapi"
)

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apiv1.Health{Status: "ok", App: AppName})
	return nil
}

// ready reports whether the store answers and is migrated, the HTTP side is
// serving (not draining) and the controller core runs.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]bool{
		"repo":            s.store != nil && s.store.Ping(ctx) == nil,
		"api_supervisor":  !s.draining.Load(),
		"controller_core": s.coreStarted.Load(),
	}
	for _, ok := range checks {
		if !ok {
			return fault.New(fault.KindUnavailable, "not_ready", "Retry in a few seconds; the service is starting or stopping.",
				"service not ready").With("checks", checks)
		}
	}
	writeJSON(w, http.StatusOK, apiv1.Ready{Status: "ready", Checks: checks})
	return nil
}

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(openapi.Document)
	return err
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	}
	// The body is optional and ignored, but a broken one still gets the
	// same answer: there is no self-service key issuance.
	_, _ = decodeJSON(w, r, &body, true)
	return fault.Forbidden("self_service_registration_disabled",
		"Authenticate with a wallet (POST /api/v1/auth/wallet/challenge, then /verify), or join the waitlist (POST /api/v1/waitlist) for an API key.",
		"API keys are not issued through self-service registration").
		With("wallet_auth", map[string]string{
			"challenge": "POST /api/v1/auth/wallet/challenge",
			"verify":    "POST /api/v1/auth/wallet/verify",
			"how":       "Sign challenge.message with EIP-191 personal_sign; the verify answer carries a fls_ session token.",
		}).
		With("waitlist", map[string]string{
			"endpoint": "POST /api/v1/waitlist",
			"body":     `{"email": "you@example.com"}`,
		})
}
