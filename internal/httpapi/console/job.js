// One job, live: the job stream's snapshot, then every task and job frame
// as it commits. A grid of tasks coloured by status, the selected task's
// progress, output tail, attempts (outcome, exit code, billed seconds,
// cost) and artifacts; the result and leaderboard once it ends; cancel.

import { h, replace, table, notice } from "./dom.js";
import { get, request, enc } from "./api.js";
import { stream } from "./sse.js";
import { usd, dur, when, json, compact, bytes } from "./fmt.js";
import { barChart, histogram } from "./charts.js";
import { download } from "./download.js";
import { sortableTable } from "./sortable.js";

const terminal = new Set(["completed", "partial", "failed", "cancelled"]);
const taskOrder = ["running", "queued", "succeeded", "failed", "cancelled"];

export async function jobPage({ root, params: [id], signal }) {
  document.title = `${id} · Skiff console`;
  const st = { job: null, tasks: new Map(), taskCount: 0, truncated: false, selected: null, resultShown: false };
  const cells = new Map(); // task index -> its button in the grid

  const head = h("section", { id: "job-head", "aria-labelledby": "job-h" });
  const live = h("p", { id: "stream-state", class: "hint", role: "status" }, "Connecting to the job stream…");
  const counts = h("p", { id: "task-counts", "aria-live": "polite" });
  const grid = h("div", { id: "task-grid", class: "grid", role: "list", "aria-label": "Tasks" });
  const detail = h("section", { id: "task-detail", "aria-live": "polite", "aria-label": "Selected task" });
  const durations = h("div", { id: "durations" });
  const result = h("section", { id: "result", "aria-labelledby": "result-h" });
  const arts = h("section", { id: "artifacts", "aria-labelledby": "arts-h" });
  replace(root,
    h("p", { class: "crumbs" }, h("a", { href: "#/jobs" }, "Jobs"), " / ", id),
    head, live,
    h("section", { "aria-labelledby": "tasks-h" }, h("h2", { id: "tasks-h" }, "Tasks"), counts, grid),
    detail, durations, result, arts);

  let cancel = null; // kept across redraws, so a frame does not undo "are you sure?"
  const drawHead = () => {
    const j = st.job;
    const cost = (j.summary && j.summary.cost) || {};
    cancel = terminal.has(j.status) ? null : cancel || cancelControl(j.id, signal);
    replace(head,
      h("h1", { id: "job-h" }, "Job ", h("code", {}, j.id)),
      h("dl", { class: "facts" },
        h("dt", {}, "Status"), h("dd", {}, h("span", { id: "job-status", class: `badge ${j.status}` }, j.status)),
        h("dt", {}, "Type"), h("dd", {}, j.type),
        h("dt", {}, "Project"), h("dd", {}, h("a", { href: `#/projects/${enc(j.project)}` }, j.project)),
        h("dt", {}, "Tags"), h("dd", { id: "job-tags" }, (j.tags || []).join(", ") || "none"),
        j.client_ref ? [h("dt", {}, "Client ref"), h("dd", { id: "job-ref" }, j.client_ref)] : null,
        h("dt", {}, "Submitted"), h("dd", {}, when(j.submitted_at)),
        h("dt", {}, "Started"), h("dd", {}, when(j.started_at) || "not yet"),
        h("dt", {}, "Ended"), h("dd", {}, when(j.completed_at) || "not yet"),
        h("dt", {}, "Cost"), h("dd", { id: "job-cost" }, `${usd(cost.charged_usd || 0)} for ${cost.billed_seconds || 0} billed seconds`),
        j.error ? [h("dt", {}, "Error"), h("dd", { class: "err" }, j.error)] : null,
        j.recommended_action ? [h("dt", {}, "What to do"), h("dd", {}, j.recommended_action)] : null),
      cancel);
  };

  const drawTasks = () => {
    const by = {};
    for (const t of st.tasks.values()) by[t.status] = (by[t.status] || 0) + 1;
    const parts = taskOrder.filter((s) => by[s]).map((s) => `${by[s]} ${s}`);
    counts.textContent = `${st.taskCount} task${st.taskCount === 1 ? "" : "s"}: ${parts.join(" · ")}` +
      (st.truncated ? ` (the first ${st.tasks.size} are shown)` : "");
    // Cells are updated in place, not rebuilt: a frame must not take the
    // keyboard focus away from the cell someone is on.
    const sorted = [...st.tasks.values()].sort((a, b) => a.index - b.index);
    sorted.forEach((t, i) => {
      let cell = cells.get(t.index);
      if (!cell) {
        cell = h("button", { type: "button", role: "listitem", "data-index": t.index,
          onclick: () => { st.selected = t.index; drawTasks(); drawDetail(); } },
        String(t.index), h("span", { class: "cellbar" }));
        cells.set(t.index, cell);
      }
      const pct = progressPct(t);
      cell.className = `cell ${t.status}`;
      cell.dataset.status = t.status;
      cell.setAttribute("aria-pressed", st.selected === t.index ? "true" : "false");
      cell.setAttribute("aria-label", `Task ${t.index}: ${t.status}${pct !== null ? `, ${pct}%` : ""}`);
      const bar = cell.lastChild;
      bar.hidden = pct === null;
      bar.style.width = `${pct || 0}%`;
      if (grid.children[i] !== cell) grid.insertBefore(cell, grid.children[i] || null);
    });
    const ended = [...st.tasks.values()].filter((t) => t.runtime_s > 0).map((t) => t.runtime_s);
    replace(durations, barChart({ title: "Task run times (tasks per duration)", data: histogram(ended, 12, (v) => dur(v)), format: (v) => `${v} task${v === 1 ? "" : "s"}` }));
  };

  const drawDetail = () => {
    const t = st.tasks.get(st.selected);
    if (!t) { replace(detail, h("p", { class: "hint" }, "Choose a task to see its output, attempts and cost.")); return; }
    const pct = progressPct(t);
    const tail = t.live_feedback ? t.live_feedback.output_tail : t.output;
    replace(detail,
      h("h2", {}, `Task ${t.index}`),
      h("dl", { class: "facts" },
        h("dt", {}, "Status"), h("dd", {}, h("span", { id: "task-status", class: `badge ${t.status}` }, t.status)),
        h("dt", {}, "Payload"), h("dd", {}, h("code", {}, compact(t.payload))),
        h("dt", {}, "Run time"), h("dd", {}, dur(t.runtime_s)),
        h("dt", {}, "Cost"), h("dd", { id: "task-cost" }, `${usd(t.cost.cost_usd)} for ${t.cost.billed_seconds} billed seconds`),
        h("dt", {}, "Exit code"), h("dd", {}, t.exit_code === null ? "none yet" : String(t.exit_code))),
      t.latest_progress ? h("div", { class: "progress" },
        h("label", { for: "task-progress" }, "Progress"),
        pct !== null ? h("progress", { id: "task-progress", max: "100", value: pct }, `${pct}%`) : null,
        h("code", {}, compact(t.latest_progress))) : null,
      h("h3", {}, t.live_feedback ? "Output (live tail)" : "Output"),
      h("pre", { id: "task-output", class: "log", tabindex: "0" }, tail || "(none)"),
      t.error ? [h("h3", {}, "Error (stderr tail)"), h("pre", { id: "task-error", class: "log err", tabindex: "0" }, t.error)] : null,
      t.result ? [h("h3", {}, "Result"), h("pre", { class: "log", tabindex: "0" }, json(t.result))] : null,
      (t.attempts || []).length ? table("Attempts", ["#", "Status", "Outcome", "Exit code", "Duration", "Billed s", "Cost", "Retry"],
        t.attempts.map((a) => h("tr", {},
          h("td", {}, a.attempt_number), h("td", {}, a.status), h("td", {}, a.terminal_kind || ""),
          h("td", {}, a.exit_code === null ? "" : a.exit_code), h("td", {}, dur(a.duration_s)),
          h("td", { class: "num" }, a.billed_seconds), h("td", { class: "num" }, usd(a.cost_usd)),
          h("td", {}, a.retry_decision || ""))), { id: "attempts" }) : null,
      (t.artifacts || []).length ? [h("h3", {}, "Files"), h("ul", { class: "files" },
        t.artifacts.map((a) => h("li", {}, downloadButton(a.id, a.filename, signal), ` ${a.kind}, ${bytes(a.size)}`)))] : null);
  };

  const showResult = async () => {
    if (st.resultShown) return;
    st.resultShown = true;
    const r = await get(`/api/v1/results/${enc(id)}?limit=1`, { signal });
    const agg = r.aggregate_result;
    const board = (agg && agg.leaderboard) || (r.summary && r.summary.leaderboard);
    const completeness = r.completeness ? compact(r.completeness) : "";
    replace(result,
      h("h2", { id: "result-h" }, "Result"),
      completeness ? h("p", {}, "Completeness: ", h("code", {}, completeness)) : null,
      Array.isArray(board) && board.length ? sortableTable("Leaderboard", board, { id: "leaderboard" }) : null,
      agg !== null && agg !== undefined ? [h("h3", {}, "Aggregate"), h("pre", { id: "aggregate", class: "log", tabindex: "0" }, json(agg))] : null,
      h("p", {}, `${r.result_count} of ${r.task_count} tasks wrote a result.`));
    await showArtifacts();
  };

  const showArtifacts = async () => {
    const l = await get("/api/v1/artifacts?limit=200", { signal });
    const mine = l.artifacts.filter((a) => a.job_id === id);
    replace(arts, h("h2", { id: "arts-h" }, "Artifacts"),
      mine.length ? h("ul", { class: "files", id: "artifact-list" },
        mine.map((a) => h("li", {}, downloadButton(a.id, a.filename || a.id, signal), ` ${a.kind}, ${bytes(a.size)}, ${when(a.created_at)}`)))
        : h("p", { class: "hint" }, "No artifacts name this job."));
  };

  const onFrame = (event, d) => {
    if (event === "snapshot") {
      st.job = d.job;
      st.tasks = new Map(d.tasks.map((t) => [t.index, t]));
      st.taskCount = d.task_count;
      st.truncated = d.tasks_truncated;
      if (st.selected === null) {
        const first = d.tasks.find((t) => t.status === "running" || t.status === "failed");
        if (first) st.selected = first.index;
      }
      drawHead(); drawTasks(); drawDetail();
      if (terminal.has(d.job.status)) showResult().catch(report);
    } else if (event === "job") {
      st.job = d.job;
      drawHead();
      if (terminal.has(d.job.status)) showResult().catch(report);
    } else if (event === "task") {
      if (!st.truncated || st.tasks.has(d.task.index)) st.tasks.set(d.task.index, d.task);
      drawTasks();
      if (st.selected === d.task.index) drawDetail();
    } else if (event === "done") {
      get(`/api/v1/jobs/${enc(id)}`, { signal }).then((j) => { st.job = j; drawHead(); }).catch(report);
      showResult().catch(report);
    }
  };
  const report = (e) => { if (!signal.aborted) live.textContent = e.text || e.message; };
  const states = { live: "Live: changes show as they happen.", reconnecting: "Connection lost; reconnecting…",
    ended: "The job has ended; this page is final.", error: "The stream was refused." };
  await showArtifacts().catch(report);
  // The stream runs until the job ends or the page is left.
  stream(`/api/v1/jobs/${enc(id)}/stream`, { signal, onFrame,
    onState: (s, status) => {
      live.textContent = states[s] + (status ? ` (HTTP ${status})` : "");
      live.dataset.state = s;
      if (s === "error" && status === 404) replace(head, h("h1", {}, "No such job"), notice(`${id} does not exist or is not yours.`, "err"));
    } }).catch(report);
}

// progressPct reads SKIFF_PROGRESS's pct (0-100), or done/total.
function progressPct(t) {
  const p = t.latest_progress;
  if (!p || typeof p !== "object") return null;
  let v = null;
  if (typeof p.pct === "number") v = p.pct;
  else if (typeof p.done === "number" && typeof p.total === "number" && p.total > 0) v = (100 * p.done) / p.total;
  return v === null ? null : Math.max(0, Math.min(100, Math.round(v)));
}

function downloadButton(id, filename, signal) {
  return h("button", { type: "button", class: "link", "data-artifact": id,
    onclick: (e) => download(id, filename, signal).catch((err) => { e.target.textContent = `${filename}: ${err.text || err.message}`; }) },
  `Download ${filename}`);
}

// cancelControl asks once more before PUT /jobs/{id}/cancel.
function cancelControl(id, signal) {
  const box = h("div", { class: "cancel" });
  const ask = () => replace(box,
    h("span", { role: "alert" }, "Cancel this job? Running tasks stop and are billed to now. "),
    h("button", { type: "button", id: "cancel-confirm", class: "danger", onclick: doCancel }, "Yes, cancel the job"),
    " ",
    h("button", { type: "button", onclick: idle }, "Keep it running"));
  const idle = () => replace(box, h("button", { type: "button", id: "cancel", class: "danger", onclick: ask }, "Cancel job"));
  const doCancel = async () => {
    try {
      await request("PUT", `/api/v1/jobs/${enc(id)}/cancel`, { signal });
      replace(box, notice("Cancel sent; the stream shows when it has taken effect.", "ok"));
    } catch (e) { replace(box, notice(e.text || e.message, "err")); }
  };
  idle();
  return box;
}
