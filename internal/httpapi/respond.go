package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
)

// statusOf is the one place where error kinds become status codes, for the
// public API and for the agent endpoints (agent.go) alike.
func statusOf(k fault.Kind) int {
	switch k {
	case fault.KindInvalid:
		return http.StatusUnprocessableEntity
	case fault.KindBadRequest:
		return http.StatusBadRequest
	case fault.KindUnauthenticated:
		return http.StatusUnauthorized
	case fault.KindPaymentRequired:
		return http.StatusPaymentRequired
	case fault.KindForbidden:
		return http.StatusForbidden
	case fault.KindNotFound:
		return http.StatusNotFound
	case fault.KindMethod:
		return http.StatusMethodNotAllowed
	case fault.KindConflict:
		return http.StatusConflict
	case fault.KindGone:
		return http.StatusGone
	case fault.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case fault.KindRangeNotSatisfiable:
		return http.StatusRequestedRangeNotSatisfiable
	case fault.KindRateLimited:
		return http.StatusTooManyRequests
	case fault.KindUnavailable:
		return http.StatusServiceUnavailable
	case fault.KindBadGateway:
		return http.StatusBadGateway
	case fault.KindQuotaExceeded:
		return http.StatusInsufficientStorage
	case fault.KindUpgradeRequired:
		return http.StatusUpgradeRequired
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError answers with the envelope. Internal causes are logged with the
// request id and never shown.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	fe, ok := fault.As(err)
	if !ok {
		fe = fault.Internal(err)
	}
	status := statusOf(fe.Kind)
	rid := requestID(r.Context())
	// 507 is the caller's quota and 502 a remote the caller named (an
	// external artifact's URL), not failures of the service.
	if status >= 500 && status != http.StatusInsufficientStorage && status != http.StatusBadGateway {
		log.ErrorContext(r.Context(), "request failed", "request_id", rid, "method", r.Method, "path", r.URL.Path,
			"status", status, "err", err)
	}
	body := apiv1.Error{Error: fe.Message, Code: fe.Code, RecommendedAction: fe.Action, Details: fe.Details, RequestID: rid}
	if len(fe.Fields) == 0 {
		writeJSON(w, status, body)
		return
	}
	m := map[string]any{}
	for k, v := range fe.Fields {
		m[k] = v
	}
	m["error"], m["code"], m["request_id"] = body.Error, body.Code, rid
	if body.RecommendedAction != "" {
		m["recommended_action"] = body.RecommendedAction
	}
	if len(body.Details) > 0 {
		m["details"] = body.Details
	}
	writeJSON(w, status, m)
}
