package job

import (
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/store"
)

// gpuHonestRate is the rate attempt a is metered at (attemptRate), without
// the GPU rate when its host reports fewer GPUs attached than the attempt
// was claimed with: a task pays for a GPU only if its sandbox had one
// (docs/gpus.md). Hosts attach all or none, so any shortfall drops the
// whole GPU share.
func (s *Service) gpuHonestRate(a *store.Attempt, j *store.Job, o *Outcome) int64 {
	rate := attemptRate(a, j)
	if a.GPUs <= 0 || int64(o.GPUsAttached) >= a.GPUs {
		return rate
	}
	return billing.RateWithoutGPUs(rate, s.billing.Rates(), billing.Capacity{CPU: a.CPU, MemoryMB: a.MemoryMB, GPUs: a.GPUs})
}
