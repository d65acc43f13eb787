"""The push tarball: a directory as gzip tar, leaving out what .dockerignore names."""

from __future__ import annotations

import fnmatch
import os
import tarfile
from typing import BinaryIO


def _rules(directory: str) -> list[tuple[list[str], bool]]:
    path = os.path.join(directory, ".dockerignore")
    rules: list[tuple[list[str], bool]] = []
    if not os.path.exists(path):
        return rules
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate:
                line = line[1:].strip()
            line = os.path.normpath(line.lstrip("/")).replace(os.sep, "/")
            if line == ".":
                continue
            rules.append((line.split("/"), negate))
    return rules


def _match(pat: list[str], name: list[str]) -> bool:
    if not pat:
        return not name
    if pat[0] == "**":
        return any(_match(pat[1:], name[i:]) for i in range(len(name) + 1))
    if not name or not fnmatch.fnmatchcase(name[0], pat[0]):
        return False
    return _match(pat[1:], name[1:])


def _ignored(rules: list[tuple[list[str], bool]], rel: str) -> bool:
    parts = rel.split("/")
    out = False
    for pat, negate in rules:
        # A rule matches the path or one of its parent directories.
        if any(_match(pat, parts[:n]) for n in range(1, len(parts) + 1)):
            out = not negate
    return out


def write_tarball(directory: str, out: BinaryIO) -> int:
    """Writes directory as a gzip tarball to out, as `skiff push` does:
    sorted, dated 0, owners cleared, .dockerignore honoured. Returns the
    number of files written."""
    rules = _rules(directory)
    files = 0
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, names in os.walk(directory):
            dirs.sort()
            rel_root = os.path.relpath(root, directory)
            for name in sorted(names) + [d + "/" for d in dirs]:
                is_dir = name.endswith("/")
                name = name.rstrip("/")
                rel = name if rel_root == "." else f"{rel_root}/{name}".replace(os.sep, "/")
                if _ignored(rules, rel):
                    continue
                if is_dir:
                    continue
                info = tar.gettarinfo(os.path.join(root, name), arcname=rel)
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                if info.isreg():
                    with open(os.path.join(root, name), "rb") as f:
                        tar.addfile(info, f)
                    files += 1
                elif info.issym():
                    tar.addfile(info)
            # Do not descend into ignored directories.
            dirs[:] = [d for d in dirs if not _ignored(rules, d if rel_root == "." else f"{rel_root}/{d}")
                       or any(neg for _, neg in rules)]
    return files
