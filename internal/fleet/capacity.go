package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/store"
)

// held is what one attempt holds of its host while its sandbox lives.
type held struct {
	cpu      float64
	memoryMB int64
	gpus     int64
}

// free is the host's capacity less what its live attempts hold, as the
// controller sees it now: the attempts open in the store for the host and
// those it is still stopping. It is computed afresh at every look of a
// lease, so a slot freed while the host long-polls (its attempt's finished
// event recorded, which wakes the lease) is refilled at once; the free
// capacity in the host's request was true only when it asked.
//
// What an attempt holds is its task's requirements when it was assigned,
// remembered per host and read from the store for attempts assigned before
// this controller started.
func (c *Controller) free(ctx context.Context, h *host, rec *reconciled) (agentproto.Capacity, error) {
	live := make(map[string]bool, len(rec.open)+len(rec.stopping))
	free := h.capacity
	take := func(r held) {
		free.CPU -= r.cpu
		free.MemoryMB -= r.memoryMB
		free.GPUs -= int(r.gpus)
		free.Slots--
	}
	for _, a := range rec.open {
		live[a.ID] = true
		r, err := c.holds(ctx, h, a.ID, a.TaskID)
		if err != nil {
			return agentproto.Capacity{}, err
		}
		take(r)
	}
	for _, id := range rec.stopping {
		live[id] = true
		r, ok := h.held[id]
		if !ok {
			// Not an attempt this host was given as far as the store
			// knows: it still takes a slot until the host stops it.
			if a, err := c.st.AttemptGet(ctx, id); err == nil {
				if r, err = c.holds(ctx, h, a.ID, a.TaskID); err != nil {
					return agentproto.Capacity{}, err
				}
			}
		}
		take(r)
	}
	for id := range h.held {
		if !live[id] {
			delete(h.held, id)
		}
	}
	free.CPU = max(free.CPU, 0)
	free.MemoryMB = max(free.MemoryMB, 0)
	free.GPUs = max(free.GPUs, 0)
	free.Slots = max(free.Slots, 0)
	return free, nil
}

// holds is what attempt attemptID of task taskID holds on h. The caller
// holds h.lease.
func (c *Controller) holds(ctx context.Context, h *host, attemptID, taskID string) (held, error) {
	if r, ok := h.held[attemptID]; ok {
		return r, nil
	}
	t, err := c.st.TaskGet(ctx, taskID)
	if errors.Is(err, store.ErrNotFound) {
		return held{}, nil
	}
	if err != nil {
		return held{}, fmt.Errorf("task %s of attempt %s: %w", taskID, attemptID, err)
	}
	r := held{cpu: t.CPU, memoryMB: t.MemoryMB, gpus: t.GPUs}
	h.held[attemptID] = r
	return r, nil
}
