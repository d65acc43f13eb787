package project

import (
	"context"
	"fmt"
	"sync"

	"github.com/skiffhq/skiff/internal/fault"
)

// Quotas are the per-account caps that keep one account, a free one
// included, from taking the build queue, the database or the upload disk
// from everyone else (docs/security.md, fair shares). A zero field takes its
// default; Unlimited turns a cap off.
type Quotas struct {
	// Projects an account may own.
	Projects int
	// QueuedBuilds is the most pushes one account may have queued or
	// building at once, over all its projects; one more push answers 429.
	QueuedBuilds int
	// KVKeys and KVBytes bound an account's shared state over all its
	// projects: live keys (429 past it) and the bytes of their values (507).
	KVKeys  int64
	KVBytes int64
	// Uploads is the most pushes one account may be sending (staging on
	// this controller's disk) at once.
	Uploads int
}

// Unlimited, as a Quotas field, turns that cap off.
const Unlimited = -1

// The defaults of Quotas (and of the server's flags).
const (
	DefaultMaxProjects     = 100
	DefaultMaxQueuedBuilds = 10
	DefaultMaxKVKeys       = 10_000
	DefaultMaxKVBytes      = 64 << 20
	DefaultMaxUploads      = 2
)

func (q Quotas) withDefaults() Quotas {
	or := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	or64 := func(v, d int64) int64 {
		if v == 0 {
			return d
		}
		return v
	}
	q.Projects = or(q.Projects, DefaultMaxProjects)
	q.QueuedBuilds = or(q.QueuedBuilds, DefaultMaxQueuedBuilds)
	q.KVKeys = or64(q.KVKeys, DefaultMaxKVKeys)
	q.KVBytes = or64(q.KVBytes, DefaultMaxKVBytes)
	q.Uploads = or(q.Uploads, DefaultMaxUploads)
	return q
}

// reached reports whether used more is past a cap (Unlimited never is).
func reached[T int | int64](used, limit T) bool { return limit >= 0 && used > limit }

// quotaLocks serialises, per account, a quota's check with the write it
// guards, so that two requests of one account sent at once cannot both pass
// the check on this controller. (Several controllers on one database may
// each let one through: a cap is exact per controller.)
type quotaLocks struct {
	mu    sync.Mutex
	locks map[string]*accountLock
}

type accountLock struct {
	mu   sync.Mutex
	refs int
}

// lock takes the account's lock; the returned func gives it back.
func (l *quotaLocks) lock(accountID string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*accountLock{}
	}
	al := l.locks[accountID]
	if al == nil {
		al = &accountLock{}
		l.locks[accountID] = al
	}
	al.refs++
	l.mu.Unlock()
	al.mu.Lock()
	return func() {
		al.mu.Unlock()
		l.mu.Lock()
		if al.refs--; al.refs == 0 {
			delete(l.locks, accountID)
		}
		l.mu.Unlock()
	}
}

// uploads counts the pushes each account is sending to this controller now.
type uploads struct {
	mu sync.Mutex
	n  map[string]int
}

func (u *uploads) count(accountID string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n[accountID]
}

func (u *uploads) add(accountID string) (done func()) {
	u.mu.Lock()
	if u.n == nil {
		u.n = map[string]int{}
	}
	u.n[accountID]++
	u.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			if u.n[accountID]--; u.n[accountID] <= 0 {
				delete(u.n, accountID)
			}
			u.mu.Unlock()
		})
	}
}

// beginUpload admits one push of the account before a byte of its body is
// read: it refuses with 429 when the account already sends Uploads pushes,
// or when its queued and building pushes, with the ones it is sending, fill
// its build quota. The returned func ends the upload.
func (s *Service) beginUpload(ctx context.Context, accountID string) (done func(), err error) {
	unlock := s.quotaLocks.lock(accountID)
	defer unlock()
	sending := s.uploads.count(accountID)
	if reached(sending+1, s.quotas.Uploads) {
		return nil, fault.New(fault.KindRateLimited, "too_many_uploads",
			fmt.Sprintf("Wait for your other pushes to finish uploading (at most %d at once per account), then push again.", s.quotas.Uploads),
			"this account is already sending %d pushes", sending).
			With("limit", s.quotas.Uploads).With("in_progress", sending)
	}
	unfinished, err := s.store.PushCountUnfinished(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("count unfinished pushes: %w", err)
	}
	if reached(unfinished+sending+1, s.quotas.QueuedBuilds) {
		return nil, fault.New(fault.KindRateLimited, "build_queue_full",
			fmt.Sprintf("Wait for one of your queued or running builds to finish (poll its status_url, or GET /api/v1/projects/{name}/push), then push again; at most %d per account.", s.quotas.QueuedBuilds),
			"this account already has %d builds queued or running", unfinished+sending).
			With("limit", s.quotas.QueuedBuilds).With("queued_or_building", unfinished).With("uploading", sending)
	}
	return s.uploads.add(accountID), nil
}

// checkProjectQuota refuses a new project past the account's cap. The
// caller holds the account's quota lock.
func (s *Service) checkProjectQuota(ctx context.Context, accountID string) error {
	if s.quotas.Projects < 0 {
		return nil
	}
	ps, err := s.store.ProjectList(ctx, accountID)
	if err != nil {
		return fmt.Errorf("count projects: %w", err)
	}
	if reached(len(ps)+1, s.quotas.Projects) {
		return fault.New(fault.KindRateLimited, "project_quota_exceeded",
			"Delete a project you no longer need (DELETE /api/v1/projects/{name}), then create this one.",
			"this account already has %d projects; at most %d", len(ps), s.quotas.Projects).
			With("limit", s.quotas.Projects).With("used", len(ps))
	}
	return nil
}

// checkKVQuota refuses a write of newBytes when the account's shared state
// would pass its key count (429, for a new key) or its bytes (507, for a
// write that grows it). oldBytes is the size of the live value the write
// replaces. A write that does not grow the state always passes, so that an
// account over a lowered cap can still shrink. The caller holds the
// account's quota lock.
func (s *Service) checkKVQuota(ctx context.Context, accountID string, oldBytes int64, isNew bool, newBytes int64) error {
	if s.quotas.KVKeys < 0 && s.quotas.KVBytes < 0 {
		return nil
	}
	u, err := s.store.KVAccountUsage(ctx, accountID, s.clock.Now())
	if err != nil {
		return fmt.Errorf("shared state usage: %w", err)
	}
	if isNew && reached(u.Keys+1, s.quotas.KVKeys) {
		return fault.New(fault.KindRateLimited, "kv_key_quota_exceeded",
			"Delete keys you no longer need (DELETE /api/v1/projects/{name}/kv/{key}), or give short-lived keys a ttl_s, then write again.",
			"this account's projects already hold %d shared-state keys; at most %d", u.Keys, s.quotas.KVKeys).
			With("limit_keys", s.quotas.KVKeys).With("used_keys", u.Keys)
	}
	if after := u.Bytes - oldBytes + newBytes; newBytes > oldBytes && reached(after, s.quotas.KVBytes) {
		return fault.New(fault.KindQuotaExceeded, "kv_storage_quota_exceeded",
			"Delete or shrink values you no longer need, or keep large data as an artifact and store its id here, then write again.",
			"this write would bring this account's shared state to %d bytes; at most %d", after, s.quotas.KVBytes).
			With("limit_bytes", s.quotas.KVBytes).With("used_bytes", u.Bytes).
			With("remaining_bytes", max(0, s.quotas.KVBytes-u.Bytes))
	}
	return nil
}
