// Package agenthttp is the host's client adapter for agentproto: the
// agent's Controller over HTTP. The agent itself speaks to a Controller and
// never imports net/http.
package agenthttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/skiffhq/skiff/internal/agent"
	"github.com/skiffhq/skiff/internal/agentproto"
)

var _ agent.Controller = (*Client)(nil)

// Client speaks agentproto over HTTP to a controller.
type Client struct {
	// BaseURL is the controller's origin, e.g. "https://skiff.example"
	// or "http://127.0.0.1:8080" for the local host.
	BaseURL string
	// Token is the host token, sent as a Bearer credential. Never logged.
	Token string
	// Client defaults to NewHTTPClient: no overall timeout (poll
	// requests long-poll, and the agent bounds every call with its
	// context), no redirects followed.
	Client *http.Client
}

// StatusError is a non-2xx answer from the controller.
type StatusError struct {
	StatusCode int
	Code       string // agentproto.ErrorResponse.Code, if the body had one
	Message    string
}

func (e *StatusError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("controller answered %d %s: %s", e.StatusCode, e.Code, e.Message)
	}
	return fmt.Sprintf("controller answered %d: %s", e.StatusCode, e.Message)
}

// Is makes an unknown-host answer match agent.ErrUnknownHost.
func (e *StatusError) Is(target error) bool {
	return target == agent.ErrUnknownHost && e.StatusCode == http.StatusNotFound && e.Code == agentproto.CodeUnknownHost
}

func (c *Client) Register(ctx context.Context, req *agentproto.RegisterRequest) (*agentproto.RegisterResponse, error) {
	var resp agentproto.RegisterResponse
	if err := c.post(ctx, agentproto.RegisterPath, req, &resp); err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	return &resp, nil
}

func (c *Client) Poll(ctx context.Context, req *agentproto.PollRequest) (*agentproto.PollResponse, error) {
	var resp agentproto.PollResponse
	if err := c.post(ctx, agentproto.PollPath, req, &resp); err != nil {
		return nil, fmt.Errorf("poll: %w", err)
	}
	return &resp, nil
}

// Report posts ev. A 409 or 410 answer means the controller already has the
// event or no longer wants it, and counts as acknowledged.
func (c *Client) Report(ctx context.Context, ev *agentproto.AttemptEvent) error {
	var resp agentproto.EventResponse
	err := c.post(ctx, agentproto.AttemptEventsURLPath(url.PathEscape(ev.AttemptID)), ev, &resp)
	if se, ok := err.(*StatusError); ok && (se.StatusCode == http.StatusConflict || se.StatusCode == http.StatusGone) {
		return fmt.Errorf("report %s event %d of %s: %w", ev.Kind, ev.Seq, ev.AttemptID, agent.ErrAttemptEnded)
	}
	if err != nil {
		return fmt.Errorf("report %s event %d of %s: %w", ev.Kind, ev.Seq, ev.AttemptID, err)
	}
	return nil
}

// maxResponseBytes bounds what the agent reads of one answer.
const maxResponseBytes = 64 << 20

func (c *Client) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set(agentproto.VersionHeader, fmt.Sprint(agentproto.ProtocolVersion))
	client := c.Client
	if client == nil {
		client = NewHTTPClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		se := &StatusError{StatusCode: resp.StatusCode}
		var er agentproto.ErrorResponse
		if json.Unmarshal(data, &er) == nil && (er.Code != "" || er.Message != "") {
			se.Code, se.Message = er.Code, er.Message
		} else {
			se.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
		}
		return se
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

var _ agent.ArtifactTransfer = (*Client)(nil)

// FetchInput streams one input of an attempt from the controller; an
// external input comes from its own URL, which the controller checked when
// it was registered.
func (c *Client) FetchInput(ctx context.Context, attemptID string, in agentproto.InputArtifact, w io.Writer) error {
	if err := c.download(ctx, agentproto.AttemptInputURLPath(url.PathEscape(attemptID), url.PathEscape(in.ID)), w); err != nil {
		return fmt.Errorf("input %s: %w", in.ID, err)
	}
	return nil
}

// download streams the answer to GET path on the controller into w.
func (c *Client) download(ctx context.Context, path string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	return nil
}

var _ agent.ImageTransfer = (*Client)(nil)

// FetchImage streams an attempt's image, the tar of its OCI layout, from
// urlPath on the controller (Assignment.ImageURL: a path, so that a host
// failing over to another controller fetches from that one).
func (c *Client) FetchImage(ctx context.Context, urlPath string, w io.Writer) error {
	if !strings.HasPrefix(urlPath, "/") {
		return fmt.Errorf("image URL %q: want a path on the controller", urlPath)
	}
	if err := c.download(ctx, urlPath, w); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

// UploadArtifact streams one file of an attempt to the controller.
func (c *Client) UploadArtifact(ctx context.Context, p *agent.UploadParams) (*agentproto.UploadedArtifact, error) {
	q := url.Values{"path": {p.Path}, "kind": {p.Kind}}
	u := strings.TrimRight(c.BaseURL, "/") + agentproto.AttemptArtifactsURLPath(url.PathEscape(p.AttemptID)) + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, p.Body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = p.Size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out agentproto.UploadedArtifact
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode upload answer: %w", err)
	}
	return &out, nil
}

// do sends req with the host's credentials and turns a non-2xx answer into
// a StatusError.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set(agentproto.VersionHeader, fmt.Sprint(agentproto.ProtocolVersion))
	client := c.Client
	if client == nil {
		client = NewHTTPClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	se := &StatusError{StatusCode: resp.StatusCode}
	var er agentproto.ErrorResponse
	if json.Unmarshal(data, &er) == nil && (er.Code != "" || er.Message != "") {
		se.Code, se.Message = er.Code, er.Message
	} else {
		se.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
	}
	return nil, se
}
