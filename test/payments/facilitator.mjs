// An x402 facilitator built from the unmodified @x402/core and @x402/evm
// packages: POST /verify, POST /settle, GET /supported on 127.0.0.1:PORT,
// settling on the chain at RPC_URL with FACILITATOR_KEY's account (which
// pays the gas). Prints "ready <port>" once listening.
import http from "node:http";
import { createWalletClient, http as viemHttp, publicActions, defineChain } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";

const { RPC_URL, FACILITATOR_KEY, PORT = "0", CHAIN_ID } = process.env;
const chainId = Number(CHAIN_ID);
const chain = defineChain({ id: chainId, name: "local", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [RPC_URL] } } });
const account = privateKeyToAccount(FACILITATOR_KEY);
const client = createWalletClient({ account, chain, transport: viemHttp(RPC_URL) }).extend(publicActions);
const signer = toFacilitatorEvmSigner({
  address: account.address,
  readContract: (a) => client.readContract(a),
  verifyTypedData: (a) => client.verifyTypedData(a),
  writeContract: (a) => client.writeContract(a),
  sendTransaction: (a) => client.sendTransaction(a),
  waitForTransactionReceipt: (a) => client.waitForTransactionReceipt(a),
  getCode: (a) => client.getCode(a),
});
const facilitator = new x402Facilitator().register(`eip155:${chainId}`, new ExactEvmScheme(signer));

// Test control (ours, not the packages'): POST /test/hold arms a hold of
// the next /settle: it settles on the chain, then keeps its answer back
// until POST /test/release; GET /test/held answers once a settlement is
// held, with its result. The suite kills the service in that window: the
// payment is settled, and the service has not heard of it.
let hold = null; // {armed, held: settle result | null, waiters: [], release}
const control = (req, send) => {
  if (req.method === "POST" && req.url === "/test/hold") {
    hold = { held: null, waiters: [], release: null };
    return send(200, {});
  }
  if (req.method === "GET" && req.url === "/test/held") {
    if (!hold) return send(409, { error: "no hold armed" });
    if (hold.held) return send(200, hold.held);
    hold.waiters.push(send);
    return;
  }
  if (req.method === "POST" && req.url === "/test/release") {
    if (hold && hold.release) hold.release();
    hold = null;
    return send(200, {});
  }
  return send(404, { error: "not found" });
};

const server = http.createServer(async (req, res) => {
  const send = (status, body) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
  };
  try {
    if (req.url.startsWith("/test/")) return control(req, send);
    if (req.method === "GET" && req.url === "/supported") return send(200, facilitator.getSupported());
    if (req.method !== "POST" || (req.url !== "/verify" && req.url !== "/settle")) return send(404, { error: "not found" });
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const { paymentPayload, paymentRequirements } = JSON.parse(raw);
    const out = req.url === "/verify"
      ? await facilitator.verify(paymentPayload, paymentRequirements)
      : await facilitator.settle(paymentPayload, paymentRequirements);
    if (req.url === "/settle" && hold && !hold.held) {
      const h = hold;
      h.held = out;
      await new Promise((resolve) => {
        h.release = resolve;
        for (const w of h.waiters.splice(0)) w(200, out);
      });
    }
    send(200, out);
  } catch (e) {
    send(500, { error: String(e && e.message ? e.message : e) });
  }
});
server.listen(Number(PORT), "127.0.0.1", () => console.log(`ready ${server.address().port}`));
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
