package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/termsafe"
)

func runJobs(ctx context.Context, e *env, args []string) error {
	return e.subcommands(ctx, "jobs", `Usage: skiff jobs <command> [flags]

Commands:
  ls              list jobs, newest first (--project, --status, --limit)
  show JOB        show a job
  cancel JOB      cancel a job
  watch JOB       follow a job live until it ends, then show its result
  logs JOB        print the tasks' output and the last failure's stderr
  tasks JOB       list a job's tasks
  events JOB      list a job's lifecycle events (--newest, --limit, --after)
`, args, map[string]func(context.Context, *env, []string) error{
		"ls": jobsList, "show": jobsShow, "cancel": jobsCancel, "watch": jobsWatch, "logs": jobsLogs, "tasks": jobsTasks,
		"events": jobsEvents,
	})
}

// oneJob parses "skiff jobs SUB JOB" and returns the client and the id.
func (e *env) oneJob(name, synopsis string, args []string, extra func(fsSetter)) (*client.Client, *clientFlags, string, error) {
	fs := e.newFlags(name+" JOB", synopsis)
	var cf clientFlags
	if extra != nil {
		extra(fs)
	}
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return nil, nil, "", err
	}
	return c, &cf, pos[0], nil
}

// fsSetter is the part of a flag set extra flags need.
type fsSetter interface {
	String(name, value, usage string) *string
}

func jobsList(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("jobs ls [--project P] [--status S] [--limit N]", "Lists jobs, newest first.")
	var cf clientFlags
	project := fs.String("project", "", "only this project's jobs")
	status := fs.String("status", "", "only jobs in these statuses (comma-separated)")
	tag := fs.String("tag", "", "only jobs with this tag")
	limit := fs.Int("limit", 20, "at most this many jobs (0: all)")
	_, c, _, err := e.clientCommand(fs, &cf, args, 0, 0)
	if err != nil {
		return err
	}
	var jobs []apiv1.JobListEntry
	for j, err := range c.Jobs(ctx, client.JobFilter{Project: *project, Status: *status, Tag: *tag}) {
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
		if *limit > 0 && len(jobs) >= *limit {
			break
		}
	}
	if cf.json {
		return printJSON(e.stdout, jobs)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(e.stdout, "No jobs. Submit one: skiff run --project NAME PAYLOAD.json")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTYPE\tPROJECT\tTASKS\tSUBMITTED")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", j.ID, j.Status, j.Type, j.Project, j.TaskCount, j.SubmittedAt.Format(time.DateTime))
	}
	return tw.Flush()
}

func jobsShow(ctx context.Context, e *env, args []string) error {
	c, cf, id, err := e.oneJob("jobs show", "Shows a job: its status, counts, cost and error.", args, nil)
	if err != nil {
		return err
	}
	j, err := c.Job(ctx, id)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, j)
	}
	var s apiv1.JobSummary
	_ = json.Unmarshal(j.Summary, &s)
	fmt.Fprintf(e.stdout, "job        %s\nstatus     %s\ntype       %s\nproject    %s\ntasks      %d\nsubmitted  %s\n",
		j.ID, j.Status, j.Type, j.Project, j.TaskCount, j.SubmittedAt.Format(time.DateTime))
	if j.CompletedAt != nil {
		fmt.Fprintf(e.stdout, "ended      %s\n", j.CompletedAt.Format(time.DateTime))
	}
	if len(s.TaskOutcomeCounts) > 0 {
		b, _ := json.Marshal(s.TaskOutcomeCounts)
		fmt.Fprintf(e.stdout, "outcomes   %s\n", b)
	}
	if c := costText(j); c != "" {
		fmt.Fprintf(e.stdout, "cost      %s\n", c[len("  cost"):])
	}
	if j.Error != nil {
		fmt.Fprintf(e.stdout, "error      %s\n", *j.Error)
	}
	if j.RecommendedAction != nil {
		fmt.Fprintf(e.stdout, "next       %s\n", *j.RecommendedAction)
	}
	return nil
}

func jobsCancel(ctx context.Context, e *env, args []string) error {
	var reason *string
	c, cf, id, err := e.oneJob("jobs cancel", "Cancels a job: queued tasks never run, running ones are stopped.", args,
		func(fs fsSetter) { reason = fs.String("reason", "", "why, recorded with the job") })
	if err != nil {
		return err
	}
	j, err := c.CancelJob(ctx, id, *reason)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, j)
	}
	fmt.Fprintf(e.stdout, "%s: %s\n", j.ID, j.Status)
	return nil
}

func jobsWatch(ctx context.Context, e *env, args []string) error {
	c, cf, id, err := e.oneJob("jobs watch", "Follows a job live until it ends, then shows its result; exits 0 only if it completed.", args, nil)
	if err != nil {
		return err
	}
	return e.follow(ctx, c, id, cf.json)
}

func jobsLogs(ctx context.Context, e *env, args []string) error {
	c, cf, id, err := e.oneJob("jobs logs", "Prints the tasks' stdout (the first 10 KB, in task order) and the last failure's stderr.", args, nil)
	if err != nil {
		return err
	}
	out, err := c.JobOutput(ctx, id)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, out)
	}
	fmt.Fprint(e.stdout, out.Output)
	if out.OutputTruncated {
		fmt.Fprintf(e.stderr, "(output cut at 10 KB; each task's full output: skiff jobs tasks %s --json)\n", id)
	}
	if out.Error != nil {
		fmt.Fprintf(e.stderr, "--- stderr of the last failed task ---\n%s\n", *out.Error)
	}
	return nil
}

func jobsTasks(ctx context.Context, e *env, args []string) error {
	c, cf, id, err := e.oneJob("jobs tasks", "Lists a job's tasks in index order.", args, nil)
	if err != nil {
		return err
	}
	tasks, err := client.Collect(c.Tasks(ctx, id))
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, tasks)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tSTATUS\tEXIT\tRUNTIME\tATTEMPTS\tPROGRESS")
	for _, t := range tasks {
		exit := "-"
		if t.ExitCode != nil {
			exit = fmt.Sprint(*t.ExitCode)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.1fs\t%d\t%s\n", t.Index, t.Status, exit, t.RuntimeS, len(t.Attempts), progressText(t.LatestProgress))
	}
	return tw.Flush()
}

func jobsEvents(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("jobs events JOB [--newest] [--limit N] [--after POS]",
		"Lists a job's lifecycle events by position, oldest first, reading every page (--limit caps how many).")
	var cf clientFlags
	newest := fs.Bool("newest", false, "newest first")
	limit := fs.Int("limit", 0, "at most this many events (0: all)")
	after := fs.Int64("after", 0, "only events after this position (oldest first), or before it with --newest")
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	q := client.EventQuery{Newest: *newest}
	if *newest {
		q.Before = *after
	} else {
		q.After = *after
	}
	var events []apiv1.JobEvent
	for ev, err := range c.Events(ctx, pos[0], q) {
		if err != nil {
			return err
		}
		events = append(events, ev)
		if *limit > 0 && len(events) == *limit {
			break
		}
	}
	if cf.json {
		return printJSON(e.stdout, events)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POSITION\tTIME\tKIND\tTASK\tDATA")
	for _, ev := range events {
		task := cmp.Or(ev.TaskID, "-")
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", ev.Position, ev.CreatedAt.UTC().Format(time.RFC3339), termsafe.Text(ev.Kind),
			termsafe.Text(task), termsafe.Text(string(ev.Data)))
	}
	return tw.Flush()
}

func runResults(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("results [JOB] [--project P] [--limit N]",
		"With JOB, prints the job's result (its aggregate, or each task's result). Without, lists recent results.")
	var cf clientFlags
	project := fs.String("project", "", "only this project's results (list)")
	limit := fs.Int("limit", 20, "at most this many results (list; 0: all)")
	pos, c, _, err := e.clientCommand(fs, &cf, args, 0, 1)
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		res, err := c.Result(ctx, pos[0])
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, res)
		}
		printResult(e.stdout, res)
		return nil
	}
	var list []apiv1.ResultListEntry
	for r, err := range c.Results(ctx, client.ResultFilter{Project: *project}) {
		if err != nil {
			return err
		}
		list = append(list, r)
		if *limit > 0 && len(list) >= *limit {
			break
		}
	}
	if cf.json {
		return printJSON(e.stdout, list)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATUS\tPROJECT\tTASKS\tAGGREGATE")
	for _, r := range list {
		agg := string(r.AggregateResult)
		if len(agg) > 60 {
			agg = agg[:57] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.JobID, r.Status, r.Project, r.TaskCount, agg)
	}
	return tw.Flush()
}
