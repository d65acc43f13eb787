// The payer's side of the end-to-end suite, using only the unmodified
// clients: viem (sign-in), @x402/fetch and @x402/core (x402), mppx (MPP).
// Usage: node client.mjs <command> <json args>; prints one JSON line.
//   signin {base, chain?}                     -> {status, body}
//   x402-pay {url, token, body?}        -> {status, body, paymentResponse}
//   x402-header {url, token}            -> {header}   (a PAYMENT-SIGNATURE for the quote at url)
//   mpp-pay {url, token?, body?}        -> {status, body, receipt}
// Environment: PAYER_KEY, RPC_URL, CHAIN_ID, TOKEN, TOKEN_NAME, TOKEN_VERSION.
import { createPublicClient, http, defineChain } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { wrapFetchWithPayment, x402Client, x402HTTPClient, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { toClientEvmSigner } from "@x402/evm";
import { Mppx, evm } from "mppx/client";

const { PAYER_KEY, RPC_URL, CHAIN_ID, TOKEN, TOKEN_NAME = "USD Coin", TOKEN_VERSION = "2" } = process.env;
const [command, rawArgs = "{}"] = process.argv.slice(2);
const args = JSON.parse(rawArgs);
const account = privateKeyToAccount(PAYER_KEY);
const chainId = Number(CHAIN_ID);
const chain = defineChain({ id: chainId, name: "local", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [RPC_URL] } } });
const network = `eip155:${chainId}`;

function x402() {
  const pub = createPublicClient({ chain, transport: http(RPC_URL) });
  // The local token is no default asset: allow it (spendControls), as a
  // real user raises the default $1 cap for top-ups.
  return x402Client.fromConfig({
    schemes: [{ network, client: new ExactEvmScheme(toClientEvmSigner(account, pub)) }],
    spendControls: { maxAmountPerPayment: "$10000", allowedAssets: [{ network, asset: TOKEN }] },
  });
}

async function reply(res, extra = {}) {
  const text = await res.text();
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  console.log(JSON.stringify({ status: res.status, body, ...extra }));
}

const post = (token, body) => ({
  method: "POST",
  headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) },
  body: body === undefined ? undefined : JSON.stringify(body),
});

switch (command) {
  case "signin": {
    const base = args.base;
    let r = await fetch(`${base}/api/v1/auth/wallet/challenge`, post("", { wallet_address: account.address, chain: args.chain || "base" }));
    const { challenge } = await r.json();
    const signature = await account.signMessage({ message: challenge.message });
    r = await fetch(`${base}/api/v1/auth/wallet/verify`, post("", { challenge_id: challenge.id, wallet_address: account.address, signature }));
    await reply(r);
    break;
  }
  case "x402-pay": {
    const pay = wrapFetchWithPayment(fetch, x402());
    const r = await pay(args.url, post(args.token, args.body));
    const h = r.headers.get("PAYMENT-RESPONSE");
    await reply(r, { paymentResponse: h ? decodePaymentResponseHeader(h) : null });
    break;
  }
  case "x402-header": {
    const r = await fetch(args.url, post(args.token));
    const client = new x402HTTPClient(x402());
    const pr = client.getPaymentRequiredResponse((n) => r.headers.get(n), await r.json());
    const payload = await client.createPaymentPayload(pr);
    const headers = client.encodePaymentSignatureHeader(payload);
    console.log(JSON.stringify({ header: headers["PAYMENT-SIGNATURE"] }));
    break;
  }
  case "mpp-pay": {
    const mppx = Mppx.create({
      methods: [evm.charge({ account, authorization: { name: TOKEN_NAME, version: TOKEN_VERSION }, networks: [chainId] })],
      polyfill: false,
    });
    const r = await mppx.fetch(args.url, post(args.token, args.body));
    const h = r.headers.get("Payment-Receipt");
    await reply(r, { receipt: h ? JSON.parse(Buffer.from(h, "base64url").toString("utf8")) : null });
    break;
  }
  default:
    console.error(`unknown command ${command}`);
    process.exit(2);
}
