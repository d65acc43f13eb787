package agent_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/gpu"
	"github.com/skiffhq/skiff/internal/gpu/gputest"
	"github.com/skiffhq/skiff/internal/sandbox"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

// gpuDriver stands in for the gvisor driver, which cannot attach a GPU on
// a machine without one (named as a fake): it records the GPUs each
// attempt's spec carries and holds the "sandbox" until the test lets it
// end, so the test sees which GPUs are held while sandboxes live.
type gpuDriver struct {
	mu      sync.Mutex
	devices map[string][]string // attempt id -> its GPU device paths
	started chan string
	release map[string]chan struct{}
}

func newGPUDriver() *gpuDriver {
	return &gpuDriver{devices: map[string][]string{}, started: make(chan string, 16), release: map[string]chan struct{}{}}
}

func (d *gpuDriver) Name() string                  { return "gpu-fake" }
func (d *gpuDriver) Cleanup(context.Context) error { return nil }

func (d *gpuDriver) gate(id string) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.release[id] == nil {
		d.release[id] = make(chan struct{})
	}
	return d.release[id]
}

func (d *gpuDriver) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Outcome, error) {
	start := time.Now()
	var devs []string
	if spec.GPU != nil {
		for _, dev := range spec.GPU.Devices {
			devs = append(devs, dev.Path)
		}
	}
	d.mu.Lock()
	d.devices[spec.AttemptID] = devs
	d.mu.Unlock()
	d.started <- spec.AttemptID
	select {
	case <-d.gate(spec.AttemptID):
	case <-ctx.Done():
	}
	return &sandbox.Outcome{ExitCode: 0, Result: []byte(`{"ok":true}`), StartedAt: start, EndedAt: time.Now()}, nil
}

func (d *gpuDriver) gpusOf(id string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.devices[id]
}

// TestAgentGPUs: on a two-GPU host, two concurrent one-GPU attempts get
// different GPUs, a third waits for none (it is refused as a host error,
// requeued free), and a GPU is given again only once its sandbox is gone.
func TestAgentGPUs(t *testing.T) {
	m := gputest.NewMachine(t, 2)
	h, err := gpu.Discover(context.Background(), gpu.Options{Root: m.Root, DriverDir: m.DriverDir,
		StageDir: filepath.Join(t.TempDir(), "driver"), Supported: gputest.Supported})
	if err != nil {
		t.Fatal(err)
	}
	img := newImage(t)
	fc := newFakeController(t)
	d := newGPUDriver()
	startAgent(t, fc, d, img, func(c *agent.Config) { c.GPU = h })
	if got := fc.registeredCapacity().GPUs; got != 2 {
		t.Fatalf("registered with %d GPUs, want the 2 found", got)
	}

	one := func() string {
		a := assignment(t, img, sandboxtest.Payload{})
		a.GPUs = 1
		fc.assign(a)
		return a.AttemptID
	}
	waitStart := func(want string) {
		t.Helper()
		select {
		case id := <-d.started:
			if id != want {
				t.Fatalf("started %s, want %s", id, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s never started", want)
		}
	}
	a1 := one()
	waitStart(a1)
	a2 := one()
	waitStart(a2)
	g1, g2 := d.gpusOf(a1), d.gpusOf(a2)
	if len(g1) != 1 || len(g2) != 1 || g1[0] == g2[0] {
		t.Fatalf("two concurrent attempts got GPUs %v and %v, want one each, never the same", g1, g2)
	}

	// Both GPUs are held by live sandboxes: a third attempt gets none.
	a3 := one()
	o3, _ := fc.finished(a3)
	if !strings.Contains(o3.HostError, "0 of this host's 2 are free") || o3.GPUsAttached != 0 {
		t.Fatalf("third attempt: host error %q, %d attached; want no free GPU", o3.HostError, o3.GPUsAttached)
	}

	// a1's sandbox ends: its GPU, and only that, is free again.
	close(d.gate(a1))
	if o1, _ := fc.finished(a1); o1.GPUsAttached != 1 || o1.HostError != "" {
		t.Fatalf("first attempt: %+v, want 1 GPU attached", o1)
	}
	a4 := one()
	waitStart(a4)
	if g4 := d.gpusOf(a4); len(g4) != 1 || g4[0] != g1[0] {
		t.Fatalf("after a1 ended, a4 got %v, want a1's %v", g4, g1)
	}
	close(d.gate(a2))
	close(d.gate(a4))
	fc.finished(a2)
	fc.finished(a4)
}

// TestAgentGPUTaskWithoutDriver: a GPU task that lands on a host without a
// usable driver fails as the host's error, saying so, and the host
// offered no GPU in the first place.
func TestAgentGPUTaskWithoutDriver(t *testing.T) {
	img := newImage(t)
	fc := newFakeController(t)
	startAgent(t, fc, newGPUDriver(), img, func(c *agent.Config) { c.Capacity.GPUs = 4 })
	if got := fc.registeredCapacity().GPUs; got != 0 {
		t.Fatalf("a host without a GPU driver registered %d GPUs", got)
	}
	a := assignment(t, img, sandboxtest.Payload{})
	a.GPUs = 1
	fc.assign(a)
	o, _ := fc.finished(a.AttemptID)
	if !strings.Contains(o.HostError, "no usable NVIDIA GPU and driver") || o.GPUsAttached != 0 {
		t.Fatalf("outcome %+v, want a host error saying the driver is missing", o)
	}
}

// registeredCapacity waits for the agent's first registration and returns
// the capacity it offered.
func (fc *fakeController) registeredCapacity() agentproto.Capacity {
	fc.t.Helper()
	timeout := time.After(time.Minute)
	for {
		fc.mu.Lock()
		regs, ch := fc.registers, fc.changed
		fc.mu.Unlock()
		if len(regs) > 0 {
			return regs[0].Capacity
		}
		select {
		case <-ch:
		case <-timeout:
			fc.t.Fatal("the agent never registered")
		}
	}
}
