"""One job: the digest of this prefixlint (its version and the stamps of its own files), which
every cache on disk keys on (results, token books, token indexes), so that an edited install
never serves what the old code computed. Below the caches and the models: all of them import it."""

from __future__ import annotations

import functools
import hashlib
import json

from prefixlint.runmemo import package_stamp


@functools.cache
def package_digest() -> str:
    return hashlib.sha256(json.dumps(package_stamp()).encode()).hexdigest()
