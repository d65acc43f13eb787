// Formatting for people: money, durations, times, JSON.

export function usd(n) {
  if (n === undefined || n === null) return "";
  const v = Number(n);
  return (v < 0 ? "-$" : "$") + Math.abs(v).toFixed(6).replace(/(\.\d\d\d*?)0+$/, "$1");
}

export function dur(s) {
  if (s === undefined || s === null) return "";
  const v = Number(s);
  if (v < 60) return `${v.toFixed(v < 10 ? 1 : 0)} s`;
  if (v < 3600) return `${Math.floor(v / 60)} min ${Math.round(v % 60)} s`;
  return `${Math.floor(v / 3600)} h ${Math.round((v % 3600) / 60)} min`;
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function json(v) {
  if (v === undefined || v === null) return "";
  return JSON.stringify(v, null, 2);
}

export function compact(v) {
  if (v === undefined || v === null) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

export function bytes(n) {
  const v = Number(n || 0);
  if (v < 1024) return `${v} B`;
  if (v < 1 << 20) return `${(v / 1024).toFixed(1)} KiB`;
  if (v < 1 << 30) return `${(v / (1 << 20)).toFixed(1)} MiB`;
  return `${(v / (1 << 30)).toFixed(2)} GiB`;
}
