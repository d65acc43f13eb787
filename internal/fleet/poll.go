package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/project"
	"github.com/skiffhq/skiff/internal/project/manifest"
	"github.com/skiffhq/skiff/internal/sched"
	"github.com/skiffhq/skiff/internal/store"
)

// Register admits the host that token names, replacing an earlier
// registration of it, and reconciles what it still runs.
func (c *Controller) Register(ctx context.Context, token string, req *agentproto.RegisterRequest) (*agentproto.RegisterResponse, error) {
	hostID, enrolled, err := c.hostForToken(ctx, token)
	if err != nil {
		return nil, err
	}
	if !agentproto.Supported(req.ProtocolVersion) {
		return nil, errVersion
	}
	if err := checkPlacementClaims(req); err != nil {
		return nil, err
	}
	prof, _ := json.Marshal(req.Profile)
	h := &host{id: hostID, protocol: req.ProtocolVersion, driver: req.Driver, profile: req.Profile, profJSON: prof,
		capacity: gpusAttachable(declaredShare(req.Capacity, enrolled), req.ProtocolVersion), lastSeen: c.clk.Now(), cancelSent: map[string]time.Time{}, enrolled: enrolled}
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	c.mu.Lock()
	c.hosts[hostID] = h
	c.mu.Unlock()
	c.seen(ctx, h)
	if _, err := c.reconcile(ctx, h, req.Running); err != nil {
		return nil, err
	}
	// Registration answers no cancels: the first poll must send them, so
	// none counts as sent yet.
	clear(h.cancelSent)
	c.storeSeen(ctx, h)
	c.log.Info("host registered", "host_id", hostID, "driver", req.Driver, "cpu", h.capacity.CPU,
		"memory_mb", h.capacity.MemoryMB, "gpus", h.capacity.GPUs, "slots", h.capacity.Slots, "running", len(req.Running))
	c.Wake()
	return &agentproto.RegisterResponse{ProtocolVersion: req.ProtocolVersion, HostID: hostID,
		HeartbeatIntervalS: int(c.cfg.HeartbeatInterval / time.Second)}, nil
}

// Lease answers a host's request for work: attempts that fit its free
// capacity, and the attempts it runs that it must stop. With nothing to say
// it waits, up to req.WaitS (capped at the heartbeat interval), for a Wake.
func (c *Controller) Poll(ctx context.Context, token string, req *agentproto.PollRequest) (*agentproto.PollResponse, error) {
	hostID, enrolled, err := c.hostForToken(ctx, token)
	if err != nil {
		return nil, err
	}
	if req.HostID != hostID {
		return nil, errWrongHost
	}
	h := c.host(hostID)
	if h == nil {
		return nil, errUnknownHost
	}
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	if enrolled != nil {
		h.enrolled = enrolled // its state as of this request: a drain is heard here
	}
	defer c.storeSeen(context.WithoutCancel(ctx), h)
	wait := min(time.Duration(req.WaitS)*time.Second, c.cfg.HeartbeatInterval)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for first := true; ; first = false {
		if enrolled != nil && !first {
			c.refreshEnrolled(ctx, h)
		}
		c.seen(ctx, h)
		woken := c.wake.Changed() // before looking, so that a wake after the look is not missed
		rec, err := c.reconcile(ctx, h, req.Running)
		if err != nil {
			return nil, err
		}
		cancel := rec.cancel
		var asg []agentproto.Assignment
		// A paused host (its disk under the watermark) stays alive and
		// gets its cancels, but no new work.
		if ctx.Err() == nil && !h.draining() && req.Paused == "" {
			// The free capacity is the controller's own view, not the
			// request's: a long poll outlives the free capacity the host
			// had when it asked, and a slot freed by an attempt that ended
			// during the poll must be refilled now, not at the next poll.
			free := c.free(h, rec)
			if asg, err = c.assign(ctx, h, free); err != nil {
				return nil, err
			}
		}
		if len(asg) > 0 || len(cancel) > 0 {
			return &agentproto.PollResponse{Assignments: asg, Cancel: cancel}, nil
		}
		select {
		case <-woken:
		case <-deadline.C:
			c.seen(ctx, h)
			return &agentproto.PollResponse{Assignments: []agentproto.Assignment{}, Cancel: []string{}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *Controller) seen(ctx context.Context, h *host) {
	now := c.clk.Now()
	c.mu.Lock()
	h.lastSeen = now
	mark := c.cfg.Presence != nil && now.Sub(h.marked) >= c.cfg.LostAfter/3
	if mark {
		h.marked = now
	}
	c.mu.Unlock()
	if mark {
		// A third of LostAfter apart: a host alive here stays alive for
		// the other controllers' sweeps with two marks to spare.
		if err := c.cfg.Presence.Mark(ctx, h.id, now, now.Add(c.cfg.LostAfter)); err != nil {
			c.log.Warn("mark host alive", "host_id", h.id, "err", err)
			c.mu.Lock()
			h.marked = time.Time{}
			c.mu.Unlock()
		}
	}
}

// reconciled is what reconcile found of a host's attempts.
type reconciled struct {
	// open are the attempts the store has assigned to the host and not
	// yet ended, which it runs.
	open []*store.Attempt
	// stopping are attempts the host still runs although the controller
	// ended them (cancelled, declared lost): their sandboxes hold
	// resources until the host has stopped them.
	stopping []*store.Attempt
	// cancel are the ids among stopping to send the host now.
	cancel []string
}

// reconcile compares what the host says it runs with what the store says
// it was given: an open attempt of the host that it does not run is lost
// (the assignment never arrived, or the host restarted); an attempt it runs
// that is not open for it any more (cancelled, or already declared lost) is
// to be stopped, and is sent to the host again once per heartbeat interval.
func (c *Controller) reconcile(ctx context.Context, h *host, running []string) (*reconciled, error) {
	open, err := c.st.AttemptListOpen(ctx, h.id)
	if err != nil {
		return nil, fmt.Errorf("open attempts of %s: %w", h.id, err)
	}
	runs := make(map[string]bool, len(running))
	for _, id := range running {
		runs[id] = true
	}
	rec := &reconciled{cancel: []string{}}
	isOpen := make(map[string]bool, len(open))
	for _, a := range open {
		if !runs[a.ID] {
			if err := c.lose(ctx, a, "the host no longer runs it"); err != nil {
				return nil, err
			}
			continue
		}
		isOpen[a.ID] = true
		rec.open = append(rec.open, a)
	}
	now := c.clk.Now()
	for _, id := range running {
		if isOpen[id] {
			continue
		}
		a, err := c.st.AttemptGet(ctx, id)
		if err == nil && a.HostID == h.id && finishedByHost(a.Status) {
			// The host reported its end and is delivering or has just had
			// the acknowledgement: its sandbox is gone, nothing to stop.
			continue
		}
		if err != nil {
			a = &store.Attempt{ID: id} // unknown to the store: it holds a slot, nothing more
		}
		rec.stopping = append(rec.stopping, a)
		if sent, ok := h.cancelSent[id]; ok && now.Sub(sent) < c.cfg.HeartbeatInterval {
			continue
		}
		h.cancelSent[id] = now
		rec.cancel = append(rec.cancel, id)
	}
	for id := range h.cancelSent {
		if !runs[id] {
			delete(h.cancelSent, id) // stopped and reported
		}
	}
	return rec, nil
}

// assign claims the tasks that fit free, best first, and turns them into
// assignments: one call to the job service (ClaimWork) claims them in one
// transaction and describes each; fleet adds what only it knows (where the
// host gets the image, what its protocol version can take) and the wire.
func (c *Controller) assign(ctx context.Context, h *host, free agentproto.Capacity) ([]agentproto.Assignment, error) {
	offer := h.offer(free)
	works, err := c.jobs.ClaimWork(ctx, func(prev []job.Claimed) *store.TaskClaimParams {
		if len(prev) > 0 {
			t := prev[len(prev)-1].Task
			offer = offer.Take(sched.Need{CPU: t.CPU, MemoryMB: t.MemoryMB, GPUs: t.GPUs})
		}
		if offer.Slots <= 0 {
			return nil
		}
		now := c.clk.Now()
		// The claim query applies sched's rule to what the offer has left.
		p := &store.TaskClaimParams{HostID: h.id, AttemptID: id.New(id.Attempt), ResourceProfile: h.profJSON,
			FreeCPU: offer.FreeCPU(), FreeMemoryMB: offer.MemoryMB, FreeGPUs: offer.GPUs, MinGPUs: offer.MinGPUs(),
			GPUMemoryMB: offer.GPUMemoryMB, StorageGB: offer.StorageGB, SingleCoreScore: offer.SingleCoreScore, Now: now}
		if c.hostCount() > 1 {
			p.AvoidRequeuedSince = now.Add(-c.cfg.RetryAvoidWindow)
		}
		return p
	})
	if err != nil {
		return nil, err
	}
	var out []agentproto.Assignment
	for _, w := range works {
		asg, err := c.assignment(ctx, h, w)
		if err != nil {
			// This host cannot take the attempt (its image is gone here,
			// or it speaks too old a protocol): a host error, requeued
			// free up to the cap.
			c.log.Error("cannot build assignment", "attempt_id", w.Attempt.ID, "job_id", w.Attempt.JobID, "err", err)
			if ferr := c.jobs.AttemptFinished(ctx, w.Attempt, &job.Outcome{HostError: "the task's revision cannot be loaded"}, nil, ""); ferr != nil {
				c.log.Error("record assignment failure", "attempt_id", w.Attempt.ID, "err", ferr)
			}
			continue
		}
		out = append(out, *asg)
	}
	return out, nil
}

// assignment is work w in the host protocol, for host h.
func (c *Controller) assignment(ctx context.Context, h *host, w job.Work) (*agentproto.Assignment, error) {
	t, a, rs := w.Task, w.Attempt, w.Spec
	if !strings.HasPrefix(rs.ImageDigest, "sha256:") {
		return nil, fmt.Errorf("revision of job %s has no image digest", t.JobID)
	}
	// A host of its own machine (enrolled) fetches the image over the
	// protocol; the controller's own host reads the layout in place.
	var layoutDir, imageURL string
	var err error
	if h.enrolled != nil && h.protocol >= 5 {
		imageURL = agentproto.AttemptImageURLPath(a.ID)
	} else if layoutDir, err = c.layoutOf(ctx, rs.ImageDigest); err != nil {
		return nil, err
	}
	inputs := wireInputs(w.Inputs)
	if len(inputs) > 0 && h.protocol < 3 {
		// An older host would run the task without its inputs.
		return nil, fmt.Errorf("task %s has artifact inputs; host %s speaks protocol %d, which cannot fetch them", t.ID, h.id, h.protocol)
	}
	sources, caches := c.mountsOf(rs, h.enrolled != nil)
	if len(inputs)+len(sources) > 0 && h.protocol < 6 {
		// An older host keys its caches by content alone, across
		// accounts (agentproto version 6).
		return nil, fmt.Errorf("task %s has artifact inputs or data sources; host %s speaks protocol %d, which would share cached bytes across accounts", t.ID, h.id, h.protocol)
	}
	if len(sources)+len(caches) > 0 && h.protocol < 4 {
		// An older host would run the task without its mounts.
		return nil, fmt.Errorf("the revision of task %s has data sources or cache mounts; host %s speaks protocol %d, which cannot mount them", t.ID, h.id, h.protocol)
	}
	return &agentproto.Assignment{
		AttemptID: a.ID, TaskID: t.ID, JobID: t.JobID, ProjectID: rs.Job.ProjectID, AccountID: rs.Job.AccountID,
		ImageDigest: rs.ImageDigest, ImageLayoutDir: layoutDir, ImageURL: imageURL,
		Args: rs.Command, Cwd: rs.Cwd, Env: rs.Env, Payload: w.Payload,
		CPU: t.CPU, MemoryMB: t.MemoryMB, TimeoutS: int(rs.Request.TimeoutS), Inputs: inputs,
		DataSources: sources, CacheMounts: caches, StorageGB: w.StorageGB,
		GPUs: int(t.GPUs),
	}, nil
}

// wireInputs is the wire form of a task's input artifacts.
func wireInputs(arts []*store.Artifact) []agentproto.InputArtifact {
	var out []agentproto.InputArtifact
	for _, a := range arts {
		out = append(out, agentproto.InputArtifact{ID: a.ID, SHA256: a.SHA256, Size: a.SizeBytes, Filename: a.Filename, URL: a.URL})
	}
	return out
}

// mountsOf turns the revision's data sources and cache mounts into their
// wire form. A seed is a directory on this machine: only a host sharing
// its filesystem (not an enrolled one) is sent its path.
func (c *Controller) mountsOf(rs *job.RunSpec, enrolled bool) ([]agentproto.DataSource, []agentproto.CacheMount) {
	sources := wireDataSources(rs.DataSources, rs.Job.AccountID, rs.Env)
	var caches []agentproto.CacheMount
	for _, cm := range rs.CacheMounts {
		w := agentproto.CacheMount{Name: cm.Name, Path: cm.Path, Epoch: rs.CacheEpoch}
		if cm.Seed != "" && c.cfg.SeedsDir != "" && !enrolled {
			w.Seed = project.SeedDir(c.cfg.SeedsDir, rs.Job.PushID, cm.Name)
		}
		caches = append(caches, w)
	}
	return sources, caches
}

// wireDataSources is the wire form of a manifest's data sources, fetched
// for account with the tenant's own hub token from the project env.
func wireDataSources(in []manifest.DataSource, account string, env map[string]string) []agentproto.DataSource {
	var out []agentproto.DataSource
	for _, ds := range in {
		out = append(out, agentproto.DataSource{Name: ds.Name, Source: ds.Source, MountPath: ds.MountPath,
			URI: ds.URI, SHA256: ds.SHA256, Repo: ds.Repo, RepoType: ds.RepoType, Revision: ds.Revision, Include: ds.Include,
			Account: account, Token: ds.Token(env)})
	}
	return out
}

// finishedByHost reports whether an attempt ended with its host's own
// report (as opposed to being cancelled or declared lost by the
// controller, which the host must be told).
func finishedByHost(s store.AttemptStatus) bool {
	return s == store.AttemptSucceeded || s == store.AttemptFailed || s == store.AttemptInfra
}
