package fleet

import (
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/store"
)

// free is the host's capacity less what its live attempts hold, as the
// controller sees it now: the attempts open in the store for the host and
// those it is still stopping, each holding the requirements it was claimed
// with. It is computed afresh at every look of a poll, so a slot freed
// while the host long-polls (its attempt's finished event recorded, which
// wakes the poll) is refilled at once; the free capacity in the host's
// request was true only when it asked. Being the store's view, it holds
// across controller restarts and for attempts another controller assigned.
func (c *Controller) free(h *host, rec *reconciled) agentproto.Capacity {
	free := h.capacity
	take := func(a *store.Attempt) {
		free.Slots--
		free.CPU -= a.CPU
		free.MemoryMB -= a.MemoryMB
		free.GPUs -= int(a.GPUs)
	}
	for _, a := range rec.open {
		take(a)
	}
	for _, a := range rec.stopping {
		take(a)
	}
	free.CPU = max(free.CPU, 0)
	free.MemoryMB = max(free.MemoryMB, 0)
	free.GPUs = max(free.GPUs, 0)
	free.Slots = max(free.Slots, 0)
	return free
}
