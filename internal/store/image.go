package store

import (
	"context"
	"time"
)

// ImageRecord is an image the image sweep knows: when something last
// referred to it (or when it was first found or published).
type ImageRecord struct {
	Digest       string // sha256:<hex> of the manifest
	ReferencedAt time.Time
}

// ImageStore keeps what the image sweep needs to delete images nothing
// refers to, after a grace period (imagestore.Sweeper).
type ImageStore interface {
	// ImageDigestsInUse lists the image digests something refers to now:
	// each project's published revision (its newest published push), the
	// revision of every planning, queued or running job, and that of every
	// open (assigned or running) attempt. Unordered, without duplicates.
	ImageDigestsInUse(ctx context.Context) ([]string, error)
	// ImagesSeen records that inUse are referenced at at (a row's time
	// only moves forward) and that found exist (a new row starts its grace
	// at at; a known one is left as it is).
	ImagesSeen(ctx context.Context, inUse, found []string, at time.Time) error
	// ImageList is every known image, least recently referenced first.
	ImageList(ctx context.Context) ([]ImageRecord, error)
	// ImageForget removes the image's row if it was last referenced before
	// before, and says whether it did: false means something referred to
	// it meanwhile (or it is gone already), and it must be kept.
	ImageForget(ctx context.Context, digest string, before time.Time) (bool, error)
}
