package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

var hostTests = map[string]func(*testing.T, store.Store){
	"EnrollmentUsedOnce":      testEnrollmentUsedOnce,
	"HostsStoredAndListed":    testHostsStoredAndListed,
	"HostStateGuarded":        testHostStateGuarded,
	"HostRefusesBadRows":      testHostRefusesBadRows,
	"EnrollmentConcurrentUse": testEnrollmentConcurrentUse,
}

func mustEnrollment(t *testing.T, s store.Querier, code string) *store.Enrollment {
	t.Helper()
	e, err := s.EnrollmentCreate(ctx(t), &store.EnrollmentCreateParams{CodeHash: id.Hash(code), Name: "box",
		WorkKinds: "cpu,gpu", RatePercent: 70, Now: t0, ExpiresAt: t0.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func hostParams(name string) *store.HostCreateParams {
	return &store.HostCreateParams{ID: id.New(id.Worker), Name: name, WorkKinds: "cpu", RatePercent: 50, CPUs: 2.5,
		MemoryMB: 4096, GPUs: 1, Hostname: name + ".lan", Profile: []byte(`{"single_core_score":1.2}`),
		CredentialHash: id.Hash(id.Secret("skh_")), Now: t0}
}

func testEnrollmentUsedOnce(t *testing.T, s store.Store) {
	code := id.Secret(id.Enrollment)
	e := mustEnrollment(t, s, code)
	if e.Name != "box" || e.WorkKinds != "cpu,gpu" || e.RatePercent != 70 || !e.ExpiresAt.Equal(t0.Add(24*time.Hour)) || !e.UsedAt.IsZero() || e.HostID != "" {
		t.Fatalf("EnrollmentCreate = %+v", e)
	}
	got, err := s.EnrollmentGet(ctx(t), id.Hash(code))
	if err != nil || got.CodeHash != id.Hash(code) {
		t.Fatalf("EnrollmentGet = %+v, %v", got, err)
	}
	if _, err := s.EnrollmentGet(ctx(t), id.Hash("cek_unknown")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EnrollmentGet(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.EnrollmentUse(ctx(t), &store.EnrollmentUseParams{CodeHash: id.Hash(code), HostID: "wkr_a", Now: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnrollmentUse(ctx(t), &store.EnrollmentUseParams{CodeHash: id.Hash(code), HostID: "wkr_b", Now: t0.Add(2 * time.Minute)}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second EnrollmentUse = %v, want ErrConflict", err)
	}
	if err := s.EnrollmentUse(ctx(t), &store.EnrollmentUseParams{CodeHash: id.Hash("cek_unknown"), HostID: "wkr_b", Now: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EnrollmentUse(unknown) = %v, want ErrNotFound", err)
	}
	got, _ = s.EnrollmentGet(ctx(t), id.Hash(code))
	if got.HostID != "wkr_a" || !got.UsedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("used enrollment = %+v, want host wkr_a used at t0+1m (the first use kept)", got)
	}
}

func testEnrollmentConcurrentUse(t *testing.T, s store.Store) {
	code := id.Secret(id.Enrollment)
	mustEnrollment(t, s, code)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.EnrollmentUse(ctx(t), &store.EnrollmentUseParams{CodeHash: id.Hash(code), HostID: id.New(id.Worker), Now: t0})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("concurrent EnrollmentUse: %v, want nil or ErrConflict", err)
		}
	}
	if won != 1 {
		t.Errorf("%d concurrent uses of one code succeeded, want exactly 1", won)
	}
}

func testHostsStoredAndListed(t *testing.T, s store.Store) {
	p := hostParams("a")
	h, err := s.HostCreate(ctx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != p.ID || h.State != store.HostActive || h.CPUs != 2.5 || h.MemoryMB != 4096 || h.GPUs != 1 ||
		h.RatePercent != 50 || h.Hostname != "a.lan" || string(h.Profile) != `{"single_core_score":1.2}` || !h.LastSeenAt.IsZero() {
		t.Fatalf("HostCreate = %+v", h)
	}
	dup := hostParams("dup")
	dup.CredentialHash = p.CredentialHash
	if _, err := s.HostCreate(ctx(t), dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("HostCreate with a used credential = %v, want ErrConflict", err)
	}
	byCred, err := s.HostGetByCredential(ctx(t), p.CredentialHash)
	if err != nil || byCred.ID != h.ID {
		t.Fatalf("HostGetByCredential = %+v, %v", byCred, err)
	}
	if _, err := s.HostGetByCredential(ctx(t), id.Hash("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("HostGetByCredential(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.HostSeen(ctx(t), h.ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.HostSeen(ctx(t), h.ID, t0.Add(time.Second)); err != nil { // older: ignored
		t.Fatal(err)
	}
	got, err := s.HostGet(ctx(t), h.ID)
	if err != nil || !got.LastSeenAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("HostGet after HostSeen = %+v, %v; want last seen t0+1m (never moved back)", got, err)
	}
	p2 := hostParams("b")
	p2.Now = t0.Add(time.Hour)
	if _, err := s.HostCreate(ctx(t), p2); err != nil {
		t.Fatal(err)
	}
	list, err := s.HostList(ctx(t), &store.ListParams{Limit: 10})
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Errorf("HostList = %+v, %v; want a then b (oldest first)", list, err)
	}
	page, err := s.HostList(ctx(t), &store.ListParams{Limit: 1, Offset: 1})
	if err != nil || len(page) != 1 || page[0].Name != "b" {
		t.Errorf("HostList(limit 1, offset 1) = %+v, %v; want [b]", page, err)
	}
	if _, err := s.HostGet(ctx(t), "wkr_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("HostGet(unknown) = %v, want ErrNotFound", err)
	}
}

func testHostStateGuarded(t *testing.T, s store.Store) {
	h, err := s.HostCreate(ctx(t), hostParams("a"))
	if err != nil {
		t.Fatal(err)
	}
	drain := &store.HostSetStateParams{ID: h.ID, State: store.HostDraining, From: []store.HostState{store.HostActive}}
	got, err := s.HostSetState(ctx(t), drain)
	if err != nil || got.State != store.HostDraining {
		t.Fatalf("drain = %+v, %v", got, err)
	}
	if _, err := s.HostSetState(ctx(t), drain); !errors.Is(err, store.ErrConflict) {
		t.Errorf("drain of a draining host = %v, want ErrConflict", err)
	}
	remove := &store.HostSetStateParams{ID: h.ID, State: store.HostRemoved, From: []store.HostState{store.HostActive, store.HostDraining}}
	if got, err := s.HostSetState(ctx(t), remove); err != nil || got.State != store.HostRemoved {
		t.Fatalf("remove = %+v, %v", got, err)
	}
	if _, err := s.HostSetState(ctx(t), drain); !errors.Is(err, store.ErrConflict) {
		t.Errorf("drain of a removed host = %v, want ErrConflict", err)
	}
	if _, err := s.HostSetState(ctx(t), &store.HostSetStateParams{ID: "wkr_nope", State: store.HostRemoved, From: []store.HostState{store.HostActive}}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("HostSetState(unknown) = %v, want ErrNotFound", err)
	}
	got, _ = s.HostGet(ctx(t), h.ID)
	if got.State != store.HostRemoved {
		t.Errorf("state = %s, want removed", got.State)
	}
}

func testHostRefusesBadRows(t *testing.T, s store.Store) {
	for name, mut := range map[string]func(*store.HostCreateParams){
		"zero cpus":        func(p *store.HostCreateParams) { p.CPUs = 0 },
		"zero memory":      func(p *store.HostCreateParams) { p.MemoryMB = 0 },
		"negative gpus":    func(p *store.HostCreateParams) { p.GPUs = -1 },
		"unknown work":     func(p *store.HostCreateParams) { p.WorkKinds = "tpu" },
		"rate above 100 %": func(p *store.HostCreateParams) { p.RatePercent = 101 },
	} {
		p := hostParams("bad")
		mut(p)
		if _, err := s.HostCreate(ctx(t), p); err == nil {
			t.Errorf("HostCreate with %s succeeded; want the CHECK constraint to refuse it", name)
		}
	}
}
