package agenthttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// CheckControllerURL refuses a controller address a host must not speak
// to: anything but http(s), and plain http to anything but this machine
// (loopback) unless insecure says the operator accepts it. Over plain http
// on a network, the enrollment code, the host's credential and every
// tenant's payloads, inputs and outputs travel in the clear, and whoever
// sits in between can hand the host work of their own.
func CheckControllerURL(raw string, insecure bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("controller %q is not a URL such as https://skiff.example.com", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if insecure || Loopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("controller %s is plain http off this machine: the enrollment code, the host credential and the tasks' data would cross the network in the clear; use https (a TLS proxy in front of the controller), or pass --insecure-http on a network you trust", raw)
	}
	return fmt.Errorf("controller %q: want an https:// URL", raw)
}

// Loopback reports whether host (a name or an address, without a port)
// names this machine's loopback interface.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// errRedirect is the answer to any redirect from a controller: the host
// speaks to the address it was given, and a redirect could move its
// credential to plain http or to another party.
var errRedirect = errors.New("the controller answered with a redirect; a host follows none (give the controller's final https URL)")

// NewHTTPClient is the client a host speaks to its controllers with: no
// overall timeout (polls long-poll and the agent bounds each call
// with its context), and no redirects followed.
func NewHTTPClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect }}
}
