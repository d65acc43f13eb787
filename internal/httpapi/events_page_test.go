package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// A job's events page both ways: following next from the first page reads
// every event once, oldest first; order=newest reads them backwards; the
// last page has no next; bad cursors are 422s.
func testJobEventsPaged(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, nil)
	other := submitJob(t, f.member, nil)
	const extra = 11 // with job.submitted: 12 events, pages of 5: 5, 5, 2
	for i := range extra {
		for _, jobID := range []string{j.ID, other.ID} {
			if err := f.e.Store.JobEventCreate(t.Context(), &store.JobEvent{ID: id.New(id.Event), JobID: jobID,
				Kind: fmt.Sprintf("test.e%d", i), CreatedAt: f.e.Clock.Now()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	walk := func(first string) (kinds []string, pages int) {
		t.Helper()
		path := first
		for path != "" {
			var page apiv1.JobEventList
			f.member.Get(t, path).JSON(t, http.StatusOK, &page)
			pages++
			if page.Count != len(page.Events) || page.Limit != 5 {
				t.Errorf("%s: count %d of %d events, limit %d; want count = events on the page, limit 5", path, page.Count, len(page.Events), page.Limit)
			}
			for _, e := range page.Events {
				kinds = append(kinds, e.Kind)
			}
			if (page.Next == "") != (page.NextCursor == 0) {
				t.Errorf("%s: next %q but next_cursor %d", path, page.Next, page.NextCursor)
			}
			path = page.Next
			if pages > 10 {
				t.Fatal("next never ends")
			}
		}
		return kinds, pages
	}
	want := []string{"job.submitted"}
	for i := range extra {
		want = append(want, fmt.Sprintf("test.e%d", i))
	}
	kinds, pages := walk(jobPath(j.ID, "/events?limit=5"))
	if fmt.Sprint(kinds) != fmt.Sprint(want) || pages != 3 {
		t.Errorf("oldest first: got %d pages %v, want 3 pages %v", pages, kinds, want)
	}
	kinds, pages = walk(jobPath(j.ID, "/events?limit=5&order=newest"))
	var back []string
	for i := len(want) - 1; i >= 0; i-- {
		back = append(back, want[i])
	}
	if fmt.Sprint(kinds) != fmt.Sprint(back) || pages != 3 {
		t.Errorf("newest first: got %d pages %v, want 3 pages %v", pages, kinds, back)
	}
	// The page after the newest event is empty and ends; a full last page
	// is followed by one empty page, never by a loop.
	var last apiv1.JobEventList
	f.member.Get(t, jobPath(j.ID, "/events?order=newest&limit=1")).JSON(t, http.StatusOK, &last)
	var after apiv1.JobEventList
	f.member.Get(t, jobPath(j.ID, fmt.Sprintf("/events?after=%d", last.Events[0].Position))).JSON(t, http.StatusOK, &after)
	if after.Count != 0 || after.Next != "" || after.Order != apiv1.EventsOldest {
		t.Errorf("after the newest event: got %+v, want an empty last page, oldest first", after)
	}
	for q, code := range map[string]string{
		"?after=-1": "invalid_cursor", "?before=x": "invalid_cursor", "?order=sideways": "invalid_order",
	} {
		env := f.member.Do(t, apitest.Request{Method: "GET", Path: jobPath(j.ID, "/events"+q), Check: apitest.MustViolate}).
			Fail(t, http.StatusUnprocessableEntity)
		if env.Code != code {
			t.Errorf("events%s: got code %q, want %q", q, env.Code, code)
		}
	}
}
