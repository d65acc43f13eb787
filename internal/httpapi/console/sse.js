// Server-sent events over fetch: an EventSource cannot send an
// Authorization header, and the token must not go in the URL. The stream
// is resumed with Last-Event-ID after a drop, as docs/streams.md says, and
// ends at its done frame, a 204, an error answer, or when signal aborts.

import { session } from "./api.js";

export async function stream(path, { signal, onFrame, onState = () => {} }) {
  let lastID = "";
  let retry = 1000;
  while (!signal.aborted) {
    const headers = { Accept: "text/event-stream", Authorization: `Bearer ${session.token()}` };
    if (lastID) headers["Last-Event-ID"] = lastID;
    let res;
    try {
      res = await fetch(path, { headers, signal, credentials: "omit", cache: "no-store" });
    } catch (e) {
      if (signal.aborted) return;
      onState("reconnecting");
      await sleep(retry, signal);
      continue;
    }
    if (res.status === 204) { onState("ended"); return; }
    if (!res.ok) {
      if (res.status === 429 || res.status >= 500) {
        onState("reconnecting");
        await sleep(Math.max(retry, 5000), signal);
        continue;
      }
      onState("error", res.status);
      return;
    }
    onState("live");
    let done = false;
    try {
      for await (const fr of frames(res.body, signal)) {
        if (fr.retry) retry = fr.retry;
        if (fr.id) lastID = fr.id;
        if (!fr.event) continue;
        let data = null;
        try { data = JSON.parse(fr.data); } catch { continue; }
        onFrame(fr.event, data);
        if (fr.event === "done") done = true;
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    if (done) { onState("ended"); return; }
    onState("reconnecting");
    await sleep(retry, signal);
  }
}

// frames parses the text/event-stream body into {event, data, id, retry}.
async function* frames(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
  let buf = "";
  let fr = { event: "", data: [], id: "", retry: 0 };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (fr.event || fr.data.length) yield { ...fr, event: fr.event || "message", data: fr.data.join("\n") };
        fr = { event: "", data: [], id: "", retry: 0 };
        continue;
      }
      if (line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i < 0 ? line : line.slice(0, i);
      let v = i < 0 ? "" : line.slice(i + 1);
      if (v.startsWith(" ")) v = v.slice(1);
      if (field === "event") fr.event = v;
      else if (field === "data") fr.data.push(v);
      else if (field === "id") fr.id = v;
      else if (field === "retry" && /^\d+$/.test(v)) yield { retry: Number(v) };
    }
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });
}
