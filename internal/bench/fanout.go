package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/skiffhq/skiff/internal/fleet"
)

// fanOutResult is the fan-out phase's figures: one job of many trivial
// tasks through the real local host, which has Slots slots.
type fanOutResult struct {
	Tasks int `json:"tasks"`
	Slots int `json:"slots"`
	// Seconds runs from the job's submitted_at to its completed_at.
	Seconds   float64 `json:"seconds"`
	TasksPerS float64 `json:"tasks_per_s"`
	// IdealTasksPerS is slots / p50 of a bare `runsc run`: every slot busy
	// all the time with sandboxes that cost nothing but runsc's start. The
	// bare runs are IdealBare, run just before and just after the job, so
	// that the ideal sees the machine's load of the moment.
	IdealTasksPerS float64      `json:"ideal_tasks_per_s"`
	IdealBare      *latencyStat `json:"ideal_bare_runsc"`
	// IdealBareCPU is the CPU time (user and system) of those bare runs,
	// runsc and its sandbox together: slots of them at once need slots
	// times it of the machine's CPUs, which the ideal takes as free.
	IdealBareCPU *latencyStat `json:"ideal_bare_runsc_cpu"`
	// CPUPerTaskMS is the CPU time of the server and the sandboxes its
	// local host ran (the children it waited for) over the job, per task:
	// what a task costs the machine through the service. CPUs / it is the
	// most tasks/s the machine's CPUs allow (CPUBoundTasksPerS).
	CPUPerTaskMS      float64 `json:"cpu_per_task_ms"`
	CPUBoundTasksPerS float64 `json:"cpu_bound_tasks_per_s"`
	// RefillGap is, per freed slot while tasks were queued, the time from
	// the attempt's end to the next attempt's start (fleet.RefillGaps).
	RefillGap *latencyStat `json:"refill_gap"`
	// Attempt is each attempt's started_at -> ended_at, and Prepare its
	// assigned_at -> started_at (image and directories on the host): with
	// the refill gap, where a slot's time goes. An attempt p50 above the
	// bare runsc p50 is sandboxes sharing the CPUs, which the ideal, from
	// one sandbox at a time, does not count.
	Attempt *latencyStat `json:"attempt"`
	Prepare *latencyStat `json:"prepare"`
}

// benchFanOutTargetGapMS is issue 7's target for the refill gap's p50.
const benchFanOutTargetGapMS = 20.0

// fanOutBareRuns is how many bare runs go just before and just after the
// fan-out, for its ideal.
const fanOutBareRuns = 5

// fanOut submits one fan-out job of n trivial tasks, waits for it and
// measures it from the service's own timestamps; bare runs its ideal's
// bare `runsc run`s around it.
func fanOut(ctx context.Context, c *benchClient, serverPid, cpus, n, slots int, bare func(context.Context, int) (wall, cpu time.Duration, err error), progress func(string, ...any)) (*fanOutResult, error) {
	var bares, bareCPUs []time.Duration
	bareRuns := func(from int) error {
		for i := range fanOutBareRuns {
			d, cpu, err := bare(ctx, from+i)
			if err != nil {
				return err
			}
			bares, bareCPUs = append(bares, d), append(bareCPUs, cpu)
		}
		return nil
	}
	// Ids apart from the latency rounds' bare sandboxes.
	const bareID = 1 << 20
	if err := bareRuns(bareID); err != nil {
		return nil, err
	}
	items := make([]map[string]int, n)
	for i := range items {
		items[i] = map[string]int{"i": i}
	}
	body, _ := json.Marshal(map[string]any{
		"project": benchProjectName, "runner_command": benchRunnerArgs, "payload": map[string]any{},
		"fan_out": map[string]any{"items": items}, "timeout_s": benchJobTimeoutS,
	})
	progress("fan-out: one job of %d trivial tasks on the local host's %d slots", n, slots)
	cpu0, err := processTreeCPU(serverPid)
	if err != nil {
		return nil, err
	}
	var j benchJob
	if _, err := c.do(ctx, "POST", "/api/v1/jobs", "application/json", body, &j); err != nil {
		return nil, err
	}
	// Generous: a host stalled a lease interval per wave still finishes.
	deadline := time.Now().Add(time.Duration(n)*benchJobTimeoutS*time.Second/time.Duration(max(slots, 1)) + time.Minute)
	last := time.Now()
	for !j.terminal() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := c.do(ctx, "GET", "/api/v1/jobs/"+j.ID, "", nil, &j); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("fan-out job %s still %s", j.ID, j.Status)
		}
		if time.Since(last) > 5*time.Second {
			progress("fan-out: job %s", j.Status)
			last = time.Now()
		}
	}
	if j.Status != "completed" || j.CompletedAt == nil {
		return nil, fmt.Errorf("fan-out job %s ended %s, want completed", j.ID, j.Status)
	}
	cpu1, err := processTreeCPU(serverPid)
	if err != nil {
		return nil, err
	}
	if err := bareRuns(bareID + fanOutBareRuns); err != nil {
		return nil, err
	}
	var starts, ends []time.Time
	var attempts, prepares []time.Duration
	for offset := 0; offset < n; offset += 1000 {
		var page struct {
			Tasks []struct {
				Attempts []struct {
					AssignedAt time.Time  `json:"assigned_at"`
					StartedAt  *time.Time `json:"started_at"`
					EndedAt    *time.Time `json:"ended_at"`
				} `json:"attempts"`
			} `json:"tasks"`
		}
		if _, err := c.do(ctx, "GET", fmt.Sprintf("/api/v1/jobs/%s/tasks?limit=1000&offset=%d", j.ID, offset), "", nil, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Tasks {
			for _, a := range t.Attempts {
				if a.StartedAt == nil {
					continue
				}
				starts = append(starts, *a.StartedAt)
				if !a.AssignedAt.IsZero() {
					prepares = append(prepares, a.StartedAt.Sub(a.AssignedAt))
				}
				if a.EndedAt != nil {
					ends = append(ends, *a.EndedAt)
					attempts = append(attempts, a.EndedAt.Sub(*a.StartedAt))
				}
			}
		}
	}
	secs := j.CompletedAt.Sub(j.SubmittedAt).Seconds()
	r := &fanOutResult{Tasks: n, Slots: slots, Seconds: math.Round(secs*100) / 100,
		RefillGap: summarize(fleet.RefillGaps(starts, ends, slots)), Attempt: summarize(attempts), Prepare: summarize(prepares)}
	if secs > 0 {
		r.TasksPerS = round1(float64(n) / secs)
	}
	r.IdealBare, r.IdealBareCPU = summarize(bares), summarize(bareCPUs)
	if perTask := (cpu1 - cpu0) / time.Duration(n); perTask > 0 {
		r.CPUPerTaskMS = ms(perTask)
		r.CPUBoundTasksPerS = round1(float64(cpus) / perTask.Seconds())
	}
	if p50 := r.IdealBare.P50MS; p50 > 0 {
		r.IdealTasksPerS = round1(float64(slots) / (p50 / 1000))
	}
	return r, nil
}
