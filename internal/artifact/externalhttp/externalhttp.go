// Package externalhttp fetches external artifacts over HTTP: the adapter
// behind artifact.Fetcher.
package externalhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
)

// Fetcher is artifact.Fetcher over HTTP(S).
type Fetcher struct{}

var _ artifact.Fetcher = Fetcher{}

// Fetch opens rawURL. Its dialer checks each address it connects to
// (redirects and DNS answers included), so a name that resolved to a public
// address at registration cannot later lead to a private one.
func (Fetcher) Fetch(ctx context.Context, rawURL string, refused func(netip.Addr) string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client(refused).Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s answered %d", req.URL.Host, resp.StatusCode)
	}
	return resp.Body, nil
}

func client(refused func(netip.Addr) string) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if why := refused(ap.Addr()); why != "" {
			return errors.New("refused: " + why)
		}
		return nil
	}}
	return &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, TLSHandshakeTimeout: 30 * time.Second,
			ResponseHeaderTimeout: time.Minute},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to scheme %q refused", req.URL.Scheme)
			}
			return nil
		},
	}
}
