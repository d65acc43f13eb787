// Package evmrpc reads an EVM chain over JSON-RPC: the adapter behind
// payment.Chain.
package evmrpc

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/paywire"
)

// Client is a JSON-RPC client of one node.
type Client struct {
	url  string
	http *http.Client
}

var _ payment.Chain = (*Client)(nil)

// New returns a client of the node at url.
func New(url string, timeout time.Duration) *Client {
	return &Client{url: url, http: &http.Client{Timeout: timeout}}
}

// Paid asks eth_getLogs for the token's AuthorizationUsed event of
// (authorizer, nonce) (a nonce is used at most once, so there is at most
// one), then the transaction's receipt for a Transfer of value from
// authorizer to payTo. The whole history is searched; a node that limits
// the block range answers an error, which leaves the settlement pending.
func (c *Client) Paid(ctx context.Context, asset, authorizer, payTo paywire.Address, value *big.Int, nonce [32]byte) (string, error) {
	filter := map[string]any{
		"address":   asset.Hex(),
		"fromBlock": "earliest",
		"toBlock":   "latest",
		"topics":    []string{payment.AuthorizationUsedTopic(), topicOf(authorizer), "0x" + hex.EncodeToString(nonce[:])},
	}
	var logs []rpcLog
	if err := c.call(ctx, "eth_getLogs", []any{filter}, &logs); err != nil {
		return "", err
	}
	for _, l := range logs {
		if l.Removed {
			continue
		}
		var receipt struct {
			Status string   `json:"status"`
			Logs   []rpcLog `json:"logs"`
		}
		if err := c.call(ctx, "eth_getTransactionReceipt", []any{l.TransactionHash}, &receipt); err != nil {
			return "", err
		}
		if receipt.Status != "0x1" {
			continue
		}
		for _, t := range receipt.Logs {
			if !strings.EqualFold(t.Address, asset.Hex()) || len(t.Topics) != 3 || t.Topics[0] != payment.TransferTopic() ||
				!strings.EqualFold(t.Topics[1], topicOf(authorizer)) || !strings.EqualFold(t.Topics[2], topicOf(payTo)) {
				continue
			}
			if n, ok := new(big.Int).SetString(strings.TrimPrefix(t.Data, "0x"), 16); ok && n.Cmp(value) == 0 {
				return l.TransactionHash, nil
			}
		}
	}
	return "", nil
}

type rpcLog struct {
	Address         string   `json:"address"`
	Topics          []string `json:"topics"`
	Data            string   `json:"data"`
	TransactionHash string   `json:"transactionHash"`
	Removed         bool     `json:"removed"`
}

// topicOf is an address as an indexed topic: left-padded to 32 bytes.
func topicOf(a paywire.Address) string {
	var w [32]byte
	copy(w[12:], a[:])
	return "0x" + hex.EncodeToString(w[:])
}

func (c *Client) call(ctx context.Context, method string, params []any, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		// Without the URL, which may carry a provider's key.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&r); err != nil {
		return fmt.Errorf("%s: answered %d: %w", method, resp.StatusCode, err)
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("%s: result: %w", method, err)
	}
	return nil
}
