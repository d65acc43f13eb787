package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/client"
)

func runBalance(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("balance", "Shows the account's balance: the ledger, what active jobs hold, and what is available.")
	var cf clientFlags
	_, c, _, err := e.clientCommand(fs, &cf, args, 0, 0)
	if err != nil {
		return err
	}
	b, err := c.Balance(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, b)
	}
	fmt.Fprintf(e.stdout, "available  %s USD\nheld       %s USD (%d active holds)\nledger     %s USD\n",
		b.Balance.AvailableUSD, b.Balance.HeldUSD, b.Balance.ActiveHoldCount, b.Balance.LedgerBalanceUSD)
	return nil
}

func runLedger(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("ledger [--limit N] [--type T]", "Lists the account's ledger entries, newest first.")
	var cf clientFlags
	limit := fs.Int("limit", 20, "at most this many entries (0: all)")
	typ := fs.String("type", "", "only this entry type (job_charge, x402_topup, mpp_topup, beta_credit_grant)")
	_, c, _, err := e.clientCommand(fs, &cf, args, 0, 0)
	if err != nil {
		return err
	}
	var entries []apiv1.LedgerEntry
	for en, err := range c.Ledger(ctx, *typ) {
		if err != nil {
			return err
		}
		entries = append(entries, en)
		if *limit > 0 && len(entries) >= *limit {
			break
		}
	}
	if cf.json {
		return printJSON(e.stdout, entries)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tTYPE\tAMOUNT USD\tREFERENCE\tDESCRIPTION")
	for _, en := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", en.CreatedAt.Format(time.DateTime), en.EntryType, en.AmountUSD, en.Reference, en.Description)
	}
	return tw.Flush()
}

func runTopup(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("topup AMOUNT [--quote-only]",
		`Asks for a top-up quote of AMOUNT USD (e.g. 25 or 0.50), shows it, and pays it
over x402 with the wallet of 'skiff login --wallet-key-file' (or
SKIFF_WALLET_KEY). Without a wallet it shows the quote and exits 4.`)
	var cf clientFlags
	quoteOnly := fs.Bool("quote-only", false, "show the quote without paying it")
	keyFile := fs.String("wallet-key-file", "", "file holding the wallet's hex private key (default: the one login saved)")
	pos, c, cfg, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	w, _, err := e.wallet(*keyFile, cfg)
	if err != nil {
		return err
	}
	q, pr, err := c.TopupQuote(ctx, pos[0], "skiff topup")
	if err != nil {
		return err
	}
	if !cf.json {
		fmt.Fprintf(e.stderr, "Quote %s: %s USD, payable until %s.\n", q.ID, q.AmountUSD, q.ExpiresAt.Format(time.DateTime+" MST"))
	}
	if *quoteOnly || w == nil {
		if cf.json {
			if err := printJSON(e.stdout, map[string]any{"quote": q, "payment_required": pr}); err != nil {
				return err
			}
		}
		if *quoteOnly {
			return nil
		}
		return &exitError{exitPayment, fmt.Errorf("no wallet to pay quote %s with: run 'skiff login --wallet-key-file FILE' or set SKIFF_WALLET_KEY, then 'skiff topup %s' again", q.ID, pos[0])}
	}
	if !cf.json {
		fmt.Fprintf(e.stderr, "Paying with %s over x402...\n", w.Address())
	}
	paid, err := client.New(c.BaseURL(), tokenOf(cf, cfg), client.WithPayer(w)).PayQuote(ctx, q.ID, pr)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, paid)
	}
	fmt.Fprintf(e.stdout, "Paid %s USD (transaction %s). Available: %s USD.\n", paid.Payment.AmountUSD, paid.Payment.Transaction,
		paid.Balance.AvailableUSD)
	return nil
}

func runArtifacts(ctx context.Context, e *env, args []string) error {
	return e.subcommands(ctx, "artifacts", `Usage: skiff artifacts <command> [flags]

Commands:
  put FILE [--job JOB]   upload a file (streamed, with progress)
  get ID [-o FILE]       download an artifact (to stdout with -o -)
  ls                     list artifacts, newest first, and the quota
  rm ID                  delete an artifact
`, args, map[string]func(context.Context, *env, []string) error{
		"put": artifactsPut, "get": artifactsGet, "ls": artifactsList, "rm": artifactsRemove,
	})
}

// transferProgress prints "\rlabel n / total" on a terminal, at most every
// 100 ms; done clears the line.
func (e *env) transferProgress(label string, total int64, quiet bool) (progress func(int64), done func()) {
	tty := isTerminal(e.stderr) && !quiet
	var last time.Time
	progress = func(n int64) {
		if !tty || time.Since(last) < 100*time.Millisecond {
			return
		}
		last = time.Now()
		if total > 0 {
			fmt.Fprintf(e.stderr, "\r%s %s / %s (%d%%) ", label, humanBytes(n), humanBytes(total), 100*n/total)
		} else {
			fmt.Fprintf(e.stderr, "\r%s %s ", label, humanBytes(n))
		}
	}
	done = func() {
		if tty {
			fmt.Fprint(e.stderr, "\r\033[K")
		}
	}
	return progress, done
}

func artifactsPut(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("artifacts put FILE [--job JOB]", "Uploads a file as an artifact, streamed from disk; prints its id.")
	var cf clientFlags
	job := fs.String("job", "", "attach the artifact to this job")
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	st, err := os.Stat(pos[0])
	if err != nil {
		return err
	}
	progress, done := e.transferProgress("Uploading", st.Size(), cf.json)
	a, err := c.PutArtifactFile(ctx, pos[0], *job, progress)
	done()
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, a)
	}
	fmt.Fprintln(e.stdout, a.ID)
	fmt.Fprintf(e.stderr, "Uploaded %s (%s).\n", a.Filename, humanBytes(a.Size))
	return nil
}

func artifactsGet(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("artifacts get ID [-o FILE]", "Downloads an artifact, streamed, to FILE (default: its own filename; - for stdout).")
	var cf clientFlags
	out := fs.String("o", "", "where to write it (default: the artifact's filename; - for stdout)")
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	if *out == "" {
		meta, err := c.ArtifactMeta(ctx, pos[0])
		if err != nil {
			return err
		}
		*out = filepath.Base(meta.Filename)
		if *out == "." || *out == "/" || *out == "" {
			*out = pos[0]
		}
	}
	body, size, err := c.GetArtifact(ctx, pos[0])
	if err != nil {
		return err
	}
	defer body.Close()
	var w io.Writer = e.stdout
	var f *os.File
	if *out != "-" {
		if f, err = os.Create(*out); err != nil {
			return err
		}
		w = f
	}
	progress, done := e.transferProgress("Downloading", size, cf.json || *out == "-")
	n, err := io.Copy(w, &progressReader{r: body, progress: progress})
	done()
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	if *out != "-" {
		if cf.json {
			return printJSON(e.stdout, map[string]any{"id": pos[0], "path": *out, "bytes": n})
		}
		fmt.Fprintf(e.stderr, "Wrote %s (%s).\n", *out, humanBytes(n))
	}
	return nil
}

type progressReader struct {
	r        io.Reader
	n        int64
	progress func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.progress(p.n)
	return n, err
}

func artifactsList(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("artifacts ls [--limit N]", "Lists artifacts, newest first, and the account's quota.")
	var cf clientFlags
	limit := fs.Int("limit", 50, "at most this many (0: all)")
	_, c, _, err := e.clientCommand(fs, &cf, args, 0, 0)
	if err != nil {
		return err
	}
	var list []apiv1.Artifact
	for a, err := range c.Artifacts(ctx) {
		if err != nil {
			return err
		}
		list = append(list, a)
		if *limit > 0 && len(list) >= *limit {
			break
		}
	}
	q, err := c.ArtifactQuota(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, map[string]any{"artifacts": list, "quota": q})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFILENAME\tSIZE\tKIND\tCREATED")
	for _, a := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, a.Filename, humanBytes(a.Size), a.Kind, a.CreatedAt.Format(time.DateTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "quota: %s used of %s\n", humanBytes(q.UsedBytes), humanBytes(q.LimitBytes))
	return nil
}

func artifactsRemove(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("artifacts rm ID", "Deletes an artifact.")
	var cf clientFlags
	pos, c, _, err := e.clientCommand(fs, &cf, args, 1, 1)
	if err != nil {
		return err
	}
	d, err := c.DeleteArtifact(ctx, pos[0])
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, d)
	}
	if !d.Deleted {
		return errors.New("the server did not delete it")
	}
	fmt.Fprintf(e.stdout, "Deleted %s.\n", d.ID)
	return nil
}
