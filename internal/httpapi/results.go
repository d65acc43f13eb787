package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/store"
)

// Bounds of the result endpoints' query parameters.
const (
	resultDefaultLimit     = 20
	resultMaxLimit         = 100
	resultTasksDefaultPage = 1000
	resultTasksMaxPage     = 1000
)

// terminalStatuses are what GET /results lists unless status says otherwise.
var terminalStatuses = []store.JobStatus{store.JobCompleted, store.JobPartial, store.JobFailed, store.JobCancelled}

// ignoredResultParams are accepted by GET /results for compatibility but
// do not filter: the recipe cache is retired from the public contract.
var ignoredResultParams = []string{"recipe_cache_key", "recipe_cache_scope", "recipe_cache_hit"}

// resultGuide explains how to read a result; GET /results carries it.
var resultGuide = map[string]string{
	"status":            "completed: every task succeeded; partial: some succeeded and some failed or were cancelled; failed: none succeeded; cancelled: stopped on request. Planning, queued and running jobs are listed only when status asks for them.",
	"summary":           "task_outcome_counts, completeness and the merged results; final once the job is terminal. While a job runs, only the counts and completeness are live and aggregate_result is null.",
	"aggregate_result":  "The merged results of every task (merge_strategy collect: a list in task index order, null for a task without a result).",
	"completeness":      "total, succeeded, failed, cancelled and pending tasks, and fraction = succeeded / total.",
	"results":           "Per-task entries (result, output, error), only with include_tasks=true and at most 100 a job; GET /api/v1/results/{job_id} pages through all of them with limit and offset.",
	"result":            "A task's structured result as its runner wrote it. A failed task's result may be a failure payload: failure_kind, exit_code, command, cwd, combined_output.",
	"error":             "The last ~1000 characters of stderr of a failed task; see GET /api/v1/jobs/{id}/tasks for attempts, exit codes and live feedback.",
	"result_quality":    "Reserved: always null; result_warnings is always an empty list. Neither affects status.",
	"links":             "job, tasks, stream and result address the job's other views.",
	"ignored_filters":   "recipe_cache_key, recipe_cache_scope and recipe_cache_hit are accepted and ignored; applied_filters.ignored lists those sent.",
	"user_id":           "The account whose jobs are listed, by acct_ id or name: your own by default; another account's only with an admin key (403 admin_required otherwise). applied_filters.user_id names the account's id.",
	"groups":            "Only with group_by (status, project, type, tag or client_ref): every job the other filters select, not only this page, grouped by that field, ordered by key with null (no tag, no client_ref) last; a job with several tags counts in each. Each group has count, status_counts, cost_usd (metered so far), first_submitted_at and last_completed_at.",
	"paging_and_limits": "limit 1-100 (default 20) and offset >= 0 page through the jobs, newest first; total counts every match.",
}

func (s *Server) resultGet(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", resultTasksDefaultPage, 1, resultTasksMaxPage)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, maxOffset)
	if err != nil {
		return err
	}
	j, err := s.jobFor(r, "job_id")
	if err != nil {
		return err
	}
	// The page is read from the store, never the whole job: the summary
	// comes from the counts (or the summary stored when the job ended) and
	// result_count and output_count are counted in the store.
	tasks, err := s.views.TaskRowsPage(r.Context(), j, offset, limit)
	if err != nil {
		return err
	}
	summary, err := s.views.SummaryOf(r.Context(), j)
	if err != nil {
		return err
	}
	out := apiv1.JobResult{ResultCommon: jobview.ResultCommonView(j, summary), Results: make([]apiv1.ResultTask, 0, len(tasks)),
		Limit: limit, Offset: offset}
	if out.ResultCount, out.OutputCount, err = s.views.ResultCounts(r.Context(), j); err != nil {
		return err
	}
	arts, err := s.views.Artifacts(r.Context(), j.ID)
	if err != nil {
		return err
	}
	out.ArtifactIDs = jobview.ArtifactIDsOf(arts, "")
	if out.Results, err = s.resultTasks(r, j, tasks, arts); err != nil {
		return err
	}
	// count is the job's tasks, not this page's (spec 2.6 lists it beside
	// result_count and output_count, which count the whole job too).
	out.Count = int(j.TaskCount)
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) resultList(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", resultDefaultLimit, 1, resultMaxLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, maxOffset)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	includeTasks := false
	if v := q.Get("include_tasks"); v != "" {
		if includeTasks, err = strconv.ParseBool(v); err != nil {
			return fault.Invalid("invalid_include_tasks", "Use include_tasks=true or include_tasks=false.",
				"include_tasks %q is not true or false", v).With("field", "include_tasks")
		}
	}
	groupBy, err := parseGroupBy(r)
	if err != nil {
		return err
	}
	f, err := s.parseJobFilters(r, terminalStatuses, true)
	if err != nil {
		return err
	}
	applied := apiv1.ResultFilters{JobIDs: f.params.IDs, IncludeTasks: includeTasks}
	for _, st := range f.params.Statuses {
		applied.Status = append(applied.Status, string(st))
	}
	for name, dst := range map[string]**string{"project": &applied.Project, "client_ref": &applied.ClientRef,
		"tag": &applied.Tag, "type": &applied.Type} {
		if v := q.Get(name); v != "" {
			*dst = &v
		}
	}
	if f.since != "" {
		applied.Since = &f.since
	}
	if f.userID != "" {
		applied.UserID = &f.userID
	}
	for _, name := range ignoredResultParams {
		if q.Has(name) {
			applied.Ignored = append(applied.Ignored, name)
		}
	}
	out := apiv1.ResultList{Results: []apiv1.ResultListEntry{}, Limit: limit, Offset: offset,
		AppliedFilters: applied, ResultGuide: resultGuide}
	if groupBy != "" {
		key, groups := string(groupBy), []apiv1.ResultGroup{}
		out.GroupBy, out.Groups = &key, &groups
		if !f.noMatch {
			gs, err := s.views.Groups(r.Context(), &f.params, groupBy)
			if err != nil {
				return err
			}
			for _, g := range gs {
				groups = append(groups, resultGroupView(g))
			}
		}
	}
	if !f.noMatch {
		f.params.Limit, f.params.Offset = limit, offset
		jobs, total, err := s.views.List(r.Context(), &f.params)
		if err != nil {
			return err
		}
		out.Total = total
		for _, j := range jobs {
			e, err := s.resultListEntry(r, j, includeTasks)
			if err != nil {
				return err
			}
			out.Results = append(out.Results, e)
		}
	}
	out.Count = len(out.Results)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// parseGroupBy reads group_by; "" when absent or empty.
func parseGroupBy(r *http.Request) (store.JobGroupKey, error) {
	v := r.URL.Query().Get("group_by")
	if v == "" {
		return "", nil
	}
	for _, k := range store.JobGroupKeys {
		if string(k) == v {
			return k, nil
		}
	}
	keys := make([]string, len(store.JobGroupKeys))
	for i, k := range store.JobGroupKeys {
		keys[i] = string(k)
	}
	return "", fault.Invalid("invalid_group_by", "Group by one of: "+strings.Join(keys, ", ")+".",
		"group_by %q is not a field results can be grouped by", v).With("field", "group_by").With("allowed", keys)
}

func resultGroupView(g store.JobGroup) apiv1.ResultGroup {
	v := apiv1.ResultGroup{Key: g.Key, Count: g.Count, StatusCounts: map[string]int{}, CostUSD: apiv1.USD(g.CostMicros),
		FirstSubmittedAt: g.FirstSubmittedAt, LastCompletedAt: g.LastCompletedAt}
	for st, n := range g.StatusCounts {
		v.StatusCounts[string(st)] = n
	}
	return v
}

func (s *Server) resultListEntry(r *http.Request, j *store.Job, includeTasks bool) (apiv1.ResultListEntry, error) {
	if !includeTasks {
		summary, err := s.views.SummaryOf(r.Context(), j)
		if err != nil {
			return apiv1.ResultListEntry{}, err
		}
		return apiv1.ResultListEntry{ResultCommon: jobview.ResultCommonView(j, summary)}, nil
	}
	tasks, err := s.views.TaskRowsPage(r.Context(), j, 0, apiv1.MaxResultListTasks)
	if err != nil {
		return apiv1.ResultListEntry{}, err
	}
	summary, err := s.views.SummaryOf(r.Context(), j)
	if err != nil {
		return apiv1.ResultListEntry{}, err
	}
	arts, err := s.views.Artifacts(r.Context(), j.ID)
	if err != nil {
		return apiv1.ResultListEntry{}, err
	}
	results, err := s.resultTasks(r, j, tasks, arts)
	if err != nil {
		return apiv1.ResultListEntry{}, err
	}
	nr, no, err := s.views.ResultCounts(r.Context(), j)
	if err != nil {
		return apiv1.ResultListEntry{}, err
	}
	truncated := j.TaskCount > int64(len(tasks))
	return apiv1.ResultListEntry{ResultCommon: jobview.ResultCommonView(j, summary), Results: &results,
		ResultCount: &nr, OutputCount: &no, ResultsTruncated: &truncated}, nil
}

// resultTasks renders the result entries of tasks of job j, each with the
// content hash of the project revision the job ran on.
func (s *Server) resultTasks(r *http.Request, j *store.Job, tasks []*store.Task, arts []*store.Artifact) ([]apiv1.ResultTask, error) {
	hash, err := s.views.ProjectContentHash(r.Context(), j)
	if err != nil {
		return nil, err
	}
	out := make([]apiv1.ResultTask, 0, len(tasks))
	for _, t := range tasks {
		v := jobview.ResultTaskWithArtifacts(t, arts)
		if hash != "" {
			v.ProjectContentHash = &hash
		}
		out = append(out, v)
	}
	return out, nil
}
