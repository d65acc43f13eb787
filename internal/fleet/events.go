package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/store"
)

// Event records what a host reports of one of its attempts. Delivery is
// at least once, so a repeat is answered errDuplicate (409, which the host
// takes as an acknowledgement); an event for an attempt that is not the
// host's, or that the controller already ended (cancelled, declared lost),
// is answered errGone (410): the host stops it on its next poll.
func (c *Controller) Event(ctx context.Context, token, attemptID string, ev *agentproto.AttemptEvent) error {
	hostID, _, err := c.hostForToken(ctx, token)
	if err != nil {
		return err
	}
	if ev.HostID != hostID || ev.AttemptID != attemptID {
		return errWrongHost
	}
	a, err := c.st.AttemptGet(ctx, attemptID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.HostID != hostID) {
		return errGone
	}
	if err != nil {
		return fmt.Errorf("attempt %s: %w", attemptID, err)
	}
	if h := c.host(hostID); h != nil {
		c.seen(ctx, h)
	}
	open := a.Status == store.AttemptAssigned || a.Status == store.AttemptRunning
	switch ev.Kind {
	case agentproto.EventStarted:
		if a.Status != store.AttemptAssigned {
			return errDuplicate
		}
		err = c.jobs.AttemptStarted(ctx, a, c.clk.Now())
	case agentproto.EventProgress:
		if !open {
			return errGone
		}
		err = c.jobs.AttemptProgress(ctx, a, ev.Progress, ev.OutputTail)
	case agentproto.EventFinished:
		if ev.Outcome == nil {
			return badEvent("finished event without an outcome")
		}
		if !open {
			return errDuplicate
		}
		if h := c.host(hostID); h != nil {
			ev.Outcome.InferStartFailed(h.protocol)
		} else {
			// Unknown after a controller restart: an old host until it
			// registers again says otherwise.
			ev.Outcome.InferStartFailed(agentproto.MinProtocolVersion)
		}
		err = c.jobs.AttemptFinished(ctx, a, jobOutcome(ev.Outcome), ev.Progress, ev.OutputTail)
		if err == nil {
			c.log.Debug("attempt finished", "attempt_id", a.ID, "job_id", a.JobID, "exit_code", ev.Outcome.ExitCode,
				"host_error", ev.Outcome.HostError)
		}
	default:
		return badEvent("unknown event kind %q", ev.Kind)
	}
	if errors.Is(err, store.ErrConflict) {
		return errDuplicate
	}
	return err
}
