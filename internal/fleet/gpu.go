package fleet

import "github.com/skiffhq/skiff/internal/agentproto"

// gpusAttachable counts no GPUs of a host older than
// agentproto.GPUProtocolVersion: it would run a GPU task without its GPU
// (and, before billing checked, bill it the GPU rate). Such a host still
// takes CPU work.
func gpusAttachable(c agentproto.Capacity, protocol int) agentproto.Capacity {
	if protocol < agentproto.GPUProtocolVersion {
		c.GPUs = 0
	}
	return c
}
