// download fetches an artifact with the bearer token (a plain link could
// not send it, and the token must not go in the URL) and saves it under
// its name.

import { request, enc } from "./api.js";

export async function download(id, filename, signal) {
  const res = await request("GET", `/api/v1/artifacts/${enc(id)}`, { signal, raw: true });
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename || id;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
