package httpapi

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/skiffhq/skiff/internal/fault"
)

// largeBodyBudget bounds the bytes of large submission bodies (over
// MaxJSONBody) the server holds at once. A body is held whole while it is
// decoded (an Idempotency-Key hashes its exact bytes), and one client may
// hold hundreds of connections: without a budget, 256 batches of 32 MiB
// would ask for 8 GiB. Small bodies never wait on it.
const largeBodyBudget = 256 << 20

// largeBodyRetryAfter is the Retry-After of a 503 past the budget.
const largeBodyRetryAfter = 1

// bodyBudget counts the bytes of large bodies in flight.
type bodyBudget struct {
	mu    sync.Mutex
	inUse int64
}

// reserve takes a large body's share of the budget before a byte of it is
// read: its Content-Length, or maxBytes when it declares none. A body of
// at most MaxJSONBody takes nothing. release gives the share back.
func (b *bodyBudget) reserve(w http.ResponseWriter, r *http.Request, maxBytes int64) (release func(), err error) {
	n := r.ContentLength
	if n < 0 || n > maxBytes {
		n = maxBytes // chunked, or over the cap (refused by the reader)
	}
	if n <= MaxJSONBody {
		return func() {}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inUse+n > largeBodyBudget {
		w.Header().Set("Retry-After", strconv.Itoa(largeBodyRetryAfter))
		return nil, fault.New(fault.KindUnavailable, "server_busy",
			"The server is reading other large submissions; retry in a second, or send smaller ones (large inputs belong in artifacts).",
			"large request bodies in flight would pass %d MiB", largeBodyBudget>>20)
	}
	b.inUse += n
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.inUse -= n
			b.mu.Unlock()
		})
	}, nil
}
