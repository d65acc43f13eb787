package project_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
	"github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// warmHost is a preparer whose hosts keep warm sandboxes (the local
// host's pools are tested with gVisor in fleet); it reports a fixed
// capacity for the revision it was asked about.
type warmHost struct {
	asked *store.Push
}

func (h *warmHost) HostIDs(context.Context) ([]string, error)          { return nil, nil }
func (h *warmHost) Prepare(context.Context, string, *store.Push) error { return nil }
func (h *warmHost) WarmCapacity(_ context.Context, _ string, pu *store.Push) (int, int) {
	h.asked = pu
	return 1, 2
}

// The readiness object (GET /projects/:name init_status, GET status)
// reports the hosts' warm sandboxes of the published revision.
func TestReadinessReportsWarmCapacity(t *testing.T) {
	ctx := context.Background()
	db := storetest.OpenSQLite(t)
	host := &warmHost{}
	svc := project.New(project.Config{Store: db, Clock: clock.System{}, Logger: slog.New(slog.DiscardHandler), DataDir: t.TempDir(), Preparer: host})
	defer svc.Close()
	p := testfactory.Project(t, db, &testfactory.ProjectOpts{Name: "warm"})

	r, err := svc.Readiness(ctx, p)
	if err != nil || r.WarmSandboxesReady != 0 || r.WarmSandboxesTarget != 0 || host.asked != nil {
		t.Fatalf("before any revision: %+v, %v; want no warm sandboxes and no question asked", r, err)
	}
	pu := testfactory.Push(t, db, &testfactory.PushOpts{Project: p})
	if _, err := db.PushFinish(ctx, &store.PushFinishParams{ID: pu.ID, Status: store.PushPublished, ImageRef: "localhost/skiff/warm",
		ImageDigest: "sha256:" + testfactory.SHA('a'), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r, err = svc.Readiness(ctx, p)
	if err != nil || r.WarmSandboxesReady != 1 || r.WarmSandboxesTarget != 2 {
		t.Fatalf("published: warm %d of %d, %v; want 1 of 2", r.WarmSandboxesReady, r.WarmSandboxesTarget, err)
	}
	if host.asked == nil || host.asked.ID != pu.ID {
		t.Errorf("the hosts were asked about %+v, want the published revision %s", host.asked, pu.ID)
	}
}
