package project

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// queueOf makes queued pushes, oldest first, from "account/name" refs.
func queueOf(refs ...string) []*store.Push {
	t0 := time.Unix(1_700_000_000, 0)
	var out []*store.Push
	for i, r := range refs {
		var acct string
		fmt.Sscanf(r, "%1s", &acct)
		out = append(out, &store.Push{ID: r, AccountID: acct, Status: store.PushQueued, CreatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	return out
}

// drain runs the queue with workers slots where every started build ends
// before the next starts once all slots are full (the oldest running ends
// first), and returns the start order.
func drain(q *fairQueue, workers int, pushes []*store.Push) []string {
	var order, running []string
	for {
		for len(running) < workers {
			next := q.next(pushes)
			if next == nil {
				break
			}
			next.Status = store.PushBuilding
			q.started(next.AccountID)
			order = append(order, next.ID)
			running = append(running, next.ID)
		}
		if len(running) == 0 {
			return order
		}
		done := running[0]
		running = running[1:]
		for _, pu := range pushes {
			if pu.ID == done {
				pu.Status = store.PushPublished
				q.ended(pu.AccountID)
			}
		}
	}
}

func TestFairQueueTakesTurnsByAccount(t *testing.T) {
	cases := []struct {
		name       string
		workers    int
		perAccount int
		queue      []string
		want       []string
	}{{
		name: "one worker: accounts alternate, each in its own order", workers: 1, perAccount: 1,
		queue: []string{"a1", "a2", "a3", "a4", "b1", "c1", "b2"},
		want:  []string{"a1", "b1", "c1", "a2", "b2", "a3", "a4"},
	}, {
		name: "two workers, one per account: the late account starts at once", workers: 2, perAccount: 1,
		queue: []string{"a1", "a2", "a3", "b1"},
		want:  []string{"a1", "b1", "a2", "a3"},
	}, {
		name: "alone, an account may use every worker its cap allows", workers: 3, perAccount: 2,
		queue: []string{"a1", "a2", "a3"},
		want:  []string{"a1", "a2", "a3"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := drain(newFairQueue(tc.perAccount), tc.workers, queueOf(tc.queue...))
			if !slices.Equal(got, tc.want) {
				t.Errorf("start order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFairQueueHoldsAnAccountAtItsCap(t *testing.T) {
	q := newFairQueue(1)
	pushes := queueOf("a1", "a2")
	first := q.next(pushes)
	first.Status = store.PushBuilding
	q.started(first.AccountID)
	if next := q.next(pushes); next != nil {
		t.Errorf("with a1 running and one build per account, next = %s, want none", next.ID)
	}
	// Building pushes left by a previous run are not candidates either.
	if next := newFairQueue(1).next([]*store.Push{{ID: "x", AccountID: "x", Status: store.PushBuilding}}); next != nil {
		t.Errorf("a building push was picked: %s", next.ID)
	}
}

func TestFairQueueForgetsIdleAccounts(t *testing.T) {
	q := newFairQueue(1)
	order := drain(q, 1, queueOf("a1", "b1"))
	if !slices.Equal(order, []string{"a1", "b1"}) {
		t.Fatalf("order %v", order)
	}
	q.next(nil)
	if len(q.served) != 0 || len(q.running) != 0 {
		t.Errorf("an empty queue still remembers served %v, running %v", q.served, q.running)
	}
}
