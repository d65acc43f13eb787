package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/store"
)

func TestHosts(t *testing.T) {
	runSuite(t, []apiCase{
		{"redeem_once", testRedeemOnce},
		{"redeem_refusals", testRedeemRefusals},
		{"host_credential_not_a_user_key", testHostCredentialRefusedOnUserAPI},
		{"admin_host_views", testAdminHostViews},
	}, nil)
}

func newCode(t *testing.T, f *fixture, spec enroll.Spec) string {
	t.Helper()
	code, _, err := enroll.New(f.e.Store, f.e.Clock).CreateEnrollment(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func hostRows(t *testing.T, s store.Store) []store.Host {
	t.Helper()
	l, err := s.HostList(t.Context(), &store.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func testRedeemOnce(t *testing.T, f *fixture) {
	code := newCode(t, f, enroll.Spec{Name: "garage", WorkKinds: "cpu,gpu", RatePercent: 60})
	body := f.anon.Post(t, "/api/v1/fleet/enrollments/redeem", map[string]any{"code": code, "cpus": 3, "memory_gb": 7.5,
		"gpus": 1, "hostname": "box.lan", "profile": map[string]any{"single_core_score": 1.25}}).Object(t, http.StatusCreated)
	cred, _ := body["credential"].(string)
	if !strings.HasPrefix(body["host_id"].(string), "wkr_") || !strings.HasPrefix(cred, enroll.CredentialPrefix) ||
		body["name"] != "garage" || body["rate_percent"] != 60.0 || body["cpus"] != 3.0 || body["memory_gb"] != 7.5 || body["gpus"] != 1.0 {
		t.Errorf("redeem answered %v", body)
	}
	hosts := hostRows(t, f.e.Store)
	if len(hosts) != 1 || hosts[0].MemoryMB != 7680 || hosts[0].WorkKinds != "cpu,gpu" || hosts[0].CredentialHash == cred ||
		string(hosts[0].Profile) != `{"single_core_score":1.25}` {
		t.Fatalf("stored hosts %+v; want one, 7680 MB, the credential only hashed", hosts)
	}
	env := f.anon.Post(t, "/api/v1/fleet/enrollments/redeem", map[string]any{"code": code, "cpus": 1, "memory_gb": 1}).Fail(t, http.StatusConflict)
	if env.Code != "enrollment_used" {
		t.Errorf("second redeem: code %q, want enrollment_used", env.Code)
	}
	if n := len(hostRows(t, f.e.Store)); n != 1 {
		t.Errorf("%d hosts after a refused redeem, want 1", n)
	}
}

func testRedeemRefusals(t *testing.T, f *fixture) {
	redeem := func(body map[string]any, status int, code string) {
		t.Helper()
		// What the document can express (required code, ranges) it must
		// refuse too; a well-formed unknown or expired code it cannot.
		check := apitest.MustViolate
		if status != http.StatusUnprocessableEntity || code == "invalid_code" && body["code"] != nil {
			check = apitest.MustMatch
		}
		env := f.anon.Do(t, apitest.Request{Method: "POST", Path: "/api/v1/fleet/enrollments/redeem", Body: body, Check: check}).Fail(t, status)
		if env.Code != code {
			t.Errorf("redeem %v: code %q, want %q", body, env.Code, code)
		}
	}
	good := newCode(t, f, enroll.Spec{})
	redeem(map[string]any{"code": "cek_" + strings.Repeat("A", 52), "cpus": 1, "memory_gb": 1}, http.StatusNotFound, "enrollment_not_found")
	redeem(map[string]any{"code": "flk_notacode", "cpus": 1, "memory_gb": 1}, http.StatusUnprocessableEntity, "invalid_code")
	redeem(map[string]any{"cpus": 1, "memory_gb": 1}, http.StatusUnprocessableEntity, "invalid_code")
	for _, share := range []map[string]any{
		{"cpus": 0, "memory_gb": 1}, {"cpus": -2, "memory_gb": 1}, {"cpus": 100000, "memory_gb": 1},
		{"cpus": 1, "memory_gb": 0}, {"cpus": 1, "memory_gb": 1e9}, {"cpus": 1, "memory_gb": 1, "gpus": -1},
		{"cpus": 1, "memory_gb": 1, "gpus": 1000},
	} {
		share["code"] = good
		redeem(share, http.StatusUnprocessableEntity, "invalid_share")
	}
	redeem(map[string]any{"code": good, "cpus": 1, "memory_gb": 1, "profile": []int{1}}, http.StatusUnprocessableEntity, "invalid_profile")
	if n := len(hostRows(t, f.e.Store)); n != 0 {
		t.Fatalf("%d hosts after refused redeems, want 0", n)
	}
	// The code was not spent by the refusals; it expires after 24 hours.
	expiring := newCode(t, f, enroll.Spec{})
	f.e.Clock.Advance(enroll.CodeTTL)
	redeem(map[string]any{"code": expiring, "cpus": 1, "memory_gb": 1}, http.StatusGone, "enrollment_expired")
	f.e.Clock.Advance(-time.Hour)
	f.anon.Post(t, "/api/v1/fleet/enrollments/redeem", map[string]any{"code": good, "cpus": 1, "memory_gb": 1}).Want(t, http.StatusCreated)
}

func testHostCredentialRefusedOnUserAPI(t *testing.T, f *fixture) {
	code := newCode(t, f, enroll.Spec{})
	body := f.anon.Post(t, "/api/v1/fleet/enrollments/redeem", map[string]any{"code": code, "cpus": 1, "memory_gb": 1}).Object(t, http.StatusCreated)
	host := f.e.Client(body["credential"].(string))
	env := host.Get(t, "/api/v1/account/balance").Fail(t, http.StatusUnauthorized)
	if env.Code != "host_credential" {
		t.Errorf("host credential on the user API: code %q, want host_credential", env.Code)
	}
	host.Get(t, "/api/v1/admin/hosts").Fail(t, http.StatusUnauthorized)
}

func testAdminHostViews(t *testing.T, f *fixture) {
	admin := f.e.Client(f.acct.Admin)
	list := admin.Get(t, "/api/v1/admin/hosts").Object(t, http.StatusOK)
	if hs, _ := list["hosts"].([]any); len(hs) != 0 {
		t.Fatalf("hosts before any enrollment: %v", list)
	}
	code := newCode(t, f, enroll.Spec{WorkKinds: "gpu,cpu"})
	red := f.anon.Post(t, "/api/v1/fleet/enrollments/redeem", map[string]any{"code": code, "cpus": 2, "memory_gb": 4,
		"hostname": "rig"}).Object(t, http.StatusCreated)
	hid := red["host_id"].(string)
	list = admin.Get(t, "/api/v1/admin/hosts").Object(t, http.StatusOK)
	hs := list["hosts"].([]any)
	if len(hs) != 1 {
		t.Fatalf("hosts = %v, want one", list)
	}
	h := hs[0].(map[string]any)
	if h["id"] != hid || h["name"] != "rig" || h["state"] != "active" || h["running_attempts"] != 0.0 || h["last_seen_at"] != nil ||
		h["cpus"] != 2.0 || h["memory_gb"] != 4.0 {
		t.Errorf("host view %v", h)
	}
	if _, err := enroll.New(f.e.Store, f.e.Clock).Drain(t.Context(), hid); err != nil {
		t.Fatal(err)
	}
	one := admin.Get(t, "/api/v1/admin/hosts/"+hid).Object(t, http.StatusOK)
	if one["state"] != "draining" {
		t.Errorf("drained host view %v", one)
	}
	admin.Get(t, "/api/v1/admin/hosts/wkr_nope").Fail(t, http.StatusNotFound)
	if env := f.member.Get(t, "/api/v1/admin/hosts").Fail(t, http.StatusForbidden); env.Code != "admin_required" {
		t.Errorf("member on admin hosts: %q", env.Code)
	}
}
