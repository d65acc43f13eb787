package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/skiffhq/skiff/client"
)

func runLogin(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("login [--url URL] [--token KEY | --wallet-key-file FILE]",
		`Saves the server's address and a credential in $XDG_CONFIG_HOME/skiff/config.json
(mode 0600) after checking them against the server.

The credential is an API key (--token, SKIFF_TOKEN, or pasted when asked), or
a wallet: with --wallet-key-file (a file holding the hex private key) or
SKIFF_WALLET_KEY, skiff signs the server's challenge (EIP-191 personal_sign)
and saves the 24-hour session token it gets; 'skiff topup' pays with the
same wallet.`)
	var cf clientFlags
	cf.register(fs)
	keyFile := fs.String("wallet-key-file", "", "file holding the wallet's hex private key")
	chain := fs.String("chain", "", "wallet chain: base (default), ethereum or evm")
	pos, err := e.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, 0); err != nil {
		return err
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	if cf.url != "" {
		cfg.URL = strings.TrimRight(cf.url, "/")
	}
	if cfg.URL == "" {
		return &exitError{exitUsage, errors.New("no server: pass --url URL (or set SKIFF_URL)")}
	}
	c := client.New(cfg.URL, "", client.WithUserAgent("skiff-cli/"+Version))
	w, keyPath, err := e.wallet(*keyFile, cfg)
	if err != nil {
		return err
	}
	cfg.Wallet, cfg.WalletKeyFile, cfg.TokenExpires = "", "", nil
	switch {
	case cf.token != "":
		cfg.Token = cf.token
	case w != nil && *keyFile+e.getenv("SKIFF_WALLET_KEY") != "":
		v, err := c.WalletSignIn(ctx, w, *chain)
		if err != nil {
			return fmt.Errorf("wallet sign-in: %w", err)
		}
		cfg.Token, cfg.Wallet, cfg.WalletKeyFile = v.Token, w.Address(), keyPath
		exp := v.Session.ExpiresAt
		cfg.TokenExpires = &exp
	default:
		if !isTerminal(os.Stdin) && e.stdin == nil {
			return &exitError{exitUsage, errors.New("no credential: pass --token KEY, set SKIFF_TOKEN, or sign in with --wallet-key-file")}
		}
		fmt.Fprint(e.stderr, "API key: ")
		line, _ := bufio.NewReader(e.input()).ReadString('\n')
		cfg.Token = strings.TrimSpace(line)
		if cfg.Token == "" {
			return &exitError{exitUsage, errors.New("no API key given")}
		}
	}
	me, err := c.WithToken(cfg.Token).Balance(ctx)
	if err != nil {
		return fmt.Errorf("check the credential: %w", err)
	}
	cfg.AccountID, cfg.AccountName = me.Account.ID, me.Account.Name
	if err := e.saveConfig(cfg); err != nil {
		return fmt.Errorf("save %s: %w", e.configPath(), err)
	}
	if cf.json {
		return printJSON(e.stdout, map[string]any{"url": cfg.URL, "account": me.Account, "wallet_address": cfg.Wallet,
			"token_expires_at": cfg.TokenExpires, "config": e.configPath()})
	}
	fmt.Fprintf(e.stdout, "Logged in to %s as %s (%s, %s).\n", cfg.URL, me.Account.Name, me.Account.ID, me.Account.Role)
	if cfg.TokenExpires != nil {
		fmt.Fprintf(e.stdout, "The session lasts until %s; run 'skiff login' again then.\n", cfg.TokenExpires.Format("2006-01-02 15:04 MST"))
	}
	return nil
}

// wallet is the wallet of --wallet-key-file, SKIFF_WALLET_KEY or the one
// login saved; nil when none is configured.
func (e *env) wallet(keyFile string, cfg *clientConfig) (*client.Wallet, string, error) {
	if k := e.getenv("SKIFF_WALLET_KEY"); k != "" && keyFile == "" {
		w, err := client.ParseWallet(k)
		if err != nil {
			return nil, "", fmt.Errorf("SKIFF_WALLET_KEY: %w", err)
		}
		return w, "", nil
	}
	if keyFile == "" {
		keyFile = cfg.WalletKeyFile
	}
	if keyFile == "" {
		return nil, "", nil
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("wallet key file: %w", err)
	}
	w, err := client.ParseWallet(string(b))
	if err != nil {
		return nil, "", fmt.Errorf("wallet key file %s: %w", keyFile, err)
	}
	return w, keyFile, nil
}

func runLogout(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("logout", "Forgets the saved token (the server address stays). A wallet session (fls_...) is\n"+
		"also revoked on the server, so that a copy of it stops working too; an API key is only forgotten.")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	pos, err := e.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, 0); err != nil {
		return err
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	revoked := false
	if strings.HasPrefix(cfg.Token, "fls_") && cfg.URL != "" {
		err := client.New(cfg.URL, cfg.Token, client.WithUserAgent("skiff-cli/"+Version)).Logout(ctx)
		switch {
		case err == nil:
			revoked = true
		case client.StatusOf(err) == 401:
			// Expired or revoked already: nothing left to revoke.
		default:
			// Forget it here anyway; the session still ends when it expires.
			fmt.Fprintf(e.stderr, "warning: could not revoke the session on %s (%v); it stays valid until %s\n",
				cfg.URL, err, expiryOf(cfg))
		}
	}
	cfg.Token, cfg.TokenExpires, cfg.AccountID, cfg.AccountName = "", nil, "", ""
	if err := e.saveConfig(cfg); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]any{"logged_out": true, "session_revoked": revoked, "url": cfg.URL, "config": e.configPath()})
	}
	if revoked {
		fmt.Fprintln(e.stdout, "Logged out; the server revoked the session.")
		return nil
	}
	fmt.Fprintln(e.stdout, "Logged out.")
	return nil
}

// expiryOf says when a saved session expires, for a warning.
func expiryOf(cfg *clientConfig) string {
	if cfg.TokenExpires == nil {
		return "it expires"
	}
	return cfg.TokenExpires.Format("2006-01-02 15:04 MST")
}

func runWhoami(ctx context.Context, e *env, args []string) error {
	fs := e.newFlags("whoami", "Shows the server, the account the credential acts as, its role and balance.")
	var cf clientFlags
	_, c, _, err := e.clientCommand(fs, &cf, args, 0, 0)
	if err != nil {
		return err
	}
	me, err := c.Balance(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, map[string]any{"url": c.BaseURL(), "account": me.Account, "balance": me.Balance})
	}
	fmt.Fprintf(e.stdout, "%s on %s (%s, role %s); %s USD available\n", me.Account.Name, c.BaseURL(), me.Account.ID,
		me.Account.Role, me.Balance.AvailableUSD)
	return nil
}
