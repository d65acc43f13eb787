"""The SDK against a real server. sdk/python/sdk_test.go starts the server
(SKIFF_URL, SKIFF_TOKEN), a published project (SKIFF_TEST_PROJECT) and a
stand-in host that runs every task with the result {"echo": payload}."""

import gzip
import io
import os
import tarfile
import tempfile
import unittest

import skiff

PROJECT = os.environ.get("SKIFF_TEST_PROJECT", "p")


def client(**kw):
    return skiff.Client(os.environ["SKIFF_URL"], os.environ["SKIFF_TOKEN"], **kw)


class ProjectsAndKV(unittest.TestCase):
    def test_projects(self):
        c = client()
        p = c.projects.create("py-proj", env={"A": "1"})
        self.assertEqual(p["name"], "py-proj")
        with self.assertRaises(skiff.SkiffError) as cm:
            c.projects.create("py-proj")
        self.assertEqual(cm.exception.status, 409)
        self.assertIn("py-proj", [p["name"] for p in c.projects.list()])
        self.assertEqual(c.projects.update("py-proj", env={"B": "2"})["env"], {"B": "2"})
        self.assertIn("ready_for_jobs", c.projects.status(PROJECT))
        c.projects.delete("py-proj")
        with self.assertRaises(skiff.SkiffError) as cm:
            c.projects.get("py-proj")
        e = cm.exception
        self.assertEqual(e.status, 404)
        self.assertTrue(e.code and e.recommended_action, e.envelope)

    def test_kv(self):
        c = client()
        c.kv.put(PROJECT, "best/lr", {"lr": 0.1})
        self.assertEqual(c.kv.get(PROJECT, "best/lr"), {"lr": 0.1})
        self.assertEqual([e["key"] for e in c.kv.list(PROJECT, prefix="best/")], ["best/lr"])
        c.kv.delete(PROJECT, "best/lr")
        with self.assertRaises(skiff.SkiffError) as cm:
            c.kv.get(PROJECT, "best/lr")
        self.assertEqual(cm.exception.status, 404)


class Push(unittest.TestCase):
    def test_push_honours_dockerignore(self):
        with tempfile.TemporaryDirectory() as d:
            files = {"Dockerfile": "FROM scratch\nCOPY runner /runner\n", "runner": "#!/bin/sh\n",
                     "skiff.project.json": '{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}, '
                                           '"entrypoint": {"command": ["/runner"]}}',
                     "data/big.bin": "x" * 1000, "data/keep.txt": "k", "src/a/b.pyc": "x",
                     ".dockerignore": "# comment\ndata\n!data/keep.txt\n**/*.pyc\n"}
            for name, body in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
                with open(os.path.join(d, name), "w") as f:
                    f.write(body)
            buf = io.BytesIO()
            skiff.write_tarball(d, buf)
            with tarfile.open(fileobj=io.BytesIO(buf.getvalue()), mode="r:gz") as t:
                names = sorted(m.name for m in t.getmembers() if m.isfile())
            self.assertEqual(names, [".dockerignore", "Dockerfile", "data/keep.txt", "runner", "skiff.project.json"])
            c = client()
            c.projects.create("py-push")
            rec = c.projects.push("py-push", d)
            self.assertTrue(rec["push_ref"], rec)
            self.assertEqual(c.projects.push_status("py-push", rec["push_ref"])["push_ref"], rec["push_ref"])


class Jobs(unittest.TestCase):
    def submit(self, c, **fields):
        return c.jobs.submit({"project": PROJECT, "runner_command": ["/runner"], "payload": {"x": 1}}, **fields)

    def test_submit_stream_wait_results(self):
        c = client()
        job = self.submit(c, fan_out={"items": [{"i": 0}, {"i": 1}, {"i": 2}]})
        frames = list(c.jobs.stream(job["id"]))
        self.assertEqual(frames[0].event, "snapshot")
        self.assertEqual(frames[-1].event, "done")
        self.assertEqual(frames[-1].data["status"], "completed")
        ids = [f.id for f in frames if f.id]
        self.assertGreaterEqual(len(ids), 1, frames)
        if len(ids) >= 2:
            # Resume from the middle: exactly the frames after it, no
            # snapshot.
            mid = ids[(len(ids) - 1) // 2]
            rest = list(c.jobs.stream(job["id"], last_event_id=mid))
            self.assertEqual([f.id for f in rest if f.id], ids[ids.index(mid) + 1:])
            self.assertNotEqual(rest[0].event, "snapshot")
        else:
            # The stand-in host ended the job before the stream opened: its
            # snapshot and done only; resumed from the snapshot, nothing is
            # missed and the ended stream sends nothing (204).
            self.assertEqual(frames[0].data["job"]["status"], "completed", frames)
            self.assertEqual(list(c.jobs.stream(job["id"], last_event_id=ids[0])), [])
        done = c.jobs.wait(job["id"])
        self.assertEqual(done["status"], "completed")
        tasks = list(c.jobs.tasks(job["id"]))
        self.assertEqual([t["status"] for t in tasks], ["succeeded"] * 3)
        self.assertEqual(tasks[1]["result"]["echo"]["i"], 1)
        res = c.results.get(job["id"])
        self.assertEqual(res["result_count"], 3)
        self.assertEqual(len(list(c.results.tasks(job["id"]))), 3)
        self.assertIn("ran 0", c.jobs.output(job["id"])["output"])
        events = c.jobs.events(job["id"])
        self.assertEqual(events[0]["kind"], "job.submitted")
        self.assertEqual(events[-1]["kind"], "job.completed")
        positions = [e["position"] for e in events]
        self.assertEqual(positions, sorted(positions))
        paged = client(page_size=2).jobs.events(job["id"])  # two a page: every page followed
        self.assertEqual([e["position"] for e in paged], positions)
        newest = client(page_size=2).jobs.events(job["id"], newest=True)
        self.assertEqual([e["position"] for e in newest], positions[::-1])
        with self.assertRaises(skiff.SkiffError) as cm:
            c.jobs.cancel(job["id"])
        self.assertEqual(cm.exception.status, 409)

    def test_paging_batch_and_idempotency(self):
        c = client(page_size=2)
        b = c.jobs.batch([{"project": PROJECT, "runner_command": ["/runner"], "payload": {"n": n}} for n in range(5)]
                         + [{"project": PROJECT}])
        self.assertEqual((b["submitted"], b["error_count"]), (5, 1))
        self.assertEqual(b["errors"][0]["index"], 5)
        ids = {j["id"] for j in b["jobs"]}
        for i in ids:
            c.jobs.wait(i)
        listed = {j["id"] for j in c.jobs.list(project=PROJECT)}
        self.assertTrue(ids <= listed)
        one = self.submit(c, idempotency_key="same-key")
        again = self.submit(c, idempotency_key="same-key")
        self.assertEqual(one["id"], again["id"])
        self.assertGreaterEqual(len(list(c.results.list())), 5)
        self.assertTrue(any(e["entry_type"] == "job_charge" for e in c.ledger()))


class Artifacts(unittest.TestCase):
    def test_upload_download(self):
        c = client()
        body = os.urandom(3 << 20)
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "data.bin")
            with open(src, "wb") as f:
                f.write(body)
            a = c.artifacts.upload(src)
            self.assertEqual((a["size"], a["filename"]), (len(body), "data.bin"))
            dst = os.path.join(d, "copy.bin")
            self.assertEqual(c.artifacts.download(a["id"], dst), len(body))
            with open(dst, "rb") as f:
                self.assertEqual(f.read(), body)
        self.assertIn(a["id"], [x["id"] for x in c.artifacts.list()])
        self.assertEqual(c.artifacts.meta(a["id"])["id"], a["id"])
        c.artifacts.delete(a["id"])


class Account(unittest.TestCase):
    def test_balance_and_topup(self):
        c = client()
        b = c.balance()
        self.assertTrue(b["account"]["id"])
        self.assertIn("available_usd", b["balance"])
        waits = []
        c = client(sleep=waits.append)
        with self.assertRaises(skiff.SkiffError) as cm:
            c.topup_quote(5)
        # Payments are off on this server: a 503 no wait would change.
        self.assertEqual((cm.exception.status, cm.exception.code), (503, "payments_not_configured"))
        self.assertEqual(waits, [])

    def test_errors(self):
        with self.assertRaises(skiff.SkiffError) as cm:
            skiff.Client(os.environ["SKIFF_URL"], "flk_wrong").balance()
        self.assertEqual(cm.exception.status, 401)
        with self.assertRaises(skiff.SkiffError) as cm:
            skiff.Client("http://127.0.0.1:1", "x", max_retries=0).balance()
        self.assertEqual((cm.exception.status, cm.exception.code), (0, "unavailable"))


if __name__ == "__main__":
    unittest.main()
