package build

import (
	"maps"
	"sync"
)

// maxCachedTreeEntries bounds the tree cache: about 150 bytes an entry, so
// some 45 MB, room for a handful of revisions of a large image.
const maxCachedTreeEntries = 300_000

// treeCache keeps recently flattened image trees by layer chain (layout of
// the key: validate.go), most recent last. Rebuilds share all but their top
// layers, so the longest cached prefix usually covers most of an image.
type treeCache struct {
	mu      sync.Mutex
	max     int
	entries []cachedTree
	size    int
}

type cachedTree struct {
	chain string
	tree  imageTree
}

func newTreeCache(max int) *treeCache { return &treeCache{max: max} }

// longestPrefix returns how many of chains the returned tree already covers,
// and a copy of that tree that the caller may change (a fresh one when none
// is cached).
func (c *treeCache) longestPrefix(chains []string) (int, imageTree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(chains) - 1; i >= 0; i-- {
		for j := len(c.entries) - 1; j >= 0; j-- {
			if c.entries[j].chain == chains[i] {
				hit := c.entries[j]
				c.entries = append(append(c.entries[:j:j], c.entries[j+1:]...), hit)
				return i + 1, maps.Clone(hit.tree)
			}
		}
	}
	return 0, newImageTree()
}

// add stores a copy of tree under chain, evicting the oldest trees beyond the
// size bound.
func (c *treeCache) add(chain string, tree imageTree) {
	if len(tree) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.chain == chain {
			return
		}
	}
	c.entries = append(c.entries, cachedTree{chain: chain, tree: maps.Clone(tree)})
	c.size += len(tree)
	for c.size > c.max && len(c.entries) > 0 {
		c.size -= len(c.entries[0].tree)
		c.entries = c.entries[1:]
	}
}
