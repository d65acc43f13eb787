package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/duty"
	"github.com/skiffhq/skiff/internal/fleet"
	"github.com/skiffhq/skiff/internal/store"
)

// Names of the singleton duties (docs/scaling.md): on PostgreSQL each runs
// on one controller at a time.
const (
	dutyBuilds     = "builds"      // the build queue, with its restart recovery
	dutyFleetSweep = "fleet-sweep" // orphaned attempts of hosts alive nowhere
	dutySweeps     = "sweeps"      // artifact grace and job retention
	dutyPayments   = "payments"    // finishing settlements left pending
	dutyPriceFeed  = "price-feed"  // polling the price feed
	// dutyImages ("images", images.go): deleting unreferenced images.
)

// duties is how this controller shares singleton work with the others on
// its store: leases on PostgreSQL, everything here on SQLite.
type duties struct {
	runner *duty.Runner
	// shared is set when other controllers may share the store.
	shared bool
	// presence shares which hosts are alive; nil with one controller.
	presence fleet.Presence
}

func newDuties(db store.Store, shared bool, ttl time.Duration, clk clock.Clock, log *slog.Logger) *duties {
	if !shared {
		return &duties{runner: duty.New(duty.Config{Holder: "local", Clock: clk, Log: log})}
	}
	holder := controllerName()
	log.Info("sharing duties with the other controllers on the store", "holder", holder, "lease", ttl.String())
	return &duties{
		shared:   true,
		runner:   duty.New(duty.Config{Leases: db, Holder: holder, Clock: clk, TTL: ttl, Log: log}),
		presence: &duty.Presence{Store: db, Holder: holder, Prefix: "host:"},
	}
}

// controllerName is unique per process: the host name, the pid and a
// random suffix, so that the logs and the lease table say who holds what.
func controllerName() string {
	h, err := os.Hostname()
	if err != nil {
		h = "controller"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", h, os.Getpid(), hex.EncodeToString(b))
}
