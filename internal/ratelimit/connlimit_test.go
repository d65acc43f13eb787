package ratelimit

import (
	"io"
	"net"
	"net/netip"
	"testing"
)

// fakeListener hands out the connections of its channel; each is one end
// of a net.Pipe whose RemoteAddr is a synthetic client address.
type fakeListener struct{ conns chan net.Conn }

func (l *fakeListener) Accept() (net.Conn, error) {
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}
func (l *fakeListener) Close() error   { return nil }
func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{} }

type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// dial queues a connection from ip and returns the client's end.
func (l *fakeListener) dial(ip string) net.Conn {
	server, client := net.Pipe()
	l.conns <- addrConn{Conn: server, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 4000}}
	return client
}

func TestLimitListenerCapsTotalAndPerClient(t *testing.T) {
	t.Parallel()
	fl := &fakeListener{conns: make(chan net.Conn, 16)}
	var refused []string
	ln := LimitListener(fl, ConnLimits{Max: 3, PerClient: 2, Exempt: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")},
		Refusal: []byte("no\n"), OnRefuse: func(_, limit string) { refused = append(refused, limit) }})

	accept := func(ip string) (net.Conn, net.Conn) {
		t.Helper()
		client := fl.dial(ip)
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c, client
	}
	a1, _ := accept("2001:db8:1:2::1")
	accept("2001:db8:1:2::2")
	// A third address of the same /64 is the same client: refused, told
	// why, and the next connection in line is accepted instead.
	refusedClient := fl.dial("2001:db8:1:2::3")
	b, _ := accept("10.0.0.1") // a trusted proxy: exempt from the per-client cap
	if got, _ := io.ReadAll(refusedClient); string(got) != "no\n" {
		t.Errorf("refused connection read %q, want the refusal", got)
	}
	if len(refused) != 1 || refused[0] != "client" {
		t.Fatalf("refusals: got %v, want [client]", refused)
	}
	// Three held: the next one, from anyone, is over the total; once a
	// slot is freed a new one is accepted.
	next := make(chan net.Conn, 1)
	over := fl.dial("198.51.100.7")
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		next <- c
	}()
	if got, _ := io.ReadAll(over); string(got) != "no\n" {
		t.Errorf("over the total: read %q, want the refusal", got)
	}
	a1.Close()
	fl.dial("198.51.100.8")
	c := <-next
	if len(refused) != 2 || refused[1] != "total" {
		t.Errorf("refusals: got %v, want [client total]", refused)
	}
	c.Close()
	b.Close()
	a1.Close() // a second Close frees nothing more
	ll := ln.(*limitListener)
	if ll.total != 1 || ll.perClient["2001:db8:1:2::/64"] != 1 {
		t.Errorf("after closes: total %d, per client %v; want 1 and the /64 at 1", ll.total, ll.perClient)
	}
}
