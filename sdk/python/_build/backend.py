"""A PEP 517 build backend in the standard library alone, so that
`pip install ./sdk/python` needs nothing from a package index (the SDK has
no dependencies, and neither has its build)."""

import base64
import hashlib
import os
import tarfile
import zipfile

NAME, VERSION = "skiff", "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: Python client of the Skiff compute job service (standard library only)
Requires-Python: >=3.11
"""
WHEEL = """Wheel-Version: 1.0
Generator: skiff-backend
Root-Is-Purelib: true
Tag: py3-none-any
"""


def _sources():
    pkg = os.path.join(ROOT, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            yield f"{NAME}/{name}", os.path.join(pkg, name)


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    filename = f"{NAME}-{VERSION}-py3-none-any.whl"
    dist = f"{NAME}-{VERSION}.dist-info"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        def add(arc, data):
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        for arc, path in _sources():
            with open(path, "rb") as f:
                add(arc, f.read())
        add(f"{dist}/METADATA", METADATA.encode())
        add(f"{dist}/WHEEL", WHEEL.encode())
        records.append(f"{dist}/RECORD,,")
        z.writestr(f"{dist}/RECORD", "\n".join(records) + "\n")
    return filename


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as t:
        for rel in ["pyproject.toml", "_build/backend.py"] + [arc for arc, _ in _sources()]:
            t.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        import io
        t.addfile(info, io.BytesIO(data))
    return filename
