package event_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/store"
)

var quiet = slog.New(slog.DiscardHandler)

// streams runs streams over b and the fixture's store; pings are left out
// unless a test asks for them.
func (f *fixture) streams(b *event.Broker, cfg event.StreamsConfig) *event.Streams {
	cfg.Broker, cfg.Store, cfg.Views, cfg.Clock = b, f.store, f.views, f.clock
	if cfg.PingInterval == 0 {
		cfg.PingInterval = time.Hour
	}
	return event.NewStreams(cfg)
}

// run runs st into a new sink in the background; the returned channel
// gives Run's answer.
func run(ctx context.Context, st *event.Stream) (*sink, <-chan error) {
	s := &sink{}
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx, s, quiet) }()
	return s, done
}

func waitRun(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the stream never ended")
	}
}

// A job stream opens with a snapshot, shows each event committed after it
// as its own frame (the job's end with the job as it is then), and ends
// with done.
func TestJobStreamFollowsToDone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	b := f.broker(t, event.Config{})
	j := f.submit(t, 2)
	s := f.streams(b, event.StreamsConfig{})
	ctx := t.Context()
	st, err := s.Open(ctx, s.JobStream(ctx, j), event.LastEventID{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Ended() {
		t.Fatal("a fresh stream of an open job: got Ended, want a stream")
	}
	out, done := run(ctx, st)
	for deadline := time.Now().Add(wait); len(out.names()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot")
		}
	}
	if _, _, err := f.jobs.Cancel(ctx, f.account, j.ID, "test"); err != nil {
		t.Fatal(err)
	}
	b.Wake()
	waitRun(t, done)
	frames := out.all()
	names := out.names()
	if names[0] != apiv1.FrameSnapshot || names[len(names)-1] != apiv1.FrameDone || !slices.Contains(names, apiv1.FrameJob) {
		t.Fatalf("got frames %v, want snapshot, the cancel's frames, done", names)
	}
	snap := frames[0].value.(*apiv1.JobStreamSnapshot)
	if snap.Job.ID != j.ID || snap.TaskCount != 2 || len(snap.Tasks) != 2 || snap.Resync != nil {
		t.Errorf("snapshot: got job %s with %d of %d tasks, resync %v", snap.Job.ID, len(snap.Tasks), snap.TaskCount, snap.Resync)
	}
	var cancelled bool
	for _, fr := range frames[1 : len(frames)-1] {
		if fr.id == "" {
			t.Errorf("frame %s without an id: every event's frame is resumable", fr.name)
		}
		if jf, ok := fr.value.(apiv1.JobFrame); ok && jf.Event.Kind == "job.cancelled" {
			cancelled = jf.Job.Status == string(store.JobCancelled)
		}
	}
	if !cancelled {
		t.Error("no job frame of job.cancelled showing the job cancelled")
	}
	if d := frames[len(frames)-1].value.(apiv1.DoneFrame); d.JobID != j.ID || d.Status != string(store.JobCancelled) {
		t.Errorf("done: got %+v", d)
	}
}

// Where a stream starts: a fresh snapshot without a Last-Event-ID or with
// one the store never handed out or too far back (saying why), else the
// events after it; a resume of an ended job that missed nothing is no
// stream at all.
func TestStreamResumePoint(t *testing.T) {
	t.Parallel()
	f := setup(t)
	b := f.broker(t, event.Config{})
	j := f.submit(t, 1)
	if _, _, err := f.jobs.Cancel(t.Context(), f.account, j.ID, "test"); err != nil {
		t.Fatal(err)
	}
	evPage, err := f.views.Events(t.Context(), j, store.JobEventPageParams{Limit: 100})
	evs := evPage.Events
	if err != nil || len(evs) < 2 {
		t.Fatalf("events: got %d, %v; want the submission and the cancel at least", len(evs), err)
	}
	last := evs[len(evs)-1].Position
	j, err = f.store.JobGetByID(t.Context(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	s := f.streams(b, event.StreamsConfig{ReplayLimit: 1})
	for _, tc := range []struct {
		name   string
		from   event.LastEventID
		resync string // "" for none; "-" for a resume
		ended  bool
	}{
		{"no Last-Event-ID", event.LastEventID{}, "", false},
		{"not a position", event.LastEventID{Asked: true}, apiv1.ResyncInvalidLastEvent, false},
		{"past the newest", event.LastEventID{Pos: last + 1, Asked: true, Valid: true}, apiv1.ResyncInvalidLastEvent, false},
		{"missed more than the replay limit", event.LastEventID{Pos: 0, Asked: true, Valid: true}, apiv1.ResyncGapTooLarge, false},
		{"missed the last event", event.LastEventID{Pos: evs[len(evs)-2].Position, Asked: true, Valid: true}, "-", false},
		{"missed nothing of an ended job", event.LastEventID{Pos: last, Asked: true, Valid: true}, "-", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			st, err := s.Open(ctx, s.JobStream(ctx, j), tc.from)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.Ended() != tc.ended {
				t.Fatalf("Ended: got %v, want %v", st.Ended(), tc.ended)
			}
			if tc.ended {
				return
			}
			out, done := run(ctx, st)
			waitRun(t, done)
			frames := out.all()
			names := out.names()
			if names[len(names)-1] != apiv1.FrameDone {
				t.Fatalf("got frames %v, want them to end with done", names)
			}
			if tc.resync == "-" {
				if names[0] == apiv1.FrameSnapshot || frames[0].id != event.PosID(last) {
					t.Errorf("got frames %v from %s, want the missed event %d then done", names, frames[0].id, last)
				}
				return
			}
			snap, ok := frames[0].value.(*apiv1.JobStreamSnapshot)
			if !ok {
				t.Fatalf("got frames %v, want a snapshot first", names)
			}
			if got := snap.Resync; (got == nil) != (tc.resync == "") || (got != nil && *got != tc.resync) {
				t.Errorf("resync: got %v, want %q", got, tc.resync)
			}
			if snap.Position != last || frames[0].id != event.PosID(last) {
				t.Errorf("snapshot at %d (id %s), want %d", snap.Position, frames[0].id, last)
			}
		})
	}
}

// A stream whose life is over, or whose broker stops, ends with a timeout
// frame saying why and where its client resumes.
func TestStreamTimeoutFrames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		life   time.Duration
		stop   bool
		reason string
	}{
		{"life over", 50 * time.Millisecond, false, apiv1.TimeoutStreamLife},
		{"broker stopped", time.Hour, true, apiv1.TimeoutServerShutdown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			bctx, stop := context.WithCancel(t.Context())
			defer stop()
			b := event.New(event.Config{Feed: f.store})
			if err := b.Start(bctx); err != nil {
				t.Fatal(err)
			}
			j := f.submit(t, 1)
			s := f.streams(b, event.StreamsConfig{Timeout: tc.life})
			ctx := t.Context()
			st, err := s.Open(ctx, s.JobStream(ctx, j), event.LastEventID{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			out, done := run(ctx, st)
			if tc.stop {
				for deadline := time.Now().Add(wait); len(out.names()) == 0; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("no snapshot")
					}
				}
				stop()
			}
			waitRun(t, done)
			frames := out.all()
			tf, ok := frames[len(frames)-1].value.(apiv1.TimeoutFrame)
			if !ok {
				t.Fatalf("got frames %v, want a timeout frame last", out.names())
			}
			pos, err := f.store.JobEventLastPosition(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if tf.Reason != tc.reason || tf.LastEventID != event.PosID(pos) || tf.RecommendedAction == "" {
				t.Errorf("got %+v, want reason %s resuming at %d", tf, tc.reason, pos)
			}
		})
	}
}

// Without a broker no stream opens: the caller is told to poll.
func TestStreamsUnavailableWithoutBroker(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.streams(nil, event.StreamsConfig{})
	if err := s.Available(); err == nil {
		t.Fatal("Available without a broker: got nil, want unavailable")
	}
	ctx := t.Context()
	if _, err := s.Open(ctx, s.ProjectStream(ctx, f.account, f.project), event.LastEventID{}); err == nil {
		t.Fatal("Open without a broker: got a stream, want unavailable")
	}
}
