package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/paywire"
)

// Wallet is an Ethereum key held by the client: it signs in (EIP-191
// personal_sign) and pays x402 quotes (EIP-3009 over EIP-712).
type Wallet struct {
	key  *secp256k1.PrivateKey
	addr paywire.Address
	// Now dates the authorizations (default time.Now).
	Now func() time.Time
}

// ParseWallet reads a hex private key (with or without 0x, surrounding
// space ignored), as a key file or SKIFF_WALLET_KEY holds it.
func ParseWallet(hexKey string) (*Wallet, error) {
	s := strings.TrimPrefix(strings.TrimSpace(hexKey), "0x")
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("a wallet key is 32 bytes of hex (64 characters)")
	}
	k := secp256k1.PrivKeyFromBytes(b)
	return &Wallet{key: k, addr: paywire.PubkeyAddress(k.PubKey()), Now: time.Now}, nil
}

// Address is the wallet's checksummed address.
func (w *Wallet) Address() string { return w.addr.Checksum() }

// sign returns r||s||v (v 27/28) over hash, as wallets send it.
func (w *Wallet) sign(hash []byte) string {
	c := ecdsa.SignCompact(w.key, hash, false) // [27+recid] r s
	sig := append(append([]byte{}, c[1:]...), c[0])
	return "0x" + hex.EncodeToString(sig)
}

// PersonalSign signs msg with EIP-191 personal_sign.
func (w *Wallet) PersonalSign(msg string) string {
	return w.sign(paywire.PersonalMessageHash([]byte(msg)))
}

// PaymentSignature signs an EIP-3009 authorization for the first "exact"
// requirement and returns the PAYMENT-SIGNATURE value.
func (w *Wallet) PaymentSignature(_ context.Context, pr *PaymentRequired) (string, error) {
	for _, acc := range pr.Accepts {
		if acc.Scheme != "exact" || !strings.HasPrefix(acc.Network, "eip155:") {
			continue
		}
		chain, err := strconv.ParseInt(strings.TrimPrefix(acc.Network, "eip155:"), 10, 64)
		if err != nil {
			return "", fmt.Errorf("network %q: %w", acc.Network, err)
		}
		asset, err := paywire.ParseAddress(acc.Asset)
		if err != nil {
			return "", fmt.Errorf("asset %q: %w", acc.Asset, err)
		}
		to, err := paywire.ParseAddress(acc.PayTo)
		if err != nil {
			return "", fmt.Errorf("payTo %q: %w", acc.PayTo, err)
		}
		value, ok := new(big.Int).SetString(acc.Amount, 10)
		if !ok {
			return "", fmt.Errorf("amount %q is not an integer", acc.Amount)
		}
		name, _ := acc.Extra["name"].(string)
		version, _ := acc.Extra["version"].(string)
		var nonce [32]byte
		_, _ = rand.Read(nonce[:])
		before := w.Now().Add(time.Duration(acc.MaxTimeoutSeconds) * time.Second).Unix()
		a := paywire.Authorization{From: w.addr, To: to, Value: value, ValidAfter: big.NewInt(0),
			ValidBefore: big.NewInt(before), Nonce: nonce}
		d := paywire.Domain{Name: name, Version: version, ChainID: chain, VerifyingContract: asset}
		res := pr.Resource
		return paywire.EncodeStd(paywire.PaymentPayload{X402Version: 2, Resource: &res, Accepted: acc,
			Payload: paywire.ExactPayload{Signature: w.sign(d.TypedDataHash(&a)), Authorization: paywire.EVMAuthorization{
				From: w.addr.Checksum(), To: to.Checksum(), Value: acc.Amount, ValidAfter: "0",
				ValidBefore: strconv.FormatInt(before, 10), Nonce: "0x" + hex.EncodeToString(nonce[:])}}}), nil
	}
	return "", fmt.Errorf("no exact EVM requirement among %d offered", len(pr.Accepts))
}

// WalletSignIn signs in with w (challenge, personal_sign, verify) and
// returns the session; its Token is a bearer token valid 24 hours. chain
// "" is the server's default (base).
func (c *Client) WalletSignIn(ctx context.Context, w *Wallet, chain string) (*apiv1.WalletVerifyResponse, error) {
	var ch apiv1.WalletChallengeResponse
	if err := c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/auth/wallet/challenge",
		body: apiv1.WalletChallengeRequest{WalletAddress: w.Address(), Chain: chain}}, &ch); err != nil {
		return nil, err
	}
	var out apiv1.WalletVerifyResponse
	return &out, c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/auth/wallet/verify",
		body: apiv1.WalletVerifyRequest{ChallengeID: ch.Challenge.ID, WalletAddress: w.Address(),
			Signature: w.PersonalSign(ch.Challenge.Message)}}, &out)
}

// Logout revokes the wallet session the client's token is (POST
// /api/v1/auth/logout): the server refuses the token from then on. An API
// key is not a session: the server answers 422 not_a_session.
func (c *Client) Logout(ctx context.Context) error {
	return c.call(ctx, &request{method: http.MethodPost, path: "/api/v1/auth/logout"}, nil)
}
