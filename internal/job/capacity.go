package job

import (
	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/job/submit"
)

// CapacityOf is what billing prices of a task: its resolved requirements
// and the job's placement policy. Admission and repricing hold by it; the
// price list (jobview) shows it.
func CapacityOf(r submit.Requirements, placementPolicy string) billing.Capacity {
	return billing.Capacity{CPU: r.CPU, MemoryMB: r.MemoryMB, GPUs: r.GPUCount,
		Dedicated: placementPolicy == apiv1.PlacementDedicated}
}
