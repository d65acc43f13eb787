// Drives a Skiff MCP server with the ecosystem's own client
// (@modelcontextprotocol/sdk) and prints one JSON line per step on stdout,
// for test/e2e's TestMCP* to read:
//   {"step": "initialize", "server": {...}, "instructions": "..."}
//   {"step": "tools", "names": [...]}
//   {"step": "call", "tool": NAME, "isError": bool, "structured": {...}, "text": "...", "progress": [{progress, total, message}]}
//   {"step": "error", "message": "..."} when connecting or a call fails at the protocol level (exit 1)
//
// Usage:
//   node drive.mjs remote URL TOKEN CALLS.json   the server's /mcp over Streamable HTTP
//   node drive.mjs local SKIFF CALLS.json         `SKIFF mcp` over stdio (its environment: SKIFF_URL, SKIFF_TOKEN ...)
// CALLS.json is a list of {"tool", "arguments", "progress": bool}; an
// argument "$job" is replaced by the id of the job the last submit_job made.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const print = (v) => process.stdout.write(JSON.stringify(v) + "\n");
const [mode, ...rest] = process.argv.slice(2);

let transport, callsFile;
if (mode === "remote") {
  const [url, token, file] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  callsFile = file;
} else if (mode === "local") {
  const [skiff, file] = rest;
  transport = new StdioClientTransport({ command: skiff, args: ["mcp"], env: process.env, stderr: "inherit" });
  callsFile = file;
} else {
  console.error("usage: node drive.mjs remote URL TOKEN CALLS.json | local SKIFF CALLS.json");
  process.exit(2);
}
const calls = JSON.parse(readFileSync(callsFile, "utf8"));

const client = new Client({ name: "skiff-e2e", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (e) {
  print({ step: "error", message: String(e?.message ?? e) });
  process.exit(1);
}
print({ step: "initialize", server: client.getServerVersion(), instructions: client.getInstructions() ?? "" });
const { tools } = await client.listTools();
print({ step: "tools", names: tools.map((t) => t.name) });

let job = "";
const subst = (v) => {
  if (v === "$job") return job;
  if (Array.isArray(v)) return v.map(subst);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x)]));
  return v;
};
for (const c of calls) {
  const progress = [];
  const opts = { timeout: 600_000, resetTimeoutOnProgress: true };
  if (c.progress) opts.onprogress = (p) => progress.push(p);
  let res;
  try {
    res = await client.callTool({ name: c.tool, arguments: subst(c.arguments ?? {}) }, undefined, opts);
  } catch (e) {
    print({ step: "error", tool: c.tool, message: String(e?.message ?? e) });
    await client.close();
    process.exit(1);
  }
  const text = (res.content ?? []).filter((x) => x.type === "text").map((x) => x.text).join("\n");
  if (c.tool === "submit_job" && !res.isError) job = res.structuredContent?.job?.id ?? "";
  print({ step: "call", tool: c.tool, isError: !!res.isError, structured: res.structuredContent ?? null, text, progress });
}
await client.close();
