package store

import (
	"context"
	"encoding/json"
	"time"
)

// Project is a named, account-owned unit of code and its build settings.
// JSON-valued fields are kept as raw JSON: the store does not interpret them.
type Project struct {
	ID             string
	AccountID      string
	Name           string
	RemoteDir      string
	Env            json.RawMessage // object of string values
	SetupTimeoutS  int64
	RuntimeKind    string
	ImageRef       string // the user's optional declared reference (metadata only)
	ImageDigest    string
	Manifest       json.RawMessage
	CachePolicy    json.RawMessage
	RuntimeVersion int64
	ContentHash    string // hash of the latest published upload
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// ProjectWriteParams carries every metadata field; create and update both
// write all of them, the service merges partial updates beforehand.
type ProjectWriteParams struct {
	ID, AccountID  string
	Name           string
	RemoteDir      string
	Env            json.RawMessage
	SetupTimeoutS  int64
	RuntimeKind    string
	ImageRef       string
	ImageDigest    string
	Manifest       json.RawMessage
	CachePolicy    json.RawMessage
	RuntimeVersion int64
	Now            time.Time
}

// KVEntry is one value of a project's shared state.
type KVEntry struct {
	ProjectID string
	Key       string
	Value     json.RawMessage
	TTLS      *int64
	ExpiresAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

type KVPutParams struct {
	ProjectID string
	Key       string
	Value     json.RawMessage
	TTLS      *int64
	ExpiresAt *time.Time
	Now       time.Time
}

type KVListParams struct {
	ProjectID string
	Prefix    string
	Limit     int
	Now       time.Time // entries expired at Now are never returned
}

type ProjectStore interface {
	ProjectCreate(ctx context.Context, p *ProjectWriteParams) (*Project, error)
	// ProjectGetByName finds a project of one account; another account's
	// project is not found.
	ProjectGetByName(ctx context.Context, accountID, name string) (*Project, error)
	ProjectGetByID(ctx context.Context, id string) (*Project, error)
	ProjectList(ctx context.Context, accountID string) ([]*Project, error)
	// ProjectUpdate rewrites the metadata of project p.ID.
	ProjectUpdate(ctx context.Context, p *ProjectWriteParams) (*Project, error)
	// ProjectSetContentHash records the revision now active.
	ProjectSetContentHash(ctx context.Context, id, contentHash string, now time.Time) error
	ProjectDelete(ctx context.Context, id string) error
	// ProjectCacheEpoch is the project's cache-mount epoch (0 at first);
	// ProjectBumpCacheEpoch moves it on (invalidate) and returns the new
	// one. Hosts keep cache mounts per epoch, so a new one starts empty.
	ProjectCacheEpoch(ctx context.Context, id string) (int64, error)
	ProjectBumpCacheEpoch(ctx context.Context, id string, now time.Time) (int64, error)

	KVPut(ctx context.Context, p *KVPutParams) (*KVEntry, error)
	KVGet(ctx context.Context, projectID, key string, now time.Time) (*KVEntry, error)
	KVList(ctx context.Context, p *KVListParams) ([]*KVEntry, error)
	// KVDelete removes a key; deleting a missing or expired key is ErrNotFound.
	KVDelete(ctx context.Context, projectID, key string, now time.Time) error
	// KVAccountUsage counts the live (unexpired at now) keys of all of an
	// account's projects and the bytes of their values, for the account's
	// shared-state quota.
	KVAccountUsage(ctx context.Context, accountID string, now time.Time) (KVUsage, error)
}

// KVUsage is what an account's shared state holds.
type KVUsage struct {
	Keys  int64
	Bytes int64 // the values' stored JSON, in bytes
}
