// Package enroll owns how bring-your-own-hardware machines join the fleet:
// the operator's one-time codes (cek_..., single use, 24 hours), their
// redemption into a host identity with a credential shown once, and the
// operator's drain and remove. Codes and credentials are stored only as
// their sha256 (id.Hash), like API keys; neither is ever logged.
package enroll

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// CredentialPrefix starts every host credential, so that one pasted into
// the wrong place (the user API) is recognised and refused by its kind.
const CredentialPrefix = "skh_"

// CodeTTL is how long an enrollment code may be redeemed (spec 1).
const CodeTTL = 24 * time.Hour

// DefaultRatePercent is the host's share of what its tasks earn when the
// operator names none. Earnings and payouts do not operate yet (spec 1);
// the share is recorded now so that it is fixed at enrollment.
const DefaultRatePercent = 70

// Bounds on a declared share. Beyond them a declaration is a mistake or a
// lie, refused with 422 rather than stored.
const (
	MaxCPUs         = 1024
	MaxMemoryGB     = 16384 // 16 TiB
	MaxGPUs         = 64
	MaxHostnameLen  = 253
	MaxProfileBytes = 8 << 10
	MaxNameLen      = 100
)

// Work kinds a host may be permitted.
var workKinds = map[string]bool{"cpu": true, "gpu": true, "cpu,gpu": true}

// Service creates, redeems and manages enrollments and hosts.
type Service struct {
	st  store.Store
	clk clock.Clock
}

// New returns a service over st.
func New(st store.Store, clk clock.Clock) *Service { return &Service{st: st, clk: clk} }

// Spec is what the operator fixes for a host at enrollment.
type Spec struct {
	Name        string // "" lets the host's hostname name it
	WorkKinds   string // "cpu", "gpu" or "cpu,gpu"; "" means "cpu"
	RatePercent int    // -1 means DefaultRatePercent
}

// NormalizeWorkKinds accepts "cpu", "gpu", "cpu,gpu" or "gpu,cpu" (spaces
// ignored) and returns the stored form.
func NormalizeWorkKinds(s string) (string, error) {
	s = strings.ReplaceAll(strings.ToLower(s), " ", "")
	if s == "" {
		return "cpu", nil
	}
	if s == "gpu,cpu" {
		s = "cpu,gpu"
	}
	if !workKinds[s] {
		return "", fault.Invalid("invalid_work_kinds", "Use cpu, gpu or cpu,gpu.", "work kinds %q are not cpu, gpu or cpu,gpu", s).
			With("field", "work")
	}
	return s, nil
}

// CreateEnrollment makes a code and returns it; only its hash is kept.
func (s *Service) CreateEnrollment(ctx context.Context, spec Spec) (string, *store.Enrollment, error) {
	kinds, err := NormalizeWorkKinds(spec.WorkKinds)
	if err != nil {
		return "", nil, err
	}
	rate := spec.RatePercent
	if rate < 0 {
		rate = DefaultRatePercent
	}
	if rate > 100 {
		return "", nil, fault.Invalid("invalid_rate_percent", "Use a rate share from 0 to 100.", "rate percent %d is over 100", rate)
	}
	name := strings.TrimSpace(spec.Name)
	if len(name) > MaxNameLen {
		return "", nil, fault.Invalid("invalid_name", "Use a shorter host name.", "name is longer than %d bytes", MaxNameLen)
	}
	code := id.Secret(id.Enrollment)
	now := s.clk.Now()
	e, err := s.st.EnrollmentCreate(ctx, &store.EnrollmentCreateParams{CodeHash: id.Hash(code), Name: name,
		WorkKinds: kinds, RatePercent: rate, Now: now, ExpiresAt: now.Add(CodeTTL)})
	if err != nil {
		return "", nil, fmt.Errorf("create enrollment: %w", err)
	}
	return code, e, nil
}

// RedeemRequest is what a machine sends with its code.
type RedeemRequest struct {
	Code     string
	CPUs     float64
	MemoryGB float64
	GPUs     int
	Hostname string
	Profile  json.RawMessage // the measured resource profile; nil or a JSON object
}

// Redeemed is a new host and its credential, which is shown only this once.
type Redeemed struct {
	Host       *store.Host
	Credential string
}

// Refusals of a code. They say nothing about the code beyond its state.
var (
	errCodeUnknown = fault.New(fault.KindNotFound, "enrollment_not_found",
		"Ask the operator for a new code (skiff admin create-enrollment).", "no such enrollment code")
	errCodeExpired = fault.New(fault.KindGone, "enrollment_expired",
		"Codes expire 24 hours after they are made; ask the operator for a new one.", "the enrollment code expired")
	errCodeUsed = fault.New(fault.KindConflict, "enrollment_used",
		"A code is single use. If this machine redeemed it before, start the host with the credential in its data dir; otherwise ask for a new code.",
		"the enrollment code was already redeemed")
)

// Redeem turns a code into a host. A refused code changes nothing.
func (s *Service) Redeem(ctx context.Context, req *RedeemRequest) (*Redeemed, error) {
	if err := validateRedeem(req); err != nil {
		return nil, err
	}
	cred := id.Secret(CredentialPrefix)
	var out *store.Host
	err := s.st.InTx(ctx, func(q store.Querier) error {
		now := s.clk.Now()
		e, err := q.EnrollmentGet(ctx, id.Hash(req.Code))
		if errors.Is(err, store.ErrNotFound) {
			return errCodeUnknown
		}
		if err != nil {
			return fmt.Errorf("enrollment: %w", err)
		}
		if !e.UsedAt.IsZero() {
			return errCodeUsed
		}
		if !now.Before(e.ExpiresAt) {
			return errCodeExpired
		}
		hostID := id.New(id.Worker)
		if err := q.EnrollmentUse(ctx, &store.EnrollmentUseParams{CodeHash: e.CodeHash, HostID: hostID, Now: now}); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return errCodeUsed
			}
			return fmt.Errorf("use enrollment: %w", err)
		}
		name := e.Name
		if name == "" {
			name = req.Hostname
		}
		if name == "" {
			name = hostID
		}
		gpus := req.GPUs
		if !strings.Contains(e.WorkKinds, "gpu") {
			gpus = 0 // not permitted GPU work: its GPUs are not lent
		}
		out, err = q.HostCreate(ctx, &store.HostCreateParams{ID: hostID, Name: name, WorkKinds: e.WorkKinds,
			RatePercent: e.RatePercent, CPUs: req.CPUs, MemoryMB: int64(math.Round(req.MemoryGB * 1024)), GPUs: gpus,
			Hostname: req.Hostname, Profile: req.Profile, CredentialHash: id.Hash(cred), Now: now})
		if err != nil {
			return fmt.Errorf("create host: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Redeemed{Host: out, Credential: cred}, nil
}

func validateRedeem(req *RedeemRequest) error {
	if !strings.HasPrefix(req.Code, id.Enrollment) || len(req.Code) < len(id.Enrollment)+16 || len(req.Code) > 200 {
		return fault.Invalid("invalid_code", "Send the cek_... code the operator gave you.", "code is not an enrollment code").
			With("field", "code")
	}
	absurd := func(field, format string, args ...any) error {
		return fault.Invalid("invalid_share", "Declare a share this machine can lend: cpus 0 < N <= 1024, memory_gb 0 < G <= 16384, gpus 0..64.",
			format, args...).With("field", field)
	}
	switch {
	case math.IsNaN(req.CPUs) || req.CPUs <= 0 || req.CPUs > MaxCPUs:
		return absurd("cpus", "cpus %v is not in (0, %d]", req.CPUs, MaxCPUs)
	case math.IsNaN(req.MemoryGB) || req.MemoryGB*1024 < 1 || req.MemoryGB > MaxMemoryGB:
		return absurd("memory_gb", "memory_gb %v is not in (0, %d]", req.MemoryGB, MaxMemoryGB)
	case req.GPUs < 0 || req.GPUs > MaxGPUs:
		return absurd("gpus", "gpus %d is not in [0, %d]", req.GPUs, MaxGPUs)
	}
	if len(req.Hostname) > MaxHostnameLen {
		return fault.Invalid("invalid_hostname", "Send the machine's hostname.", "hostname is longer than %d bytes", MaxHostnameLen).
			With("field", "hostname")
	}
	if len(req.Profile) > 0 {
		var m map[string]any
		if len(req.Profile) > MaxProfileBytes || json.Unmarshal(req.Profile, &m) != nil || m == nil {
			return fault.Invalid("invalid_profile", "Send the measured profile as a JSON object of at most 8 KiB.",
				"profile is not a JSON object of at most %d bytes", MaxProfileBytes).With("field", "profile")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, req.Profile); err == nil {
			req.Profile = buf.Bytes()
		}
	}
	return nil
}

// Authenticate finds the host a credential names. A removed host's
// credential, or anything else, is refused with ok false.
func (s *Service) Authenticate(ctx context.Context, credential string) (*store.Host, bool, error) {
	return Authenticate(ctx, s.st, credential)
}

// Authenticate is Service.Authenticate over any querier.
func Authenticate(ctx context.Context, q store.Querier, credential string) (*store.Host, bool, error) {
	if !strings.HasPrefix(credential, CredentialPrefix) {
		return nil, false, nil
	}
	h, err := q.HostGetByCredential(ctx, id.Hash(credential))
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("host by credential: %w", err)
	}
	if h.State == store.HostRemoved {
		return nil, false, nil
	}
	return h, true, nil
}

// Hosts lists enrolled hosts, oldest first.
func (s *Service) Hosts(ctx context.Context, p *store.ListParams) ([]store.Host, error) {
	return s.st.HostList(ctx, p)
}

// Host returns one host.
func (s *Service) Host(ctx context.Context, hostID string) (*store.Host, error) {
	h, err := s.st.HostGet(ctx, hostID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NotFound("host", hostID)
	}
	return h, err
}

// Drain stops new work to a host; what it runs finishes. Draining a
// draining host is a no-op.
func (s *Service) Drain(ctx context.Context, hostID string) (*store.Host, error) {
	return s.setState(ctx, hostID, store.HostDraining, store.HostActive, store.HostDraining)
}

// Remove revokes a host's credential at once: its next request is refused
// and the controller declares its attempts lost when its lease lapses.
func (s *Service) Remove(ctx context.Context, hostID string) (*store.Host, error) {
	return s.setState(ctx, hostID, store.HostRemoved, store.HostActive, store.HostDraining, store.HostRemoved)
}

func (s *Service) setState(ctx context.Context, hostID string, to store.HostState, from ...store.HostState) (*store.Host, error) {
	h, err := s.st.HostSetState(ctx, &store.HostSetStateParams{ID: hostID, State: to, From: from})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.NotFound("host", hostID)
	case errors.Is(err, store.ErrConflict):
		return nil, fault.Conflict("host_state", "A removed host cannot be drained; enroll the machine again.",
			"host %s cannot become %s", hostID, to)
	case err != nil:
		return nil, fmt.Errorf("host %s to %s: %w", hostID, to, err)
	}
	return h, nil
}
