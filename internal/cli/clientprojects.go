package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
)

func runProject(ctx context.Context, e *env, args []string) error {
	return e.subcommands(ctx, "project", `Usage: skiff project <command> [flags]

Commands:
  create NAME   create a project (--env K=V, repeatable)
  ls            list your projects
  show NAME     show a project and its readiness
  rm NAME       delete a project
  prepare NAME  ask for the project's preparation on hosts (POST .../init)

Run 'skiff project <command> --help' for the flags of a command.
`, args, map[string]func(context.Context, *env, []string) error{
		"create": projectCreate, "ls": projectList, "show": projectShow, "rm": projectRemove, "prepare": projectPrepare,
	})
}

// kvFlags collects repeatable K=V flags.
type kvFlags map[string]string

func (k kvFlags) String() string { return "" }
func (k kvFlags) Set(v string) error {
	name, val, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	k[name] = val
	return nil
}

func projectCreate(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("project create NAME [--env K=V ...]", "Creates a project. Push its code with 'skiff push DIR --project NAME'.")
	var cf clientFlags
	envs := kvFlags{}
	fs.Var(envs, "env", "environment variable of every task, NAME=VALUE (repeatable)")
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	w := &apiv1.ProjectWrite{Name: &pos[0]}
	if len(envs) > 0 {
		w.Env = envs
	}
	p, err := c.CreateProject(ctx, w)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, p)
	}
	fmt.Fprintf(e.stdout, "Created project %s. Next: skiff push DIR --project %s\n", p.Name, p.Name)
	return nil
}

func projectList(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("project ls", "Lists your projects.")
	var cf clientFlags
	_, c, _, err := e.clientCommand(fs, &cf, args, 0, 0)
	if err != nil {
		return err
	}
	ps, err := c.Projects(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, apiv1.ProjectList{Count: len(ps), Projects: ps})
	}
	if len(ps) == 0 {
		fmt.Fprintln(e.stdout, "No projects yet. Create one: skiff project create NAME")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREADY\tSTATE\tUPDATED")
	for _, p := range ps {
		ready, state := "no", "-"
		if p.InitStatus != nil {
			state = p.InitStatus.AvailabilityStatus
			if p.InitStatus.ReadyForJobs {
				ready = "yes"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, ready, state, p.UpdatedAt.Format(time.DateTime))
	}
	return tw.Flush()
}

func projectShow(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("project show NAME", "Shows a project, its latest push and its readiness.")
	var cf clientFlags
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	p, err := c.Project(ctx, pos[0])
	if err != nil {
		return err
	}
	st, err := c.ProjectStatus(ctx, pos[0], false)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, map[string]any{"project": p, "status": st})
	}
	fmt.Fprintf(e.stdout, "project   %s\nruntime   %s (version %d)\ncreated   %s\n", p.Name, p.RuntimeKind, p.RuntimeVersion,
		p.CreatedAt.Format(time.DateTime))
	if p.ContentHash != nil {
		fmt.Fprintf(e.stdout, "content   %s\n", *p.ContentHash)
	}
	for k, v := range p.Env {
		fmt.Fprintf(e.stdout, "env       %s=%s\n", k, v)
	}
	printReadiness(e, st)
	return nil
}

func printReadiness(e *env, st *apiv1.Readiness) {
	fmt.Fprintf(e.stdout, "ready     %v (%s, %s)\n", st.ReadyForJobs, st.AvailabilityStatus, st.InitState)
	fmt.Fprintf(e.stdout, "jobs      %d active, %d queued tasks\n", st.ActiveJobs, st.QueuedTasks)
	if st.StatusMessage != "" {
		fmt.Fprintf(e.stdout, "status    %s\n", st.StatusMessage)
	}
	if st.NextAction != "" {
		fmt.Fprintf(e.stdout, "next      %s\n", st.NextAction)
	}
	if st.LatestIssue != nil {
		fmt.Fprintf(e.stdout, "issue     %s\n", *st.LatestIssue)
	}
}

func projectRemove(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("project rm NAME", "Deletes a project.")
	var cf clientFlags
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	d, err := c.DeleteProject(ctx, pos[0])
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, d)
	}
	fmt.Fprintf(e.stdout, "Deleted project %s.\n", pos[0])
	return nil
}

func projectPrepare(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("project prepare NAME [--max-nodes N]", "Asks for the project's preparation on hosts ahead of jobs (POST /api/v1/projects/NAME/init).")
	var cf clientFlags
	maxNodes := fs.Int("max-nodes", 0, "prepare on at most this many hosts (0: the server's default)")
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	r, err := c.InitProject(ctx, pos[0], *maxNodes)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, r)
	}
	fmt.Fprintf(e.stdout, "%s: %s\n%s\n", pos[0], r.StatusMessage, r.NextAction)
	return nil
}

func runStatus(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("status [PROJECT]", "Shows a project's readiness and its builds, or every project's readiness.")
	var cf clientFlags
	pos, c, _, err := e.clientCommand(fs, &cf, args, 0, 1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		ps, err := c.Projects(ctx)
		if err != nil {
			return err
		}
		var all []*apiv1.Readiness
		for _, p := range ps {
			st, err := c.ProjectStatus(ctx, p.Name, false)
			if err != nil {
				return err
			}
			st.Project = p.Name
			all = append(all, st)
		}
		if cf.json {
			return printJSON(e.stdout, all)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROJECT\tREADY\tSTATE\tACTIVE JOBS\tQUEUED TASKS\tSTATUS")
		for _, st := range all {
			fmt.Fprintf(tw, "%s\t%v\t%s\t%d\t%d\t%s\n", st.Project, st.ReadyForJobs, st.AvailabilityStatus, st.ActiveJobs,
				st.QueuedTasks, st.StatusMessage)
		}
		return tw.Flush()
	}
	st, err := c.ProjectStatus(ctx, pos[0], true)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, st)
	}
	fmt.Fprintf(e.stdout, "project   %s\n", pos[0])
	printReadiness(e, st)
	for _, d := range st.Diagnostics {
		fmt.Fprintf(e.stdout, "\n%s  %s  %s  %s\n", d.ID, d.Status, d.Phase, d.UpdatedAt.Format(time.DateTime))
		if d.Message != "" {
			fmt.Fprintf(e.stdout, "  %s\n", d.Message)
		}
		if d.LogTail != "" {
			fmt.Fprintf(e.stdout, "  log tail:\n%s\n", indent(d.LogTail, "    "))
		}
	}
	return nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

func runPush(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("push [DIR] [--project NAME] [--no-wait]",
		`Packs DIR (default .) as a gzip tarball, leaving out what its .dockerignore
names, streams it to the project (created if missing; default name: the
directory's), then follows the build and shows its log tail. Exits 1 when the
build fails.`)
	var cf clientFlags
	cf.register(fs)
	project := fs.String("project", "", "project name (default: the directory's name)")
	noWait := fs.Bool("no-wait", false, "return once uploaded, without following the build")
	pos, err := e.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, 1); err != nil {
		return err
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if *project == "" {
		*project = filepath.Base(abs)
	}
	c, _, err := e.client(&cf, true)
	if err != nil {
		return err
	}
	if _, err := c.Project(ctx, *project); client.IsNotFound(err) {
		if _, err := c.CreateProject(ctx, &apiv1.ProjectWrite{Name: project}); err != nil {
			return err
		}
		if !cf.json {
			fmt.Fprintf(e.stderr, "Created project %s.\n", *project)
		}
	} else if err != nil {
		return err
	}
	tty := isTerminal(e.stderr) && !cf.json
	var last time.Time
	progress := func(n int64) {
		if tty && time.Since(last) > 100*time.Millisecond {
			last = time.Now()
			fmt.Fprintf(e.stderr, "\rUploading %s ", humanBytes(n))
		}
	}
	var sent int64
	res, err := c.PushDir(ctx, *project, abs, func(n int64) { sent = n; progress(n) })
	if tty {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	if !cf.json {
		fmt.Fprintf(e.stderr, "Uploaded %s to %s.\n", humanBytes(sent), *project)
	}
	if res.Unchanged != nil {
		if cf.json {
			return printJSON(e.stdout, res.Unchanged)
		}
		fmt.Fprintf(e.stdout, "Unchanged: %s\n", res.Unchanged.StatusMessage)
		return nil
	}
	if *noWait {
		if cf.json {
			return printJSON(e.stdout, res.Accepted)
		}
		fmt.Fprintf(e.stdout, "Push %s is %s. Follow it with: skiff status %s\n", res.Accepted.PushRef, res.Accepted.Status, *project)
		return nil
	}
	var shown string
	rec, err := c.WaitPush(ctx, *project, res.Accepted.PushRef, time.Second, func(r *apiv1.PushRecord) {
		if cf.json {
			return
		}
		if fresh := newLines(shown, r.LogTail); fresh != "" {
			fmt.Fprint(e.stderr, indent(fresh, "  | ")+"\n")
		}
		shown = r.LogTail
		fmt.Fprintf(e.stderr, "Build %s: %s\n", r.PushRef, r.Status)
	})
	if err != nil {
		return err
	}
	if cf.json {
		if err := printJSON(e.stdout, rec); err != nil {
			return err
		}
	}
	if rec.Status != "published" {
		msg := "build failed"
		if rec.Error != nil {
			msg += ": " + *rec.Error
		}
		if rec.NextAction != "" {
			msg += ". " + rec.NextAction
		}
		return errors.New(msg)
	}
	if !cf.json {
		fmt.Fprintf(e.stdout, "Published %s. Run a job: skiff run --project %s PAYLOAD.json\n", rec.PushRef, *project)
	}
	return nil
}

// newLines is the part of a sliding log tail not shown before: what follows
// the longest end of old that starts cur.
func newLines(old, cur string) string {
	if old == "" {
		return strings.TrimRight(cur, "\n")
	}
	for i := 0; i < len(old); i++ {
		if strings.HasPrefix(cur, old[i:]) {
			return strings.TrimRight(strings.TrimPrefix(cur[len(old)-i:], "\n"), "\n")
		}
	}
	return strings.TrimRight(cur, "\n")
}

func runInit(_ context.Context, e *env, args []string) error {
	fs := e.newFlags("init [DIR] [--name NAME]",
		`Writes a starter project into DIR (default .): a Python runner (main.py)
that reads its payload, reports progress and writes a result, its Dockerfile,
skiff.project.json and .dockerignore. Existing files are left alone.
Then: skiff push DIR && skiff run payload.json`)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	pos, err := e.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, 1); err != nil {
		return err
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var wrote []string
	for _, f := range starterFiles {
		p := filepath.Join(dir, f.name)
		if _, err := os.Stat(p); err == nil {
			fmt.Fprintf(e.stderr, "kept %s (exists)\n", p)
			continue
		}
		if err := os.WriteFile(p, []byte(f.body), 0o644); err != nil {
			return err
		}
		wrote = append(wrote, p)
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"dir": dir, "wrote": wrote})
	}
	for _, p := range wrote {
		fmt.Fprintf(e.stdout, "wrote %s\n", p)
	}
	fmt.Fprintf(e.stdout, "Next: skiff push %s && skiff run %s\n", dir, filepath.Join(dir, "payload.json"))
	return nil
}

var starterFiles = []struct{ name, body string }{
	{"Dockerfile", "FROM python:3.12-slim\nWORKDIR /app\nCOPY main.py .\n"},
	{"skiff.project.json", `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"},
 "entrypoint": {"command": ["python", "main.py"], "env": {"PYTHONUNBUFFERED": "1"}}}
`},
	{".dockerignore", ".git\n__pycache__\n*.pyc\n.venv\n"},
	{"payload.json", `{"name": "world", "steps": 5}` + "\n"},
	{"main.py", `"""A Skiff runner: one task. The payload is the JSON file named by
SKIFF_TASK_PAYLOAD; the result is the JSON written to SKIFF_TASK_RESULT; lines
starting with SKIFF_PROGRESS: report progress."""
import json, os, time

with open(os.environ["SKIFF_TASK_PAYLOAD"]) as f:
    payload = json.load(f)
steps = int(payload.get("steps", 5))
for i in range(steps):
    time.sleep(0.2)
    print("SKIFF_PROGRESS:" + json.dumps({"pct": round(100 * (i + 1) / steps), "stage": "step %d" % (i + 1)}), flush=True)
print("hello,", payload.get("name", "world"))
with open(os.environ["SKIFF_TASK_RESULT"], "w") as f:
    json.dump({"greeting": "hello, " + payload.get("name", "world"), "steps": steps}, f)
`},
}

// kv commands.

func runKV(ctx context.Context, e *env, args []string) error {
	return e.subcommands(ctx, "kv", `Usage: skiff kv <command> PROJECT ... [flags]

The project's shared state: JSON values under keys, read and written by jobs.

Commands:
  get PROJECT KEY          print a value
  put PROJECT KEY JSON|-   write a value (--ttl-s N to expire it)
  ls PROJECT [PREFIX]      list keys
  rm PROJECT KEY           delete a key
`, args, map[string]func(context.Context, *env, []string) error{
		"get": kvGet, "put": kvPut, "ls": kvLs, "rm": kvRm,
	})
}

func kvGet(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("kv get PROJECT KEY", "Prints the value under KEY (with --json, the whole entry).")
	var cf clientFlags
	pos, c, _, err := e.clientCommand(fs, &cf, args, 2, 2)
	if err != nil {
		return err
	}
	kv, err := c.KVGet(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, kv)
	}
	return printJSON(e.stdout, kv.Value)
}

func kvPut(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("kv put PROJECT KEY JSON|FILE|- [--ttl-s N]", "Writes a JSON value under KEY.")
	var cf clientFlags
	ttl := fs.Int64("ttl-s", 0, "expire the entry after this many seconds (0: never)")
	pos, c, _, err := e.clientCommand(fs, &cf, args, 3, 3)
	if err != nil {
		return err
	}
	v, err := e.readJSONArg(pos[2])
	if err != nil {
		// A bare word is a string value: skiff kv put p mode fast.
		if _, statErr := os.Stat(pos[2]); statErr == nil || pos[2] == "-" {
			return err
		}
		v, _ = json.Marshal(pos[2])
	}
	kv, err := c.KVPut(ctx, pos[0], pos[1], v, *ttl)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, kv)
	}
	fmt.Fprintf(e.stdout, "%s/%s = %s\n", pos[0], pos[1], kv.Value)
	return nil
}

func kvLs(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("kv ls PROJECT [PREFIX] [--limit N]", "Lists the keys (and values) of the project's shared state.")
	var cf clientFlags
	limit := fs.Int("limit", 0, "at most this many entries (0: the server's default)")
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 2)
	if err != nil {
		return err
	}
	prefix := ""
	if len(pos) == 2 {
		prefix = pos[1]
	}
	l, err := c.KVList(ctx, pos[0], prefix, *limit)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, l)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tUPDATED")
	for _, en := range l.Entries {
		v := string(en.Value)
		if len(v) > 60 {
			v = v[:57] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", en.Key, v, en.UpdatedAt.Format(time.DateTime))
	}
	return tw.Flush()
}

func kvRm(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("kv rm PROJECT KEY", "Deletes a key.")
	var cf clientFlags
	pos, c, _, err := e.clientCommand(fs, &cf, args, 2, 2)
	if err != nil {
		return err
	}
	d, err := c.KVDelete(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, d)
	}
	fmt.Fprintf(e.stdout, "Deleted %s/%s.\n", pos[0], pos[1])
	return nil
}
