package process_test

import (
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/sandbox/process"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
)

func TestNewRefusesWithoutOptIn(t *testing.T) {
	t.Parallel()
	d, err := process.New(process.Config{})
	if !errors.Is(err, process.ErrUnisolated) || d != nil {
		t.Fatalf("New(zero config): got (%v, %v), want (nil, ErrUnisolated)", d, err)
	}
}

func TestConformance(t *testing.T) {
	const grace = 500 * time.Millisecond
	d, err := process.New(process.Config{AllowUnisolated: true, Grace: grace, KillWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.Run(t, d, sandboxtest.Fixtures{
		RootFS:      sandboxtest.RunnerRootFS(t),
		Grace:       grace,
		SharedLocks: true, // plain processes share the host kernel's locks
		Unisolated:  true,
	})
}
