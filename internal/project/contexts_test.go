package project_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/storetest"
)

// contextBuilder reads the Dockerfile of the context it is given.
type contextBuilder struct{ saw chan string }

func (b contextBuilder) Build(_ context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	df, err := os.ReadFile(req.Dockerfile)
	if err != nil {
		return nil, err
	}
	b.saw <- string(df)
	return &project.BuildResult{ImageRef: "test", ImageDigest: "sha256:" + string(bytes.Repeat([]byte("a"), 64))}, nil
}

// TestSharedContextBuildsOnAnotherController: controller A accepts a push
// and keeps nothing of it on its disk; controller B, holding the build
// duty, reads the context from the shared blob store, builds it, and the
// shared copy is deleted once the push is published.
func TestSharedContextBuildsOnAnotherController(t *testing.T) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			if eng.Skip != "" {
				t.Skip(eng.Skip)
			}
			db := eng.Open(t)
			blobDir := t.TempDir()
			blob, err := artifact.NewLocal(blobDir)
			if err != nil {
				t.Fatal(err)
			}
			contexts := artifact.Files{Blob: blob, Limit: project.MaxPushBytes}
			clk := clock.System{}
			log := slog.New(slog.DiscardHandler)
			dirA, dirB := t.TempDir(), t.TempDir()
			a := project.New(project.Config{Store: db, Clock: clk, Logger: log, DataDir: dirA, Contexts: contexts})
			b := project.New(project.Config{Store: db, Clock: clk, Logger: log, DataDir: dirB, Contexts: contexts})
			defer a.Close()
			defer b.Close()
			ctx := t.Context()
			if _, err := db.AccountCreate(ctx, &store.AccountCreateParams{ID: "acc_shared", Name: "shared", Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Create(ctx, "acc_shared", &apiv1.ProjectWrite{Name: ptrTo("app")}, nil); err != nil {
				t.Fatal(err)
			}
			out, err := a.Push(ctx, "acc_shared", "app", bytes.NewReader(tgz(t,
				entry{name: "Dockerfile", body: scratchDockerfile},
				entry{name: "skiff.project.json", body: minimalManifest},
				entry{name: "runner", body: "#!/bin/sh\n", mode: 0o755})))
			if err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(filepath.Join(dirA, "pushes")); len(left) != 0 {
				t.Errorf("controller A kept %d push dirs", len(left))
			}
			saw := make(chan string, 1)
			bctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = b.RunBuilds(bctx, contextBuilder{saw: saw}) }()
			defer func() { stop(); <-done }()
			if df := <-saw; df != scratchDockerfile {
				t.Errorf("B built a Dockerfile of %q", df)
			}
			p, err := a.Get(ctx, "acc_shared", "app")
			if err != nil {
				t.Fatal(err)
			}
			for {
				pu, err := a.PushGet(ctx, p, out.Push.ID)
				if err != nil {
					t.Fatal(err)
				}
				if pu.Status == store.PushPublished {
					break
				}
				if pu.Status == store.PushFailed {
					t.Fatalf("push failed: %s", pu.Error)
				}
				time.Sleep(10 * time.Millisecond)
			}
			for {
				if left := blobFiles(t, blobDir); left == 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// blobFiles counts the files a local blob store holds.
func blobFiles(t *testing.T, dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func ptrTo[T any](v T) *T { return &v }
