package project_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/ociimage"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
)

// droppingHost is the local host, recording the Drop calls it gets (its
// warm pools are tested in fleet with gVisor).
type droppingHost struct {
	*fleet.Local
	dropped []string
}

func (h *droppingHost) Drop(ctx context.Context, hostID, projectID string) {
	h.dropped = append(h.dropped, hostID+"/"+projectID)
	h.Local.Drop(ctx, hostID, projectID)
}

// TestInvalidateAndDeleteDropWarmSandboxes: invalidating a project and
// deleting it both release what the hosts keep for it (warm sandboxes).
func TestInvalidateAndDeleteDropWarmSandboxes(t *testing.T) {
	ctx := context.Background()
	db := storetest.OpenSQLite(t)
	dir := t.TempDir()
	local, err := fleet.NewLocal(filepath.Join(dir, "host"), filepath.Join(dir, "images"), &ociimage.Cache{Root: filepath.Join(dir, "rootfs")})
	if err != nil {
		t.Fatal(err)
	}
	host := &droppingHost{Local: local}
	svc := project.New(project.Config{Store: db, Clock: clock.System{}, Logger: slog.New(slog.DiscardHandler), DataDir: dir, Preparer: host})
	defer svc.Close()
	now := time.Now()
	acc, err := db.AccountCreate(ctx, &store.AccountCreateParams{ID: id.New(id.Account), Name: "drop", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.ProjectCreate(ctx, &store.ProjectWriteParams{ID: id.New(id.Project), AccountID: acc.ID, Name: "warm",
		SetupTimeoutS: 600, RuntimeKind: "oci", RuntimeVersion: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := local.ID() + "/" + p.ID
	if _, err := svc.Invalidate(ctx, acc.ID, "warm"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(host.dropped, []string{want}) {
		t.Fatalf("after invalidate, dropped %q, want %q", host.dropped, want)
	}
	if err := svc.Delete(ctx, acc.ID, "warm"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(host.dropped, []string{want, want}) {
		t.Fatalf("after delete, dropped %q, want it twice", host.dropped)
	}
}
