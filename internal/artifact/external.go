package artifact

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/netguard"
	"github.com/skiffhq/skiff/internal/store"
)

// ExternalParams registers an http(s) URL as an artifact.
type ExternalParams struct {
	AccountID string
	Filename  string
	URL       string
	SHA256    string // optional; verified when a task downloads it
}

func badURL(format string, args ...any) *fault.Error {
	return fault.Invalid("invalid_artifact_url",
		"Register a plain http:// or https:// URL without credentials, on a public address.",
		format, args...).With("field", "url")
}

// refusedAddr says why ip may not be reached, or "" when it may.
func (s *Service) refusedAddr(ip netip.Addr) string {
	if s.allowPrivate {
		return ""
	}
	return netguard.RefusedAddr(ip)
}

// checkURL validates an external URL's form and where its host resolves.
func (s *Service) checkURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return nil, badURL("url %q is not a URL", raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, badURL("url scheme %q is not http or https", u.Scheme)
	case u.User != nil:
		return nil, badURL("url carries credentials; they would be stored and shown")
	case u.Hostname() == "":
		return nil, badURL("url has no host")
	case u.Fragment != "":
		u.Fragment = ""
	}
	if s.allowPrivate {
		return u, nil
	}
	host := u.Hostname()
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupNetIP(lctx, "ip", host)
		if err != nil {
			return nil, badURL("url host %q does not resolve", host)
		}
		ips = addrs
	}
	for _, ip := range ips {
		if why := s.refusedAddr(ip); why != "" {
			return nil, fault.Invalid("artifact_url_refused",
				"Register a URL on a public address; an operator may allow private ones with --artifact-external-allow-private.",
				"url host %q resolves to %s", host, why).With("field", "url")
		}
	}
	return u, nil
}

// RegisterExternal records an http(s) URL as an artifact without fetching
// it. It costs no quota: its bytes are not kept here.
func (s *Service) RegisterExternal(ctx context.Context, p *ExternalParams) (*store.Artifact, error) {
	sha := strings.ToLower(strings.TrimSpace(p.SHA256))
	if sha != "" && !ValidDigest(sha) {
		return nil, fault.Invalid("invalid_sha256", "Give the content's sha256 as 64 hex digits, or leave it out.",
			"sha256 %q is not 64 hex digits", p.SHA256).With("field", "sha256")
	}
	u, err := s.checkURL(ctx, strings.TrimSpace(p.URL))
	if err != nil {
		return nil, err
	}
	name := CleanFilename(p.Filename)
	if name == "" {
		name = CleanFilename(path.Base(u.Path))
	}
	return s.store.ArtifactCreate(ctx, &store.ArtifactCreateParams{ID: id.New(id.Artifact), AccountID: p.AccountID,
		SHA256: sha, Filename: name, Source: store.ArtifactExternal, URL: u.String(), Kind: store.ArtifactUpload,
		Now: s.clock.Now()})
}

// fetchExternal opens an external artifact's URL through the fetcher,
// which checks every address it connects to against refusedAddr.
func (s *Service) fetchExternal(ctx context.Context, a *store.Artifact) (io.ReadCloser, error) {
	if s.fetcher == nil {
		return nil, fmt.Errorf("fetch external artifact %s: this controller has no fetcher for external URLs", a.ID)
	}
	rc, err := s.fetcher.Fetch(ctx, a.URL, s.refusedAddr)
	if err != nil {
		return nil, fmt.Errorf("fetch external artifact %s: %w", a.ID, err)
	}
	return rc, nil
}
