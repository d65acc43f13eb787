package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/termsafe"
)

func adminCreateEnrollment(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("admin create-enrollment [--name NAME] [--work cpu|gpu|cpu,gpu] [--rate-percent P]",
		"Makes a one-time host enrollment code (cek_..., single use, valid 24 hours) and prints only the code.\n"+
			"The host's name, the work it may take and its rate share are fixed here; the machine redeems\n"+
			"the code with `skiff host --code` or the installer at /skiff-host.")
	var sf storeFlags
	sf.register(fs)
	name := fs.String("name", "", "the host's name (default: its hostname)")
	work := fs.String("work", "cpu", "work kinds it may take: cpu, gpu or cpu,gpu")
	rate := fs.Int("rate-percent", enroll.DefaultRatePercent, "the host's share of what its tasks earn, 0-100")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if *rate < 0 || *rate > 100 {
		return fmt.Errorf("--rate-percent must be 0-100")
	}
	db, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	code, _, err := enroll.New(db, clock.System{}).CreateEnrollment(ctx, enroll.Spec{Name: *name, WorkKinds: *work, RatePercent: *rate})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, code)
	return nil
}

func adminHosts(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("admin hosts [--json] [--limit N] [--offset N]",
		"Lists enrolled hosts, oldest first: id, name, state, declared share, running attempts and when\n"+
			"each last called (- when never). --json prints the admin API's host view, one per line.")
	db, lf, p, err := openListing(ctx, e, fs, args)
	if err != nil {
		return err
	}
	defer db.Close()
	hosts, err := enroll.New(db, clock.System{}).Hosts(ctx, &p)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(termsafe.JSONWriter(e.stdout))
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if !lf.json {
		fmt.Fprintln(tw, "ID\tNAME\tSTATE\tWORK\tCPUS\tMEMORY_GB\tGPUS\tRUNNING\tLAST_SEEN")
	}
	for i := range hosts {
		v, err := httpapi.HostView(ctx, db, &hosts[i])
		if err != nil {
			return err
		}
		if lf.json {
			if err := enc.Encode(v); err != nil {
				return err
			}
			continue
		}
		seen := "-"
		if v.LastSeenAt != nil {
			seen = v.LastSeenAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", termsafe.Text(v.ID), termsafe.Text(v.Name),
			termsafe.Text(string(v.State)), termsafe.Text(hosts[i].WorkKinds),
			strconv.FormatFloat(v.CPUs, 'f', -1, 64), strconv.FormatFloat(v.MemoryGB, 'f', -1, 64), v.GPUs, v.RunningAttempts, seen)
	}
	if lf.json {
		return nil
	}
	return tw.Flush()
}

func adminDrainHost(ctx context.Context, e *env, args []string) error {
	return adminHostState(ctx, e, args, "drain-host",
		"Stops new work to the host; what it runs finishes. Prints the host's new state.",
		(*enroll.Service).Drain)
}

func adminRemoveHost(ctx context.Context, e *env, args []string) error {
	return adminHostState(ctx, e, args, "remove-host",
		"Revokes the host's credential at once: its next request is refused, and what it ran is requeued\n"+
			"free when its lease lapses. Prints the host's new state.",
		(*enroll.Service).Remove)
}

func adminHostState(ctx context.Context, e *env, args []string, name, help string,
	do func(*enroll.Service, context.Context, string) (*store.Host, error)) error {
	fs := e.newFlags("admin "+name+" [flags] HOST_ID", help)
	var sf storeFlags
	sf.register(fs)
	// The id may come first or last: flag parsing stops at it.
	var hostID string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		hostID, args = args[0], args[1:]
	}
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if hostID == "" && fs.NArg() == 1 {
		hostID = fs.Arg(0)
	} else if fs.NArg() != 0 || hostID == "" {
		fs.Usage()
		return fmt.Errorf("give one host id (wkr_...; see skiff admin hosts)")
	}
	db, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	h, err := do(enroll.New(db, clock.System{}), ctx, hostID)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, termsafe.Text(string(h.State)))
	return nil
}
