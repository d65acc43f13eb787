"""The client: one class per part of the API, errors as SkiffError."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterator

from ._tarball import write_tarball

TERMINAL = frozenset({"completed", "partial", "failed", "cancelled"})
_CHUNK = 1 << 20


class SkiffError(Exception):
    """A failure answer: the HTTP status and the error envelope
    ({error, code, recommended_action, details}). status 0 means the
    server could not be reached. A 402 carries the quote to pay."""

    def __init__(self, status: int, envelope: dict[str, Any], retry_after: float | None = None):
        self.status = status
        self.envelope = envelope
        self.error: str = envelope.get("error", "")
        self.code: str = envelope.get("code", "")
        self.recommended_action: str = envelope.get("recommended_action", "")
        self.details: dict[str, Any] = envelope.get("details") or {}
        self.retry_after = retry_after
        self.quote: dict[str, Any] | None = envelope.get("quote") or self.details.get("quote")
        msg = f"{status} {self.error}" if status else self.error
        if self.code:
            msg += f" ({self.code})"
        if self.recommended_action:
            msg += ". " + self.recommended_action
        super().__init__(msg)


@dataclass
class Frame:
    """One server-sent event: its name (snapshot, job, task, event, done,
    ...), its id (a position, "" for frames that are not events) and its
    decoded data."""

    event: str
    id: str
    data: Any


class Client:
    """Client(url, token) calls one Skiff server. Parts: projects, kv, jobs,
    results, artifacts; account calls are methods of the client itself."""

    def __init__(self, url: str | None = None, token: str | None = None, *, max_retries: int = 5,
                 max_wait: float = 30.0, timeout: float = 300.0, page_size: int | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.url = (url or os.environ.get("SKIFF_URL", "")).rstrip("/")
        if not self.url:
            raise ValueError("no server address: pass url or set SKIFF_URL")
        self.token = token if token is not None else os.environ.get("SKIFF_TOKEN", "")
        self.max_retries, self.max_wait, self.timeout = max_retries, max_wait, timeout
        self.page_size = page_size
        self._sleep = sleep
        self.projects = Projects(self)
        self.kv = KV(self)
        self.jobs = Jobs(self)
        self.results = Results(self)
        self.artifacts = Artifacts(self)

    # -- transport -------------------------------------------------------

    def _open(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
              raw: BinaryIO | bytes | None = None, length: int | None = None, headers: dict[str, str] | None = None,
              timeout: float | None = None):
        """Sends a request and returns the open response (2xx), retrying
        429 and 503 after their Retry-After. A file body is rewound for
        each try."""
        url = self.url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None and v != ""}
            if q:
                url += "?" + urllib.parse.urlencode(q, doseq=True)
        h = {"User-Agent": "skiff-python/0.1", "Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        data: Any = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        elif raw is not None:
            data = raw
            if length is not None:
                h["Content-Length"] = str(length)
        h.update(headers or {})
        start = data.tell() if hasattr(data, "seek") else None
        for attempt in range(self.max_retries + 1):
            if start is not None:
                data.seek(start)
            req = urllib.request.Request(url, data=data, method=method, headers=h)
            try:
                return urllib.request.urlopen(req, timeout=timeout or self.timeout)
            except urllib.error.HTTPError as e:
                err = _error_of(e)
            except urllib.error.URLError as e:
                raise SkiffError(0, {"error": f"cannot reach {self.url}: {e.reason}", "code": "unavailable",
                                     "recommended_action": "Check the server address (SKIFF_URL) and that it runs."}) from e
            retry = err.status == 429 or (err.status == 503 and not err.code.endswith("_not_configured"))
            if not retry or attempt == self.max_retries:
                raise err
            wait = err.retry_after if err.retry_after is not None else 0.5 * 2 ** attempt
            self._sleep(min(wait, self.max_wait) + random.uniform(0, 0.05))
        raise AssertionError("unreachable")

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        with self._open(method, path, **kw) as r:
            b = r.read()
        return json.loads(b) if b else None

    def _pages(self, path: str, key: str, query: dict[str, Any] | None, limit: int,
               total_key: str = "total") -> Iterator[dict[str, Any]]:
        limit = self.page_size or limit
        offset = 0
        while True:
            page = self._call("GET", path, query={**(query or {}), "limit": limit, "offset": offset})
            items = page.get(key) or []
            yield from items
            offset += len(items)
            if not items or len(items) < limit or offset >= page.get(total_key, 0):
                return

    # -- account -----------------------------------------------------------

    def balance(self) -> dict[str, Any]:
        """The account (who the token acts as) and its balance."""
        return self._call("GET", "/api/v1/account/balance")

    def ledger(self, entry_type: str | None = None) -> Iterator[dict[str, Any]]:
        """The ledger's entries, newest first, every page."""
        return self._pages("/api/v1/account/ledger", "entries", {"entry_type": entry_type}, 200)

    def holds(self) -> Iterator[dict[str, Any]]:
        return self._pages("/api/v1/account/holds", "holds", None, 200)

    def quotes(self) -> Iterator[dict[str, Any]]:
        return self._pages("/api/v1/account/quotes", "quotes", None, 200)

    def topup_quote(self, amount_usd: str | float, description: str | None = None) -> dict[str, Any]:
        """Asks for a top-up quote. The server answers 402 with it; this
        returns {quote, payment_required, mpp} to pay with an x402 or MPP
        wallet (see /docs/payments)."""
        body: dict[str, Any] = {"amount_usd": float(amount_usd)}
        if description:
            body["description"] = description
        try:
            self._call("POST", "/api/v1/account/quotes/topup", body=body)
        except SkiffError as e:
            if e.status == 402:
                return e.envelope
            raise
        raise SkiffError(500, {"error": "the top-up answered without a quote"})

    def presets(self) -> dict[str, Any]:
        return self._call("GET", "/api/v1/presets")

    def feedback(self, type: str, title: str, description: str) -> dict[str, Any]:
        return self._call("POST", "/api/v1/feedback", body={"type": type, "title": title, "description": description})


def _error_of(e: urllib.error.HTTPError) -> SkiffError:
    raw = e.read()
    try:
        env = json.loads(raw)
        if not isinstance(env, dict) or "error" not in env:
            raise ValueError
    except ValueError:
        env = {"error": raw.decode(errors="replace")[:200] or e.reason}
    ra = e.headers.get("Retry-After")
    try:
        retry_after = float(ra) if ra is not None else None
    except ValueError:
        retry_after = None
    return SkiffError(e.code, env, retry_after)


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


class Projects:
    def __init__(self, c: Client):
        self._c = c

    def create(self, name: str, env: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
        body = {"name": name, **fields}
        if env:
            body["env"] = env
        return self._c._call("POST", "/api/v1/projects", body=body)

    def list(self) -> list[dict[str, Any]]:
        return self._c._call("GET", "/api/v1/projects")["projects"]

    def get(self, name: str) -> dict[str, Any]:
        return self._c._call("GET", f"/api/v1/projects/{_q(name)}")

    def update(self, name: str, **fields: Any) -> dict[str, Any]:
        return self._c._call("PUT", f"/api/v1/projects/{_q(name)}", body=fields)

    def delete(self, name: str) -> dict[str, Any]:
        return self._c._call("DELETE", f"/api/v1/projects/{_q(name)}")

    def status(self, name: str, details: bool = False) -> dict[str, Any]:
        return self._c._call("GET", f"/api/v1/projects/{_q(name)}/status" + ("/details" if details else ""))

    def push(self, name: str, directory: str) -> dict[str, Any]:
        """Packs directory (honouring .dockerignore) into a temporary file
        and streams it: 202 {push_ref, status, ...} or 200 {status:
        "unchanged", ...}."""
        if not os.path.exists(os.path.join(directory, "Dockerfile")):
            raise ValueError(f"{directory} has no Dockerfile: a project is built from its Dockerfile")
        with tempfile.TemporaryFile() as f:
            write_tarball(directory, f)
            size = f.tell()
            f.seek(0)
            return self._c._call("POST", f"/api/v1/projects/{_q(name)}/push", raw=f, length=size,
                                 headers={"Content-Type": "application/gzip"})

    def push_status(self, name: str, push_ref: str | None = None) -> dict[str, Any]:
        path = f"/api/v1/projects/{_q(name)}/push" if not push_ref else f"/api/v1/projects/{_q(name)}/pushes/{_q(push_ref)}"
        return self._c._call("GET", path)

    def wait_push(self, name: str, push_ref: str, timeout: float | None = None, interval: float = 1.0) -> dict[str, Any]:
        """Polls a push until it is published or failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            rec = self.push_status(name, push_ref)
            if rec.get("terminal"):
                return rec
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"push {push_ref} is still {rec.get('status')}")
            time.sleep(interval)

    def cancel_queued(self, name: str, tag: str | None = None) -> dict[str, Any]:
        return self._c._call("PUT", f"/api/v1/projects/{_q(name)}/cancel-queued", body={"tag": tag} if tag else {})


class KV:
    def __init__(self, c: Client):
        self._c = c

    def _path(self, project: str, key: str) -> str:
        return f"/api/v1/projects/{_q(project)}/kv/" + urllib.parse.quote(key, safe="/")

    def get(self, project: str, key: str) -> Any:
        """The value under key."""
        return self._c._call("GET", self._path(project, key))["value"]

    def put(self, project: str, key: str, value: Any, ttl_s: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"value": value}
        if ttl_s:
            body["ttl_s"] = ttl_s
        return self._c._call("PUT", self._path(project, key), body=body)

    def list(self, project: str, prefix: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        return self._c._call("GET", f"/api/v1/projects/{_q(project)}/kv", query={"prefix": prefix, "limit": limit})["entries"]

    def delete(self, project: str, key: str) -> dict[str, Any]:
        return self._c._call("DELETE", self._path(project, key))


class Jobs:
    def __init__(self, c: Client):
        self._c = c

    def submit(self, body: dict[str, Any] | None = None, *, idempotency_key: str | None = None, **fields: Any) -> dict[str, Any]:
        """Submits one job: body (a dict as the API takes it) and/or keyword
        fields. The Idempotency-Key (a fresh one unless given) makes retries
        and a resend after paying a 402 admit the job once."""
        b = {**(body or {}), **fields}
        key = idempotency_key or "skp-" + os.urandom(16).hex()
        return self._c._call("POST", "/api/v1/jobs", body=b, headers={"Idempotency-Key": key})

    def batch(self, jobs: list[dict[str, Any]], *, idempotency_key: str | None = None) -> dict[str, Any]:
        """Submits up to 200 jobs; refused ones are in "errors" by index."""
        key = idempotency_key or "skp-" + os.urandom(16).hex()
        return self._c._call("POST", "/api/v1/jobs/batch", body={"jobs": jobs}, headers={"Idempotency-Key": key})

    def get(self, job_id: str) -> dict[str, Any]:
        return self._c._call("GET", f"/api/v1/jobs/{_q(job_id)}")

    def list(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every job matching filters (status, type, tag, project,
        client_ref, since), newest first."""
        return self._c._pages("/api/v1/jobs", "jobs", filters, 200)

    def tasks(self, job_id: str) -> Iterator[dict[str, Any]]:
        return self._c._pages(f"/api/v1/jobs/{_q(job_id)}/tasks", "tasks", None, 1000)

    def output(self, job_id: str) -> dict[str, Any]:
        return self._c._call("GET", f"/api/v1/jobs/{_q(job_id)}/output")

    def events(self, job_id: str, newest: bool = False, after: int = 0) -> list[dict[str, Any]]:
        """Every lifecycle event of the job by position, oldest first (newest
        first with newest=True), from after on (before it when newest),
        following each page's next_cursor."""
        return list(self.events_iter(job_id, newest=newest, after=after))

    def events_iter(self, job_id: str, newest: bool = False, after: int = 0) -> Iterator[dict[str, Any]]:
        cursor_key = "before" if newest else "after"
        query: dict[str, Any] = {"limit": self._c.page_size or 1000, "order": "newest" if newest else "oldest"}
        if after:
            query[cursor_key] = after
        while True:
            page = self._c._call("GET", f"/api/v1/jobs/{_q(job_id)}/events", query=query)
            yield from page.get("events") or []
            cursor = page.get("next_cursor")
            if not cursor:
                return
            query[cursor_key] = cursor

    def cancel(self, job_id: str, reason: str | None = None) -> dict[str, Any]:
        return self._c._call("PUT", f"/api/v1/jobs/{_q(job_id)}/cancel", body={"reason": reason} if reason else {})

    def stream(self, job_id: str, last_event_id: str | None = None) -> Iterator[Frame]:
        """The job's frames until its done frame. A broken connection (or
        the server's stream timeout) is resumed with Last-Event-ID: no frame
        is lost or repeated."""
        return _stream(self._c, f"/api/v1/jobs/{_q(job_id)}/stream", None, last_event_id)

    def watch(self, job_ids: list[str], last_event_id: str | None = None) -> Iterator[Frame]:
        return _stream(self._c, "/api/v1/jobs/watch", {"ids": ",".join(job_ids)}, last_event_id)

    def wait(self, job_id: str, on_frame: Callable[[Frame], None] | None = None) -> dict[str, Any]:
        """Follows the job's stream until it ends and returns the job."""
        for f in self.stream(job_id):
            if on_frame:
                on_frame(f)
        return self.get(job_id)


def _stream(c: Client, path: str, query: dict[str, Any] | None, last_id: str | None) -> Iterator[Frame]:
    fails = 0
    while True:
        headers = {"Accept": "text/event-stream"}
        if last_id:
            headers["Last-Event-ID"] = last_id
        try:
            resp = c._open("GET", path, query=query, headers=headers, timeout=3600)
        except SkiffError as e:
            if e.status != 0 or fails >= 8:
                raise
            fails += 1
            c._sleep(min(0.25 * 2 ** fails, 5))
            continue
        if resp.status == 204:  # everything was delivered before
            resp.close()
            return
        got = False
        try:
            event, fid, data = "", "", []
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line == "":
                    if data:
                        fails, got = 0, True
                        f = Frame(event or "message", fid, json.loads("\n".join(data)))
                        if fid:
                            last_id = fid
                        if f.event == "timeout":
                            last_id = f.data.get("last_event_id") or last_id
                            break
                        if f.event != "ping":
                            yield f
                        if f.event == "done":
                            return
                    event, fid, data = "", "", []
                    continue
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    event = value
                elif name == "id":
                    fid = value
                elif name == "data":
                    data.append(value)
        except (OSError, ValueError):
            fails += 1
            if fails > 8:
                raise
        finally:
            resp.close()
        # The connection ended without a done frame: resume after last_id.
        if not got:
            fails += 1
            if fails > 8:
                raise SkiffError(0, {"error": "the stream keeps closing without frames", "code": "unavailable"})
            c._sleep(min(0.25 * 2 ** fails, 5))


class Results:
    def __init__(self, c: Client):
        self._c = c

    def get(self, job_id: str) -> dict[str, Any]:
        """The job's result with the first page of its tasks."""
        return self._c._call("GET", f"/api/v1/results/{_q(job_id)}")

    def tasks(self, job_id: str) -> Iterator[dict[str, Any]]:
        """Every task of the job's result, in index order."""
        return self._c._pages(f"/api/v1/results/{_q(job_id)}", "results", None, 1000, total_key="task_count")

    def list(self, **filters: Any) -> Iterator[dict[str, Any]]:
        return self._c._pages("/api/v1/results", "results", filters, 100)


class Artifacts:
    def __init__(self, c: Client):
        self._c = c

    def upload(self, path: str, job_id: str | None = None, filename: str | None = None) -> dict[str, Any]:
        """Uploads a file, streamed from disk (never read whole)."""
        headers = {"Content-Type": "application/octet-stream", "X-Artifact-Filename": filename or os.path.basename(path)}
        if job_id:
            headers["X-Artifact-Job-Id"] = job_id
        with open(path, "rb") as f:
            return self._c._call("POST", "/api/v1/artifacts", raw=f, length=os.fstat(f.fileno()).st_size, headers=headers)

    def download(self, artifact_id: str, path: str) -> int:
        """Writes the artifact's bytes to path, streamed; returns the count."""
        with self._c._open("GET", f"/api/v1/artifacts/{_q(artifact_id)}", headers={"Accept": "*/*"}) as r, \
                open(path, "wb") as f:
            shutil.copyfileobj(r, f, _CHUNK)
            return f.tell()

    def meta(self, artifact_id: str) -> dict[str, Any]:
        return self._c._call("GET", f"/api/v1/artifacts/{_q(artifact_id)}/meta")

    def list(self) -> Iterator[dict[str, Any]]:
        return self._c._pages("/api/v1/artifacts", "artifacts", None, 200)

    def delete(self, artifact_id: str) -> dict[str, Any]:
        return self._c._call("DELETE", f"/api/v1/artifacts/{_q(artifact_id)}")
