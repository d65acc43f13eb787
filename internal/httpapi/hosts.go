package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// maxRedeemBody bounds a redeem request: a code, a few numbers and a
// profile of at most 8 KiB.
const maxRedeemBody = 16 << 10

// enrollmentRedeem turns a one-time code into a host identity and its
// credential (shown once). The code and the credential are never logged.
func (s *Server) enrollmentRedeem(w http.ResponseWriter, r *http.Request) error {
	if err := s.rateLimit(w, "enrollment redeem", limitCheck{s.limits.redeem, s.clientKey(r), "client_ip"}); err != nil {
		return err
	}
	var body apiv1.RedeemRequest
	if _, _, err := decodeJSONLimit(w, r, &body, false, maxRedeemBody); err != nil {
		return err
	}
	red, err := s.enroll.Redeem(r.Context(), &enroll.RedeemRequest{Code: body.Code, CPUs: body.CPUs,
		MemoryGB: body.MemoryGB, GPUs: body.GPUs, Hostname: body.Hostname, Profile: body.Profile})
	if err != nil {
		s.log.InfoContext(r.Context(), "enrollment refused", "client_ip", s.clientIP(r), "err", err)
		return err
	}
	h := red.Host
	s.log.InfoContext(r.Context(), "host enrolled", "host_id", h.ID, "name", h.Name, "cpus", h.CPUs, "memory_mb", h.MemoryMB, "gpus", h.GPUs)
	writeJSON(w, http.StatusCreated, apiv1.RedeemResponse{HostID: h.ID, Name: h.Name, Credential: red.Credential,
		WorkKinds: strings.Split(h.WorkKinds, ","), RatePercent: h.RatePercent, CPUs: h.CPUs,
		MemoryGB: float64(h.MemoryMB) / 1024, GPUs: h.GPUs})
	return nil
}

// adminHosts lists enrolled hosts, oldest first (admin only).
func (s *Server) adminHosts(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := pageParams(r)
	if err != nil {
		return err
	}
	hosts, err := s.enroll.Hosts(r.Context(), &store.ListParams{Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	out := apiv1.HostList{Hosts: []apiv1.HostView{}}
	for i := range hosts {
		v, err := s.hostView(r.Context(), &hosts[i])
		if err != nil {
			return err
		}
		out.Hosts = append(out.Hosts, v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// adminHost shows one enrolled host (admin only).
func (s *Server) adminHost(w http.ResponseWriter, r *http.Request) error {
	h, err := s.enroll.Host(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	v, err := s.hostView(r.Context(), h)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// HostView is how operators see a host, shared with `skiff admin hosts`.
func HostView(ctx context.Context, q store.Querier, h *store.Host) (apiv1.HostView, error) {
	open, err := q.AttemptListOpen(ctx, h.ID)
	if err != nil {
		return apiv1.HostView{}, fmt.Errorf("open attempts of %s: %w", h.ID, err)
	}
	v := apiv1.HostView{ID: h.ID, Name: h.Name, State: string(h.State), WorkKinds: strings.Split(h.WorkKinds, ","),
		RatePercent: h.RatePercent, CPUs: h.CPUs, MemoryGB: float64(h.MemoryMB) / 1024, GPUs: h.GPUs,
		Hostname: h.Hostname, Profile: h.Profile, RunningAttempts: len(open), EnrolledAt: h.CreatedAt}
	if !h.LastSeenAt.IsZero() {
		t := h.LastSeenAt
		v.LastSeenAt = &t
	}
	return v, nil
}

func (s *Server) hostView(ctx context.Context, h *store.Host) (apiv1.HostView, error) {
	return HostView(ctx, s.store, h)
}

var errHostCredential = fault.New(fault.KindUnauthenticated, "host_credential",
	"Host credentials (skh_...) authenticate only a host's own protocol. Send an API key (flk_...) or a wallet session token (fls_...).",
	"a host credential cannot call the user API")

// isHostCredential reports whether the request's bearer token is a host
// credential.
func isHostCredential(r *http.Request) bool {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && strings.HasPrefix(strings.TrimSpace(v), enroll.CredentialPrefix)
}
