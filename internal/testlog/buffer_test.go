package testlog

import (
	"fmt"
	"sync"
	"testing"
)

func TestBufferTail(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { fmt.Fprintf(&b, "line %d\n", i) })
	}
	wg.Wait()
	if got := len(b.String()); got != 4*len("line 0\n") {
		t.Errorf("got %d bytes, want every line", got)
	}
	b = Buffer{}
	fmt.Fprint(&b, "a\nb\nc\nd")
	for n, want := range map[int]string{0: "", 1: "d", 2: "c\nd", 9: "a\nb\nc\nd"} {
		if got := b.Tail(n); got != want {
			t.Errorf("Tail(%d) = %q, want %q", n, got, want)
		}
	}
	if got := new(Buffer).Tail(3); got != "" {
		t.Errorf("empty Tail = %q", got)
	}
}
