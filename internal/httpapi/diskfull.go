package httpapi

import (
	"net/http"
	"strings"

	"github.com/skiffhq/skiff/internal/fault"
)

// The free-disk watermark of the controller's data dir (Config.DiskFree):
// under it the requests that would store more (pushes, uploads, KV
// writes, submissions, new projects) are refused with 507, so that the
// disk the database lives on never fills; reads, deletions and cancels,
// which free space or cost none, still work.

// growsStorage reports whether rt stores more when it succeeds.
func growsStorage(rt route) bool {
	if rt.access != write || rt.method == http.MethodDelete {
		return false
	}
	for _, frees := range []string{"/cancel", "/cancel-queued", "/invalidate"} {
		if strings.HasSuffix(rt.pattern, frees) {
			return false
		}
	}
	// The retired upload paths store nothing: they answer 410 always.
	return !strings.HasPrefix(rt.pattern, "/api/v1/artifacts/direct") && !strings.HasPrefix(rt.pattern, "/api/v1/artifacts/multipart")
}

// errDiskFull is the 507 of a write refused under the watermark.
// It says nothing of the disk's path or figures: those are the
// operator's, logged beside it.
func errDiskFull() error {
	return fault.New(fault.KindQuotaExceeded, "insufficient_storage",
		"The service is low on disk and takes no new data for now; retry later. Reads, deletions and cancels still work, and deleting artifacts you no longer need helps. Operators: free space on the data dir or lower --min-free-disk (see /docs/hosting).",
		"the service is low on disk space and refuses writes until space is freed").
		With("reason", "disk_below_watermark")
}

// refuseWhenDiskLow wraps a route that grows storage.
func (s *Server) refuseWhenDiskLow(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if low, why := s.diskFree.Low(); low {
			s.log.WarnContext(r.Context(), "write refused: data dir low on disk", "method", r.Method, "path", r.URL.Path, "why", why)
			return errDiskFull()
		}
		return h(w, r)
	}
}
