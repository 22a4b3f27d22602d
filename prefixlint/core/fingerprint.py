"""One job: what identifies a file's content (`stamp`) and this prefixlint (its version and the stamps
of its own files, `package_stamp`, `package_digest`), which every cache on disk and the replayed
runs key on (results, token books, token indexes), so that an edited install never serves what the
old code computed. Below the caches, the models and the replay: all of them import it."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any

import prefixlint

_PACKAGE = os.path.dirname(os.path.abspath(prefixlint.__file__))  # the package root, wherever this module is


def stamp(path: str) -> list[Any]:
    """What must not change about `path`; a missing path is stamped as missing."""
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode]


@functools.cache
def package_stamp() -> list[Any]:
    """prefixlint's version and the stamps of its own code and data files, so an edited (editable)
    install never serves results of the old code."""
    stamps = []
    for folder, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        code = sorted(f for f in files if f.endswith((".py", ".toml", ".json")))
        stamps += [stamp(os.path.join(folder, f)) for f in code]
    return [prefixlint.__version__, stamps]


@functools.cache
def package_digest() -> str:
    return hashlib.sha256(json.dumps(package_stamp()).encode()).hexdigest()


@functools.cache
def package_content_digest() -> str:
    """A digest of prefixlint's version and of its own code and data files' names (relative to the
    package) and bytes: equal on two machines exactly when both run the same prefixlint, wherever
    each is installed (the stamps of `package_stamp` hold paths and times, which differ)."""
    digest = hashlib.sha256(prefixlint.__version__.encode())
    for folder, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith((".py", ".toml", ".json"))):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, _PACKAGE).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as fh:
                digest.update(hashlib.sha256(fh.read()).digest())
    return digest.hexdigest()
