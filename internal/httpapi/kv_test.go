package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// kvEntry decodes an entry keeping value as raw JSON.
type kvEntry struct {
	Project   string          `json:"project"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt time.Time       `json:"updated_at"`
	TTLS      *int64          `json:"ttl_s"`
	Meta      apiv1.KVMeta    `json:"meta"`
}

func testKV(t *testing.T, f *fixture) {
	c := f.member
	epoch := apitest.Epoch
	// Any JSON value is stored and read back as sent (compacted), null too.
	values := []struct{ name, json string }{
		{"null", `null`}, {"true", `true`}, {"false", `false`}, {"zero", `0`}, {"negative", `-1.5`},
		{"exponent", `1e300`}, {"big-int", `12345678901234567890`}, {"string", `"hello"`}, {"empty-string", `""`},
		{"unicode", `"héllo ☃ \u0000 \"quoted\""`}, {"empty-array", `[]`}, {"empty-object", `{}`},
		{"nested", `{"b": 1, "a": [1, 2, {"c": null, "d": [true, "x"]}], "z": {"y": {}}}`},
	}
	for _, v := range values {
		key := "val/" + v.name
		var e kvEntry
		c.Put(t, kvPath("alpha", key), raw(`{"value": `+v.json+`}`)).JSON(t, http.StatusOK, &e)
		want := compact(t, []byte(v.json))
		if e.Project != "alpha" || e.Key != key || string(e.Value) != want || e.TTLS != nil ||
			!e.UpdatedAt.Equal(epoch) || !e.Meta.CreatedAt.Equal(epoch) || e.Meta.ExpiresAt != nil || e.Meta.SizeBytes != len(want) {
			t.Errorf("PUT %s: got %+v (value %s), want alpha/%s = %s, no ttl, times %s, size %d", key, e, e.Value, key, want, epoch, len(want))
		}
		var g kvEntry
		r := c.Get(t, kvPath("alpha", key))
		r.JSON(t, http.StatusOK, &g)
		if string(g.Value) != want || g.Key != key {
			t.Errorf("GET %s: got key %q value %s, want %s", key, g.Key, g.Value, want)
		}
		if m := r.Object(t, http.StatusOK); !keysOf(m)["value"] {
			t.Errorf("GET %s: the value field is missing, want it present even when null", key)
		}
	}

	// Keys may hold '/', spaces and unicode; %2F and / name the same key.
	for _, tc := range []struct{ put, get, key string }{
		{"runs/2026/01/best", "runs/2026/01/best", "runs/2026/01/best"},
		{"enc%2Fslash", "enc/slash", "enc/slash"},
		{url.PathEscape("hello world ☃"), url.PathEscape("hello world ☃"), "hello world ☃"},
		{"100%25_done", "100%25_done", "100%_done"},
	} {
		var e kvEntry
		c.Put(t, kvPath("alpha", tc.put), map[string]any{"value": tc.key}).JSON(t, http.StatusOK, &e)
		if e.Key != tc.key {
			t.Errorf("PUT %s: got key %q, want %q", tc.put, e.Key, tc.key)
		}
		c.Get(t, kvPath("alpha", tc.get)).JSON(t, http.StatusOK, &e)
		if e.Key != tc.key || string(e.Value) != mustString(t, tc.key) {
			t.Errorf("GET %s: got %q = %s, want %q", tc.get, e.Key, e.Value, tc.key)
		}
	}

	// Overwriting keeps created_at and moves updated_at; a ttl can be added.
	f.e.Clock.Advance(10 * time.Second)
	var e kvEntry
	c.Put(t, kvPath("alpha", "val/string"), map[string]any{"value": "second", "ttl_s": 30}).JSON(t, http.StatusOK, &e)
	wantExp := epoch.Add(40 * time.Second)
	if string(e.Value) != `"second"` || !e.Meta.CreatedAt.Equal(epoch) || !e.UpdatedAt.Equal(epoch.Add(10*time.Second)) ||
		e.TTLS == nil || *e.TTLS != 30 || e.Meta.ExpiresAt == nil || !e.Meta.ExpiresAt.Equal(wantExp) {
		t.Errorf("overwrite: got %+v (value %s), want created %s, updated +10s, ttl 30, expires %s", e, e.Value, epoch, wantExp)
	}
	// Overwriting without ttl_s makes it permanent again.
	c.Put(t, kvPath("alpha", "val/string"), map[string]any{"value": "third"}).JSON(t, http.StatusOK, &e)
	if e.TTLS != nil || e.Meta.ExpiresAt != nil {
		t.Errorf("overwrite without ttl_s: got ttl %v, expires %v; want none", e.TTLS, e.Meta.ExpiresAt)
	}

	// Delete answers {status, project, key}; the key is then gone.
	for _, key := range []string{"val/null", "runs/2026/01/best"} {
		var d apiv1.KVDeleted
		c.Delete(t, kvPath("alpha", key)).JSON(t, http.StatusOK, &d)
		if d != (apiv1.KVDeleted{Status: "deleted", Project: "alpha", Key: key}) {
			t.Errorf("DELETE %s: got %+v, want {deleted alpha %s}", key, d, key)
		}
		if env := c.Get(t, kvPath("alpha", key)).Fail(t, http.StatusNotFound); env.Code != "key_not_found" {
			t.Errorf("GET %s after delete: got code %q, want key_not_found", key, env.Code)
		}
		if env := c.Delete(t, kvPath("alpha", key)).Fail(t, http.StatusNotFound); env.Code != "key_not_found" {
			t.Errorf("DELETE %s twice: got code %q, want key_not_found", key, env.Code)
		}
	}
	c.Get(t, kvPath("alpha", "never-set")).Fail(t, http.StatusNotFound)
	c.Get(t, kvPath("nope", "k")).Fail(t, http.StatusNotFound)

	// A viewer reads shared state.
	f.viewer.Get(t, kvPath("alpha", fixtureKey)).JSON(t, http.StatusOK, &e)
	if string(e.Value) != "1" {
		t.Errorf("viewer GET: got %s, want 1", e.Value)
	}
}

func mustString(t *testing.T, s string) string {
	return string(mustJSON(t, s))
}

func testKVList(t *testing.T, f *fixture) {
	c := f.member
	c.Delete(t, kvPath("alpha", fixtureKey)).Want(t, http.StatusOK)
	keys := []string{"cfg/b", "cfg/a", "cfg/c", "cfg_x", "cfg", "other", "100%_done", "100%x", "Zed", "é"}
	for i, k := range keys {
		c.Put(t, kvPath("alpha", url.PathEscape(k)), map[string]any{"value": i}).Want(t, http.StatusOK)
	}
	list := func(query string) (apiv1.KVList, []string) {
		t.Helper()
		var l apiv1.KVList
		c.Get(t, "/api/v1/projects/alpha/kv"+query).JSON(t, http.StatusOK, &l)
		var got []string
		for _, e := range l.Entries {
			got = append(got, e.Key)
			if e.Project != "alpha" {
				t.Errorf("list%s: entry %s has project %q, want alpha", query, e.Key, e.Project)
			}
		}
		if l.Count != len(l.Entries) || l.Project != "alpha" || l.Entries == nil {
			t.Errorf("list%s: got count %d for %d entries, project %q, entries nil %v; want them to agree",
				query, l.Count, len(l.Entries), l.Project, l.Entries == nil)
		}
		return l, got
	}
	for _, tc := range []struct {
		query, prefix string
		want          []string
	}{
		// Byte order: digits, upper case, lower case, then multi-byte UTF-8.
		{"", "", []string{"100%_done", "100%x", "Zed", "cfg", "cfg/a", "cfg/b", "cfg/c", "cfg_x", "other", "é"}},
		{"?prefix=cfg/", "cfg/", []string{"cfg/a", "cfg/b", "cfg/c"}},
		{"?prefix=cfg", "cfg", []string{"cfg", "cfg/a", "cfg/b", "cfg/c", "cfg_x"}},
		{"?prefix=cfg/&limit=2", "cfg/", []string{"cfg/a", "cfg/b"}},
		{"?limit=1", "", []string{"100%_done"}},
		{"?limit=1000", "", []string{"100%_done", "100%x", "Zed", "cfg", "cfg/a", "cfg/b", "cfg/c", "cfg_x", "other", "é"}},
		// % and _ are literal, not LIKE wildcards.
		{"?prefix=" + url.QueryEscape("100%_"), "100%_", []string{"100%_done"}},
		{"?prefix=" + url.QueryEscape("é"), "é", []string{"é"}},
		{"?prefix=zzz", "zzz", nil},
		{"?prefix=CFG", "CFG", nil},
	} {
		l, got := list(tc.query)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("list%s: got keys %q, want %q", tc.query, got, tc.want)
		}
		if l.Prefix != tc.prefix {
			t.Errorf("list%s: got prefix %q, want %q", tc.query, l.Prefix, tc.prefix)
		}
	}
	// Values come back in the list too.
	l, _ := list("?prefix=cfg/a")
	if len(l.Entries) != 1 || string(l.Entries[0].Value) != "1" {
		t.Errorf("list?prefix=cfg/a: got %+v, want one entry of value 1", l.Entries)
	}
}

func testKVTTL(t *testing.T, f *fixture) {
	c := f.member
	clk := f.e.Clock
	put := func(key string, body map[string]any) kvEntry {
		t.Helper()
		var e kvEntry
		c.Put(t, kvPath("alpha", key), body).JSON(t, http.StatusOK, &e)
		return e
	}
	keys := func(query string) []string {
		t.Helper()
		var l apiv1.KVList
		c.Get(t, "/api/v1/projects/alpha/kv"+query).JSON(t, http.StatusOK, &l)
		var out []string
		for _, e := range l.Entries {
			out = append(out, e.Key)
		}
		if l.Count != len(out) {
			t.Errorf("list%s: got count %d for %d entries", query, l.Count, len(out))
		}
		return out
	}
	alive := func(key string, want bool) {
		t.Helper()
		r := c.Get(t, kvPath("alpha", key))
		if want {
			r.Want(t, http.StatusOK)
		} else if env := r.Fail(t, http.StatusNotFound); env.Code != "key_not_found" {
			t.Errorf("GET %s: got code %q, want key_not_found", key, env.Code)
		}
	}

	start := clk.Now()
	e := put("a-short", map[string]any{"value": "s", "ttl_s": 60})
	if e.TTLS == nil || *e.TTLS != 60 || e.Meta.ExpiresAt == nil || !e.Meta.ExpiresAt.Equal(start.Add(60*time.Second)) {
		t.Errorf("PUT with ttl_s 60: got ttl %v, expires %v; want 60 and %s", e.TTLS, e.Meta.ExpiresAt, start.Add(60*time.Second))
	}
	put("b-long", map[string]any{"value": "l", "ttl_s": 3600})
	put("c-forever", map[string]any{"value": "f"})

	clk.Advance(59 * time.Second)
	alive("a-short", true)
	if got := keys(""); strings.Join(got, ",") != "a-short,b-long,c-forever,k" {
		t.Errorf("at 59s: got keys %v, want a-short,b-long,c-forever,k", got)
	}

	// At its expiry instant the entry is gone for get, list and delete.
	clk.Advance(time.Second)
	alive("a-short", false)
	if got := keys(""); strings.Join(got, ",") != "b-long,c-forever,k" {
		t.Errorf("at 60s: got keys %v, want b-long,c-forever,k", got)
	}
	// An expired entry does not use up the limit or match a prefix.
	if got := keys("?limit=1"); strings.Join(got, ",") != "b-long" {
		t.Errorf("at 60s, limit=1: got keys %v, want b-long", got)
	}
	if got := keys("?prefix=a-"); len(got) != 0 {
		t.Errorf("at 60s, prefix=a-: got keys %v, want none", got)
	}
	c.Delete(t, kvPath("alpha", "a-short")).Fail(t, http.StatusNotFound)

	clk.Advance(time.Hour)
	alive("b-long", false)
	alive("c-forever", true)
	if got := keys(""); strings.Join(got, ",") != "c-forever,k" {
		t.Errorf("after an hour: got keys %v, want c-forever,k", got)
	}

	// Writing an expired key starts a new life: fresh created_at, no ttl.
	now := clk.Now()
	e = put("a-short", map[string]any{"value": "again"})
	if !e.Meta.CreatedAt.Equal(now) || !e.UpdatedAt.Equal(now) || e.TTLS != nil || string(e.Value) != `"again"` {
		t.Errorf("re-PUT of an expired key: got %+v (value %s), want created and updated %s, no ttl", e, e.Value, now)
	}
	alive("a-short", true)
}

func testKVBadInput(t *testing.T, f *fixture) {
	const v, u = apitest.MustViolate, apitest.Unchecked
	longKey := strings.Repeat("k", 257)
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code               string
		check              apitest.Check
	}{
		{"truncated JSON", "PUT", kvPath("alpha", "n"), raw(`{"value": `), 400, "malformed_json", v},
		{"not JSON", "PUT", kvPath("alpha", "n"), raw(`value=1`), 400, "malformed_json", v},
		{"empty body", "PUT", kvPath("alpha", "n"), "", 400, "empty_body", v},
		{"value not UTF-8", "PUT", kvPath("alpha", "n"), []byte("{\"value\": \"a\xffb\"}"), 400, "malformed_json", u},
		{"array body", "PUT", kvPath("alpha", "n"), raw(`[1]`), 422, "not_an_object", v},
		{"null body", "PUT", kvPath("alpha", "n"), raw(`null`), 422, "not_an_object", v},
		{"value missing", "PUT", kvPath("alpha", "n"), raw(`{}`), 422, "missing_value", v},
		{"value missing with ttl", "PUT", kvPath("alpha", "n"), raw(`{"ttl_s": 5}`), 422, "missing_value", v},
		{"ttl_s 0", "PUT", kvPath("alpha", "n"), raw(`{"value": 1, "ttl_s": 0}`), 422, "invalid_ttl", v},
		{"ttl_s negative", "PUT", kvPath("alpha", "n"), raw(`{"value": 1, "ttl_s": -5}`), 422, "invalid_ttl", v},
		{"ttl_s over a year", "PUT", kvPath("alpha", "n"), raw(`{"value": 1, "ttl_s": 31536001}`), 422, "invalid_ttl", v},
		{"ttl_s a string", "PUT", kvPath("alpha", "n"), raw(`{"value": 1, "ttl_s": "5"}`), 422, "wrong_type", v},
		{"ttl_s a fraction", "PUT", kvPath("alpha", "n"), raw(`{"value": 1, "ttl_s": 1.5}`), 422, "wrong_type", v},
		{"ttl_s on existing key", "PUT", kvPath("alpha", fixtureKey), raw(`{"value": 9, "ttl_s": 0}`), 422, "invalid_ttl", v},
		{"value over 256 KiB", "PUT", kvPath("alpha", "n"),
			raw(`{"value": "` + strings.Repeat("v", 256<<10) + `"}`), 422, "value_too_large", u},
		{"key over 256 bytes", "PUT", kvPath("alpha", longKey), raw(`{"value": 1}`), 422, "invalid_key", v},
		{"key with a control character", "PUT", kvPath("alpha", "a%01b"), raw(`{"value": 1}`), 422, "invalid_key", u},
		{"key not UTF-8", "PUT", kvPath("alpha", "a%FFb"), raw(`{"value": 1}`), 422, "invalid_key", u},
		{"get key over 256 bytes", "GET", kvPath("alpha", longKey), nil, 422, "invalid_key", v},
		{"delete key over 256 bytes", "DELETE", kvPath("alpha", longKey), nil, 422, "invalid_key", v},
		{"list limit 0", "GET", "/api/v1/projects/alpha/kv?limit=0", nil, 422, "invalid_limit", v},
		{"list limit negative", "GET", "/api/v1/projects/alpha/kv?limit=-1", nil, 422, "invalid_limit", v},
		{"list limit over 1000", "GET", "/api/v1/projects/alpha/kv?limit=1001", nil, 422, "invalid_limit", v},
		{"list limit not a number", "GET", "/api/v1/projects/alpha/kv?limit=ten", nil, 422, "invalid_limit", v},
		{"list limit a fraction", "GET", "/api/v1/projects/alpha/kv?limit=1.5", nil, 422, "invalid_limit", v},
		{"list prefix over 256 bytes", "GET", "/api/v1/projects/alpha/kv?prefix=" + longKey, nil, 422, "invalid_prefix", u},
		{"list prefix not UTF-8", "GET", "/api/v1/projects/alpha/kv?prefix=%FF", nil, 422, "invalid_prefix", u},
		{"list prefix with NUL", "GET", "/api/v1/projects/alpha/kv?prefix=a%00", nil, 422, "invalid_prefix", u},
		{"list prefix with a control character", "GET", "/api/v1/projects/alpha/kv?prefix=%1F", nil, 422, "invalid_prefix", u},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.state(t)
			env := f.member.Do(t, apitest.Request{Method: tc.method, Path: tc.path, Body: tc.body, Check: tc.check}).Fail(t, tc.status)
			if env.Code != tc.code {
				t.Errorf("got code %q, want %q (error %q)", env.Code, tc.code, env.Error)
			}
			if env.RecommendedAction == "" {
				t.Errorf("got no recommended_action")
			}
			f.unchanged(t, before, "a refused kv request")
		})
	}
}
