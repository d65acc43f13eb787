package evmrpc_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/payment"
	"github.com/skiffhq/skiff/internal/payment/evmrpc"
	"github.com/skiffhq/skiff/paywire"
)

// node is a JSON-RPC stand-in for an EVM node: it answers eth_getLogs and
// eth_getTransactionReceipt from its tables, the way a real node shapes
// them (a real chain runs in the end-to-end payment suite, test/payments,
// where a crash between settlement and credit is resolved through this
// client against anvil).
type node struct {
	mu       sync.Mutex
	logs     []map[string]any
	receipts map[string]map[string]any
	fail     string // a JSON-RPC error message for every call
	raw      string // a raw body answered instead
	calls    []string
}

func (n *node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, req.Method)
	if n.raw != "" {
		_, _ = w.Write([]byte(n.raw))
		return
	}
	if n.fail != "" {
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32005, "message": n.fail}})
		return
	}
	var result any
	switch req.Method {
	case "eth_getLogs":
		var f struct {
			Address string   `json:"address"`
			Topics  []string `json:"topics"`
		}
		_ = json.Unmarshal(req.Params[0], &f)
		out := []map[string]any{}
		for _, l := range n.logs {
			if strings.EqualFold(l["address"].(string), f.Address) && topicsMatch(l["topics"].([]string), f.Topics) {
				out = append(out, l)
			}
		}
		result = out
	case "eth_getTransactionReceipt":
		var hash string
		_ = json.Unmarshal(req.Params[0], &hash)
		result = n.receipts[hash]
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": result})
}

func topicsMatch(have, want []string) bool {
	if len(have) < len(want) {
		return false
	}
	for i, w := range want {
		if !strings.EqualFold(have[i], w) {
			return false
		}
	}
	return true
}

func topic(a paywire.Address) string {
	return "0x000000000000000000000000" + strings.TrimPrefix(strings.ToLower(a.Hex()), "0x")
}

func addr(t *testing.T, s string) paywire.Address {
	t.Helper()
	a, err := paywire.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// pay records on n a transaction in which token used payer's nonce and
// moved value from payer to payee, with the given receipt status.
func (n *node) pay(token, payer, payee paywire.Address, value int64, nonce [32]byte, status, tx string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.logs = append(n.logs, map[string]any{"address": token.Hex(), "transactionHash": tx, "removed": false, "data": "0x",
		"topics": []string{payment.AuthorizationUsedTopic(), topic(payer), "0x" + hex.EncodeToString(nonce[:])}})
	if n.receipts == nil {
		n.receipts = map[string]map[string]any{}
	}
	n.receipts[tx] = map[string]any{"status": status, "logs": []map[string]any{{
		"address": token.Hex(), "transactionHash": tx,
		"topics": []string{payment.TransferTopic(), topic(payer), topic(payee)},
		"data":   fmt.Sprintf("0x%064x", value),
	}}}
}

func TestPaid(t *testing.T) {
	t.Parallel()
	token := addr(t, "0x036CbD53842c5426634e7929541eC2318f3dCF7e")
	payer := addr(t, "0x70997970C51812dc3A010C7d01b50e0d17dc79C8")
	payee := addr(t, "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC")
	other := addr(t, "0x90F79bf6EB2c4f870365E785982E1f101E93b906")
	nonce := func(b byte) (n [32]byte) { n[31] = b; return n }
	value := big.NewInt(2_000_000)

	n := &node{}
	n.pay(token, payer, payee, 2_000_000, nonce(1), "0x1", "0xaaa1") // the payment
	n.pay(token, payer, other, 2_000_000, nonce(2), "0x1", "0xaaa2") // the nonce spent paying someone else
	n.pay(token, payer, payee, 1_000_000, nonce(3), "0x1", "0xaaa3") // a smaller amount
	n.pay(token, payer, payee, 2_000_000, nonce(4), "0x0", "0xaaa4") // reverted
	n.pay(other, payer, payee, 2_000_000, nonce(5), "0x1", "0xaaa5") // another token's event
	srv := httptest.NewServer(n)
	t.Cleanup(srv.Close)
	c := evmrpc.New(srv.URL, 5*time.Second)

	for _, tc := range []struct {
		name  string
		nonce [32]byte
		want  string
	}{
		{"paid to the payee, the quoted amount", nonce(1), "0xaaa1"},
		{"nonce spent paying someone else", nonce(2), ""},
		{"another amount", nonce(3), ""},
		{"reverted transaction", nonce(4), ""},
		{"event of another token", nonce(5), ""},
		{"unused nonce", nonce(9), ""},
	} {
		got, err := c.Paid(t.Context(), token, payer, payee, value, tc.nonce)
		if err != nil || got != tc.want {
			t.Errorf("%s: Paid = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// A node that fails, answers garbage or cannot be reached is an error (the
// settlement stays pending), never "not paid", and the error does not
// carry the node's URL (a provider's key often rides in it).
func TestPaidErrors(t *testing.T) {
	t.Parallel()
	token := addr(t, "0x036CbD53842c5426634e7929541eC2318f3dCF7e")
	payer := addr(t, "0x70997970C51812dc3A010C7d01b50e0d17dc79C8")
	payee := addr(t, "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC")
	for _, tc := range []struct {
		name string
		node *node
		want string
	}{
		{"rpc error", &node{fail: "query returned more than 10000 results"}, "more than 10000"},
		{"not json", &node{raw: "<html>bad gateway</html>"}, "eth_getLogs"},
		{"wrong result shape", &node{raw: `{"jsonrpc":"2.0","id":1,"result":{"logs":1}}`}, "result"},
	} {
		srv := httptest.NewServer(tc.node)
		_, err := evmrpc.New(srv.URL+"/v2/sekrit-key", 5*time.Second).Paid(t.Context(), token, payer, payee, big.NewInt(1), [32]byte{})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s: err = %v; want one mentioning %q and not the URL", tc.name, err, tc.want)
		}
	}
	// Unreachable: a closed server.
	srv := httptest.NewServer(&node{})
	srv.Close()
	_, err := evmrpc.New(srv.URL+"/v2/sekrit-key", time.Second).Paid(t.Context(), token, payer, payee, big.NewInt(1), [32]byte{})
	if err == nil || strings.Contains(err.Error(), "sekrit") {
		t.Errorf("unreachable node: err = %v; want an error without the URL", err)
	}
}
