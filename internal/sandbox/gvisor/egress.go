package gvisor

import "context"

// Egress provides network namespaces for attempts that ask for a network.
//
// runsc's sandbox network copies the interfaces of the namespace the
// sandbox starts in and removes their IP addresses from the host side, so
// each attempt needs a namespace of its own (typically one end of a veth
// pair routed and NATed by the host, with the host's own and metadata
// addresses filtered). How that is wired is the operator's policy, so the
// driver only asks for a namespace.
type Egress interface {
	// Acquire returns the path of a network namespace (for example
	// /run/netns/skiff-<id>) that the attempt's sandbox may take over
	// exclusively, and a release function the driver calls once the
	// sandbox is gone.
	Acquire(ctx context.Context, attemptID string) (nsPath string, release func(context.Context) error, err error)
}
