package project

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// Shared-state limits (the spec leaves them open; docs/projects.md states them).
const (
	MaxKVKeyBytes   = 256
	MaxKVValueBytes = 256 << 10
	MaxKVTTLS       = 365 * 24 * 3600
	DefaultKVLimit  = 100
	MaxKVLimit      = 1000
)

func validKey(key string) error {
	switch {
	case key == "" || len(key) > MaxKVKeyBytes:
		return fault.Invalid("invalid_key", "Use a key of 1-256 bytes.", "key must be 1-256 bytes")
	case !utf8.ValidString(key):
		return fault.Invalid("invalid_key", "Use UTF-8 keys.", "key must be valid UTF-8")
	case strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0x10FFFF }):
		return fault.Invalid("invalid_key", "Remove control characters from the key.", "key may not contain control characters")
	}
	return nil
}

// KVPut writes one value.
func (s *Service) KVPut(ctx context.Context, p *store.Project, key string, w *apiv1.KVWrite) (*store.KVEntry, error) {
	if err := validKey(key); err != nil {
		return nil, err
	}
	if len(w.Value) == 0 {
		return nil, fault.Invalid("missing_value", `Send {"value": <any JSON>} (null is a value).`, "value is required")
	}
	if len(w.Value) > MaxKVValueBytes {
		return nil, fault.Invalid("value_too_large", "Store large data as an artifact and keep its id here.",
			"value is %d bytes; at most %d", len(w.Value), MaxKVValueBytes)
	}
	now := s.clock.Now()
	var exp *time.Time
	if w.TTLS != nil {
		if *w.TTLS <= 0 || *w.TTLS > MaxKVTTLS {
			return nil, fault.Invalid("invalid_ttl", "Use a ttl_s between 1 and 31536000, or omit it.", "ttl_s must be a positive integer of at most one year")
		}
		e := now.Add(time.Duration(*w.TTLS) * time.Second)
		exp = &e
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, w.Value); err != nil {
		return nil, fault.Invalid("invalid_value", "Send valid JSON.", "value is not valid JSON")
	}
	unlock := s.quotaLocks.lock(p.AccountID)
	defer unlock()
	old, err := s.store.KVGet(ctx, p.ID, key, now)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("kv get: %w", err)
	}
	var oldBytes int64
	if old != nil {
		oldBytes = int64(len(old.Value))
	}
	if err := s.checkKVQuota(ctx, p.AccountID, oldBytes, old == nil, int64(compact.Len())); err != nil {
		return nil, err
	}
	e, err := s.store.KVPut(ctx, &store.KVPutParams{ProjectID: p.ID, Key: key, Value: json.RawMessage(compact.Bytes()),
		TTLS: w.TTLS, ExpiresAt: exp, Now: now})
	if err != nil {
		return nil, fmt.Errorf("kv put: %w", err)
	}
	return e, nil
}

// KVGet reads one value; an expired one is not found.
func (s *Service) KVGet(ctx context.Context, p *store.Project, key string) (*store.KVEntry, error) {
	if err := validKey(key); err != nil {
		return nil, err
	}
	e, err := s.store.KVGet(ctx, p.ID, key, s.clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.NotFound("key", key)
	}
	if err != nil {
		return nil, fmt.Errorf("kv get: %w", err)
	}
	return e, nil
}

// KVList lists values by key prefix, in key order.
func (s *Service) KVList(ctx context.Context, p *store.Project, prefix string, limit int) ([]*store.KVEntry, error) {
	if len(prefix) > MaxKVKeyBytes {
		return nil, fault.Invalid("invalid_prefix", "Use a prefix of at most 256 bytes.", "prefix too long")
	}
	// No key holds invalid UTF-8 or control characters (validKey), and
	// PostgreSQL refuses them in text: such a prefix is a client error, not a
	// store failure.
	if prefix != "" {
		if err := validKey(prefix); err != nil {
			return nil, fault.Invalid("invalid_prefix", "Use a UTF-8 prefix without control characters.",
				"prefix must be UTF-8 without control characters")
		}
	}
	es, err := s.store.KVList(ctx, &store.KVListParams{ProjectID: p.ID, Prefix: prefix, Limit: limit, Now: s.clock.Now()})
	if err != nil {
		return nil, fmt.Errorf("kv list: %w", err)
	}
	return es, nil
}

// KVDelete removes one value.
func (s *Service) KVDelete(ctx context.Context, p *store.Project, key string) error {
	if err := validKey(key); err != nil {
		return err
	}
	err := s.store.KVDelete(ctx, p.ID, key, s.clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		return fault.NotFound("key", key)
	}
	if err != nil {
		return fmt.Errorf("kv delete: %w", err)
	}
	return nil
}

// KVView renders an entry for the API.
func KVView(project string, e *store.KVEntry) *apiv1.KVEntry {
	return &apiv1.KVEntry{Project: project, Key: e.Key, Value: e.Value, UpdatedAt: e.UpdatedAt, TTLS: e.TTLS,
		Meta: apiv1.KVMeta{CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, SizeBytes: len(e.Value)}}
}
