// Package id makes the random, prefixed identifiers and secrets the service
// hands out.
package id

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Prefixes of every id kind. Token prefixes are fixed by the interface spec.
const (
	Account    = "acct_"
	APIKey     = "key_" // the stored key record; the secret itself starts with flk_
	APISecret  = "flk_"
	Session    = "fls_"
	Project    = "prj_"
	Push       = "psh_"
	Job        = "job_"
	Task       = "tsk_"
	Attempt    = "att_"
	Event      = "evt_"
	Artifact   = "art_"
	Quote      = "qt_"
	Hold       = "hld_"
	Ledger     = "led_"
	Challenge  = "wch_"
	Worker     = "wkr_"
	Enrollment = "cek_"
	Waitlist   = "wl_"
	Feedback   = "fb_"
)

// New returns prefix followed by 26 random base32 characters (130 bits).
func New(prefix string) string {
	return prefix + strings.ToLower(rand.Text())
}

// Secret returns a new bearer secret with the given prefix. It is shown to
// its owner once; only Hash of it is stored.
func Secret(prefix string) string {
	return prefix + rand.Text() + rand.Text()
}

// Hash is the stored form of a secret: hex sha256. Secrets carry 260 bits of
// randomness, so an unsalted fast hash is enough to make a leaked table useless.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
