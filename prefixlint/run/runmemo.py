"""Replaying a whole `check` run: when nothing it read has changed, print what it printed.

A warm run through the result cache still imports click, reads the config, walks the folders and
hashes every source (~0.15 s on the corpus, ~1 s on a repository of 1,500 files); an editor, a CI
re-run or `pre-commit run --all-files` twice wants the answer at the cost of starting Python. So a
finished `check` run with the result cache on records, under `<cache dir>/runs/`, its output, its
exit code and a stamp (size, mtime, inode, mode) of everything it read or listed: the config files it
looked for, the folders it walked, each source and its folder, the tokenizer files, jinja2's and
tokenizers' own files, and prefixlint's. The same command line (same arguments, folder, interpreter
and environment) stats those paths first; if every stamp matches, it replays the output and never
imports the rest of prefixlint. make and git's index work the same way, and as in git an entry is
not trusted when an input changed within 2 s of the entry being written ("racy": timestamps are
coarser than edits).

Only the standard library here, and little of it: this module runs before click is imported.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Iterable
from typing import Any

from prefixlint.core.fingerprint import package_stamp, stamp

FORMAT = "runs-v1"
RACY_NS = 2_000_000_000  # FAT's timestamps are 2 s coarse; ext4's a few ms
KEEP_ENTRIES = 256  # past this many recorded runs, the older half goes
_ENV_PREFIXES = ("PREFIXLINT_", "HF_")


def library_inputs() -> list[str]:
    """The files that change when jinja2, tokenizers or libcst is upgraded (found, not imported)."""
    import importlib.util

    specs = (importlib.util.find_spec(name) for name in ("jinja2", "tokenizers", "libcst"))
    return [spec.origin for spec in specs if spec is not None and spec.origin]


def run_identity(argv: list[str]) -> list[Any]:
    """What makes two command lines the same run: arguments, folder, interpreter, the environment
    prefixlint reads, and whether the output goes to a terminal."""
    env = sorted([k, v] for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES))
    ttys = [stream.isatty() if stream else None for stream in (sys.stdout, sys.stderr)]
    return [FORMAT, argv, os.getcwd(), sys.executable, env, ttys]


def entry_name(identity: list[Any]) -> str:
    """A file name for a run. Checksums, not a cryptographic hash (hashlib costs 4 ms to import,
    a tenth of this path): a clash only makes two runs share a slot, as the entry holds the
    identity and is replayed only for an equal one."""
    data = json.dumps(identity).encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}.json"


def cache_dirs() -> Iterable[str]:
    """Where the cache of a run started here may be, before the config is read:
    `$PREFIXLINT_CACHE_DIR`, else each `.prefixlint_cache` at or above the current folder (a
    project root's, when run from inside the project), nearest first."""
    env = os.environ.get("PREFIXLINT_CACHE_DIR")
    if env:
        yield env
        return
    folder = os.getcwd()
    while True:
        yield os.path.join(folder, ".prefixlint_cache")
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _entry_paths(name: str) -> Iterable[str]:
    """Where a recorded run may be."""
    return (os.path.join(folder, "runs", name) for folder in cache_dirs())


def replay(argv: list[str]) -> int | None:
    """Print the recorded output of this command line and return its exit code, if one is
    recorded and nothing it read has changed; else None (and nothing printed)."""
    entry = _valid_entry(argv)
    if entry is None:
        return None
    try:  # past this point the run is answered: a failed write must not start the full run too
        sys.stderr.write(entry["stderr"])
        sys.stderr.flush()
        sys.stdout.write(entry["stdout"])
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| head`): the rest of the output is nobody's
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
    return entry["exit_code"]


def _valid_entry(argv: list[str]) -> dict[str, Any] | None:
    """The recorded run of this command line, if there is one and every input stamp holds."""
    try:
        identity = run_identity(argv)
        for path in _entry_paths(entry_name(identity)):
            try:
                with open(path, encoding="utf-8") as fh:
                    entry = json.load(fh)
            except (OSError, ValueError):
                continue
            if entry["identity"] != identity:
                return None  # another command line in the same slot
            if entry["package"] != package_stamp() or any(stamp(s[0]) != s for s in entry["inputs"]):
                return None
            texts = isinstance(entry["stdout"], str) and isinstance(entry["stderr"], str)
            return entry if texts and isinstance(entry["exit_code"], int) else None
    except Exception:  # a broken entry only costs the full run
        return None
    return None


def record(
    cache_dir: str, argv: list[str], inputs: Iterable[str], stdout: str, stderr: str, exit_code: int
) -> None:
    """Record a finished run (see the module docstring). Nothing is recorded when an input changed
    within 2 s of now as the file system tells it (the real clock is never read)."""
    runs = os.path.join(cache_dir, "runs")
    identity = run_identity(argv)
    path = os.path.join(runs, entry_name(identity))
    stamps = [stamp(p) for p in dict.fromkeys(os.path.abspath(p) for p in inputs)]
    entry = {"identity": identity, "package": package_stamp(), "inputs": stamps}
    entry |= {"stdout": stdout, "stderr": stderr}
    try:
        os.makedirs(runs, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({**entry, "exit_code": exit_code}, fh, ensure_ascii=False)
        written = os.stat(tmp).st_mtime_ns
        if any(s[1] is not None and s[2] > written - RACY_NS for s in stamps):
            os.unlink(tmp)
            return
        os.replace(tmp, path)
        _prune(runs)
    except OSError:
        pass  # a read-only cache dir: the next run is only slower


def _prune(runs: str) -> None:
    entries = [os.path.join(runs, n) for n in os.listdir(runs) if n.endswith(".json")]
    if len(entries) <= KEEP_ENTRIES:
        return
    entries.sort(key=lambda p: os.stat(p).st_mtime_ns)
    for old in entries[: len(entries) // 2]:
        os.unlink(old)
