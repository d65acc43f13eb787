// The console's shell: sign-in state, the hash router and the page frame.
// Routes live in the fragment (#/jobs/job_...) so the server serves one
// page and no address ever carries a token.

import { h, replace } from "./dom.js";
import { session, onUnauthorized, get } from "./api.js";
import { signInPage } from "./signin.js";
import { projectsPage, projectPage } from "./projects.js";
import { jobsPage } from "./jobs.js";
import { jobPage } from "./job.js";
import { balancePage } from "./balance.js";
import { artifactsPage } from "./artifacts.js";

const routes = [
  [/^\/projects$/, projectsPage, "projects"],
  [/^\/projects\/([^/]+)$/, projectPage, "projects"],
  [/^\/jobs$/, jobsPage, "jobs"],
  [/^\/jobs\/([^/]+)$/, jobPage, "jobs"],
  [/^\/artifacts$/, artifactsPage, "artifacts"],
  [/^\/balance$/, balancePage, "balance"],
];

const main = document.getElementById("main");
let current = null; // the AbortController of the page on screen

function parse() {
  const raw = location.hash.startsWith("#/") ? location.hash.slice(1) : "/jobs";
  const [path, qs] = raw.split("?");
  return { path, query: new URLSearchParams(qs || "") };
}

export function go(path) {
  if (location.hash === `#${path}`) render();
  else location.hash = path;
}

async function who() {
  const el = document.getElementById("who");
  const out = document.getElementById("signout");
  if (!session.token()) { el.textContent = ""; out.hidden = true; return; }
  out.hidden = false;
  try {
    const b = await get("/api/v1/account/balance");
    el.textContent = `${b.account.name} (${b.account.role})`;
  } catch { el.textContent = ""; }
}

async function render() {
  if (current) current.abort();
  current = new AbortController();
  const signal = current.signal;
  const { path, query } = parse();
  for (const a of document.querySelectorAll("[data-nav]")) a.removeAttribute("aria-current");
  if (!session.token()) {
    document.title = "Sign in · Skiff console";
    replace(main, signInPage({ signal, done: () => { who(); render(); } }));
    return;
  }
  for (const [re, page, nav] of routes) {
    const m = path.match(re);
    if (!m) continue;
    document.querySelector(`[data-nav="${nav}"]`)?.setAttribute("aria-current", "page");
    const root = h("div", { class: "page" });
    replace(main, root);
    try {
      await page({ root, params: m.slice(1).map(decodeURIComponent), query, signal, go });
    } catch (e) {
      if (signal.aborted) return;
      replace(root, h("p", { class: "notice err", role: "alert" }, e.text || e.message));
    }
    return;
  }
  replace(main, h("div", { class: "page" }, h("h1", {}, "Not found"),
    h("p", {}, "No console page is at this address. ", h("a", { href: "#/jobs" }, "See your jobs."))));
}

onUnauthorized(() => {
  session.clear();
  who();
  render();
});

document.getElementById("signout").addEventListener("click", () => {
  session.clear();
  who();
  go("/jobs");
  render();
});

// The skip link's own fragment is not a route: focus the content instead.
document.querySelector(".skip").addEventListener("click", (e) => {
  e.preventDefault();
  main.focus();
});

window.addEventListener("hashchange", () => { if (location.hash.startsWith("#/") || !location.hash) render(); });
who();
render();
