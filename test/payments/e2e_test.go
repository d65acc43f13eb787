// Package payments_test pays a real skiff server with the ecosystem's own,
// unmodified clients: a local EVM chain (anvil from npm), an EIP-3009 token
// of our own compiled with solc-js, an x402 facilitator built from
// @x402/core and @x402/evm, and the @x402/fetch and mppx clients
// (client.mjs). The Node side is installed by `make setup` from the
// committed package-lock.json.
package payments_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/build/buildtest"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/paywire"
)

// Anvil's well-known dev accounts: 0 deploys and pays the facilitator's
// gas, 1 is the payer, 2 the service's payee.
const (
	deployerKey = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	payerKey    = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
	payerAddr   = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
	payeeAddr   = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
	chainID     = 1337
	mintAtomic  = 1_000_000_000 // 1000 tokens
)

type harness struct {
	root, bin  string // the repository, the skiff binary
	dir        string // test/payments
	rpc, token string
	facPort    int
	fac        *proc
	base       string // the skiff server
	env        []string
	// facilitatorStart (re)starts the facilitator on facPort; it lives
	// until the whole test ends.
	facilitatorStart func()
}

// proc is a child process in its own process group, killed whole.
type proc struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

func (p *proc) stop() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

type lockedBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func start(t *testing.T, dir string, env []string, name string, args ...string) (*proc, io.Reader) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	var errBuf lockedBuffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{cmd: cmd, out: &errBuf.Buffer, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			errBuf.mu.Lock()
			t.Logf("%s stderr (tail):\n%s", filepath.Base(name), tail(errBuf.String(), 3000))
			errBuf.mu.Unlock()
		}
	})
	return p, pr
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitLine reads r until a line starts with prefix; the rest of r is
// drained in the background.
func waitLine(t *testing.T, r io.Reader, prefix string, timeout time.Duration) string {
	t.Helper()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		found := false
		for sc.Scan() {
			if !found && strings.HasPrefix(sc.Text(), prefix) {
				found = true
				lines <- sc.Text()
			}
		}
		if !found {
			close(lines)
		}
	}()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("process ended before printing %q", prefix)
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("no %q line within %v", prefix, timeout)
	}
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func run(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr: %s", name, strings.Join(args, " "), err, tail(stderr.String(), 3000))
	}
	return out
}

func setup(t *testing.T) *harness {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Skip(t, "node is not installed (make setup installs it)")
	}
	anvil := filepath.Join(dir, "node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil")
	for _, need := range []string{anvil, filepath.Join(dir, "node_modules", "mppx"), filepath.Join(dir, "node_modules", "@x402", "fetch")} {
		if _, err := os.Stat(need); err != nil {
			testenv.Skipf(t, "%s is missing: run make setup (npm ci in test/payments)", need)
		}
	}
	h := &harness{dir: dir}
	run(t, dir, nil, node, "compile.cjs")

	// Chain.
	rpcPort := freePort(t)
	h.rpc = fmt.Sprintf("http://127.0.0.1:%d", rpcPort)
	_, out := start(t, dir, nil, anvil, "--host", "127.0.0.1", "--port", fmt.Sprint(rpcPort), "--chain-id", fmt.Sprint(chainID))
	waitLine(t, out, "Listening on", 60*time.Second)
	var dep struct{ Token string }
	if err := json.Unmarshal(run(t, dir, []string{"RPC_URL=" + h.rpc, "DEPLOYER_KEY=" + deployerKey, "MINT_TO=" + payerAddr,
		fmt.Sprintf("MINT=%d", mintAtomic)}, node, "deploy.mjs"), &dep); err != nil {
		t.Fatal(err)
	}
	h.token = dep.Token

	// Facilitator, restartable on its port.
	h.facPort = freePort(t)
	h.facilitatorStart = func() {
		p, out := start(t, dir, []string{"RPC_URL=" + h.rpc, "FACILITATOR_KEY=" + deployerKey, fmt.Sprintf("PORT=%d", h.facPort),
			fmt.Sprintf("CHAIN_ID=%d", chainID)}, node, "facilitator.mjs")
		waitLine(t, out, "ready", 60*time.Second)
		h.fac = p
	}
	h.facilitatorStart()

	// The service.
	h.root = filepath.Join(dir, "..", "..")
	h.bin = filepath.Join(t.TempDir(), "skiff")
	run(t, h.root, []string{"CGO_ENABLED=0"}, "go", "build", "-o", h.bin, "./cmd/skiff")
	h.base = h.startServer(t)
	h.env = []string{"PAYER_KEY=" + payerKey, "RPC_URL=" + h.rpc, fmt.Sprintf("CHAIN_ID=%d", chainID), "TOKEN=" + h.token,
		"TOKEN_NAME=USD Coin", "TOKEN_VERSION=2"}
	return h
}

// startServer starts a skiff server paid through the harness's chain and
// facilitator, and returns its base URL once it is ready.
func (h *harness) startServer(t *testing.T, extra ...string) string {
	t.Helper()
	_, base := h.startServerAt(t, freePort(t), t.TempDir(), extra...)
	return base
}

// startServerAt starts a skiff server on port over dataDir, so that a test
// can kill it and start another on the same data and address.
func (h *harness) startServerAt(t *testing.T, port int, dataDir string, extra ...string) (*proc, string) {
	t.Helper()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	args := append([]string{"server", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dataDir,
		"--no-local-host", "--public-url", base,
		"--x402-facilitator-url", fmt.Sprintf("http://127.0.0.1:%d", h.facPort),
		"--x402-network", fmt.Sprintf("eip155:%d", chainID), "--x402-asset", h.token, "--x402-pay-to", payeeAddr,
		"--x402-rpc-url", h.rpc}, extra...)
	p, stdout := start(t, h.root, nil, h.bin, args...)
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // it logs to stderr
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := http.Get(base + "/ready")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return p, base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("skiff server not ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// client runs client.mjs and decodes its JSON line.
func (h *harness) client(t *testing.T, command string, args map[string]any, out any) {
	t.Helper()
	b, _ := json.Marshal(args)
	res := run(t, h.dir, h.env, "node", "client.mjs", command, string(b))
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("client %s: %v: %s", command, err, res)
	}
}

type clientResult struct {
	Status          int             `json:"status"`
	Body            json.RawMessage `json:"body"`
	PaymentResponse *struct {
		Success     bool   `json:"success"`
		Transaction string `json:"transaction"`
		Network     string `json:"network"`
		Payer       string `json:"payer"`
	} `json:"paymentResponse"`
	Receipt *paywire.MPPReceipt `json:"receipt"`
}

type settled struct {
	Quote struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		QuoteType string `json:"quote_type"`
	} `json:"quote"`
	Payment struct {
		Protocol, Transaction, Payer string
	} `json:"payment"`
	Balance struct {
		LedgerBalanceUSD float64 `json:"ledger_balance_usd"`
	} `json:"balance"`
	Replay bool `json:"replay"`
}

// api calls the service with a bearer token and extra headers.
func (h *harness) api(t *testing.T, method, path, token string, body any, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, h.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// ethCall reads a uint256 view of the token.
func (h *harness) ethCall(t *testing.T, data string) *big.Int {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":%q,"data":%q},"latest"]}`, h.token, data)
	resp, err := http.Post(h.rpc, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Result string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Result) < 3 {
		t.Fatalf("eth_call: %v %+v", err, out)
	}
	n, _ := new(big.Int).SetString(out.Result[2:], 16)
	return n
}

func pad(addrOrHex string) string {
	return fmt.Sprintf("%064s", strings.ToLower(strings.TrimPrefix(addrOrHex, "0x")))
}

func (h *harness) balanceOf(t *testing.T, addr string) int64 {
	return h.ethCall(t, "0x70a08231"+pad(addr)).Int64()
}

func (h *harness) authorizationUsed(t *testing.T, from string, nonce [32]byte) bool {
	return h.ethCall(t, "0xe94a0102"+pad(from)+hex.EncodeToString(nonce[:])).Sign() != 0
}

func (h *harness) ledgerTotal(t *testing.T, token, entryType string) (int, float64) {
	t.Helper()
	st, _, b := h.api(t, "GET", "/api/v1/account/ledger?entry_type="+entryType, token, nil, nil)
	var page struct {
		Entries []struct {
			AmountUSD float64 `json:"amount_usd"`
		} `json:"entries"`
	}
	if st != 200 || json.Unmarshal(b, &page) != nil {
		t.Fatalf("ledger: %d %s", st, b)
	}
	sum := 0.0
	for _, e := range page.Entries {
		sum += e.AmountUSD
	}
	return len(page.Entries), sum
}

func (h *harness) balance(t *testing.T, token string) float64 {
	t.Helper()
	st, _, b := h.api(t, "GET", "/api/v1/account/balance", token, nil, nil)
	var out struct {
		Balance struct {
			LedgerBalanceUSD float64 `json:"ledger_balance_usd"`
		} `json:"balance"`
	}
	if st != 200 || json.Unmarshal(b, &out) != nil {
		t.Fatalf("balance: %d %s", st, b)
	}
	return out.Balance.LedgerBalanceUSD
}

func (h *harness) signIn(t *testing.T, chain string) string {
	t.Helper()
	return h.signInAt(t, h.base, chain)
}

func (h *harness) signInAt(t *testing.T, base, chain string) string {
	t.Helper()
	var r clientResult
	h.client(t, "signin", map[string]any{"base": base, "chain": chain}, &r)
	var v struct {
		Token   string
		Account struct{ ID string }
	}
	if r.Status != 201 || json.Unmarshal(r.Body, &v) != nil || !strings.HasPrefix(v.Token, "fls_") {
		t.Fatalf("sign-in: got %d %s, want 201 with an fls_ token", r.Status, r.Body)
	}
	return v.Token
}

// newQuote makes a top-up quote and returns its id.
func (h *harness) newQuote(t *testing.T, token string, usd float64) string {
	t.Helper()
	st, _, b := h.api(t, "POST", "/api/v1/account/quotes/topup", token, map[string]any{"amount_usd": usd}, nil)
	var q struct{ Quote struct{ ID string } }
	if st != 402 || json.Unmarshal(b, &q) != nil {
		t.Fatalf("top-up: got %d %s, want 402", st, b)
	}
	return q.Quote.ID
}

// publish pushes a minimal project (FROM scratch, one file) to name and
// waits for its build to publish.
func (h *harness) publish(t *testing.T, token, name string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for file, body := range map[string]string{
		"Dockerfile":         "FROM scratch\nCOPY runner /runner\nWORKDIR /app\n",
		"skiff.project.json": `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, "entrypoint": {"command": ["/runner"]}}`,
		"runner":             "never run: this server has no host\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: file, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", h.base+"/api/v1/projects/"+name+"/push", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rec struct {
		StatusURL string `json:"status_url"`
	}
	if resp.StatusCode != 202 || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("push: got %d %s, want 202", resp.StatusCode, b)
	}
	path := strings.TrimPrefix(rec.StatusURL, h.base)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, _, b := h.api(t, "GET", path, token, nil, nil)
		if st == 200 && strings.Contains(string(b), `"status":"published"`) {
			return
		}
		if st != 200 || strings.Contains(string(b), `"status":"failed"`) || time.Now().After(deadline) {
			t.Fatalf("push %s: %d %s", name, st, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// facControl calls the facilitator's test control (facilitator.mjs).
func (h *harness) facControl(t *testing.T, method, path string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, fmt.Sprintf("http://127.0.0.1:%d%s", h.facPort, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("facilitator %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("facilitator %s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("facilitator %s %s: %v: %s", method, path, err, b)
		}
	}
}

func payPath(id string) string { return "/api/v1/account/quotes/" + id + "/pay/x402" }

func TestPaymentsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("the payment end-to-end suite starts a chain and three processes")
	}
	h := setup(t)
	token := h.signIn(t, "base")
	payer0, payee0 := h.balanceOf(t, payerAddr), h.balanceOf(t, payeeAddr)
	if payer0 != mintAtomic || payee0 != 0 {
		t.Fatalf("chain start: payer %d, payee %d", payer0, payee0)
	}
	onChain := func(t *testing.T, moved int64) {
		t.Helper()
		if p, q := h.balanceOf(t, payerAddr), h.balanceOf(t, payeeAddr); p != payer0-moved || q != payee0+moved {
			t.Errorf("on chain: payer %d payee %d, want %d and %d", p, q, payer0-moved, payee0+moved)
		}
	}
	var moved int64

	t.Run("x402_fetch_topup", func(t *testing.T) {
		var r clientResult
		h.client(t, "x402-pay", map[string]any{"url": h.base + "/api/v1/account/quotes/topup", "token": token,
			"body": map[string]any{"amount_usd": 2.5}}, &r)
		var s settled
		if r.Status != 201 || json.Unmarshal(r.Body, &s) != nil || s.Replay || s.Payment.Protocol != "x402" || s.Quote.Status != "paid" {
			t.Fatalf("@x402/fetch: got %d %s, want 201 settled over x402", r.Status, r.Body)
		}
		pr := r.PaymentResponse
		if pr == nil || !pr.Success || pr.Transaction != s.Payment.Transaction || pr.Network != fmt.Sprintf("eip155:%d", chainID) ||
			!strings.EqualFold(pr.Payer, payerAddr) {
			t.Errorf("PAYMENT-RESPONSE decoded by @x402/fetch: got %+v", pr)
		}
		moved += 2_500_000
		onChain(t, moved)
		if n, sum := h.ledgerTotal(t, token, "x402_topup"); n != 1 || sum != 2.5 {
			t.Errorf("ledger: %d x402_topup entries summing %v, want one of 2.5", n, sum)
		}
		if b := h.balance(t, token); b != 2.5 {
			t.Errorf("balance %v, want 2.5", b)
		}
	})

	t.Run("mppx_topup", func(t *testing.T) {
		var r clientResult
		h.client(t, "mpp-pay", map[string]any{"url": h.base + "/api/v1/account/quotes/topup", "token": token,
			"body": map[string]any{"amount_usd": 0.75}}, &r)
		var s settled
		if r.Status != 201 || json.Unmarshal(r.Body, &s) != nil || s.Payment.Protocol != "mpp" {
			t.Fatalf("mppx: got %d %s, want 201 settled over MPP", r.Status, r.Body)
		}
		rc := r.Receipt
		if rc == nil || rc.Status != "success" || rc.Method != "evm" || rc.ChallengeID != s.Quote.ID || rc.Reference != s.Payment.Transaction ||
			rc.ChainID != chainID {
			t.Errorf("Payment-Receipt: got %+v", rc)
		}
		moved += 750_000
		onChain(t, moved)
		realm := strings.TrimPrefix(h.base, "http://")
		if !h.authorizationUsed(t, payerAddr, paywire.ChallengeHash(s.Quote.ID, realm)) {
			t.Error("authorizationState(payer, keccak256(quote id || realm)) is false, want the MPP nonce used on chain")
		}
		if n, sum := h.ledgerTotal(t, token, "mpp_topup"); n != 1 || sum != 0.75 {
			t.Errorf("ledger: %d mpp_topup entries summing %v, want one of 0.75", n, sum)
		}
		if b := h.balance(t, token); b != 3.25 {
			t.Errorf("balance %v, want 3.25", b)
		}
	})

	// A PAYMENT-SIGNATURE made by the stock client for a quote, sent by us
	// so that it can be replayed, tampered with and retried.
	header := func(t *testing.T, quoteID string) string {
		var r struct{ Header string }
		h.client(t, "x402-header", map[string]any{"url": h.base + payPath(quoteID), "token": token}, &r)
		if r.Header == "" {
			t.Fatal("x402-header: no header")
		}
		return r.Header
	}
	pay := func(t *testing.T, quoteID, hdr string) (int, http.Header, settled, []byte) {
		st, rh, b := h.api(t, "POST", payPath(quoteID), token, nil, map[string]string{"PAYMENT-SIGNATURE": hdr})
		var s settled
		_ = json.Unmarshal(b, &s)
		return st, rh, s, b
	}

	t.Run("replay_and_tamper", func(t *testing.T) {
		qid := h.newQuote(t, token, 1)
		hdr := header(t, qid)
		// Tampered amount: 422, nothing changes.
		raw, _ := base64.StdEncoding.DecodeString(hdr)
		var p map[string]any
		_ = json.Unmarshal(raw, &p)
		p["payload"].(map[string]any)["authorization"].(map[string]any)["value"] = "100000000"
		tampered, _ := json.Marshal(p)
		if st, _, _, b := pay(t, qid, base64.StdEncoding.EncodeToString(tampered)); st != 422 {
			t.Errorf("tampered amount: got %d %s, want 422", st, b)
		}
		onChain(t, moved)
		st, rh, s, b := pay(t, qid, hdr)
		if st != 201 || s.Replay || rh.Get("PAYMENT-RESPONSE") == "" {
			t.Fatalf("pay: got %d %s, want 201", st, b)
		}
		moved += 1_000_000
		st, rh, s2, b := pay(t, qid, hdr)
		if st != 200 || !s2.Replay || s2.Payment.Transaction != s.Payment.Transaction || rh.Get("PAYMENT-RESPONSE") == "" {
			t.Errorf("replay: got %d %s, want 200 replay true with the same transaction", st, b)
		}
		onChain(t, moved)
		if n, _ := h.ledgerTotal(t, token, "x402_topup"); n != 2 {
			t.Errorf("got %d x402_topup entries, want 2", n)
		}
	})

	t.Run("facilitator_outage", func(t *testing.T) {
		qid := h.newQuote(t, token, 1.5)
		hdr := header(t, qid)
		h.fac.stop()
		if st, _, _, b := pay(t, qid, hdr); st != 503 || !strings.Contains(string(b), "facilitator_unavailable") {
			t.Errorf("facilitator down: got %d %s, want 503 facilitator_unavailable", st, b)
		}
		onChain(t, moved)
		h.facilitatorStart()
		if st, _, s, b := pay(t, qid, hdr); st != 201 || s.Replay {
			t.Errorf("retry with the same credential: got %d %s, want 201", st, b)
		}
		moved += 1_500_000
		onChain(t, moved)
		if b := h.balance(t, token); b != 5.75 {
			t.Errorf("balance %v, want 5.75", b)
		}
	})

	t.Run("shortfall_paid_then_resent", func(t *testing.T) {
		// Another chain is another account: it starts at zero.
		poor := h.signIn(t, "ethereum")
		if st, _, b := h.api(t, "POST", "/api/v1/projects", poor, map[string]any{"name": "thin"}, nil); st != 201 {
			t.Fatalf("create project: %d %s", st, b)
		}
		st, rh, b := h.api(t, "POST", "/api/v1/projects/thin/init", poor, map[string]any{}, nil)
		var short struct {
			Details struct {
				Quote struct{ ID, QuoteType string } `json:"quote"`
			} `json:"details"`
		}
		_ = json.Unmarshal(b, &short)
		qid := short.Details.Quote.ID
		if st != 402 || rh.Get("PAYMENT-REQUIRED") == "" || !strings.Contains(rh.Get("WWW-Authenticate"), qid) || qid == "" {
			t.Fatalf("init without funds: got %d %s, want 402 with both challenges", st, b)
		}
		var r clientResult
		h.client(t, "x402-pay", map[string]any{"url": h.base + payPath(qid), "token": poor}, &r)
		if r.Status != 201 {
			t.Fatalf("paying the shortfall with @x402/fetch: got %d %s", r.Status, r.Body)
		}
		moved += 5_000_000
		onChain(t, moved)
		// Resent: past the funds gate (the project has nothing published).
		if st, _, b := h.api(t, "POST", "/api/v1/projects/thin/init", poor, map[string]any{}, nil); st == 402 || !strings.Contains(string(b), "not_published") {
			t.Errorf("init resent after paying: got %d %s, want past the 402 (not_published)", st, b)
		}
	})

	// The 402 of a job submit (the project is published, the balance is
	// zero) paid with mppx, then the same request resent with the same
	// Idempotency-Key: admitted.
	t.Run("job_shortfall_paid_then_resent", func(t *testing.T) {
		buildtest.RequireTools(t) // a job needs a published project: a real build
		_, base := h.startServerAt(t, freePort(t), buildtest.DataDir(t))
		saved := h.base
		h.base = base
		defer func() { h.base = saved }()
		tok := h.signInAt(t, base, "base") // a fresh server: a fresh account, balance zero
		if st, _, b := h.api(t, "POST", "/api/v1/projects", tok, map[string]any{"name": "jobs"}, nil); st != 201 {
			t.Fatalf("create project: %d %s", st, b)
		}
		h.publish(t, tok, "jobs")
		submit := func() (int, http.Header, []byte) {
			return h.api(t, "POST", "/api/v1/jobs", tok, map[string]any{"project": "jobs", "runner_command": []string{"/runner"},
				"payload": map[string]any{"n": 1}, "requirements": map[string]any{"cpu": 1, "memory_mb": 256}},
				map[string]string{"Idempotency-Key": "job-shortfall-1"})
		}
		st, rh, b := submit()
		var short struct {
			Code    string `json:"code"`
			Details struct {
				Quote struct {
					ID        string  `json:"id"`
					QuoteType string  `json:"quote_type"`
					AmountUSD float64 `json:"amount_usd"`
				} `json:"quote"`
			} `json:"details"`
		}
		_ = json.Unmarshal(b, &short)
		q := short.Details.Quote
		if st != 402 || q.ID == "" || q.QuoteType != "job_shortfall" || rh.Get("PAYMENT-REQUIRED") == "" ||
			!strings.Contains(rh.Get("WWW-Authenticate"), q.ID) {
			t.Fatalf("job submit without funds: got %d %s, want 402 with a job_shortfall quote and both challenges", st, b)
		}
		var r clientResult
		h.client(t, "mpp-pay", map[string]any{"url": base + payPath(q.ID), "token": tok}, &r)
		if r.Status != 201 || r.Receipt == nil || r.Receipt.ChallengeID != q.ID {
			t.Fatalf("paying the shortfall with mppx: got %d %s (receipt %+v)", r.Status, r.Body, r.Receipt)
		}
		moved += int64(q.AmountUSD*1e6 + 0.5)
		onChain(t, moved)
		st, _, b = submit()
		var j struct{ ID, Status string }
		if st != 201 || json.Unmarshal(b, &j) != nil || j.ID == "" || j.Status != "queued" {
			t.Fatalf("job resent after paying: got %d %s, want 201 queued", st, b)
		}
		// The same key again is the same job, not a second one.
		if st, _, b := submit(); st != 201 && st != 200 || !strings.Contains(string(b), j.ID) {
			t.Errorf("resent once more: got %d %s, want the job %s again", st, b, j.ID)
		}
		if n, _ := h.ledgerTotal(t, tok, "mpp_topup"); n != 1 {
			t.Errorf("ledger: %d mpp_topup entries, want 1", n)
		}
	})

	// kill -9 of the service after the facilitator settled on the chain
	// and before the service heard of it: the restarted service settles
	// the recorded intent again on start (the facilitator answers the
	// settled payment's transaction) and credits it exactly once; the
	// payer's retry is a replay.
	t.Run("killed_between_settle_and_credit", func(t *testing.T) {
		// The reference facilitator answers a repeated settle of an
		// executed payment with nonce_already_used, so only the chain
		// (--x402-rpc-url, which every server here has) can say that it
		// went through.
		port, data := freePort(t), t.TempDir()
		srv, base := h.startServerAt(t, port, data)
		saved := h.base
		h.base = base
		defer func() { h.base = saved }()
		tok := h.signInAt(t, base, "base")
		qid := h.newQuote(t, tok, 2)
		var hr struct{ Header string }
		h.client(t, "x402-header", map[string]any{"url": base + payPath(qid), "token": tok}, &hr)

		h.facControl(t, "POST", "/test/hold", nil)
		payErr := make(chan error, 1)
		go func() {
			req, _ := http.NewRequest("POST", base+payPath(qid), nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("PAYMENT-SIGNATURE", hr.Header)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				err = fmt.Errorf("answered %d %s", resp.StatusCode, b)
			}
			payErr <- err
		}()
		var held struct {
			Success     bool
			Transaction string
		}
		h.facControl(t, "GET", "/test/held", &held) // settled on the chain, answer held back
		if !held.Success || held.Transaction == "" {
			t.Fatalf("held settlement: %+v", held)
		}
		srv.stop() // SIGKILL, and wait for the process to be gone
		h.facControl(t, "POST", "/test/release", nil)
		if err := <-payErr; err == nil || strings.Contains(err.Error(), "answered") {
			t.Fatalf("the payer's request: got %v, want the connection cut by the kill", err)
		}
		moved += 2_000_000
		onChain(t, moved)

		// Restarted on the same data: the intent recorded before the
		// facilitator was called is settled again and credited, before
		// the payer comes back.
		h.startServerAt(t, port, data)
		deadline := time.Now().Add(60 * time.Second)
		for {
			n, sum := h.ledgerTotal(t, tok, "x402_topup")
			if n == 1 && sum == 2 {
				break
			}
			if n > 1 || time.Now().After(deadline) {
				t.Fatalf("ledger after restart: %d x402_topup entries summing %v, want one of 2 (credited on start)", n, sum)
			}
			time.Sleep(200 * time.Millisecond)
		}
		st, rh, b := h.api(t, "POST", payPath(qid), tok, nil, map[string]string{"PAYMENT-SIGNATURE": hr.Header})
		var s settled
		if st != 200 || json.Unmarshal(b, &s) != nil || !s.Replay || s.Payment.Transaction != held.Transaction ||
			s.Quote.Status != "paid" || rh.Get("PAYMENT-RESPONSE") == "" {
			t.Errorf("the payer's retry: got %d %s, want 200 replay with transaction %s", st, b, held.Transaction)
		}
		if n, sum := h.ledgerTotal(t, tok, "x402_topup"); n != 1 || sum != 2 {
			t.Errorf("ledger after the retry: %d entries summing %v, want one of 2", n, sum)
		}
		if bal := h.balance(t, tok); bal != 2 {
			t.Errorf("balance %v, want 2", bal)
		}
		onChain(t, moved) // and the chain moved once
	})

	t.Run("expired_quote", func(t *testing.T) {
		// A server whose quotes live 10 seconds.
		base := h.startServer(t, "--quote-ttl", "10s")
		tok := h.signInAt(t, base, "base")
		saved := h.base
		h.base = base
		defer func() { h.base = saved }()
		qid := h.newQuote(t, tok, 1)
		for {
			st, _, b := h.api(t, "GET", "/api/v1/account/quotes/"+qid, tok, nil, nil)
			if st != 200 {
				t.Fatalf("get quote: %d %s", st, b)
			}
			if strings.Contains(string(b), `"status":"expired"`) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		var r clientResult
		h.client(t, "x402-pay", map[string]any{"url": base + payPath(qid), "token": tok}, &r)
		if r.Status != 410 || !strings.Contains(string(r.Body), "quote_expired") {
			t.Errorf("@x402/fetch on an expired quote: got %d %s, want 410 quote_expired", r.Status, r.Body)
		}
		onChain(t, moved)
	})
}
