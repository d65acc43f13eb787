package agenthttp

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agentproto"
)

// Failover speaks to the first of several controllers (one PostgreSQL
// behind them all) that answers. A call that fails without an answer (the
// connection refused or cut) moves it to the next controller for the
// following calls; the agent's own backoff with jitter spaces the retries.
// An answer, even an error status, means the controller is up: it stays.
type Failover struct {
	mu      sync.Mutex
	clients []*Client
	cur     int
}

// NewFailover returns a Failover over baseURLs, all with one token.
func NewFailover(baseURLs []string, token string) *Failover {
	f := &Failover{}
	for _, u := range baseURLs {
		f.clients = append(f.clients, &Client{BaseURL: u, Token: token})
	}
	return f
}

var (
	_ agent.Controller       = (*Failover)(nil)
	_ agent.ArtifactTransfer = (*Failover)(nil)
	_ agent.ImageTransfer    = (*Failover)(nil)
)

// current is the controller in use.
func (f *Failover) current() *Client {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clients[f.cur]
}

// done moves past c when err says c did not answer.
func (f *Failover) done(ctx context.Context, c *Client, err error) {
	var se *StatusError
	if err == nil || errors.As(err, &se) || ctx.Err() != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clients[f.cur] == c {
		f.cur = (f.cur + 1) % len(f.clients)
	}
}

func (f *Failover) Register(ctx context.Context, req *agentproto.RegisterRequest) (*agentproto.RegisterResponse, error) {
	c := f.current()
	resp, err := c.Register(ctx, req)
	f.done(ctx, c, err)
	return resp, err
}

func (f *Failover) Poll(ctx context.Context, req *agentproto.PollRequest) (*agentproto.PollResponse, error) {
	c := f.current()
	resp, err := c.Poll(ctx, req)
	f.done(ctx, c, err)
	return resp, err
}

func (f *Failover) Report(ctx context.Context, ev *agentproto.AttemptEvent) error {
	c := f.current()
	err := c.Report(ctx, ev)
	f.done(ctx, c, err)
	return err
}

func (f *Failover) FetchInput(ctx context.Context, attemptID string, in agentproto.InputArtifact, w io.Writer) error {
	c := f.current()
	err := c.FetchInput(ctx, attemptID, in, w)
	f.done(ctx, c, err)
	return err
}

func (f *Failover) UploadArtifact(ctx context.Context, p *agent.UploadParams) (*agentproto.UploadedArtifact, error) {
	c := f.current()
	up, err := c.UploadArtifact(ctx, p)
	f.done(ctx, c, err)
	return up, err
}

func (f *Failover) FetchImage(ctx context.Context, urlPath string, w io.Writer) error {
	c := f.current()
	err := c.FetchImage(ctx, urlPath, w)
	f.done(ctx, c, err)
	return err
}
