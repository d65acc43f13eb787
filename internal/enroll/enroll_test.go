package enroll_test

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
)

func wantFault(t *testing.T, what string, err error, code string) {
	t.Helper()
	fe, ok := fault.As(err)
	if !ok || fe.Code != code {
		t.Fatalf("%s: %v, want the %s fault", what, err, code)
	}
}

// A code turns into a host once: its share is what the operator fixed
// (work kinds, rate) and what the machine declared (GPUs only when GPU
// work is permitted); the credential authenticates that host until it is
// removed. A used, expired or unknown code is refused and changes nothing.
func TestEnrollmentLifecycle(t *testing.T) {
	t.Parallel()
	db := storetest.OpenSQLite(t)
	clk := clock.NewFake(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
	svc := enroll.New(db, clk)
	ctx := t.Context()

	code, e, err := svc.CreateEnrollment(ctx, enroll.Spec{Name: "garage-1", WorkKinds: "cpu", RatePercent: 60})
	if err != nil || e.WorkKinds != "cpu" || e.RatePercent != 60 || !e.ExpiresAt.Equal(clk.Now().Add(enroll.CodeTTL)) {
		t.Fatalf("create: %+v, %v", e, err)
	}
	req := &enroll.RedeemRequest{Code: code, CPUs: 4, MemoryGB: 8, GPUs: 2, Hostname: "box", Profile: []byte(`{"cpu_count": 8}`)}
	r, err := svc.Redeem(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	h := r.Host
	if h.Name != "garage-1" || h.CPUs != 4 || h.MemoryMB != 8192 || h.GPUs != 0 || h.WorkKinds != "cpu" || h.State != store.HostActive {
		t.Errorf("host %+v: want garage-1 lending 4 CPUs, 8 GiB and no GPU (not permitted GPU work)", h)
	}
	got, ok, err := svc.Authenticate(ctx, r.Credential)
	if err != nil || !ok || got.ID != h.ID {
		t.Fatalf("authenticate the new credential: %+v %v %v", got, ok, err)
	}
	if _, err := svc.Redeem(ctx, req); err == nil {
		t.Fatal("a used code was redeemed twice")
	} else {
		wantFault(t, "used code", err, "enrollment_used")
	}
	if hosts, err := svc.Hosts(ctx, &store.ListParams{Limit: 10}); err != nil || len(hosts) != 1 {
		t.Errorf("hosts after a refused redeem: %d, %v; want the one", len(hosts), err)
	}

	late, _, err := svc.CreateEnrollment(ctx, enroll.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(enroll.CodeTTL)
	_, err = svc.Redeem(ctx, &enroll.RedeemRequest{Code: late, CPUs: 1, MemoryGB: 1})
	wantFault(t, "expired code", err, "enrollment_expired")
	_, err = svc.Redeem(ctx, &enroll.RedeemRequest{Code: "cek_" + "0123456789abcdefghij", CPUs: 1, MemoryGB: 1})
	wantFault(t, "unknown code", err, "enrollment_not_found")

	// Removal stops the credential at once.
	if _, err := svc.Remove(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := svc.Authenticate(ctx, r.Credential); ok || err != nil {
		t.Errorf("a removed host's credential: ok %v, %v; want refused", ok, err)
	}
	if _, ok, _ := svc.Authenticate(ctx, "flk_not_a_host_credential"); ok {
		t.Error("a user key authenticated as a host")
	}
}

// Absurd declared shares and malformed input are refused before any code
// is looked at.
func TestRedeemRefusesBadInput(t *testing.T) {
	t.Parallel()
	db := storetest.OpenSQLite(t)
	svc := enroll.New(db, clock.NewFake(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)))
	code, _, err := svc.CreateEnrollment(t.Context(), enroll.Spec{WorkKinds: "cpu,gpu"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  enroll.RedeemRequest
		code string
	}{
		{"not a code", enroll.RedeemRequest{Code: "hello", CPUs: 1, MemoryGB: 1}, "invalid_code"},
		{"zero cpus", enroll.RedeemRequest{Code: code, CPUs: 0, MemoryGB: 1}, "invalid_share"},
		{"a million cpus", enroll.RedeemRequest{Code: code, CPUs: 1e6, MemoryGB: 1}, "invalid_share"},
		{"negative memory", enroll.RedeemRequest{Code: code, CPUs: 1, MemoryGB: -1}, "invalid_share"},
		{"negative gpus", enroll.RedeemRequest{Code: code, CPUs: 1, MemoryGB: 1, GPUs: -1}, "invalid_share"},
		{"profile not an object", enroll.RedeemRequest{Code: code, CPUs: 1, MemoryGB: 1, Profile: []byte(`[1]`)}, "invalid_profile"},
	} {
		_, err := svc.Redeem(t.Context(), &tc.req)
		wantFault(t, tc.name, err, tc.code)
	}
	// The code is still good after all that.
	r, err := svc.Redeem(t.Context(), &enroll.RedeemRequest{Code: code, CPUs: 2, MemoryGB: 4, GPUs: 1})
	if err != nil || r.Host.GPUs != 1 {
		t.Fatalf("redeem after refusals: %+v, %v; want a host lending its GPU (cpu,gpu)", r, err)
	}
	_, err = enroll.NormalizeWorkKinds("tpu")
	wantFault(t, "work kinds tpu", err, "invalid_work_kinds")
}
