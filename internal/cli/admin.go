package cli

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/auth"
	"github.com/skiffhq/skiff/internal/billing"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/store"
)

func runAdmin(ctx context.Context, e *env, args []string) error {
	sub := map[string]func(context.Context, *env, []string) error{
		"create-key":   adminCreateKey,
		"grant-credit": adminGrantCredit,
	}
	if len(args) == 0 || sub[args[0]] == nil {
		fmt.Fprint(e.stderr, `Usage: skiff admin <command> [flags]

Operator commands. They work on the same store as the server: the SQLite
database under --data-dir (safe while the server runs) or PostgreSQL via
--database-url. Each prints only its result on stdout.

Commands:
  create-key    create an API key (and the account if needed); prints the key
  grant-credit  add a beta_credit_grant ledger entry; prints the new balance

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
	secret, _, err := auth.New(db, clock.System{}).CreateKey(ctx, *account, store.Role(*role))
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
	acct, err := auth.New(db, clk).AccountGetOrCreate(ctx, *account)
	if err != nil {
		return err
	}
	bill := billing.New(db, clk)
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
