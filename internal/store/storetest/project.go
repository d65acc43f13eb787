package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// testProjects has one subtest per project method, each on rows of its own.
func testProjects(t *testing.T, s store.Store) {
	t.Run("ProjectCreate", func(t *testing.T) {
		p := tf.Project(t, s, &tf.ProjectOpts{Name: "proj-b"})
		if string(p.Env) != `{"A":"1"}` || string(p.Manifest) != "null" || p.SetupTimeoutS != 600 || !p.CreatedAt.Equal(t0) {
			t.Errorf("project = %+v", p)
		}
		_, err := s.ProjectCreate(ctx(t), &store.ProjectWriteParams{ID: id.New(id.Project), AccountID: p.AccountID,
			Name: "proj-b", SetupTimeoutS: 1, RuntimeKind: "oci", RuntimeVersion: 1, Now: t0})
		wantErr(t, err, store.ErrConflict)
	})
	t.Run("ProjectList", func(t *testing.T) {
		b := tf.Project(t, s, &tf.ProjectOpts{Name: "proj-b"})
		tf.Project(t, s, &tf.ProjectOpts{AccountID: b.AccountID, Name: "proj-a"})
		tf.Project(t, s, &tf.ProjectOpts{Name: "proj-c"}) // another account's
		list, err := s.ProjectList(ctx(t), b.AccountID)
		if err != nil || len(list) != 2 || list[0].Name != "proj-a" || list[1].Name != "proj-b" {
			t.Fatalf("ProjectList = %v, %v; want proj-a, proj-b", list, err)
		}
	})
	t.Run("ProjectUpdate", func(t *testing.T) {
		p := tf.Project(t, s, &tf.ProjectOpts{Name: "proj-b"})
		t1 := t0.Add(time.Minute)
		up, err := s.ProjectUpdate(ctx(t), &store.ProjectWriteParams{ID: p.ID, RemoteDir: "/srv/x", Env: json.RawMessage(`{}`),
			SetupTimeoutS: 30, RuntimeKind: "oci", RuntimeVersion: 3, Manifest: json.RawMessage(`{"version":1}`), Now: t1})
		if err != nil {
			t.Fatal(err)
		}
		if up.RemoteDir != "/srv/x" || up.SetupTimeoutS != 30 || up.RuntimeVersion != 3 || !up.UpdatedAt.Equal(t1) ||
			!up.CreatedAt.Equal(t0) || up.Name != "proj-b" {
			t.Errorf("updated = %+v", up)
		}
	})
	t.Run("ProjectSetContentHash", func(t *testing.T) {
		p := tf.Project(t, s, nil)
		if err := s.ProjectSetContentHash(ctx(t), p.ID, "sha256:abc", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got, err := s.ProjectGetByID(ctx(t), p.ID)
		if err != nil || got.ContentHash != "sha256:abc" {
			t.Fatalf("ProjectGetByID = %+v, %v", got, err)
		}
	})
	t.Run("ProjectCacheEpoch", func(t *testing.T) {
		// The cache-mount epoch starts at 0 and each bump moves it on by one.
		p := tf.Project(t, s, nil)
		if e, err := s.ProjectCacheEpoch(ctx(t), p.ID); err != nil || e != 0 {
			t.Errorf("ProjectCacheEpoch = %d, %v; want 0", e, err)
		}
		for want := int64(1); want <= 2; want++ {
			if e, err := s.ProjectBumpCacheEpoch(ctx(t), p.ID, t0.Add(time.Minute)); err != nil || e != want {
				t.Errorf("ProjectBumpCacheEpoch = %d, %v; want %d", e, err, want)
			}
		}
		if e, err := s.ProjectCacheEpoch(ctx(t), p.ID); err != nil || e != 2 {
			t.Errorf("ProjectCacheEpoch after two bumps = %d, %v; want 2", e, err)
		}
		_, err := s.ProjectCacheEpoch(ctx(t), "prj_missing")
		wantErr(t, err, store.ErrNotFound)
	})
	t.Run("ProjectDelete", func(t *testing.T) {
		p := tf.Project(t, s, &tf.ProjectOpts{Name: "gone"})
		if err := s.ProjectDelete(ctx(t), p.ID); err != nil {
			t.Fatal(err)
		}
		_, err := s.ProjectGetByName(ctx(t), p.AccountID, "gone")
		wantErr(t, err, store.ErrNotFound)
		wantErr(t, s.ProjectDelete(ctx(t), p.ID), store.ErrNotFound)
	})
}
