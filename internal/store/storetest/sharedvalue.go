package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

var sharedValueTests = map[string]func(*testing.T, store.Store){
	"SharedValueNewestWins": testSharedValueNewestWins,
}

func testSharedValueNewestWins(t *testing.T, s store.Store) {
	if _, err := s.SharedValueGet(ctx(t), "price_feed.rates"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get before any put: %v, want ErrNotFound", err)
	}
	put := func(value string, at time.Time) {
		t.Helper()
		if err := s.SharedValuePut(ctx(t), "price_feed.rates", []byte(value), at); err != nil {
			t.Fatal(err)
		}
	}
	want := func(value string, at time.Time) {
		t.Helper()
		v, err := s.SharedValueGet(ctx(t), "price_feed.rates")
		if err != nil || string(v.Value) != value || !v.UpdatedAt.Equal(at) || v.Name != "price_feed.rates" {
			t.Fatalf("get = %+v, %v; want %q at %s", v, err, value, at)
		}
	}
	put(`{"a":1}`, t0)
	want(`{"a":1}`, t0)
	put(`{"a":2}`, t0.Add(time.Second))
	want(`{"a":2}`, t0.Add(time.Second))
	// A late write of an older value (a holder that lost its duty) changes nothing.
	put(`{"a":0}`, t0)
	want(`{"a":2}`, t0.Add(time.Second))
	// Names are separate.
	if err := s.SharedValuePut(ctx(t), "other", []byte("x"), t0); err != nil {
		t.Fatal(err)
	}
	want(`{"a":2}`, t0.Add(time.Second))
}
