package fleet_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/store"
)

// enrolled is a host that joined through an enrollment code, as `skiff
// host` does: the operator makes the code, the host redeems it with its
// declared share and then speaks the protocol with its credential. claims
// is the capacity the host says it has at registration.
func (s *scripted) enrolled(spec enroll.Spec, cpus, memoryGB float64, gpus int, claims agentproto.Capacity) (*scriptedHost, *enroll.Service) {
	s.t.Helper()
	svc := enroll.New(s.st, s.clk)
	code, _, err := svc.CreateEnrollment(context.Background(), spec)
	if err != nil {
		s.t.Fatal(err)
	}
	red, err := svc.Redeem(context.Background(), &enroll.RedeemRequest{Code: code, CPUs: cpus, MemoryGB: memoryGB, GPUs: gpus, Hostname: "box"})
	if err != nil {
		s.t.Fatal(err)
	}
	h := &scriptedHost{s: s, id: red.Host.ID, ctl: &agenthttp.Client{BaseURL: s.url, Token: red.Credential},
		capacity: claims, seq: map[string]int64{}, version: agentproto.ProtocolVersion}
	h.register()
	return h, svc
}

// enrolledProfile is enrolled with the profile the host registers with (as
// `skiff host` measures it).
func (s *scripted) enrolledProfile(spec enroll.Spec, cpus, memoryGB float64, gpus int, claims agentproto.Capacity,
	prof agentproto.ResourceProfile) *scriptedHost {
	s.t.Helper()
	h, _ := s.enrolled(spec, cpus, memoryGB, gpus, claims)
	h.profile = prof
	h.register()
	return h
}

func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	var se *agenthttp.StatusError
	if !errors.As(err, &se) || se.StatusCode != status {
		t.Fatalf("%s: %v, want status %d", what, err, status)
	}
}

// An enrolled host lends its declared share, not what it says it has: a
// task bigger than the share never reaches it, one that fits does. Its
// last call is recorded for the operator.
func TestScriptedEnrolledShareBoundsPlacement(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		h, svc := s.enrolled(enroll.Spec{WorkKinds: "cpu", RatePercent: -1}, 1, 1, 2,
			agentproto.Capacity{CPU: 8, MemoryMB: 32768, GPUs: 2, Slots: 4})
		cpu2 := 2.0
		big := s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{CPU: &cpu2}})
		if got := h.poll(h.capacity, 0); len(got.Assignments) != 0 {
			t.Fatalf("a host lending 1 CPU was given a 2-CPU task: %v", ids(got.Assignments))
		}
		mem := int64(2048)
		s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{MemoryMB: &mem}})
		if got := h.poll(h.capacity, 0); len(got.Assignments) != 0 {
			t.Fatalf("a host lending 1 GiB was given a 2 GiB task: %v", ids(got.Assignments))
		}
		gpu := int64(1)
		s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{GPUCount: &gpu}})
		if got := h.poll(h.capacity, 0); len(got.Assignments) != 0 {
			t.Fatalf("a host not permitted GPU work was given a GPU task: %v", ids(got.Assignments))
		}
		small := s.submit(apiv1.JobSubmit{})
		got := h.poll(h.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].JobID != small.ID {
			t.Fatalf("the host got %+v, want only the 1-CPU task", got.Assignments)
		}
		if s.job(big).Status != store.JobQueued {
			t.Errorf("the 2-CPU job is %s, want still queued", s.job(big).Status)
		}
		rec, err := svc.Host(context.Background(), h.id)
		if err != nil || rec.LastSeenAt.IsZero() {
			t.Errorf("host record %+v, %v; want its last call recorded", rec, err)
		}
	})
}

// A host enrolled for GPU work only (--work gpu) takes tasks that ask for a
// GPU and never a CPU-only one; a host permitted cpu,gpu lends its CPUs to
// CPU work too.
func TestScriptedGPUOnlyHostTakesOnlyGPUWork(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		gpuOnly, _ := s.enrolled(enroll.Spec{WorkKinds: "gpu", RatePercent: -1}, 4, 8, 1,
			agentproto.Capacity{CPU: 4, MemoryMB: 8192, GPUs: 1, Slots: 4})
		cpuJob := s.submit(apiv1.JobSubmit{})
		if got := gpuOnly.poll(gpuOnly.capacity, 0); len(got.Assignments) != 0 {
			t.Fatalf("a GPU-only host was given a CPU task: %v", ids(got.Assignments))
		}
		gpu := int64(1)
		gpuJob := s.submit(apiv1.JobSubmit{Requirements: &apiv1.JobRequirements{GPUCount: &gpu}})
		got := gpuOnly.poll(gpuOnly.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].JobID != gpuJob.ID {
			t.Fatalf("the GPU-only host got %+v, want only the GPU task", got.Assignments)
		}
		both, _ := s.enrolled(enroll.Spec{WorkKinds: "cpu,gpu", RatePercent: -1}, 4, 8, 1,
			agentproto.Capacity{CPU: 4, MemoryMB: 8192, GPUs: 1, Slots: 4})
		got = both.poll(both.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].JobID != cpuJob.ID {
			t.Fatalf("the cpu,gpu host got %+v, want the CPU task", got.Assignments)
		}
	})
}

// Credentials are of their kind: a user's API key does not authenticate the
// host protocol; a drained host finishes what it runs and takes nothing
// new; a removed host is refused at its very next request, and what it ran
// is requeued free once its lease lapses.
func TestScriptedDrainAndRemove(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		key, _, err := auth.New(st, s.clk, auth.WalletConfig{}).CreateKey(context.Background(), "acme-user", store.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		userHost := &agenthttp.Client{BaseURL: s.url, Token: key}
		_, err = userHost.Register(context.Background(), &agentproto.RegisterRequest{ProtocolVersion: agentproto.ProtocolVersion,
			Capacity: agentproto.Capacity{CPU: 1, MemoryMB: 1024, Slots: 1}})
		wantStatus(t, "register with a user API key", err, http.StatusUnauthorized)

		claims := agentproto.Capacity{CPU: 2, MemoryMB: 4096, Slots: 2}
		a, svc := s.enrolled(enroll.Spec{}, 2, 4, 0, claims)
		b, _ := s.enrolled(enroll.Spec{}, 2, 4, 0, claims)
		j1 := s.submit(apiv1.JobSubmit{})
		got := a.poll(a.capacity, 0)
		if len(got.Assignments) != 1 {
			t.Fatalf("a got %d assignments, want 1", len(got.Assignments))
		}
		running := got.Assignments[0].AttemptID
		a.report(running, agentproto.EventStarted, nil)
		if _, err := svc.Drain(context.Background(), a.id); err != nil {
			t.Fatal(err)
		}
		j2 := s.submit(apiv1.JobSubmit{})
		if got := a.poll(a.capacity, 0); len(got.Assignments) != 0 {
			t.Fatalf("a drained host was given %v", ids(got.Assignments))
		}
		if got := b.poll(b.capacity, 0); len(got.Assignments) != 1 || got.Assignments[0].JobID != j2.ID {
			t.Fatalf("the active host got %+v, want the new job's task", got.Assignments)
		}
		// The drained host's attempt finishes and is billed as usual.
		s.clk.Advance(time.Second)
		a.report(running, agentproto.EventFinished, &agentproto.Outcome{ExitCode: 0, StartedAt: s.clk.Now().Add(-time.Second),
			EndedAt: s.clk.Now(), Result: []byte(`{"ok":true}`)})
		if got := s.job(j1); got.Status != store.JobCompleted {
			t.Fatalf("the drained host's job is %s, want completed", got.Status)
		}

		// b runs a task, then is removed: refused at once.
		j3 := s.submit(apiv1.JobSubmit{})
		got = b.poll(b.capacity, 0)
		if len(got.Assignments) != 1 || got.Assignments[0].JobID != j3.ID {
			t.Fatalf("b got %+v, want j3's task", got.Assignments)
		}
		orphan := got.Assignments[0].AttemptID
		if _, err := svc.Remove(context.Background(), b.id); err != nil {
			t.Fatal(err)
		}
		_, err = b.pollErr(b.capacity, 0)
		wantStatus(t, "lease of a removed host", err, http.StatusUnauthorized)
		err = b.ctl.Report(context.Background(), &agentproto.AttemptEvent{AttemptID: orphan, HostID: b.id, Seq: 1,
			Kind: agentproto.EventStarted, At: s.clk.Now()})
		wantStatus(t, "event of a removed host", err, http.StatusUnauthorized)
		_, err = b.ctl.Register(context.Background(), &agentproto.RegisterRequest{ProtocolVersion: agentproto.ProtocolVersion, Capacity: claims})
		wantStatus(t, "register of a removed host", err, http.StatusUnauthorized)

		// Its attempt is requeued free once its lease lapses; a new host
		// (the drained one is still draining) is needed to run it.
		c, _ := s.enrolled(enroll.Spec{}, 2, 4, 0, claims)
		for range 4 {
			s.clk.Advance(scriptedHeartbeat)
			c.poll(agentproto.Capacity{}, 0)
			a.poll(a.capacity, 0)
		}
		if err := s.ctrl.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		// b ran j2's and j3's tasks: both are requeued.
		got = c.poll(c.capacity, 0)
		jobs := map[string]bool{}
		for _, asg := range got.Assignments {
			jobs[asg.JobID] = true
		}
		if len(got.Assignments) != 2 || !jobs[j2.ID] || !jobs[j3.ID] {
			t.Fatalf("the new host got %v, want j2's and j3's requeued tasks", ids(got.Assignments))
		}
		atts := s.attempts(j3)
		if len(atts) != 2 || atts[0].Status != store.AttemptLost || atts[0].CostMicros != 0 || atts[0].BilledSeconds != 0 {
			t.Fatalf("j3's attempts %s; want the removed host's lost and unbilled", attemptsString(atts))
		}
	})
}

// A host drained while its lease waits (from another process, which wakes
// no one) is not handed the work whose submission ends the wait.
func TestScriptedDrainDuringLongPoll(t *testing.T) {
	engines(t, func(t *testing.T, st store.Store) {
		s := newScripted(t, st)
		h, svc := s.enrolled(enroll.Spec{}, 2, 4, 0, agentproto.Capacity{CPU: 2, MemoryMB: 4096, Slots: 2})
		got := make(chan *agentproto.PollResponse, 1)
		go func() {
			resp, err := h.pollErr(h.capacity, 3*time.Second)
			if err != nil {
				t.Errorf("lease: %v", err)
			}
			got <- resp
		}()
		time.Sleep(300 * time.Millisecond) // let the lease start waiting; if not, the drain is seen at its start
		if _, err := svc.Drain(context.Background(), h.id); err != nil {
			t.Fatal(err)
		}
		j := s.submit(apiv1.JobSubmit{}) // wakes the waiting lease
		if resp := <-got; resp != nil && len(resp.Assignments) != 0 {
			t.Fatalf("a host drained during its lease was given %v", ids(resp.Assignments))
		}
		if s.job(j).Status != store.JobQueued {
			t.Errorf("the job is %s, want still queued", s.job(j).Status)
		}
	})
}
