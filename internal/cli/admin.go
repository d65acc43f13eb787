package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/contact"
	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/termsafe"
)

func runAdmin(ctx context.Context, e *env, args []string) error {
	sub := map[string]func(context.Context, *env, []string) error{
		"create-key":   adminCreateKey,
		"grant-credit": adminGrantCredit,
		"waitlist":     adminWaitlist,
		"feedback":     adminFeedback,

		"create-enrollment": adminCreateEnrollment,
		"hosts":             adminHosts,
		"drain-host":        adminDrainHost,
		"remove-host":       adminRemoveHost,
	}
	if len(args) == 0 || sub[args[0]] == nil {
		fmt.Fprint(e.stderr, `Usage: skiff admin <command> [flags]

Operator commands. They work on the same store as the server: the SQLite
database under --data-dir (safe while the server runs) or PostgreSQL via
--database-url. Each prints only its result on stdout.

Commands:
  create-key    create an API key (and the account if needed); prints the key
  grant-credit  add a beta_credit_grant ledger entry; prints the new balance
  waitlist      list waitlist sign-ups, newest first (--json for JSON lines)
  feedback      list feedback reports, newest first (--json for JSON lines)
  create-enrollment  make a one-time host enrollment code (cek_...); prints the code
  hosts         list enrolled hosts (--json for JSON lines)
  drain-host    stop new work to a host; what it runs finishes
  remove-host   revoke a host's credential at once

Run 'skiff admin <command> --help' for the flags of a command.
`)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return errUsage
	}
	return sub[args[0]](ctx, e, args[1:])
}

func adminCreateKey(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("admin create-key --account NAME [--role member|viewer|admin]",
		"Creates an API key for the account, creating the account if needed, and prints the key.\nThe key is shown only this once; only its hash is stored.")
	var sf storeFlags
	sf.register(fs)
	account := fs.String("account", "", "account name (required)")
	role := fs.String("role", "member", "role of the key: member, viewer or admin")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if *account == "" {
		fs.Usage()
		return fmt.Errorf("--account is required")
	}
	db, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	secret, _, err := auth.New(db, clock.System{}, auth.WalletConfig{}).CreateKey(ctx, *account, store.Role(*role))
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, secret)
	return nil
}

func adminGrantCredit(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("admin grant-credit --account NAME --usd AMOUNT",
		"Adds a beta_credit_grant ledger entry of AMOUNT USD (at most 6 decimals) and prints the\naccount's available balance in USD. The account is created if needed.")
	var sf storeFlags
	sf.register(fs)
	account := fs.String("account", "", "account name (required)")
	usd := fs.String("usd", "", "amount in USD, e.g. 25 or 0.50 (required)")
	note := fs.String("note", "", "description recorded on the ledger entry")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if *account == "" || *usd == "" {
		fs.Usage()
		return fmt.Errorf("--account and --usd are required")
	}
	amount, err := apiv1.ParseUSD(*usd)
	if err != nil {
		return err
	}
	db, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	clk := clock.System{}
	acct, err := auth.New(db, clk, auth.WalletConfig{}).AccountGetOrCreate(ctx, *account)
	if err != nil {
		return err
	}
	bill := billing.New(db, clk, nil)
	if _, err := bill.GrantCredit(ctx, acct.ID, int64(amount), *note); err != nil {
		return err
	}
	b, err := bill.Balance(ctx, acct.ID)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, apiv1.USD(b.AvailableMicros()).String())
	return nil
}

// listFlags are the paging and format flags of the admin listings.
type listFlags struct {
	limit, offset int
	json          bool
}

func (l *listFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&l.limit, "limit", 100, "how many to list (1-10000)")
	fs.IntVar(&l.offset, "offset", 0, "how many of the newest to skip")
	fs.BoolVar(&l.json, "json", false, "print one JSON object per line instead of a table")
}

// openListing parses an admin listing's flags (store, paging, --json) into
// fs and opens the store; the caller closes it.
func openListing(ctx context.Context, e *env, fs *flag.FlagSet, args []string) (store.Store, *listFlags, store.ListParams, error) {
	var sf storeFlags
	sf.register(fs)
	lf := &listFlags{}
	lf.register(fs)
	if err := e.parse(fs, args); err != nil {
		return nil, nil, store.ListParams{}, err
	}
	p, err := lf.params()
	if err != nil {
		return nil, nil, store.ListParams{}, err
	}
	db, err := sf.open(ctx)
	if err != nil {
		return nil, nil, store.ListParams{}, err
	}
	return db, lf, p, nil
}

func (l *listFlags) params() (store.ListParams, error) {
	if l.limit < 1 || l.limit > 10000 || l.offset < 0 {
		return store.ListParams{}, fmt.Errorf("--limit must be 1-10000 and --offset 0 or more")
	}
	return store.ListParams{Limit: l.limit, Offset: l.offset}, nil
}

// adminWaitlistEntry is one line of 'skiff admin waitlist --json'.
type adminWaitlistEntry struct {
	ID        string `json:"id"`
	Email     string `json:"email"`
	CreatedAt string `json:"created_at"`
}

func adminWaitlist(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("admin waitlist [--json] [--limit N] [--offset N]",
		"Lists the addresses on the API key waitlist, newest first: id, sign-up time (UTC) and address.")
	db, lf, p, err := openListing(ctx, e, fs, args)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := contact.New(db, clock.System{}).ListWaitlist(ctx, p)
	if err != nil {
		return err
	}
	if lf.json {
		enc := json.NewEncoder(termsafe.JSONWriter(e.stdout))
		for _, w := range list {
			if err := enc.Encode(adminWaitlistEntry{ID: w.ID, Email: w.Email, CreatedAt: w.CreatedAt.Format(time.RFC3339)}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tEMAIL")
	for _, w := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", termsafe.Text(w.ID), w.CreatedAt.Format(time.RFC3339), termsafe.Text(w.Email))
	}
	return tw.Flush()
}

// adminFeedbackEntry is one line of 'skiff admin feedback --json'.
type adminFeedbackEntry struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	JobID       string          `json:"job_id,omitempty"`
	Metadata    json.RawMessage `json:"metadata"`
	AccountID   string          `json:"account_id,omitempty"`
	AccountName string          `json:"account_name,omitempty"`
	CreatedAt   string          `json:"created_at"`
}

func adminFeedback(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("admin feedback [--json] [--limit N] [--offset N]",
		"Lists feedback reports, newest first. The table shows id, time, type, account (- when sent\nwithout credentials), job and title; --json adds the description and metadata.")
	db, lf, p, err := openListing(ctx, e, fs, args)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := contact.New(db, clock.System{}).ListFeedback(ctx, p)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, f := range list {
		if f.AccountID == "" || names[f.AccountID] != "" {
			continue
		}
		if a, err := db.AccountGetByID(ctx, f.AccountID); err == nil {
			names[f.AccountID] = a.Name
		}
	}
	if lf.json {
		enc := json.NewEncoder(termsafe.JSONWriter(e.stdout))
		for _, f := range list {
			if err := enc.Encode(adminFeedbackEntry{ID: f.ID, Type: string(f.Type), Title: f.Title, Description: f.Description,
				JobID: f.JobID, Metadata: f.Metadata, AccountID: f.AccountID, AccountName: names[f.AccountID],
				CreatedAt: f.CreatedAt.Format(time.RFC3339)}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tTYPE\tACCOUNT\tJOB\tTITLE")
	for _, f := range list {
		acct := "-"
		if f.AccountID != "" {
			acct = names[f.AccountID]
			if acct == "" {
				acct = f.AccountID
			}
		}
		job := f.JobID
		if job == "" {
			job = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Text(f.ID), f.CreatedAt.Format(time.RFC3339), termsafe.Text(string(f.Type)),
			termsafe.Text(acct), termsafe.Text(job), termsafe.Text(f.Title))
	}
	return tw.Flush()
}
