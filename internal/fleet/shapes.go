package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/sched"
	"github.com/skiffhq/skiff/internal/store"
)

// maxShapeHosts bounds the enrolled hosts HostShapes reads from the store.
const maxShapeHosts = 1000

// HostShapes is what each host the service knows would offer a task if it
// were idle: its whole share, every slot free. It answers "could any host
// ever take this task?", not "is one free now". The hosts registered with
// this controller come with what they reported (the local host included);
// active enrolled hosts registered with another controller, or not
// connected now, come from their stored record (declared share and
// measured profile, no storage bound), so that with several controllers a
// task is not called unplaceable because its host polls another one.
func (c *Controller) HostShapes(ctx context.Context) ([]sched.Offer, error) {
	c.mu.Lock()
	out := make([]sched.Offer, 0, len(c.hosts))
	seen := make(map[string]bool, len(c.hosts))
	for id, h := range c.hosts {
		seen[id] = true
		if h.enrolled != nil && h.enrolled.State != store.HostActive {
			continue
		}
		out = append(out, h.offer(h.capacity))
	}
	c.mu.Unlock()
	stored, err := c.st.HostList(ctx, &store.ListParams{Limit: maxShapeHosts})
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	for _, h := range stored {
		if seen[h.ID] || h.State != store.HostActive || h.LastSeenAt.IsZero() {
			continue
		}
		var p agentproto.ResourceProfile
		_ = json.Unmarshal(h.Profile, &p) // a record without a profile offers no GPU memory or score
		gpus := h.GPUs
		if !strings.Contains(h.WorkKinds, "gpu") {
			gpus = 0 // enrolled for CPU work: its GPUs are not lent
		}
		o := sched.Offer{CPU: h.CPUs, MemoryMB: h.MemoryMB, GPUs: int64(gpus), Slots: 1,
			SingleCoreScore: p.SingleCoreScore, GPUOnly: h.WorkKinds == "gpu"}
		if gpus > 0 {
			o.GPUMemoryMB = p.GPUMemoryMB
		}
		out = append(out, o)
	}
	return out, nil
}
