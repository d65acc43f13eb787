// DOM helpers. Everything from the API is put in the page as text (text
// nodes, attribute values), never parsed as HTML: a job named
// <img src=x onerror=alert(1)> shows as those characters.

const SVG = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) {
      if (typeof v !== "function") throw new Error(`handler ${k} must be a function`);
      el.addEventListener(k.slice(2), v);
    } else if (k === "style") {
      Object.assign(el.style, v); // the CSSOM, which the CSP allows
    } else if (k === "dataset") {
      Object.assign(el.dataset, v);
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h makes an HTML element: h("a", {href: "#/jobs"}, "Jobs").
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s makes an SVG element.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

// replace puts children in place of el's content.
export function replace(el, ...children) {
  el.replaceChildren();
  return build(el, {}, children);
}

// table makes a table with a caption, headers and rows of cells.
export function table(caption, headers, rows, attrs = {}) {
  return h("div", { class: "scroll" },
    h("table", attrs,
      caption ? h("caption", {}, caption) : null,
      h("thead", {}, h("tr", {}, headers.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows)));
}

// notice is a message line; kind is "ok", "err" or "".
export function notice(text, kind = "") {
  return h("p", { class: `notice ${kind}`, role: kind === "err" ? "alert" : "status" }, text);
}
