package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
)

// publishHash publishes a new revision of the account's project with the
// given content hash, later than any before it: the newest published
// revision is the one jobs run on.
func publishHash(t *testing.T, f *fixture, accountID, project, hash string) {
	t.Helper()
	f.e.Clock.Advance(time.Second)
	f.e.PublishHash(t, accountID, project, hash)
}

// Each result entry names the content hash of the project revision its
// job ran on: a later push changes what later jobs run on, not the
// results of jobs before it.
func testResultProjectContentHash(t *testing.T, f *fixture) {
	first := "sha256:" + strings.Repeat("1", 64)
	publishHash(t, f, f.acct.ID, fixtureProject, first)
	j := submitJob(t, f.member, map[string]any{"fan_out": map[string]any{"items": []any{map[string]any{}, map[string]any{}}}})
	runJob(t, f, j.ID, false)
	second := "sha256:" + strings.Repeat("2", 64)
	publishHash(t, f, f.acct.ID, fixtureProject, second)
	// A job submitted now runs on the second revision.
	later := submitJob(t, f.member, nil)
	runJob(t, f, later.ID, false)

	var res apiv1.JobResult
	f.member.Get(t, "/api/v1/results/"+j.ID).JSON(t, http.StatusOK, &res)
	if len(res.Results) != 2 {
		t.Fatalf("result: got %d entries, want 2", len(res.Results))
	}
	for _, e := range res.Results {
		if e.ProjectContentHash == nil || *e.ProjectContentHash != first {
			t.Errorf("result entry %d: project_content_hash %v, want the revision the job ran on, %s", e.Index, e.ProjectContentHash, first)
		}
	}
	f.member.Get(t, "/api/v1/results/"+later.ID).JSON(t, http.StatusOK, &res)
	if len(res.Results) != 1 || res.Results[0].ProjectContentHash == nil || *res.Results[0].ProjectContentHash != second {
		t.Errorf("result of a job submitted after the second push: got %s, want project_content_hash %s", mustJSON(t, res.Results), second)
	}
	_, l, _ := resultIDs(t, f.member, "?include_tasks=true&job_id="+j.ID)
	if len(l.Results) != 1 || l.Results[0].Results == nil {
		t.Fatalf("results with tasks: got %+v", l)
	}
	for _, e := range *l.Results[0].Results {
		if e.ProjectContentHash == nil || *e.ProjectContentHash != first {
			t.Errorf("listed result entry %d: project_content_hash %v, want %s", e.Index, e.ProjectContentHash, first)
		}
	}
}

// user_id on GET /results: an account's own keys may name their own
// account (by id or name) and nothing else; an admin key, the operator's,
// lists any account's results.
func testResultUserID(t *testing.T, f *fixture) {
	mine := submitJob(t, f.member, nil)
	runJob(t, f, mine.ID, false)
	other, oc := fundedAccount(t, f.e, "globex", "gamma", 1000_000_000)
	theirs := submitJob(t, oc, map[string]any{"project": "gamma"})
	runJob(t, f, theirs.ID, false)

	for _, q := range []string{"", "?user_id=" + f.acct.ID, "?user_id=" + f.acct.Name} {
		ids, l, _ := resultIDs(t, f.member, q)
		if !slices.Equal(ids, []string{mine.ID}) || l.AppliedFilters.Ignored != nil {
			t.Errorf("member results%s: got %v, applied %+v; want only the account's own job", q, ids, l.AppliedFilters)
		}
		if q != "" && (l.AppliedFilters.UserID == nil || *l.AppliedFilters.UserID != f.acct.ID) {
			t.Errorf("member results%s: applied user_id %v, want %s", q, l.AppliedFilters.UserID, f.acct.ID)
		}
	}
	for _, c := range []struct {
		who  string
		key  string
		want string
	}{{"member", f.acct.Member, other.ID}, {"viewer", f.acct.Viewer, other.Name}, {"member", f.acct.Member, "acct_unknown"}} {
		env := f.e.Client(c.key).Get(t, "/api/v1/results?user_id="+c.want).Fail(t, http.StatusForbidden)
		if env.Code != "admin_required" || env.RecommendedAction == "" {
			t.Errorf("%s naming %s: got %+v, want 403 admin_required", c.who, c.want, env)
		}
	}

	admin := f.e.Client(f.acct.Admin)
	for _, q := range []string{other.ID, other.Name} {
		ids, l, _ := resultIDs(t, admin, "?user_id="+q)
		if !slices.Equal(ids, []string{theirs.ID}) || l.AppliedFilters.UserID == nil || *l.AppliedFilters.UserID != other.ID {
			t.Errorf("admin results?user_id=%s: got %v, applied %+v; want the other account's job", q, ids, l.AppliedFilters)
		}
	}
	// The other filters and groups apply within that account.
	_, l, _ := resultIDs(t, admin, "?user_id="+other.ID+"&project=gamma&group_by=project")
	if l.Total != 1 || l.Groups == nil || len(*l.Groups) != 1 || (*l.Groups)[0].Count != 1 {
		t.Errorf("admin results of another account by project, grouped: got %s", mustJSON(t, l))
	}
	if ids, _, _ := resultIDs(t, admin, ""); !slices.Equal(ids, []string{mine.ID}) {
		t.Errorf("admin results without user_id: got %v, want its own account's", ids)
	}
	env := admin.Get(t, "/api/v1/results?user_id=acct_unknown").Fail(t, http.StatusNotFound)
	if env.Code != "account_not_found" {
		t.Errorf("admin naming an unknown account: got %+v, want 404 account_not_found", env)
	}
}
