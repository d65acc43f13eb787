package agent

import (
	"math/rand/v2"
	"time"
)

// backoff is exponential backoff with jitter: the n-th delay is drawn
// uniformly from [d/2, d] with d = min*2^n capped at max, so that hosts
// that lost the controller together do not come back together.
type backoff struct{ n int }

func (b *backoff) next(minD, maxD time.Duration) time.Duration {
	d := minD
	for i := 0; i < b.n && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	if b.n < 62 {
		b.n++
	}
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

func (b *backoff) reset() { b.n = 0 }
