package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

var leaseTests = map[string]func(*testing.T, store.Store){
	"LeaseOneHolderAtATime": testLeaseOneHolderAtATime,
	"LeaseForceAndList":     testLeaseForceAndList,
}

func lease(name, holder string, now time.Time, ttl time.Duration) *store.LeaseParams {
	return &store.LeaseParams{Name: name, Holder: holder, Now: now, Until: now.Add(ttl)}
}

func testLeaseOneHolderAtATime(t *testing.T, s store.Store) {
	a, err := s.LeaseAcquire(ctx(t), lease("builds", "ctl-a", t0, 10*time.Second))
	if err != nil || a.Holder != "ctl-a" || a.Epoch != 1 || !a.ExpiresAt.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("first acquire = %+v, %v; want ctl-a's, epoch 1, until t0+10s", a, err)
	}
	if _, err := s.LeaseAcquire(ctx(t), lease("builds", "ctl-b", t0.Add(5*time.Second), 10*time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("acquire of a live lease by another holder: %v, want ErrConflict", err)
	}
	// The holder acquiring again extends its tenure: same epoch and start.
	again, err := s.LeaseAcquire(ctx(t), lease("builds", "ctl-a", t0.Add(5*time.Second), 10*time.Second))
	if err != nil || again.Epoch != 1 || !again.AcquiredAt.Equal(t0) || !again.ExpiresAt.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("re-acquire by the holder = %+v, %v; want epoch 1 from t0 until t0+15s", again, err)
	}
	if _, err := s.LeaseRenew(ctx(t), lease("builds", "ctl-b", t0.Add(6*time.Second), 10*time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("renew by a non-holder: %v, want ErrConflict", err)
	}
	r, err := s.LeaseRenew(ctx(t), lease("builds", "ctl-a", t0.Add(10*time.Second), 10*time.Second))
	if err != nil || !r.ExpiresAt.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("renew by the holder = %+v, %v; want until t0+20s", r, err)
	}
	// Once expired, the old holder cannot renew and another takes it.
	late := t0.Add(20 * time.Second)
	if _, err := s.LeaseRenew(ctx(t), lease("builds", "ctl-a", late, 10*time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("renew of an expired lease: %v, want ErrConflict", err)
	}
	b, err := s.LeaseAcquire(ctx(t), lease("builds", "ctl-b", late, 10*time.Second))
	if err != nil || b.Holder != "ctl-b" || b.Epoch != 2 || !b.AcquiredAt.Equal(late) {
		t.Fatalf("take-over after expiry = %+v, %v; want ctl-b's, epoch 2, from t0+20s", b, err)
	}
	// Release by a non-holder does nothing; by the holder it frees at once.
	if err := s.LeaseRelease(ctx(t), "builds", "ctl-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LeaseAcquire(ctx(t), lease("builds", "ctl-a", late.Add(time.Second), 10*time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("acquire after a stranger's release: %v, want ErrConflict", err)
	}
	if err := s.LeaseRelease(ctx(t), "builds", "ctl-b"); err != nil {
		t.Fatal(err)
	}
	c, err := s.LeaseAcquire(ctx(t), lease("builds", "ctl-a", late.Add(time.Second), 10*time.Second))
	if err != nil || c.Holder != "ctl-a" || c.Epoch != 3 {
		t.Errorf("acquire after the holder's release = %+v, %v; want ctl-a's, epoch 3", c, err)
	}
}

func testLeaseForceAndList(t *testing.T, s store.Store) {
	if _, err := s.LeaseAcquire(ctx(t), lease("host:wkr_1", "ctl-a", t0, time.Minute)); err != nil {
		t.Fatal(err)
	}
	f, err := s.LeaseForce(ctx(t), lease("host:wkr_1", "ctl-b", t0.Add(time.Second), time.Minute))
	if err != nil || f.Holder != "ctl-b" || f.Epoch != 2 {
		t.Fatalf("force = %+v, %v; want ctl-b's, epoch 2", f, err)
	}
	for _, name := range []string{"host:wkr_2", "builds", "hostile"} {
		if _, err := s.LeaseAcquire(ctx(t), lease(name, "ctl-a", t0, time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.LeaseList(ctx(t), "host:")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "host:wkr_1" || list[1].Name != "host:wkr_2" {
		t.Fatalf("LeaseList(host:) = %+v, want host:wkr_1 and host:wkr_2", list)
	}
	if !list[0].Live(t0.Add(30*time.Second)) || list[1].Live(t0.Add(30*time.Second)) {
		t.Errorf("at t0+30s: wkr_1 live %v (want true), wkr_2 live %v (want false)",
			list[0].Live(t0.Add(30*time.Second)), list[1].Live(t0.Add(30*time.Second)))
	}
}
