package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/event"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// TestStreamAcrossControllers: two controllers on one PostgreSQL database,
// each with its own connection pool, broker and LISTEN connection. A stream
// on the second shows every change made through the first, woken by
// NOTIFY: the brokers' own poll is an hour, so nothing else wakes them.
func TestStreamAcrossControllers(t *testing.T) {
	t.Parallel()
	var pg apitest.Engine
	for _, eng := range apitest.Engines() {
		if eng.Name == "postgres" {
			pg = eng
		}
	}
	if pg.Skip != "" {
		testenv.Skip(t, pg.Skip)
	}
	url := pgtest.NewDatabase(t)
	open := func() apitest.Options {
		db, err := postgres.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Migrate(t.Context(), apitest.Epoch); err != nil {
			t.Fatal(err)
		}
		return apitest.Options{Store: db, BrokerPoll: time.Hour, Wake: func(ctx context.Context, b *event.Broker) {
			go postgres.Listen(ctx, url, postgres.EventChannel, b.Wake, slog.New(slog.DiscardHandler))
		}}
	}
	envA := apitest.Start(t, open())
	optsB := open()
	optsB.Clock = envA.Clock
	envB := apitest.Start(t, optsB)
	acct := envA.NewAccount(t, "acme")
	fa := &fixture{e: envA, acct: acct, member: envA.Client(acct.Member)}
	fa.member.Post(t, "/api/v1/projects", map[string]any{"name": fixtureProject}).Want(t, http.StatusCreated)
	funded(100_000_000)(t, fa)

	j := submitJob(t, fa.member, fanOut(3))
	s := openSSE(t, envB.URL, acct.Member, streamPath(j.ID), "")
	_, from := snapshotOf(t, s)
	w := openSSE(t, envB.URL, acct.Member, "/api/v1/jobs/watch?ids="+j.ID, "")
	w.want(t, apiv1.FrameSnapshot)
	for range 3 {
		runAttempt(t, fa, j.ID, time.Second, succeed) // through controller A
	}
	frames := readUntilDone(t, s)
	checkFramesAreEvents(t, fa, j.ID, from, frames)
	var jf apiv1.JobFrame
	w.want(t, apiv1.FrameJob) // job.running
	w.want(t, apiv1.FrameJob).decode(t, &jf)
	if jf.Job.Status != "completed" {
		t.Errorf("watch on B: got %s, want completed", jf.Job.Status)
	}
	w.want(t, apiv1.FrameDone)
}
