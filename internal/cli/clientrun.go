package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
)

func runRun(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("run [--project P] [--type T] [--fan-out N|JSON] [--detach] PAYLOAD.json|-",
		`Submits a job and follows it live: tasks done, running and failed, progress
bars from the runners' SKIFF_PROGRESS lines, the live output tail and the cost
so far (plain lines when stdout is not a terminal). Prints the result and
exits 0 only if the job completed (1 otherwise).

The file (or - for stdin) is the task payload, a JSON object. A file that
holds a whole submission (it has "project", "type" or "runner_command") is
sent as is, the flags filling what it lacks. The runner command defaults to
the project's entrypoint.

Ctrl-C asks whether to cancel the job or only detach from it.`)
	var cf clientFlags
	project := fs.String("project", "", "project (default: the current directory's name when it holds skiff.project.json)")
	typ := fs.String("type", "", "job type: structured_runner (default), sweep, map_reduce or benchmark")
	fanOut := fs.String("fan-out", "", "N (N tasks with the same payload) or a fan_out JSON object")
	command := fs.String("command", "", "runner command, split on spaces (default: the project's entrypoint)")
	detach := fs.Bool("detach", false, "print the job id and return without following it")
	idem := fs.String("idempotency-key", "", "Idempotency-Key of the submission (default: a fresh one)")
	pos, c, cfg, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	if w, _, err := e.wallet("", cfg); err != nil {
		return err
	} else if w != nil {
		c = client.New(c.BaseURL(), tokenOf(cf, cfg), client.WithPayer(w), client.WithUserAgent("skiff-cli/"+Version))
	}
	body, err := e.submission(ctx, c, pos[0], *project, *typ, *fanOut, *command)
	if err != nil {
		return err
	}
	j, err := c.SubmitJobRaw(ctx, body, *idem)
	if err != nil {
		return err
	}
	if *detach {
		if cf.json {
			return printJSON(e.stdout, j)
		}
		fmt.Fprintf(e.stdout, "%s\n", j.ID)
		fmt.Fprintf(e.stderr, "Submitted %s (%d tasks). Follow it: skiff jobs watch %s\n", j.ID, j.TaskCount, j.ID)
		return nil
	}
	return e.follow(ctx, c, j.ID, cf.json)
}

func tokenOf(cf clientFlags, cfg *clientConfig) string {
	if cf.token != "" {
		return cf.token
	}
	return cfg.Token
}

// submission builds the job body from the file and the flags.
func (e *env) submission(ctx context.Context, c *client.Client, arg, project, typ, fanOut, command string) (map[string]any, error) {
	raw, err := e.readJSONArg(arg)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, &exitError{exitUsage, fmt.Errorf("%s must hold a JSON object", arg)}
	}
	body := obj
	if _, ok := obj["project"]; !ok {
		if _, ok := obj["runner_command"]; !ok {
			if _, ok := obj["type"]; !ok {
				body = map[string]any{"payload": obj}
			}
		}
	}
	if project != "" {
		body["project"] = project
	}
	if body["project"] == nil {
		wd, _ := os.Getwd()
		if _, err := os.Stat(filepath.Join(wd, "skiff.project.json")); err != nil {
			return nil, &exitError{exitUsage, errors.New("which project? pass --project NAME (or run from the project's directory)")}
		}
		body["project"] = filepath.Base(wd)
	}
	if typ != "" {
		body["type"] = typ
	}
	if fanOut != "" {
		if n, err := strconv.Atoi(fanOut); err == nil {
			if n < 1 {
				return nil, &exitError{exitUsage, errors.New("--fan-out N needs N >= 1")}
			}
			items := make([]any, n)
			for i := range items {
				items[i] = map[string]any{}
			}
			body["fan_out"] = map[string]any{"items": items}
		} else {
			var fo any
			if err := json.Unmarshal([]byte(fanOut), &fo); err != nil {
				return nil, &exitError{exitUsage, fmt.Errorf("--fan-out is neither a number nor JSON: %v", err)}
			}
			body["fan_out"] = fo
		}
	}
	if command != "" {
		body["runner_command"] = strings.Fields(command)
	}
	if body["runner_command"] == nil {
		name, _ := body["project"].(string)
		cmd, err := entrypoint(ctx, c, name, arg)
		if err != nil {
			return nil, err
		}
		body["runner_command"] = cmd
	}
	return body, nil
}

// entrypoint is the runner command of the project's manifest: the
// skiff.project.json beside the payload file or in the current directory
// (the API does not show a pushed manifest), else the project's own.
func entrypoint(ctx context.Context, c *client.Client, project, payloadArg string) ([]string, error) {
	var m struct {
		Entrypoint struct {
			Command []string `json:"command"`
		} `json:"entrypoint"`
	}
	var dirs []string
	if payloadArg != "-" && !strings.HasPrefix(strings.TrimSpace(payloadArg), "{") {
		dirs = append(dirs, filepath.Dir(payloadArg))
	}
	dirs = append(dirs, ".")
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "skiff.project.json")); err == nil && json.Unmarshal(b, &m) == nil &&
			len(m.Entrypoint.Command) > 0 {
			return m.Entrypoint.Command, nil
		}
	}
	p, err := c.Project(ctx, project)
	if err != nil {
		return nil, err
	}
	if json.Unmarshal(p.Manifest, &m) == nil && len(m.Entrypoint.Command) > 0 {
		return m.Entrypoint.Command, nil
	}
	return nil, &exitError{exitUsage, fmt.Errorf("no runner command: pass --command, or run beside the project's skiff.project.json")}
}

// follow shows a job live until it ends, then its result. It returns an
// error (exit 1) unless the job completed.
func (e *env) follow(ctx context.Context, c *client.Client, id string, asJSON bool) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	frames := make(chan client.Frame)
	streamErr := make(chan error, 1)
	go func() {
		s := c.StreamJob(id, "")
		defer s.Close()
		for {
			f, err := s.Next(ctx)
			if err != nil {
				streamErr <- err
				return
			}
			select {
			case frames <- f:
			case <-ctx.Done():
				streamErr <- ctx.Err()
				return
			}
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)

	v := &liveView{id: id, tty: isTerminal(e.stdout) && !asJSON, quiet: asJSON, w: e.stdout, tasks: map[int64]*apiv1.Task{},
		counts: map[string]int64{}, start: time.Now()}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case f := <-frames:
			if v.apply(f) {
				// A task ended: its attempt was metered, so the job's cost
				// moved, which only the job object says.
				if j, err := c.Job(ctx, id); err == nil {
					v.job = j
					v.redraw()
				}
			}
		case err := <-streamErr:
			if !errors.Is(err, io.EOF) {
				return err
			}
			v.close()
			return e.finish(ctx, c, id, asJSON)
		case <-tick.C:
			v.redraw()
		case <-sigs:
			v.close()
			switch e.askInterrupt(id) {
			case "c":
				if _, err := c.CancelJob(ctx, id, "cancelled from skiff run"); err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "Cancelling %s...\n", id)
			case "d":
				fmt.Fprintf(e.stderr, "Detached; %s goes on. Follow it again: skiff jobs watch %s\n", id, id)
				return nil
			}
			v.reopen()
		}
	}
}

// askInterrupt asks what a Ctrl-C means: c (cancel), d (detach) or w
// (keep watching). Without a terminal to ask on, it detaches.
func (e *env) askInterrupt(id string) string {
	in := e.input()
	if f, ok := in.(*os.File); ok && !isTerminal(f) {
		return "d"
	}
	fmt.Fprintf(e.stderr, "\nCancel job %s, or detach and leave it running? [c]ancel / [d]etach / [w]atch on: ", id)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return "d"
	}
	switch a := strings.ToLower(strings.TrimSpace(line)); {
	case strings.HasPrefix(a, "c"):
		return "c"
	case strings.HasPrefix(a, "w"):
		return "w"
	}
	return "d"
}

// finish prints the ended job's result and says whether it completed.
func (e *env) finish(ctx context.Context, c *client.Client, id string, asJSON bool) error {
	j, err := c.Job(ctx, id)
	if err != nil {
		return err
	}
	res, err := c.Result(ctx, id)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(e.stdout, map[string]any{"job": j, "result": res}); err != nil {
			return err
		}
	} else {
		printResult(e.stdout, res)
	}
	if j.Status != "completed" {
		msg := fmt.Sprintf("job %s %s", id, j.Status)
		if j.Error != nil {
			msg += ": " + *j.Error
		}
		if j.RecommendedAction != nil {
			msg += ". " + *j.RecommendedAction
		} else {
			msg += fmt.Sprintf(". See its output: skiff jobs logs %s", id)
		}
		return errors.New(msg)
	}
	return nil
}

// printResult shows a result: the aggregate, else each task's result.
func printResult(w io.Writer, res *apiv1.JobResult) {
	fmt.Fprintf(w, "Result of %s (%s, %d of %d tasks with a result):\n", res.JobID, res.Status, res.ResultCount, res.TaskCount)
	if len(res.AggregateResult) > 0 && string(res.AggregateResult) != "null" {
		_ = printJSON(w, res.AggregateResult)
		return
	}
	for _, t := range res.Results {
		if len(t.Result) > 0 && string(t.Result) != "null" {
			b, _ := json.Marshal(t.Result)
			fmt.Fprintf(w, "  task %d: %s\n", t.Index, b)
		} else if t.Error != nil {
			fmt.Fprintf(w, "  task %d: %s: %s\n", t.Index, t.Status, lastLine(*t.Error))
		}
	}
}

// liveView is the live display of a job.
type liveView struct {
	id         string
	tty, quiet bool
	w          io.Writer
	job        *apiv1.Job
	tasks      map[int64]*apiv1.Task
	counts     map[string]int64
	total      int64
	start      time.Time
	drawn      int // lines of the last frame drawn (tty)
	closed     bool
	shown      string // the job status last printed (plain lines)
}

// apply updates the view with a frame; true when a task reached a
// terminal status.
func (v *liveView) apply(f client.Frame) (taskEnded bool) {
	switch f.Event {
	case apiv1.FrameSnapshot:
		var s apiv1.JobStreamSnapshot
		if f.Decode(&s) != nil {
			return false
		}
		v.job, v.total, v.counts, v.shown = s.Job, s.TaskCount, s.TaskCounts, s.Job.Status
		for i := range s.Tasks {
			v.tasks[s.Tasks[i].Index] = &s.Tasks[i]
		}
		v.line("job %s: %s, %d tasks", v.id, s.Job.Status, s.TaskCount)
	case apiv1.FrameJob:
		var jf apiv1.JobFrame
		if f.Decode(&jf) != nil || jf.Job == nil {
			return false
		}
		if v.shown != jf.Job.Status {
			v.line("job %s: %s%s", v.id, jf.Job.Status, costText(jf.Job))
			v.shown = jf.Job.Status
		}
		v.job = jf.Job
	case apiv1.FrameTask:
		var tf apiv1.TaskFrame
		if f.Decode(&tf) != nil {
			return false
		}
		t := tf.Task
		old, seen := v.tasks[t.Index]
		before := "queued"
		if seen {
			before = old.Status
		}
		if before != t.Status {
			v.counts[before]--
			v.counts[t.Status]++
			msg := fmt.Sprintf("task %d: %s", t.Index, t.Status)
			if t.Error != nil && t.Status == "failed" {
				msg += ": " + lastLine(*t.Error)
			}
			v.line("%s", msg)
			taskEnded = t.Status == "succeeded" || t.Status == "failed" || t.Status == "cancelled"
		}
		v.tasks[t.Index] = &t
		if p := progressText(t.LatestProgress); p != "" && (!seen || string(old.LatestProgress) != string(t.LatestProgress)) {
			v.line("task %d: progress %s", t.Index, p)
		}
		if t.LiveFeedback != nil {
			prev := ""
			if seen && old.LiveFeedback != nil {
				prev = old.LiveFeedback.OutputTail
			}
			if fresh := newLines(prev, t.LiveFeedback.OutputTail); fresh != "" {
				for _, l := range strings.Split(fresh, "\n") {
					v.line("task %d | %s", t.Index, l)
				}
			}
		}
	}
	v.redraw()
	return taskEnded
}

// line prints one plain line (only when not drawing on a terminal).
func (v *liveView) line(format string, args ...any) {
	if v.tty || v.quiet {
		return
	}
	fmt.Fprintf(v.w, format+"\n", args...)
}

func (v *liveView) close() {
	if v.tty && !v.closed {
		v.redraw()
		v.closed = true
	}
}

func (v *liveView) reopen() { v.closed, v.drawn = false, 0 }

// redraw draws the status block in place (terminal only).
func (v *liveView) redraw() {
	if !v.tty || v.closed || v.job == nil {
		return
	}
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\033[%dA", v.drawn)
	}
	lines := v.block()
	for _, l := range lines {
		b.WriteString("\r\033[K" + l + "\n")
	}
	// Clear what a longer previous block left below.
	for i := len(lines); i < v.drawn; i++ {
		b.WriteString("\r\033[K\n")
	}
	if v.drawn > len(lines) {
		fmt.Fprintf(&b, "\033[%dA", v.drawn-len(lines))
	}
	v.drawn = len(lines)
	fmt.Fprint(v.w, b.String())
}

func (v *liveView) block() []string {
	done := v.counts["succeeded"]
	lines := []string{
		fmt.Sprintf("%s  %s  %s%s", v.id, v.job.Status, time.Since(v.start).Round(time.Second), costText(v.job)),
		fmt.Sprintf("tasks  %d/%d done  %d running  %d failed  %d queued", done, v.total, v.counts["running"],
			v.counts["failed"], v.counts["queued"]+v.counts["pending"]),
	}
	var running []*apiv1.Task
	for _, t := range v.tasks {
		if t.Status == "running" {
			running = append(running, t)
		}
	}
	sort.Slice(running, func(i, j int) bool { return running[i].Index < running[j].Index })
	var tail string
	for i, t := range running {
		if i == 4 {
			lines = append(lines, fmt.Sprintf("  ... %d more running", len(running)-4))
			break
		}
		pct, label := progressOf(t.LatestProgress)
		bar := "[" + strings.Repeat(" ", 20) + "]"
		if pct >= 0 {
			n := int(pct / 5)
			bar = "[" + strings.Repeat("#", n) + strings.Repeat("-", 20-n) + "]" + fmt.Sprintf(" %3.0f%%", pct)
		}
		lines = append(lines, fmt.Sprintf("  task %-4d %s %s", t.Index, bar, label))
		if t.LiveFeedback != nil && t.LiveFeedback.OutputTail != "" {
			tail = t.LiveFeedback.OutputTail
		}
	}
	if tail != "" {
		tl := strings.Split(strings.TrimRight(tail, "\n"), "\n")
		if len(tl) > 3 {
			tl = tl[len(tl)-3:]
		}
		for _, l := range tl {
			if len(l) > 100 {
				l = l[:100]
			}
			lines = append(lines, "  | "+l)
		}
	}
	return lines
}

// costText is the job's cost so far, from its summary.
func costText(j *apiv1.Job) string {
	var s struct {
		Cost *apiv1.JobCost `json:"cost"`
	}
	if j == nil || json.Unmarshal(j.Summary, &s) != nil || s.Cost == nil {
		return ""
	}
	return fmt.Sprintf("  cost $%s", s.Cost.ChargedUSD)
}

// progressOf reads a SKIFF_PROGRESS object: a percentage (pct, percent,
// progress as a fraction, or done/step of total) and a label (stage,
// message).
func progressOf(raw json.RawMessage) (pct float64, label string) {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return -1, ""
	}
	num := func(k string) (float64, bool) { f, ok := m[k].(float64); return f, ok }
	pct = -1
	if p, ok := num("pct"); ok {
		pct = p
	} else if p, ok := num("percent"); ok {
		pct = p
	} else if p, ok := num("progress"); ok && p <= 1 {
		pct = p * 100
	} else if tot, ok := num("total"); ok && tot > 0 {
		if d, ok := num("done"); ok {
			pct = 100 * d / tot
		} else if d, ok := num("step"); ok {
			pct = 100 * d / tot
		}
	}
	pct = min(max(pct, -1), 100)
	for _, k := range []string{"stage", "message", "msg", "phase"} {
		if s, ok := m[k].(string); ok {
			label = s
			break
		}
	}
	return pct, label
}

func progressText(raw json.RawMessage) string {
	pct, label := progressOf(raw)
	if pct < 0 && label == "" {
		if len(raw) == 0 || string(raw) == "null" {
			return ""
		}
		return string(raw)
	}
	s := ""
	if pct >= 0 {
		s = fmt.Sprintf("%.0f%%", pct)
	}
	return strings.TrimSpace(s + " " + label)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
