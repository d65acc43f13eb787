package httpapi

import "sync"

// accountSlots counts what each account holds open of one kind of thing
// (streams, external downloads), so that one account cannot take it all.
type accountSlots struct {
	mu   sync.Mutex
	open map[string]int
}

// acquire takes one of the account's slots if it holds fewer than limit;
// release gives it back (once; later calls do nothing).
func (c *accountSlots) acquire(accountID string, limit int) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[string]int{}
	}
	if c.open[accountID] >= limit {
		return nil, false
	}
	c.open[accountID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.open[accountID]--; c.open[accountID] <= 0 {
				delete(c.open, accountID)
			}
		})
	}, true
}
