// Reads one Skiff event stream with the WHATWG EventSource client (the
// eventsource package) and prints each frame as a JSON line on stdout:
// {"type", "id", "data"} for frames, {"type": "open"} on each (re)connect,
// {"type": "error", "message"} when the connection drops. EventSource
// reconnects by itself, sending Last-Event-ID. The script exits 0 after a
// done frame, 1 when the server refuses the stream for good.
//
// Usage: node read.mjs URL TOKEN
import { EventSource } from "eventsource";

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  console.error("usage: node read.mjs URL TOKEN");
  process.exit(2);
}
const print = (v) => process.stdout.write(JSON.stringify(v) + "\n");
const es = new EventSource(url, {
  fetch: (input, init) =>
    fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${token}` } }),
});
es.addEventListener("open", () => print({ type: "open" }));
es.addEventListener("error", (e) => {
  print({ type: "error", message: String(e.message ?? ""), code: e.code ?? null });
  if (es.readyState === EventSource.CLOSED) process.exit(1);
});
for (const name of ["snapshot", "job", "task", "event", "timeout", "ping"]) {
  es.addEventListener(name, (e) => print({ type: name, id: e.lastEventId, data: JSON.parse(e.data) }));
}
es.addEventListener("done", (e) => {
  print({ type: "done", id: e.lastEventId, data: JSON.parse(e.data) });
  es.close();
  process.exit(0);
});
