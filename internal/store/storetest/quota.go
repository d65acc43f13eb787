package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// quotaTests cover the reads the per-account quotas make (docs/security.md,
// fair shares): each counts one account's rows only.
var quotaTests = map[string]func(*testing.T, store.Store){
	"PushCountUnfinished": testPushCountUnfinished,
	"KVAccountUsage":      testKVAccountUsage,
}

func testPushCountUnfinished(t *testing.T, s store.Store) {
	a := tf.Account(t, s, nil)
	other := tf.Push(t, s, nil) // another account's
	count := func() int {
		t.Helper()
		n, err := s.PushCountUnfinished(ctx(t), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("fresh account counts %d unfinished pushes", n)
	}
	var pushes []*store.Push
	for _, name := range []string{"p1", "p2", "p3"} {
		p := tf.Project(t, s, &tf.ProjectOpts{AccountID: a.ID, Name: name})
		pushes = append(pushes, tf.Push(t, s, &tf.PushOpts{Project: p}))
	}
	if _, err := s.PushStart(ctx(t), pushes[0].ID, t0); err != nil { // building counts too
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Errorf("queued and building = %d, want 3", n)
	}
	finish(t, s, pushes[1], store.PushPublished)
	if _, err := s.PushFinish(ctx(t), &store.PushFinishParams{ID: pushes[0].ID, Status: store.PushFailed, Error: "x", Now: t0}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Errorf("after two ends = %d, want 1", n)
	}
	if n, err := s.PushCountUnfinished(ctx(t), other.AccountID); err != nil || n != 1 {
		t.Errorf("other account = %d, %v; want 1", n, err)
	}
}

func testKVAccountUsage(t *testing.T, s store.Store) {
	a := tf.Account(t, s, nil)
	p1 := tf.Project(t, s, &tf.ProjectOpts{AccountID: a.ID, Name: "one"})
	p2 := tf.Project(t, s, &tf.ProjectOpts{AccountID: a.ID, Name: "two"})
	stranger := tf.Project(t, s, nil)
	put := func(p *store.Project, key, value string, ttl int64) {
		t.Helper()
		params := &store.KVPutParams{ProjectID: p.ID, Key: key, Value: json.RawMessage(value), Now: t0}
		if ttl > 0 {
			exp := t0.Add(time.Duration(ttl) * time.Second)
			params.TTLS, params.ExpiresAt = &ttl, &exp
		}
		if _, err := s.KVPut(ctx(t), params); err != nil {
			t.Fatal(err)
		}
	}
	usage := func(at time.Time) store.KVUsage {
		t.Helper()
		u, err := s.KVAccountUsage(ctx(t), a.ID, at)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := usage(t0); u != (store.KVUsage{}) {
		t.Fatalf("empty account usage = %+v", u)
	}
	put(p1, "a", `"héllo"`, 0) // 8 bytes: é is two
	put(p2, "b", `[1,2,3]`, 0) // 7 bytes
	put(p2, "short", `1234`, 10)
	put(stranger, "a", `"not alice's"`, 0)
	if u := usage(t0); u != (store.KVUsage{Keys: 3, Bytes: 8 + 7 + 4}) {
		t.Errorf("usage = %+v, want 3 keys, 19 bytes", u)
	}
	put(p1, "a", `"x"`, 0) // an overwrite replaces the bytes
	if u := usage(t0.Add(time.Minute)); u != (store.KVUsage{Keys: 2, Bytes: 3 + 7}) {
		t.Errorf("after overwrite and expiry usage = %+v, want 2 keys, 10 bytes", u)
	}
}
