// Sign-in: an API key, or a browser wallet (EIP-1193 personal_sign over the
// challenge of POST /api/v1/auth/wallet/challenge, then /verify, whose
// session token is used like a key).

import { h, replace } from "./dom.js";
import { session, request, APIError } from "./api.js";

export function signInPage({ done }) {
  const out = h("p", { id: "signin-outcome", class: "notice", role: "status", "aria-live": "polite" });
  const say = (text, kind) => { out.textContent = text; out.className = `notice ${kind}`; };

  const key = h("input", { id: "api-key", name: "api-key", type: "password", autocomplete: "off", spellcheck: "false",
    required: true, placeholder: "flk_…" });
  const keyForm = h("form", { id: "key-form", class: "card",
    onsubmit: async (e) => {
      e.preventDefault();
      const token = key.value.trim();
      if (!token) return say("Paste an API key first.", "err");
      say("Checking the key…", "");
      try {
        await request("GET", "/api/v1/account/balance", { token });
      } catch (err) {
        return say(err instanceof APIError && err.status === 401
          ? "That key was not accepted. Check it, or ask for a new one." : (err.text || err.message), "err");
      }
      key.value = "";
      session.set(token);
      done();
    } },
    h("h2", {}, "With an API key"),
    h("label", { for: "api-key" }, "API key"),
    key,
    h("button", { type: "submit" }, "Sign in"),
    h("p", { class: "hint" }, "The key stays in this tab (sessionStorage) and goes only to this server, in the Authorization header."));

  const provider = window.ethereum;
  const walletBtn = h("button", { type: "button", id: "wallet-signin", disabled: !provider,
    onclick: async () => {
      try {
        say("Asking your wallet…", "");
        const token = await walletSignIn(provider, say);
        session.set(token);
        done();
      } catch (err) {
        say(err.text || err.message || String(err), "err");
      }
    } }, "Sign in with a wallet");
  const walletForm = h("div", { class: "card" },
    h("h2", {}, "With a wallet"),
    walletBtn,
    h("p", { class: "hint" }, provider
      ? "Your wallet signs a one-time message (personal_sign); nothing is paid and no transaction is sent."
      : "No browser wallet was found on this page."));

  return h("div", { class: "page signin" },
    h("h1", {}, "Sign in to the Skiff console"),
    out,
    h("div", { class: "cards" }, keyForm, walletForm));
}

// walletSignIn runs the challenge, the signature and the verify call.
async function walletSignIn(provider, say) {
  const accounts = await provider.request({ method: "eth_requestAccounts" });
  const address = accounts && accounts[0];
  if (!address) throw new Error("The wallet shared no account.");
  const ch = await request("POST", "/api/v1/auth/wallet/challenge", { body: { wallet_address: address }, anon: true });
  const message = ch.body.challenge.message;
  say("Sign the message in your wallet…", "");
  const signature = await provider.request({ method: "personal_sign", params: [utf8Hex(message), address] });
  const v = await request("POST", "/api/v1/auth/wallet/verify", {
    body: { challenge_id: ch.body.challenge.id, wallet_address: address, signature }, anon: true });
  return v.body.token;
}

// utf8Hex is the message as personal_sign's params name it: 0x and the
// hex of its UTF-8 bytes (wallets show the decoded text).
function utf8Hex(text) {
  return "0x" + [...new TextEncoder().encode(text)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
