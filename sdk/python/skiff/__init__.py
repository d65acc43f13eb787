"""Skiff's Python SDK: the HTTP API (/api/v1) with the standard library only.

    from skiff import Client
    c = Client("https://skiff.example.com", token)
    job = c.jobs.submit({"project": "hello", "runner_command": ["/runner"], "payload": {"name": "Ada"}})
    job = c.jobs.wait(job["id"])
    print(c.results.get(job["id"])["aggregate_result"])
"""

from ._client import Client, Frame, SkiffError
from ._tarball import write_tarball

__all__ = ["Client", "Frame", "SkiffError", "write_tarball"]
__version__ = "0.1.0"
