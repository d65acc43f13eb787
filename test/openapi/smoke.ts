// A client generated from /openapi.json (openapi-typescript types, driven by
// openapi-fetch) against a running server: create a project, push it, wait
// for the build, submit a job, read its result. Type errors here mean the
// document and the way clients use it have drifted apart.
import createClient from "openapi-fetch";
import { readFileSync } from "node:fs";
import type { paths } from "./schema.js";


const base = process.env.SKIFF_URL!;
const token = process.env.SKIFF_TOKEN!;
const tarball = process.env.SKIFF_TARBALL!;
const project = "smoke";

const client = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${token}` } });

function fail(step: string, error: unknown): never {
  console.error(`${step} failed:`, JSON.stringify(error));
  process.exit(1);
}

const created = await client.POST("/api/v1/projects", { body: { name: project } });
if (created.error || created.response.status !== 201) fail("create project", created.error);
console.log("project", created.data.name);

const pushed = await client.POST("/api/v1/projects/{name}/push", {
  params: { path: { name: project } },
  body: readFileSync(tarball) as unknown as string,
  bodySerializer: (b: unknown) => b as BodyInit,
  headers: { "Content-Type": "application/gzip" },
});
if (pushed.error) fail("push", pushed.error);
console.log("push", pushed.response.status);

let status = "";
for (let i = 0; i < 100 && status !== "published"; i++) {
  const p = await client.GET("/api/v1/projects/{name}/push", { params: { path: { name: project } } });
  if (p.error) fail("push status", p.error);
  status = p.data.status;
  if (status === "failed") fail("build", p.data);
  if (status !== "published") await new Promise((r) => setTimeout(r, 100));
}
if (status !== "published") fail("build", `still ${status}`);

const job = await client.POST("/api/v1/jobs", {
  body: { project, runner_command: ["/runner"], payload: { n: 1 }, timeout_s: 60 },
});
if (job.error || job.response.status !== 201) fail("submit", job.error);
console.log("job", job.data.id, job.data.status);

const result = await client.GET("/api/v1/results/{job_id}", { params: { path: { job_id: job.data.id } } });
if (result.error) fail("result", result.error);
if (result.data.job_id !== job.data.id) fail("result", `job_id ${result.data.job_id}, want ${job.data.id}`);
console.log("result", result.data.status);

const bad = await client.POST("/api/v1/feedback", { body: { type: "bug", title: "", description: "d" } });
if (!bad.error || bad.response.status !== 422 || !bad.error.recommended_action) fail("feedback 422 envelope", bad);
console.log("ok");
