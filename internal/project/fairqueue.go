package project

import "github.com/skiffhq/skiff/internal/store"

// fairQueue decides which queued push a free build worker takes: accounts
// take turns (round-robin), and each account's pushes go in the order they
// came (FIFO). An account with 50 pushes queued therefore delays another
// account's single push by at most the builds already running, not by its
// whole queue. It holds only the turns of this process: after a restart
// the accounts with the oldest queued pushes go first.
//
// It is not safe for concurrent use; builds guards it.
type fairQueue struct {
	// perAccount is the most builds of one account that run at once.
	perAccount int
	running    map[string]int    // account -> builds running now
	served     map[string]uint64 // account -> the turn its last build started in
	turn       uint64
}

func newFairQueue(perAccount int) *fairQueue {
	return &fairQueue{perAccount: max(1, perAccount), running: map[string]int{}, served: map[string]uint64{}}
}

// next picks from unfinished (queued and building pushes, oldest first) the
// push to start, or nil when none may start now: each account's oldest
// queued push is a candidate unless the account runs perAccount builds
// already; the candidate whose account runs the fewest builds goes first,
// then the one whose account was served longest ago (never before counts
// as longest), then the oldest.
func (q *fairQueue) next(unfinished []*store.Push) *store.Push {
	heads := map[string]*store.Push{}
	var order []string // accounts by their oldest queued push
	for _, pu := range unfinished {
		if pu.Status != store.PushQueued {
			continue
		}
		if _, ok := heads[pu.AccountID]; !ok {
			heads[pu.AccountID] = pu
			order = append(order, pu.AccountID)
		}
	}
	// Forget the turns of accounts with nothing queued or running, so that
	// the map stays as small as the queue.
	for a := range q.served {
		if heads[a] == nil && q.running[a] == 0 {
			delete(q.served, a)
		}
	}
	best := ""
	for _, a := range order {
		if q.running[a] >= q.perAccount {
			continue
		}
		if best == "" || q.running[a] < q.running[best] ||
			(q.running[a] == q.running[best] && q.served[a] < q.served[best]) {
			best = a
		}
	}
	if best == "" {
		return nil
	}
	return heads[best]
}

// started records that a build of account began.
func (q *fairQueue) started(account string) {
	q.turn++
	q.served[account] = q.turn
	q.running[account]++
}

// ended records that a build of account ended.
func (q *fairQueue) ended(account string) {
	if q.running[account]--; q.running[account] <= 0 {
		delete(q.running, account)
	}
}
