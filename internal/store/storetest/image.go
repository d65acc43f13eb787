package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

var imageTests = map[string]func(*testing.T, store.Store){
	"ImageDigestsInUse":   testImageDigestsInUse,
	"ImagesSeenAndForget": testImagesSeenAndForget,
}

// publish makes a published push of p with image digest, finished at at.
func publish(t *testing.T, s store.Store, p *store.Project, digest string, at time.Time) *store.Push {
	t.Helper()
	pu := tf.Push(t, s, &tf.PushOpts{Project: p, Now: at})
	if _, err := s.PushStart(ctx(t), pu.ID, at); err != nil {
		t.Fatal(err)
	}
	pu, err := s.PushFinish(ctx(t), &store.PushFinishParams{ID: pu.ID, Status: store.PushPublished, ImageRef: "img",
		ImageDigest: digest, Now: at})
	if err != nil {
		t.Fatal(err)
	}
	return pu
}

func wantInUse(t *testing.T, s store.Store, want ...string) {
	t.Helper()
	got, err := s.ImageDigestsInUse(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ImageDigestsInUse = %v, want %v", got, want)
	}
}

// testImageDigestsInUse: a project's newest published revision is in use;
// an older one only while a job that is not over, or an open attempt,
// runs it.
func testImageDigestsInUse(t *testing.T, s store.Store) {
	wantInUse(t, s)
	p := tf.Project(t, s, nil)
	old := publish(t, s, p, "sha256:old", t0)
	wantInUse(t, s, "sha256:old")
	publish(t, s, p, "sha256:new", t0.Add(time.Second))
	wantInUse(t, s, "sha256:new")
	// A failed push is no revision.
	failed := tf.Push(t, s, &tf.PushOpts{Project: p, Now: t0.Add(2 * time.Second)})
	if _, err := s.PushFinish(ctx(t), &store.PushFinishParams{ID: failed.ID, Status: store.PushFailed,
		Error: "x", Now: t0.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	other := tf.Project(t, s, &tf.ProjectOpts{Name: "other"})
	publish(t, s, other, "sha256:other", t0)
	wantInUse(t, s, "sha256:new", "sha256:other")

	// A queued job submitted against the old revision keeps it in use.
	jp := tf.JobParams(t, s, &tf.JobOpts{Project: p})
	jp.Job.PushID = old.ID
	job := tf.JobFrom(t, s, jp)
	wantInUse(t, s, "sha256:new", "sha256:old", "sha256:other")
	// Its attempt keeps it in use even once the job is cancelled, until
	// the attempt ends.
	tf.Attempt(t, s, &tf.AttemptOpts{Now: t0.Add(3 * time.Second)})
	if _, err := s.JobSetStatus(ctx(t), &store.JobSetStatusParams{ID: job.ID, To: store.JobCancelled,
		Now: t0.Add(4 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	wantInUse(t, s, "sha256:new", "sha256:old", "sha256:other")
	if _, err := s.TaskCancelOpen(ctx(t), job.ID, t0.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	wantInUse(t, s, "sha256:new", "sha256:other")
}

// testImagesSeenAndForget: a reference moves an image's time forward only;
// a found image keeps its time; forget takes only an image unreferenced
// since before the time given.
func testImagesSeenAndForget(t *testing.T, s store.Store) {
	list := func() []store.ImageRecord {
		t.Helper()
		l, err := s.ImageList(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := list(); len(l) != 0 {
		t.Fatalf("ImageList of a new store = %v", l)
	}
	if err := s.ImagesSeen(ctx(t), []string{"sha256:a"}, []string{"sha256:b"}, t0); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(time.Minute)
	if err := s.ImagesSeen(ctx(t), []string{"sha256:b"}, []string{"sha256:a", "sha256:c"}, t1); err != nil {
		t.Fatal(err)
	}
	// An older reference (a slow sweep) moves nothing back.
	if err := s.ImagesSeen(ctx(t), []string{"sha256:b"}, nil, t0); err != nil {
		t.Fatal(err)
	}
	want := []store.ImageRecord{{Digest: "sha256:a", ReferencedAt: t0}, {Digest: "sha256:b", ReferencedAt: t1}, {Digest: "sha256:c", ReferencedAt: t1}}
	if got := list(); !slices.EqualFunc(got, want, func(a, b store.ImageRecord) bool {
		return a.Digest == b.Digest && a.ReferencedAt.Equal(b.ReferencedAt)
	}) {
		t.Fatalf("ImageList = %v, want %v", got, want)
	}
	if ok, err := s.ImageForget(ctx(t), "sha256:b", t1); err != nil || ok {
		t.Errorf("forget an image referenced at the cutoff = %v, %v; want false", ok, err)
	}
	if ok, err := s.ImageForget(ctx(t), "sha256:a", t1); err != nil || !ok {
		t.Errorf("forget an unreferenced image = %v, %v; want true", ok, err)
	}
	if ok, err := s.ImageForget(ctx(t), "sha256:a", t1); err != nil || ok {
		t.Errorf("forget it again = %v, %v; want false", ok, err)
	}
	if got := list(); len(got) != 2 || got[0].Digest != "sha256:b" || got[1].Digest != "sha256:c" {
		t.Errorf("ImageList after forget = %v", got)
	}
}
