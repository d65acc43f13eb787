package ratelimit

import (
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// ConnLimits bound the connections a listener holds open at once.
type ConnLimits struct {
	// Max is the most connections held at once; 0: unlimited.
	Max int
	// PerClient is the most one client holds at once (an IPv4 address or
	// an IPv6 /64, as Key); 0: unlimited. Peers in Exempt (trusted
	// proxies, which carry many clients' connections) count only towards
	// Max.
	PerClient int
	Exempt    []netip.Prefix
	// Refusal is written to a connection past a limit before it is closed
	// (an HTTP response, so that the client reads why); nil closes it
	// silently.
	Refusal []byte
	// OnRefuse is told of each refused connection and which limit refused
	// it ("total" or "client"); nil: nothing.
	OnRefuse func(peer, limit string)
}

// refusalTimeout bounds how long a refused connection is kept to write
// the refusal and read what the client had sent: closing a socket with
// unread data makes the kernel answer with a reset, and the client would
// lose the refusal with it.
const refusalTimeout = 500 * time.Millisecond

// maxRefusing bounds the refused connections being answered at once; past
// it a refused connection is closed without an answer. So a flood costs
// at most this many short-lived goroutines.
const maxRefusing = 64

// LimitListener returns ln with l applied: Accept hands out a connection
// only while it is within the limits; one past them gets l.Refusal and is
// closed at once, in the accept loop, so a flood of connections costs no
// goroutine and no handler. A connection's slot is freed when it is
// closed.
func LimitListener(ln net.Listener, l ConnLimits) net.Listener {
	return &limitListener{Listener: ln, l: l, perClient: map[string]int{}, refusing: make(chan struct{}, maxRefusing)}
}

type limitListener struct {
	net.Listener
	l ConnLimits

	mu        sync.Mutex
	total     int
	perClient map[string]int
	refusing  chan struct{}
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, exempt := ll.clientOf(c)
		if limit := ll.take(key, exempt); limit != "" {
			ll.refuse(c, limit)
			continue
		}
		return &limitedConn{Conn: c, release: func() { ll.give(key, exempt) }}, nil
	}
}

// clientOf is the connection's client key and whether it is exempt from
// the per-client limit.
func (ll *limitListener) clientOf(c net.Conn) (string, bool) {
	peer := peerAddr(c.RemoteAddr().String())
	if !peer.IsValid() {
		return c.RemoteAddr().String(), false
	}
	return Key(peer.String()), isTrusted(peer, ll.l.Exempt)
}

// take claims a slot for key; it returns the limit that refuses it, "" when
// the slot is taken.
func (ll *limitListener) take(key string, exempt bool) string {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if ll.l.Max > 0 && ll.total >= ll.l.Max {
		return "total"
	}
	if !exempt && ll.l.PerClient > 0 && ll.perClient[key] >= ll.l.PerClient {
		return "client"
	}
	ll.total++
	if !exempt {
		ll.perClient[key]++
	}
	return ""
}

func (ll *limitListener) give(key string, exempt bool) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	ll.total--
	if exempt {
		return
	}
	if ll.perClient[key]--; ll.perClient[key] <= 0 {
		delete(ll.perClient, key)
	}
}

func (ll *limitListener) refuse(c net.Conn, limit string) {
	if ll.l.OnRefuse != nil {
		ll.l.OnRefuse(c.RemoteAddr().String(), limit)
	}
	if len(ll.l.Refusal) == 0 {
		_ = c.Close()
		return
	}
	select {
	case ll.refusing <- struct{}{}:
	default:
		_ = c.Close() // too many being answered already
		return
	}
	go func() {
		defer func() { <-ll.refusing }()
		_ = c.SetDeadline(time.Now().Add(refusalTimeout))
		_, _ = c.Write(ll.l.Refusal)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
			// Read until the client closes (or the deadline): the refusal
			// reaches it instead of a reset.
			_, _ = io.Copy(io.Discard, io.LimitReader(tc, 64<<10))
		}
		_ = c.Close()
	}()
}

// limitedConn frees its slot once, at the first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
