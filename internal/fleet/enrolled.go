package fleet

import (
	"context"
	"strings"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/sched"
	"github.com/skiffhq/skiff/internal/store"
)

// declaredShare bounds what a host says it has by the share it declared
// at enrollment: a machine lends what its owner agreed to, whatever it
// measures at its next start. A host not permitted GPU work lends no GPU.
// The local host (enrolled nil) lends what it says.
func declaredShare(c agentproto.Capacity, enrolled *store.Host) agentproto.Capacity {
	if enrolled == nil {
		return c
	}
	if c.CPU <= 0 || c.CPU > enrolled.CPUs {
		c.CPU = enrolled.CPUs
	}
	if c.MemoryMB <= 0 || c.MemoryMB > enrolled.MemoryMB {
		c.MemoryMB = enrolled.MemoryMB
	}
	c.GPUs = min(c.GPUs, enrolled.GPUs)
	if !strings.Contains(enrolled.WorkKinds, "gpu") {
		c.GPUs = 0
	}
	return c
}

// gpuOnly reports whether the host was enrolled for GPU work only
// (--work gpu): it takes tasks that ask for a GPU and nothing else. A host
// permitted cpu,gpu lends its CPUs to CPU work as well.
func (h *host) gpuOnly() bool {
	return h.enrolled != nil && h.enrolled.WorkKinds == "gpu"
}

// draining reports whether the host must take nothing new (its operator
// drained it). Guarded by h.pollMu.
func (h *host) draining() bool {
	return h.enrolled != nil && h.enrolled.State != store.HostActive
}

// storeSeen records an enrolled host's last call in the store, for the
// operator's listing, at most once per heartbeat interval: a poll that
// answers at once (work to hand out) must not write on every call.
func (c *Controller) storeSeen(ctx context.Context, h *host) {
	if h.enrolled == nil {
		return
	}
	now := c.clk.Now()
	c.mu.Lock()
	due := now.Sub(h.storedSeen) >= c.cfg.HeartbeatInterval/2
	if due {
		h.storedSeen = now
	}
	c.mu.Unlock()
	if !due {
		return
	}
	if err := c.st.HostSeen(ctx, h.id, now); err != nil {
		c.log.Warn("record host last seen", "host_id", h.id, "err", err)
	}
}

// offer is what h offers the claims of one poll: free, its free capacity
// and slots, and what it is (placement: internal/sched).
func (h *host) offer(free agentproto.Capacity) sched.Offer {
	o := sched.Offer{CPU: free.CPU, MemoryMB: free.MemoryMB, GPUs: int64(free.GPUs), Slots: free.Slots,
		StorageGB: h.capacity.StorageGB, SingleCoreScore: h.profile.SingleCoreScore, GPUOnly: h.gpuOnly()}
	if h.capacity.GPUs > 0 {
		o.GPUMemoryMB = h.profile.GPUMemoryMB
	}
	return o
}

// refreshEnrolled re-reads an enrolled host's record while its poll waits:
// the operator may drain or remove it meanwhile, from another process
// (`skiff admin drain-host`) that wakes no poll here, and a wake for new
// work must not hand that work to a host drained since its request came.
// Guarded by h.pollMu. On a store error the last record stands.
func (c *Controller) refreshEnrolled(ctx context.Context, h *host) {
	cur, err := c.st.HostGet(ctx, h.id)
	if err != nil {
		c.log.Warn("re-read host record", "host_id", h.id, "err", err)
		return
	}
	h.enrolled = cur
}

// maxSingleCoreScore bounds a host's reported score: 100 times the
// baseline core is no machine, only a mistake or a lie.
const maxSingleCoreScore = 100

// checkPlacementClaims refuses what a registering host says of itself
// that placement would trust and that cannot be real: a negative or
// absurd storage share or GPU memory, a negative or absurd single-core
// score. (CPUs, memory and GPUs are bounded by the declared share.)
func checkPlacementClaims(req *agentproto.RegisterRequest) error {
	absurd := func(field, format string, args ...any) error {
		return fault.Invalid("invalid_share", "Report what this machine has: storage_gb 0 to 65536, gpu_memory_mb 0 to 1048576, single_core_score 0 to 100.",
			format, args...).With("field", field)
	}
	switch c, p := req.Capacity, req.Profile; {
	case c.StorageGB < 0 || c.StorageGB > submit.MaxStorageGB:
		return absurd("capacity.storage_gb", "storage_gb %d is not in [0, %d]", c.StorageGB, submit.MaxStorageGB)
	case p.GPUMemoryMB < 0 || p.GPUMemoryMB > submit.MaxGPUMemoryMB:
		return absurd("resource_profile.gpu_memory_mb", "gpu_memory_mb %d is not in [0, %d]", p.GPUMemoryMB, submit.MaxGPUMemoryMB)
	case !(p.SingleCoreScore >= 0 && p.SingleCoreScore <= maxSingleCoreScore):
		return absurd("resource_profile.single_core_score", "single_core_score %v is not in [0, %d]", p.SingleCoreScore, maxSingleCoreScore)
	}
	return nil
}
