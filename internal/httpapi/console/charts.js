// Small inline SVG charts built with the DOM: no library, no request.
import { s, h } from "./dom.js";

// barChart draws one bar per {label, value}; label(value) formats the
// numbers shown. It is an image with a text alternative, and each bar
// carries its own title for hover and screen readers.
export function barChart({ title, data, format = String, width = 560, height = 160 }) {
  const pad = { top: 12, right: 8, bottom: 28, left: 8 };
  const max = Math.max(0, ...data.map((d) => d.value));
  const n = Math.max(1, data.length);
  const iw = width - pad.left - pad.right;
  const ih = height - pad.top - pad.bottom;
  const bw = iw / n;
  const summary = data.length
    ? `${title}: ${data.map((d) => `${d.label} ${format(d.value)}`).join(", ")}`
    : `${title}: no data yet`;
  const bars = data.map((d, i) => {
    const bh = max > 0 ? (d.value / max) * ih : 0;
    const x = pad.left + i * bw;
    const y = pad.top + ih - bh;
    return s("g", {},
      s("rect", { x: x + bw * 0.1, y, width: Math.max(1, bw * 0.8), height: Math.max(0, bh), class: "bar" },
        s("title", {}, `${d.label}: ${format(d.value)}`)),
      n <= 16 ? s("text", { x: x + bw / 2, y: height - 10, "text-anchor": "middle", class: "axis" }, d.label) : null);
  });
  return h("figure", { class: "chart" },
    s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": summary, preserveAspectRatio: "none" },
      s("line", { x1: pad.left, x2: width - pad.right, y1: pad.top + ih, y2: pad.top + ih, class: "axisline" }),
      bars),
    h("figcaption", {}, title, max > 0 ? ` (highest ${format(max)})` : " (no data yet)"));
}

// histogram buckets values into at most bins equal ranges.
export function histogram(values, bins, format = String) {
  if (!values.length) return [];
  const lo = Math.min(...values), hi = Math.max(...values);
  const k = lo === hi ? 1 : Math.min(bins, values.length);
  const w = (hi - lo) / k || 1;
  const out = Array.from({ length: k }, (_, i) => ({ label: format(lo + i * w), value: 0 }));
  for (const v of values) out[Math.min(k - 1, Math.floor((v - lo) / w))].value++;
  return out;
}
