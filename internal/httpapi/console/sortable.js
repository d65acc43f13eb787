// sortableTable shows a list of objects (a sweep's or benchmark's
// leaderboard) as a table whose column headers sort it; objects inside
// cells show as compact JSON text.

import { h, replace } from "./dom.js";
import { compact } from "./fmt.js";

export function sortableTable(caption, rows, attrs = {}) {
  const cols = [];
  for (const r of rows) for (const k of Object.keys(r || {})) if (!cols.includes(k)) cols.push(k);
  let key = cols[0], dir = 1;
  const tbody = h("tbody");
  const heads = cols.map((c) => h("th", { scope: "col", "aria-sort": "none" },
    h("button", { type: "button", class: "sort", onclick: () => { dir = key === c ? -dir : 1; key = c; draw(); } }, c)));
  const cmp = (a, b) => {
    const x = a[key], y = b[key];
    if (typeof x === "number" && typeof y === "number") return x - y;
    if (x === undefined || x === null) return 1;
    if (y === undefined || y === null) return -1;
    return compact(x).localeCompare(compact(y));
  };
  const draw = () => {
    heads.forEach((th, i) => th.setAttribute("aria-sort", cols[i] === key ? (dir > 0 ? "ascending" : "descending") : "none"));
    replace(tbody, [...rows].sort((a, b) => dir * cmp(a, b)).map((r) =>
      h("tr", {}, cols.map((c) => h("td", { class: typeof r[c] === "number" ? "num" : "" }, compact(r[c]))))));
  };
  draw();
  return h("div", { class: "scroll" },
    h("table", attrs, h("caption", {}, caption, " (choose a column to sort)"), h("thead", {}, h("tr", {}, heads)), tbody));
}
