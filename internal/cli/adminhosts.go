package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/enroll"
	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/termsafe"
)

func adminCreateEnrollment(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("admin create-enrollment [--name NAME] [--work cpu|gpu|cpu,gpu] [--rate-percent P] [--binary PATH] [--runsc PATH]",
		"Makes a one-time host enrollment code (cek_..., single use, valid 24 hours) and prints only the code\n"+
			"on stdout. On stderr it prints the sha256 of the binaries the controller serves to the installer\n"+
			"at /skiff-host (this skiff binary and runsc): give them to the machine's owner with the code, by\n"+
			"another channel, so the installer checks what it downloads against them (--skiff-sha256,\n"+
			"--runsc-sha256) rather than against what the controller says. The host's name, the work it may\n"+
			"take and its rate share are fixed here; the machine redeems the code with `skiff host --code-file`\n"+
			"or the installer at /skiff-host.")
	var sf storeFlags
	sf.register(fs)
	name := fs.String("name", "", "the host's name (default: its hostname)")
	work := fs.String("work", "cpu", "work kinds it may take: cpu, gpu or cpu,gpu")
	rate := fs.Int("rate-percent", enroll.DefaultRatePercent, "the host's share of what its tasks earn, 0-100")
	binary := fs.String("binary", "", "the skiff binary the server serves to hosts (default: this one)")
	runsc := fs.String("runsc", build.DefaultRunscPath, "the runsc the server serves to hosts, as its --runsc (env SKIFF_RUNSC)")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if *rate < 0 || *rate > 100 {
		return fmt.Errorf("--rate-percent must be 0-100")
	}
	if *binary == "" {
		*binary = selfPath()
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
	printBinarySums(e, *binary, *runsc)
	return nil
}

// printBinarySums prints, on stderr, the sha256 of the binaries served at
// /skiff-host/bin/, for the owner of a new host to check out of band: over
// a channel an attacker controls, the controller's own .sha256 answers
// prove nothing.
func printBinarySums(e *env, binary, runsc string) {
	platform := runtime.GOOS + "-" + runtime.GOARCH
	sums := map[string]string{}
	for _, b := range []struct{ flag, name, path string }{{"--skiff-sha256", platform, binary}, {"--runsc-sha256", "runsc-" + platform, runsc}} {
		sum, err := fileSHA256(b.path)
		if err != nil {
			fmt.Fprintf(e.stderr, "sha256 of %s (%s): unavailable: %v\n", b.name, b.path, err)
			continue
		}
		fmt.Fprintf(e.stderr, "sha256 of %s (%s): %s\n", b.name, b.path, sum)
		sums[b.flag] = sum
	}
	if len(sums) == 2 {
		fmt.Fprintf(e.stderr, "give the owner the code and: --skiff-sha256 %s --runsc-sha256 %s\n", sums["--skiff-sha256"], sums["--runsc-sha256"])
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
