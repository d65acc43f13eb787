package jobview

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/sched"
	"github.com/skiffhq/skiff/internal/store"
)

// HostShapes lists what each host the service knows would offer a task if
// it were idle (fleet.Controller.HostShapes).
type HostShapes interface {
	HostShapes(ctx context.Context) ([]sched.Offer, error)
}

// shapesTTL is how long one reading of the hosts' shapes answers: a client
// polling a queued job every second must not list the hosts every time.
const shapesTTL = 2 * time.Second

// shapeCache holds the last reading of the hosts' shapes.
type shapeCache struct {
	mu     sync.Mutex
	at     time.Time
	shapes []sched.Offer
}

func (s *Service) hostShapes(ctx context.Context) ([]sched.Offer, error) {
	c := &s.shapes
	now := s.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now.Sub(c.at) < shapesTTL {
		return c.shapes, nil
	}
	shapes, err := s.hosts.HostShapes(ctx)
	if err != nil {
		return nil, err
	}
	c.at, c.shapes = now, shapes
	return shapes, nil
}

// PlacementAdvice is the recommended_action of a queued job whose tasks no
// host of the service could take, however idle: what it asks for that no
// host has, and what to do. It is "" when some host could take them, when
// the job is not queued or already says what to do, and when no host is
// known at all (a service whose hosts have not registered yet: nothing is
// wrong with the job). The job stays queued: a larger host may join.
func (s *Service) PlacementAdvice(ctx context.Context, j *store.Job) (string, error) {
	if s.hosts == nil || j.Status != store.JobQueued || j.RecommendedAction != "" {
		return "", nil
	}
	shapes, err := s.hostShapes(ctx)
	if err != nil || len(shapes) == 0 {
		return "", err
	}
	r := submissionOf(j).Requirements
	need := sched.Need{CPU: r.CPU, MemoryMB: r.MemoryMB, GPUs: r.GPUCount, GPUMemoryMB: r.GPUMemoryMB,
		StorageGB: r.StorageGB, MinSingleCoreScore: r.MinSingleCoreScore}
	var most sched.Offer
	for _, o := range shapes {
		o.Slots = max(o.Slots, 1)
		if sched.Fits(need, o) {
			return "", nil
		}
		most.CPU, most.MemoryMB, most.GPUs = max(most.CPU, o.CPU), max(most.MemoryMB, o.MemoryMB), max(most.GPUs, o.GPUs)
		most.SingleCoreScore = max(most.SingleCoreScore, o.SingleCoreScore)
		if o.GPUs > 0 {
			most.GPUMemoryMB = max(most.GPUMemoryMB, o.GPUMemoryMB)
		}
	}
	var over []string
	if need.GPUs > most.GPUs {
		over = append(over, fmt.Sprintf("gpu_count %d (the most any host has is %d)", need.GPUs, most.GPUs))
	}
	if need.GPUs > 0 && need.GPUMemoryMB > most.GPUMemoryMB && most.GPUs > 0 {
		over = append(over, fmt.Sprintf("gpu_memory_mb %d (the largest GPU has %d)", need.GPUMemoryMB, most.GPUMemoryMB))
	}
	if need.CPU > most.CPU {
		over = append(over, fmt.Sprintf("cpu %g (the most any host has is %g)", need.CPU, most.CPU))
	}
	if need.MemoryMB > most.MemoryMB {
		over = append(over, fmt.Sprintf("memory_mb %d (the most any host has is %d)", need.MemoryMB, most.MemoryMB))
	}
	if need.MinSingleCoreScore > most.SingleCoreScore {
		over = append(over, fmt.Sprintf("min_single_core_score %g (the fastest host scores %g)", need.MinSingleCoreScore, most.SingleCoreScore))
	}
	what := "no single host has all of its requirements at once"
	if len(over) > 0 {
		what = "it asks for " + strings.Join(over, ", ")
	}
	return fmt.Sprintf("No host of this service can take this job's tasks: %s. Lower its requirements with PATCH %s/requirements, "+
		"or cancel it; it stays queued in case such a host joins.", what, JobLinksOf(j.ID).Self), nil
}
