// Jobs: filtered by status, project and tag, a page at a time.

import { h, replace, table, notice } from "./dom.js";
import { get, query, enc } from "./api.js";
import { when } from "./fmt.js";

const statuses = ["", "planning", "queued", "running", "completed", "partial", "failed", "cancelled"];
const PAGE = 25;

export async function jobsPage({ root, query: q, signal, go }) {
  document.title = "Jobs · Skiff console";
  const f = { status: q.get("status") || "", project: q.get("project") || "", tag: q.get("tag") || "" };
  const offset = Math.max(0, Number(q.get("offset")) || 0);
  const to = (o) => `/jobs${query({ ...f, offset: o || "" })}`;

  const status = h("select", { id: "f-status", name: "status" },
    statuses.map((s) => h("option", { value: s, selected: s === f.status }, s || "any")));
  const project = h("input", { id: "f-project", name: "project", value: f.project, autocomplete: "off" });
  const tag = h("input", { id: "f-tag", name: "tag", value: f.tag, autocomplete: "off" });
  const form = h("form", { class: "filters", role: "search",
    onsubmit: (e) => {
      e.preventDefault();
      Object.assign(f, { status: status.value, project: project.value.trim(), tag: tag.value.trim() });
      go(to(0));
    } },
    h("label", { for: "f-status" }, "Status"), status,
    h("label", { for: "f-project" }, "Project"), project,
    h("label", { for: "f-tag" }, "Tag"), tag,
    h("button", { type: "submit" }, "Filter"));
  // The form stays in place while the list loads and after: re-attaching
  // it would drop the focus, and with it what someone is typing.
  const results = h("div", {}, notice("Loading…"));
  replace(root, h("h1", {}, "Jobs"), form, results);

  const list = await get(`/api/v1/jobs${query({ ...f, limit: PAGE, offset })}`, { signal });
  const rows = list.jobs.map((j) => h("tr", {},
    h("td", {}, h("a", { href: `#/jobs/${enc(j.id)}` }, j.id)),
    h("td", {}, h("span", { class: `badge ${j.status}` }, j.status)),
    h("td", {}, j.type),
    h("td", {}, j.project),
    h("td", { class: "num" }, j.task_count),
    h("td", {}, (j.tags || []).join(", ")),
    h("td", {}, j.client_ref || ""),
    h("td", {}, when(j.submitted_at)),
    h("td", {}, j.error_snippet || "")));
  const nav = h("nav", { class: "pager", "aria-label": "Pages" },
    h("button", { type: "button", disabled: offset === 0, onclick: () => go(to(Math.max(0, offset - PAGE))) }, "Newer"),
    h("span", {}, list.total ? `${offset + 1}–${offset + list.count} of ${list.total}` : "none"),
    h("button", { type: "button", disabled: offset + list.count >= list.total, onclick: () => go(to(offset + PAGE)) }, "Older"));
  replace(results,
    list.jobs.length
      ? table("Jobs, newest first", ["Job", "Status", "Type", "Project", "Tasks", "Tags", "Client ref", "Submitted", "Error"], rows, { id: "jobs" })
      : notice("No jobs match."),
    nav);
}
