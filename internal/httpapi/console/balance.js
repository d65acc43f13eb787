// Balance: what is available and held, the holds, the ledger, spend per
// day, and a top-up that shows the x402 / MPP quote to pay.

import { h, replace, table, notice } from "./dom.js";
import { get, request, enc } from "./api.js";
import { usd, when } from "./fmt.js";
import { barChart } from "./charts.js";

export async function balancePage({ root, signal }) {
  document.title = "Balance · Skiff console";
  replace(root, h("h1", {}, "Balance"), notice("Loading…"));
  const [b, holds, ledger] = await Promise.all([
    get("/api/v1/account/balance", { signal }),
    get("/api/v1/account/holds?limit=50", { signal }),
    get("/api/v1/account/ledger?limit=200", { signal }),
  ]);
  const bal = b.balance;
  const quote = h("div", { id: "quote", "aria-live": "polite" });
  const amount = h("input", { id: "topup-amount", name: "amount", type: "number", min: "0.01", max: "10000", step: "0.01", value: "10", required: true });
  const topup = h("form", { id: "topup", class: "card",
    onsubmit: async (e) => {
      e.preventDefault();
      replace(quote, notice("Asking for a quote…"));
      try {
        const r = await request("POST", "/api/v1/account/quotes/topup", { body: { amount_usd: Number(amount.value), description: "console top-up" }, ok: [402], signal });
        replace(quote, quoteView(r.body));
      } catch (err) { replace(quote, notice(err.text || err.message, "err")); }
    } },
    h("h2", {}, "Top up"),
    h("label", { for: "topup-amount" }, "Amount in USD"), amount,
    h("button", { type: "submit" }, "Get a payment quote"),
    h("p", { class: "hint" }, "Pay the quote in USDC with an x402 or MPP client (see ", h("a", { href: "/docs/payments" }, "Payments"), "); the balance shows it once settled."),
    quote);

  replace(root,
    h("h1", {}, "Balance"),
    h("dl", { class: "facts big", id: "balance" },
      h("dt", {}, "Available"), h("dd", { id: "available" }, usd(bal.available_usd)),
      h("dt", {}, "Held for running jobs"), h("dd", { id: "held" }, `${usd(bal.held_usd)} in ${bal.active_hold_count} hold${bal.active_hold_count === 1 ? "" : "s"}`),
      h("dt", {}, "Ledger balance"), h("dd", { id: "ledger-balance" }, usd(bal.ledger_balance_usd)),
      h("dt", {}, "Open quotes"), h("dd", {}, bal.open_quote_count)),
    spendChart(ledger.entries),
    topup,
    h("section", { "aria-labelledby": "holds-h" }, h("h2", { id: "holds-h" }, "Holds"),
      holds.holds.length ? table(`${holds.total} holds, newest first`, ["Job", "Status", "Held", "Captured", "Released", "Created", "Settled"],
        holds.holds.map((x) => h("tr", {},
          h("td", {}, h("a", { href: `#/jobs/${enc(x.job_id)}` }, x.job_id)), h("td", {}, x.status),
          h("td", { class: "num" }, usd(x.amount_usd)), h("td", { class: "num" }, usd(x.captured_usd)),
          h("td", { class: "num" }, usd(x.released_usd)), h("td", {}, when(x.created_at)), h("td", {}, when(x.settled_at)))), { id: "holds" })
        : notice("No holds yet.")),
    h("section", { "aria-labelledby": "ledger-h" }, h("h2", { id: "ledger-h" }, "Ledger"),
      ledger.entries.length ? table(`${ledger.total} entries, newest first`, ["When", "Type", "Amount", "Reference", "Description"],
        ledger.entries.map((x) => h("tr", {},
          h("td", {}, when(x.created_at)), h("td", {}, x.entry_type),
          h("td", { class: `num ${x.amount_usd < 0 ? "debit" : "credit"}` }, usd(x.amount_usd)),
          h("td", {}, x.reference.startsWith("job_") ? h("a", { href: `#/jobs/${enc(x.reference)}` }, x.reference) : x.reference),
          h("td", {}, x.description))), { id: "ledger" })
        : notice("No ledger entries yet.")));
}

// spendChart sums job charges per UTC day over the ledger page read.
function spendChart(entries) {
  const days = new Map();
  for (const e of entries) {
    if (e.amount_usd >= 0) continue;
    const d = e.created_at.slice(0, 10);
    days.set(d, (days.get(d) || 0) - e.amount_usd);
  }
  const data = [...days.entries()].sort().map(([d, v]) => ({ label: d.slice(5), value: Math.round(v * 1e6) / 1e6 }));
  return h("section", { id: "spend", "aria-label": "Spend per day" }, barChart({ title: "Spend per day (USD, UTC days)", data, format: usd }));
}

function quoteView(body) {
  const q = body.quote || {};
  const pr = body.payment_required || {};
  const acc = (pr.accepts && pr.accepts[0]) || {};
  const mpp = body.mpp || {};
  const rows = [
    ["Quote", q.id], ["Amount", usd(q.amount_usd)], ["Status", q.status], ["Expires", when(q.expires_at)],
    ["x402 network", acc.network], ["Asset", acc.asset], ["Pay to", acc.payTo || acc.pay_to],
    ["Amount (base units)", acc.amount || acc.maxAmountRequired], ["Pay at", pr.resource && pr.resource.url],
    ["MPP method", mpp.method && `${mpp.method} / ${mpp.intent}`],
  ].filter(([, v]) => v !== undefined && v !== null && v !== "");
  return h("div", { class: "quote" },
    h("h3", {}, "Quote to pay"),
    h("dl", { class: "facts", id: "quote-facts" }, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])),
    h("p", { class: "hint" }, "The 402 answer carries the PAYMENT-REQUIRED header (x402 v2) and a WWW-Authenticate: Payment challenge (MPP) for this quote."));
}
