package job_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// One call claims a host's work and describes each attempt completely: how
// it runs, its own payload, the disk it asked for.
func TestClaimWorkDescribesEachAttempt(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		digest := "sha256:d" // setupOn's published revision
		j, err := b.svc.Submit(t.Context(), b.account, decode(t,
			`{"project":"demo","runner_command":["/r","--fast"],"payload":{"xs":[10,20,30]},"fan_out":{"by":"xs"},"requirements":{"storage_gb":3}}`))
		if err != nil {
			t.Fatal(err)
		}
		works, err := b.svc.ClaimWork(t.Context(), upTo("wkr_a", 2))
		if err != nil || len(works) != 2 {
			t.Fatalf("ClaimWork: %d works, %v; want 2", len(works), err)
		}
		for _, w := range works {
			if w.Task.JobID != j.ID || w.Attempt.TaskID != w.Task.ID || w.Attempt.HostID != "wkr_a" {
				t.Errorf("work %+v: not an attempt of the job's task for wkr_a", w)
			}
			if w.Spec.ImageDigest != digest || strings.Join(w.Spec.Command, " ") != "/r --fast" {
				t.Errorf("work's spec: image %s, command %v; want %s and the job's runner_command", w.Spec.ImageDigest, w.Spec.Command, digest)
			}
			var p struct{ Xs []int }
			if err := json.Unmarshal(w.Payload, &p); err != nil || len(p.Xs) != 1 || p.Xs[0] != 10*(int(w.Task.Index)+1) {
				t.Errorf("task %d's payload %s, %v; want its own item", w.Task.Index, w.Payload, err)
			}
			if w.StorageGB != 3 {
				t.Errorf("work's storage %d GB, want the 3 asked", w.StorageGB)
			}
		}
	})
}

// An attempt the platform cannot describe (a job written straight to the
// store, with no revision or submission to read) is not handed out: it ends
// at once as the platform's failure and its task is queued again, free.
func TestClaimWorkEndsWhatItCannotDescribe(t *testing.T) {
	onEngines(t, func(t *testing.T, b *bundle) {
		j := tf.JobFrom(t, b.store, tf.JobParams(t, b.store, &tf.JobOpts{Project: b.project, Tasks: 1}))
		works, err := b.svc.ClaimWork(t.Context(), upTo("wkr_a", 1))
		if err != nil || len(works) != 0 {
			t.Fatalf("ClaimWork: %d works, %v; want none handed out", len(works), err)
		}
		tasks, attempts, err := b.views.Tasks(t.Context(), j)
		if err != nil || len(tasks) != 1 {
			t.Fatal(tasks, err)
		}
		as := attempts[tasks[0].ID]
		if tasks[0].Status != store.TaskQueued || tasks[0].RetriesUsed != 0 || len(as) != 1 || as[0].Status == store.AttemptAssigned {
			t.Errorf("task %s (retries used %d) with attempts %+v; want it queued again, free, its attempt ended", tasks[0].Status, tasks[0].RetriesUsed, as)
		}
	})
}
