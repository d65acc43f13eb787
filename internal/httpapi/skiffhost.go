package httpapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"

	"github.com/skiffhq/skiff/internal/fault"
)

// hostInstaller is the POSIX sh installer served at GET /skiff-host. The
// test suite holds it to shellcheck.
//
//go:embed skiffhost.sh
var hostInstaller string

// HostInstaller returns the installer as served for a controller at url.
func HostInstaller(url string) string {
	return strings.Replace(hostInstaller, "@CONTROLLER@", url, 1)
}

// safeHost is what a Host header may hold to be written into the script
// between single quotes.
var safeHost = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]+)?$`)

// skiffHost serves the installer with this controller's address in it (as
// the request reached it; --controller on the script overrides it).
func (s *Server) skiffHost(w http.ResponseWriter, r *http.Request) error {
	url := ""
	if safeHost.MatchString(r.Host) {
		scheme := "http"
		if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
			scheme = "https"
		}
		url = scheme + "://" + r.Host
	}
	w.Header().Set("Content-Type", "text/x-shellscript; charset=utf-8")
	_, err := io.WriteString(w, HostInstaller(url))
	return err
}

// skiffHostBin serves the binaries the installer fetches: {os}-{arch} is
// this server's own skiff binary, runsc-{os}-{arch} its runsc; a .sha256
// suffix answers the hex sha256 instead. Only this server's own platform
// is served.
func (s *Server) skiffHostBin(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("file")
	name, sum := strings.CutSuffix(name, ".sha256")
	platform := runtime.GOOS + "-" + runtime.GOARCH
	var path string
	switch name {
	case platform:
		path = s.hostBinary
	case "runsc-" + platform:
		path = s.runscBinary
	}
	if path == "" {
		return fault.New(fault.KindNotFound, "no_binary", "This controller serves only "+platform+" and runsc-"+platform+".",
			"no binary %q here", name)
	}
	f, err := os.Open(path)
	if err != nil {
		return fault.New(fault.KindUnavailable, "binary_unavailable", "Ask the operator to check the server's binaries.",
			"%s is not available on this controller", name).With("cause", err.Error())
	}
	defer f.Close()
	if sum {
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return fmt.Errorf("hash %s: %w", path, err)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, err = io.WriteString(w, hex.EncodeToString(h.Sum(nil))+"\n")
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return nil
}
