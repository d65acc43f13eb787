package fleet

import (
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/fault"
)

// The failures a host's request meets. Their kinds choose the status code
// in the HTTP adapter's one mapping; their codes and messages are the
// agentproto.ErrorResponse a host reads, and the codes hosts act on
// (agentproto.CodeUnknownHost, agentproto.CodeUnsupportedVersion) are
// agentproto's.
var (
	errUnauthorized = fault.New(fault.KindUnauthenticated, "unauthorized", "", "unknown host token")
	errUnknownHost  = fault.New(fault.KindNotFound, agentproto.CodeUnknownHost, "", "register again")
	errWrongHost    = fault.New(fault.KindForbidden, "forbidden", "", "request names another host than its token")
	errVersion      = fault.New(fault.KindUpgradeRequired, agentproto.CodeUnsupportedVersion, "", "unsupported protocol version")
	errGone         = fault.New(fault.KindGone, "gone", "", "attempt is not this host's or no longer exists")
	errDuplicate    = fault.New(fault.KindConflict, "duplicate", "", "event already recorded")
)

// badEvent reports an event the controller cannot read.
func badEvent(format string, args ...any) *fault.Error {
	return fault.New(fault.KindBadRequest, "bad_request", "", "malformed event: "+format, args...)
}
