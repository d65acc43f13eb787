package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/client"
)

// Exit codes of the client commands (docs/cli.md).
const (
	exitFailed      = 1 // the job failed, or the server refused the request
	exitUsage       = 2
	exitAuth        = 3 // no, a wrong or an expired credential
	exitPayment     = 4 // payment required
	exitUnavailable = 5 // the server cannot be reached or is unavailable
)

// exitError carries an exit code other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCodeOf maps an error of a command to the documented exit code.
func exitCodeOf(err error) int {
	var xe *exitError
	if errors.As(err, &xe) {
		return xe.code
	}
	if ce, ok := client.AsError(err); ok {
		switch ce.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			return exitAuth
		case http.StatusPaymentRequired:
			return exitPayment
		case 0, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return exitUnavailable
		}
	}
	return exitFailed
}

// clientConfig is $XDG_CONFIG_HOME/skiff/config.json, written by login
// (mode 0600: it holds a token).
type clientConfig struct {
	URL           string     `json:"url"`
	Token         string     `json:"token,omitempty"`
	TokenExpires  *time.Time `json:"token_expires_at,omitempty"`
	AccountID     string     `json:"account_id,omitempty"`
	AccountName   string     `json:"account_name,omitempty"`
	Wallet        string     `json:"wallet_address,omitempty"`
	WalletKeyFile string     `json:"wallet_key_file,omitempty"`
}

func (e *env) configPath() string {
	dir := e.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := e.getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "skiff", "config.json")
}

func (e *env) loadConfig() (*clientConfig, error) {
	var c clientConfig
	b, err := os.ReadFile(e.configPath())
	if errors.Is(err, os.ErrNotExist) {
		return &c, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%v); fix it or run 'skiff logout' and log in again", e.configPath(), err)
	}
	return &c, nil
}

func (e *env) saveConfig(c *clientConfig) error {
	p := e.configPath()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	// Write beside it and rename, so a crash never leaves half a file; the
	// mode is 0600 from the start.
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// clientFlags are the flags every client command has.
type clientFlags struct {
	url, token string
	json       bool
}

func (cf *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&cf.url, "url", "", "the server's address (default: the one 'skiff login' saved)")
	fs.StringVar(&cf.token, "token", "", "API key or session token (default: the one 'skiff login' saved)")
	fs.BoolVar(&cf.json, "json", false, "print JSON instead of text")
}

// client builds the API client: flags (and their SKIFF_URL, SKIFF_TOKEN
// twins) over the saved configuration.
func (e *env) client(cf *clientFlags, needToken bool, opts ...client.Option) (*client.Client, *clientConfig, error) {
	cfg, err := e.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	url, token := cfg.URL, cfg.Token
	if cf.url != "" {
		url = cf.url
		if cf.url != cfg.URL && cf.token == "" {
			token = "" // a saved token belongs to the saved server
		}
	}
	if cf.token != "" {
		token = cf.token
	}
	if url == "" {
		return nil, nil, &exitError{exitUsage, errors.New("no server: run 'skiff login --url URL' or set SKIFF_URL")}
	}
	if needToken && token == "" {
		return nil, nil, &exitError{exitAuth, errors.New("not logged in: run 'skiff login' or set SKIFF_TOKEN")}
	}
	opts = append([]client.Option{client.WithUserAgent("skiff-cli/" + Version)}, opts...)
	return client.New(url, token, opts...), cfg, nil
}

// clientCommand registers the client flags on fs, parses args (between
// min and max positional arguments) and builds the client.
func (e *env) clientCommand(fs *flag.FlagSet, cf *clientFlags, args []string, min, max int) ([]string, *client.Client, *clientConfig, error) {
	cf.register(fs)
	pos, err := e.parseArgs(fs, args)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := wantArgs(fs, pos, min, max); err != nil {
		return nil, nil, nil, err
	}
	c, cfg, err := e.client(cf, true)
	return pos, c, cfg, err
}

// parseArgs parses flags given anywhere among the arguments (skiff push
// DIR --json) and returns the positional ones; flags not given come from
// their SKIFF_ twins.
func (e *env) parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		rest = rest[1:]
	}
	return pos, e.parse(fs, nil)
}

// wantArgs fails with a usage error unless n positional arguments came.
func wantArgs(fs *flag.FlagSet, pos []string, min, max int) error {
	if len(pos) < min || len(pos) > max {
		fs.Usage()
		return errUsage
	}
	return nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// subcommands dispatches "skiff NAME SUB ..." and prints the usage.
func (e *env) subcommands(ctx context.Context, name, usage string, args []string, sub map[string]func(context.Context, *env, []string) error) error {
	if len(args) == 0 || sub[args[0]] == nil {
		fmt.Fprint(e.stderr, usage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return nil
		}
		if len(args) > 0 {
			fmt.Fprintf(e.stderr, "\nskiff %s: unknown subcommand %q\n", name, args[0])
		}
		return errUsage
	}
	return sub[args[0]](ctx, e, args[1:])
}

// isTerminal says whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// readJSONArg reads a JSON value from a file, "-" (stdin) or, when it
// starts with { or [, the argument itself.
func (e *env) readJSONArg(arg string) (json.RawMessage, error) {
	var b []byte
	var err error
	switch {
	case arg == "-":
		b, err = io.ReadAll(e.input())
	case strings.HasPrefix(strings.TrimSpace(arg), "{") || strings.HasPrefix(strings.TrimSpace(arg), "["):
		b = []byte(arg)
	default:
		b, err = os.ReadFile(arg)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, &exitError{exitUsage, fmt.Errorf("%s is not valid JSON", arg)}
	}
	return json.RawMessage(b), nil
}

// input is the command's standard input.
func (e *env) input() io.Reader {
	if e.stdin != nil {
		return e.stdin
	}
	return os.Stdin
}

// humanBytes renders a byte count.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
