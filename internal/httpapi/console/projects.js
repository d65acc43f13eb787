// Projects: readiness of each, and one project's latest push with the tail
// of its build log.

import { h, replace, table, notice } from "./dom.js";
import { get, enc, request, APIError } from "./api.js";
import { when } from "./fmt.js";

export async function projectsPage({ root, signal }) {
  document.title = "Projects · Skiff console";
  replace(root, h("h1", {}, "Projects"), notice("Loading…"));
  const list = await get("/api/v1/projects", { signal });
  const rows = await Promise.all(list.projects.map(async (p) => {
    let ready = "";
    try {
      const st = await get(`/api/v1/projects/${enc(p.name)}/status`, { signal });
      ready = st.ready_for_jobs ? "ready" : st.status_message || st.init_state;
    } catch (e) { ready = e.text || e.message; }
    return h("tr", {},
      h("td", {}, h("a", { href: `#/projects/${enc(p.name)}` }, p.name)),
      h("td", {}, h("span", { class: `badge ${ready === "ready" ? "succeeded" : "queued"}` }, ready)),
      h("td", {}, p.runtime_kind),
      h("td", {}, when(p.updated_at)),
      h("td", {}, h("a", { href: `#/jobs?project=${enc(p.name)}` }, "jobs")));
  }));
  replace(root, h("h1", {}, "Projects"),
    list.projects.length
      ? table(`${list.count} project${list.count === 1 ? "" : "s"}`, ["Name", "Readiness", "Runtime", "Updated", ""], rows, { id: "projects" })
      : notice("No projects yet. Create one with skiff project create, or POST /api/v1/projects."));
}

export async function projectPage({ root, params: [name], signal }) {
  document.title = `${name} · Skiff console`;
  const [p, st] = await Promise.all([
    get(`/api/v1/projects/${enc(name)}`, { signal }),
    get(`/api/v1/projects/${enc(name)}/status`, { signal }),
  ]);
  let push = null;
  try {
    push = (await request("GET", `/api/v1/projects/${enc(name)}/push`, { signal })).body;
  } catch (e) {
    if (!(e instanceof APIError && e.status === 404)) throw e;
  }
  const dl = (pairs) => h("dl", { class: "facts" }, pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  replace(root,
    h("p", { class: "crumbs" }, h("a", { href: "#/projects" }, "Projects"), " / ", name),
    h("h1", {}, name),
    h("section", { "aria-labelledby": "ready-h" },
      h("h2", { id: "ready-h" }, "Readiness"),
      dl([
        ["Ready for jobs", st.ready_for_jobs ? "yes" : "no"],
        ["State", st.init_state],
        ["Availability", st.availability_status],
        ["Status", st.status_message],
        ["Next", st.next_action],
        ["Active jobs", st.active_jobs],
        ["Queued tasks", st.queued_tasks],
        ["Last ready", when(st.last_ready_at)],
        ["Latest issue", st.latest_issue || "none"],
      ])),
    h("section", { "aria-labelledby": "push-h" },
      h("h2", { id: "push-h" }, "Latest push"),
      push ? [
        dl([
          ["Push", push.push_ref],
          ["Status", h("span", { class: `badge ${push.status === "published" ? "succeeded" : push.status === "failed" ? "failed" : "running"}` }, push.status)],
          ["Content", push.content_hash],
          ["Image", push.image_digest || ""],
          ["Pushed", when(push.created_at)],
          ["Finished", when(push.finished_at)],
          ["Error", push.error || "none"],
          ["Next", push.next_action],
        ]),
        h("h3", {}, "Build log (tail)"),
        h("pre", { class: "log", id: "build-log", tabindex: "0" }, push.log_tail || "(empty)"),
      ] : notice("Nothing pushed yet: skiff push uploads the project.")),
    h("section", { "aria-labelledby": "cfg-h" },
      h("h2", { id: "cfg-h" }, "Configuration"),
      dl([["Runtime", p.runtime_kind], ["Setup timeout", `${p.setup_timeout_s} s`], ["Created", when(p.created_at)]])),
    h("p", {}, h("a", { href: `#/jobs?project=${enc(name)}` }, `Jobs of ${name}`)));
}
