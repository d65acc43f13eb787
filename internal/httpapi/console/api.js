// The console's only way to the server: the public API, with the bearer
// token the person signed in with. The token lives in sessionStorage (this
// tab only, gone when it closes), never in a cookie, so no other site can
// make the browser send it, and never in a URL.

const KEY = "skiff.console.token";

export const session = {
  token() { return sessionStorage.getItem(KEY); },
  set(token) { sessionStorage.setItem(KEY, token); },
  clear() { sessionStorage.removeItem(KEY); },
};

// APIError is an answer outside 2xx; body is the error envelope when the
// server sent one.
export class APIError extends Error {
  constructor(status, body) {
    const msg = body && body.error ? body.error : `HTTP ${status}`;
    super(msg);
    this.status = status;
    this.body = body || {};
  }
  // text is what a person reads: what went wrong and what to do.
  get text() {
    const act = this.body.recommended_action;
    return act ? `${this.message} ${act}` : this.message;
  }
}

// onUnauthorized is called when the token stops working (401).
let unauthorized = () => {};
export function onUnauthorized(fn) { unauthorized = fn; }

// request sends one call. ok lists statuses besides 2xx that are answers
// rather than errors (402 for a top-up quote).
// token replaces the session's token (checking a key before keeping it);
// anon sends none (the wallet sign-in calls).
export async function request(method, path, { body, signal, ok = [], raw = false, token, anon = false } = {}) {
  const headers = { Accept: "application/json" };
  const t = anon ? "" : token || session.token();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer",
  });
  if (raw && res.ok) return res;
  let data = null;
  const type = res.headers.get("Content-Type") || "";
  if (res.status !== 204 && type.includes("json")) data = await res.json();
  if (!res.ok && !ok.includes(res.status)) {
    if (res.status === 401 && !token && !anon) unauthorized();
    throw new APIError(res.status, data);
  }
  return { status: res.status, body: data, headers: res.headers };
}

export async function get(path, opts) { return (await request("GET", path, opts)).body; }

// query builds "?a=1&b=2" from the set values of params.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

export const enc = encodeURIComponent;
