// Package wake carries "something may have changed" from the code that
// changes things to the code that waits for changes: the job service wakes
// (new tasks, cancellations), long-polling hosts in the fleet controller
// wait. The composition root makes one Signal and gives it to both, so
// neither needs the other to exist first.
package wake

import "sync"

// Signal is a broadcast without payload. Its zero value is ready to use.
type Signal struct {
	mu sync.Mutex
	c  chan struct{}
}

// New returns a Signal.
func New() *Signal { return &Signal{} }

// Wake tells every current waiter; waiters that look after it wait for the
// next Wake.
func (s *Signal) Wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		close(s.c)
	}
	s.c = make(chan struct{})
}

// Changed is closed at the next Wake. Take it before looking at the state
// waited on, so that a Wake between the look and the wait is not missed.
func (s *Signal) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		s.c = make(chan struct{})
	}
	return s.c
}
