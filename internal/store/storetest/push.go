package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// testPushes has one subtest per push method, each on rows of its own.
func testPushes(t *testing.T, s store.Store) {
	t.Run("PushCreate", func(t *testing.T) {
		pu := tf.Push(t, s, nil)
		if pu.Status != store.PushQueued || pu.Attempts != 0 || string(pu.FileIndex) != `{"a":"1"}` || !pu.CreatedAt.Equal(t0) {
			t.Errorf("created push = %+v", pu)
		}
	})
	t.Run("PushActive", func(t *testing.T) {
		pu := tf.Push(t, s, nil)
		act, err := s.PushActive(ctx(t), pu.ProjectID)
		if err != nil || act.ID != pu.ID {
			t.Fatalf("PushActive = %v, %v", act, err)
		}
		finish(t, s, pu, store.PushPublished)
		_, err = s.PushActive(ctx(t), pu.ProjectID)
		wantErr(t, err, store.ErrNotFound)
	})
	t.Run("PushStart", func(t *testing.T) {
		pu := tf.Push(t, s, nil)
		st, err := s.PushStart(ctx(t), pu.ID, t0.Add(time.Second))
		if err != nil || st.Status != store.PushBuilding || st.Attempts != 1 || st.StartedAt == nil {
			t.Fatalf("PushStart = %+v, %v", st, err)
		}
		_, err = s.PushStart(ctx(t), pu.ID, t0)
		wantErr(t, err, store.ErrConflict)
	})
	t.Run("PushRequeue", func(t *testing.T) {
		pu := tf.Push(t, s, nil)
		wantErr(t, s.PushRequeue(ctx(t), pu.ID, t0), store.ErrConflict) // queued, not building
		if _, err := s.PushStart(ctx(t), pu.ID, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.PushRequeue(ctx(t), pu.ID, t0); err != nil {
			t.Fatal(err)
		}
		again, err := s.PushStart(ctx(t), pu.ID, t0)
		if err != nil || again.Attempts != 2 {
			t.Fatalf("restart = %+v, %v", again, err)
		}
	})
	t.Run("PushSetLogTail", func(t *testing.T) {
		pu := tf.Push(t, s, nil)
		if err := s.PushSetLogTail(ctx(t), pu.ID, "step 1/3", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.PushGet(ctx(t), pu.ProjectID, pu.ID); err != nil || got.LogTail != "step 1/3" {
			t.Errorf("PushGet = %+v, %v", got, err)
		}
	})
	t.Run("PushFinish", func(t *testing.T) {
		pu := tf.Push(t, s, nil)
		fin := finish(t, s, pu, store.PushPublished)
		if fin.Status != store.PushPublished || fin.ImageDigest != "sha256:d" || fin.LogTail != "done" || fin.FinishedAt == nil {
			t.Fatalf("PushFinish = %+v", fin)
		}
		// A finished push takes no other end, and does not start again.
		_, err := s.PushFinish(ctx(t), &store.PushFinishParams{ID: pu.ID, Status: store.PushFailed, Error: "boom", Now: t0})
		wantErr(t, err, store.ErrConflict)
		_, err = s.PushStart(ctx(t), pu.ID, t0)
		wantErr(t, err, store.ErrConflict)
		failed := tf.Push(t, s, nil)
		if _, err := s.PushFinish(ctx(t), &store.PushFinishParams{ID: failed.ID, Status: store.PushFailed, Error: "boom", Now: t0}); err != nil {
			t.Fatal(err)
		}
		_, err = s.PushFinish(ctx(t), &store.PushFinishParams{ID: failed.ID, Status: store.PushPublished, Now: t0})
		wantErr(t, err, store.ErrConflict)
	})
	t.Run("PushLatest", func(t *testing.T) {
		p := tf.Project(t, s, nil)
		_, err := s.PushLatest(ctx(t), p.ID)
		wantErr(t, err, store.ErrNotFound)
		finish(t, s, tf.Push(t, s, &tf.PushOpts{Project: p}), store.PushPublished)
		p2 := tf.Push(t, s, &tf.PushOpts{Project: p, Now: t0.Add(time.Minute)})
		if latest, err := s.PushLatest(ctx(t), p.ID); err != nil || latest.ID != p2.ID {
			t.Errorf("latest = %v, %v; want %s", latest, err, p2.ID)
		}
	})
	t.Run("PushLatestPublished", func(t *testing.T) {
		p := tf.Project(t, s, nil)
		p1 := tf.Push(t, s, &tf.PushOpts{Project: p})
		_, err := s.PushLatestPublished(ctx(t), p.ID)
		wantErr(t, err, store.ErrNotFound)
		finish(t, s, p1, store.PushPublished)
		tf.Push(t, s, &tf.PushOpts{Project: p, Now: t0.Add(time.Minute)})
		if pub, err := s.PushLatestPublished(ctx(t), p.ID); err != nil || pub.ID != p1.ID {
			t.Errorf("published = %v, %v; want %s", pub, err, p1.ID)
		}
	})
	t.Run("PushListUnfinished", func(t *testing.T) {
		done := tf.Push(t, s, nil)
		finish(t, s, done, store.PushFailed)
		open := tf.Push(t, s, nil)
		un, err := s.PushListUnfinished(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		ids := pushIDs(un)
		if !slices.Contains(ids, open.ID) || slices.Contains(ids, done.ID) {
			t.Errorf("unfinished = %v; want %s in it and %s not", ids, open.ID, done.ID)
		}
	})
	t.Run("PushList", func(t *testing.T) {
		p := tf.Project(t, s, nil)
		p1 := tf.Push(t, s, &tf.PushOpts{Project: p})
		finish(t, s, p1, store.PushFailed) // a project has one unfinished push at a time
		p2 := tf.Push(t, s, &tf.PushOpts{Project: p, Now: t0.Add(time.Minute)})
		tf.Push(t, s, nil) // another project's
		list, err := s.PushList(ctx(t), p.ID, 10)
		if got := pushIDs(list); err != nil || !slices.Equal(got, []string{p2.ID, p1.ID}) {
			t.Errorf("PushList = %v, %v; want newest first [%s %s]", got, err, p2.ID, p1.ID)
		}
	})
	t.Run("PushGet", func(t *testing.T) {
		pu := tf.Push(t, s, nil)
		if got, err := s.PushGet(ctx(t), pu.ProjectID, pu.ID); err != nil || got.ID != pu.ID {
			t.Errorf("PushGet = %+v, %v", got, err)
		}
		_, err := s.PushGet(ctx(t), "prj_other", pu.ID)
		wantErr(t, err, store.ErrNotFound)
	})
}

// finish starts pu and ends it with status.
func finish(t *testing.T, s store.Store, pu *store.Push, status store.PushStatus) *store.Push {
	t.Helper()
	if _, err := s.PushStart(ctx(t), pu.ID, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	p := &store.PushFinishParams{ID: pu.ID, Status: status, LogTail: "done", Now: t0.Add(3 * time.Second)}
	if status == store.PushPublished {
		p.ImageRef, p.ImageDigest = "localhost/skiff/x", "sha256:d"
	} else {
		p.Error = "boom"
	}
	fin, err := s.PushFinish(ctx(t), p)
	if err != nil {
		t.Fatalf("PushFinish(%s): %v", status, err)
	}
	return fin
}

func pushIDs(ps []*store.Push) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}
