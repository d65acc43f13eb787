package job

import (
	"sync"

	"github.com/skiffhq/skiff/internal/job/submit"
	"github.com/skiffhq/skiff/internal/store"
)

// requestCache keeps decoded submissions by job id. The end of every task
// reads its job's submission (max_retries, timeout_s, the merge), and a
// 10,000-item fan-out's stored request is a megabyte of JSON: decoding it
// per task made dispatch quadratic. The execution fields read through it
// never change after admission (PATCH requirements edits only the
// requirements, which the dispatcher reads from each task). Bounded: the
// whole cache is dropped when full.
type requestCache struct {
	mu sync.Mutex
	m  map[string]*submit.Submission
}

const requestCacheSize = 512

// cachedRequest is the decoded submission of job id when the cache holds
// it, nil otherwise.
func (s *Service) cachedRequest(jobID string) *submit.Submission {
	s.requests.mu.Lock()
	defer s.requests.mu.Unlock()
	return s.requests.m[jobID]
}

// request is Request(j), cached.
func (s *Service) request(j *store.Job) (*submit.Submission, error) {
	s.requests.mu.Lock()
	sub := s.requests.m[j.ID]
	s.requests.mu.Unlock()
	if sub != nil {
		return sub, nil
	}
	sub, err := Request(j)
	if err != nil {
		return nil, err
	}
	s.requests.mu.Lock()
	if s.requests.m == nil || len(s.requests.m) >= requestCacheSize {
		s.requests.m = map[string]*submit.Submission{}
	}
	s.requests.m[j.ID] = sub
	s.requests.mu.Unlock()
	return sub, nil
}

// jobSet remembers job ids that left the queue (running or ended), so that
// claiming each task of a 10,000-task job does not try to move the job to
// running again.
// A job never returns to queued, so a stale entry is impossible; the set is
// dropped whole when full, which only costs a refused move per job.
type jobSet struct {
	mu sync.Mutex
	m  map[string]bool
}

const jobSetSize = 4096

func (js *jobSet) has(jobID string) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.m[jobID]
}

func (js *jobSet) add(jobID string) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.m == nil || len(js.m) >= jobSetSize {
		js.m = map[string]bool{}
	}
	js.m[jobID] = true
}
