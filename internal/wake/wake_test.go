package wake_test

import (
	"testing"

	"github.com/skiffhq/skiff/internal/wake"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A Wake closes what waiters took before it, and only that.
func TestSignal(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*wake.Signal{"New": wake.New(), "zero value": {}} {
		before, also := s.Changed(), s.Changed()
		if closed(before) {
			t.Fatalf("%s: changed before any Wake", name)
		}
		s.Wake()
		if !closed(before) || !closed(also) {
			t.Errorf("%s: a waiter taken before Wake was not woken", name)
		}
		after := s.Changed()
		if closed(after) {
			t.Errorf("%s: a waiter taken after Wake was woken by it", name)
		}
		s.Wake()
		if !closed(after) {
			t.Errorf("%s: the second Wake did not wake its waiter", name)
		}
	}
}
