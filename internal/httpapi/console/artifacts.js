// Artifacts: the account's files, with downloads and the quota.

import { h, replace, table, notice } from "./dom.js";
import { get, enc, query } from "./api.js";
import { when, bytes } from "./fmt.js";
import { download } from "./download.js";

const PAGE = 50;

export async function artifactsPage({ root, query: q, signal, go }) {
  document.title = "Artifacts · Skiff console";
  const offset = Math.max(0, Number(q.get("offset")) || 0);
  const l = await get(`/api/v1/artifacts${query({ limit: PAGE, offset })}`, { signal });
  const rows = l.artifacts.map((a) => h("tr", {},
    h("td", {}, h("button", { type: "button", class: "link", "data-artifact": a.id,
      onclick: (e) => download(a.id, a.filename || a.id, signal).catch((err) => { e.target.textContent = err.text || err.message; }) },
    a.filename || a.id)),
    h("td", {}, a.kind), h("td", { class: "num" }, bytes(a.size)),
    h("td", {}, a.job_id ? h("a", { href: `#/jobs/${enc(a.job_id)}` }, a.job_id) : ""),
    h("td", {}, when(a.created_at))));
  replace(root, h("h1", {}, "Artifacts"),
    h("p", {}, `${bytes(l.quota.used_bytes)} of ${bytes(l.quota.limit_bytes)} used.`),
    l.artifacts.length ? table(`${l.total} artifacts, newest first`, ["File", "Kind", "Size", "Job", "Created"], rows, { id: "artifact-table" })
      : notice("No artifacts yet."),
    h("nav", { class: "pager", "aria-label": "Pages" },
      h("button", { type: "button", disabled: offset === 0, onclick: () => go(`/artifacts${query({ offset: Math.max(0, offset - PAGE) || "" })}`) }, "Newer"),
      h("button", { type: "button", disabled: offset + l.count >= l.total, onclick: () => go(`/artifacts${query({ offset: offset + PAGE })}`) }, "Older")));
}
