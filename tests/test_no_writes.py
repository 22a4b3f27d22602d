"""A run writes nothing outside its cache directory.

Root ignores permission bits, so a read-only tree alone proves nothing here: the run is watched
instead. A `sitecustomize.py` installs an audit hook in the prefixlint process that records every
file write, creation, rename, removal and permission change; HOME, TMPDIR and the Hugging Face and
XDG caches point at empty folders; and the linted tree is snapshotted (paths, sizes, modes, bytes)
before and after. Where the tests run unprivileged, the tree is also made read-only for real.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, run_prefixlint

WATCH = """
import atexit, json, os, sys
from urllib.parse import unquote, urlsplit

_events = []
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_CHANGES = {
    "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.symlink", "os.link", "os.chmod", "os.chown",
    "os.truncate", "os.utime", "tempfile.mkstemp", "tempfile.mkdtemp", "shutil.rmtree", "shutil.copyfile",
    "shutil.move", "sqlite3.connect",
}


def _text(value):
    return os.fsdecode(value) if isinstance(value, (str, bytes, os.PathLike)) else None


def _hook(event, args):
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, 0))[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITE)
        if writing and _text(path) is not None:
            _events.append(["open", _text(path)])
    elif event in _CHANGES:
        paths = [_text(a) for a in args if _text(a) is not None]
        if event == "sqlite3.connect":  # a URI (file:/x?mode=ro) names its file by its path part
            paths = [unquote(urlsplit(p).path) if p.startswith("file:") else p for p in paths]
        _events.append([event] + paths)


sys.addaudithook(_hook)
atexit.register(lambda: os.write(2, ("AUDIT " + json.dumps(_events) + "\\n").encode()))
"""


def _snapshot(root: Path) -> dict[str, tuple]:
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
        out[str(path.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project to lint: templates (tokenizer_config lists included), Python, hostile payloads,
    a broken file."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "templates", root / "templates")
    shutil.copytree(FIXTURES / "python", root / "python")
    shutil.copytree(FIXTURES / "hostile", root / "hostile")
    (root / "broken.jinja").write_bytes(b"{% if %}\xff")
    return root


def _watched_run(project: Path, tmp_path: Path, *args: str) -> tuple[list[list[str]], Path]:
    site, home = tmp_path / "site", tmp_path / "home"
    site.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(WATCH, encoding="utf-8")
    env = {
        "PYTHONPATH": f"{site}{os.pathsep}{REPO}",
        "HOME": str(home),
        "TMPDIR": str(home),
        "XDG_CACHE_HOME": str(home / "xdg"),
        "HF_HOME": str(home / "hf"),
    }
    env.pop("PREFIXLINT_CACHE_DIR", None)
    proc = run_prefixlint("check", "--format", "json", *args, ".", cwd=project, env=env)
    assert proc.returncode == 1, proc.stderr
    audit = [ln for ln in proc.stderr.splitlines() if ln.startswith("AUDIT ")]
    assert len(audit) == 1, proc.stderr  # the watch ran
    assert json.loads(proc.stdout)["diagnostics"]
    return json.loads(audit[0][6:]), home


def test_no_cache_run_writes_nothing(project: Path, tmp_path: Path) -> None:
    before = _snapshot(project)
    events, home = _watched_run(project, tmp_path, "--no-cache")
    assert events == []
    assert _snapshot(project) == before
    assert list(home.iterdir()) == []


def test_cached_run_writes_only_in_its_cache_dir(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = _snapshot(project)
    for _ in range(2):  # a cold run (writes) and a warm one (reads)
        events, home = _watched_run(project, tmp_path, "--config", str(_config(tmp_path, cache)))
        outside = [e for e in events if not all(Path(p).resolve().is_relative_to(cache) for p in e[1:])]
        assert outside == [], outside
    assert any(cache.rglob("*.json")), "the cache was not used: the test would prove nothing"
    assert _snapshot(project) == before
    assert list(home.iterdir()) == []


def _config(tmp_path: Path, cache: Path) -> Path:
    config = tmp_path / "prefixlint.toml"
    config.write_text(f"cache-dir = {json.dumps(str(cache))}\n", encoding="utf-8")
    return config


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_read_only_tree(project: Path, tmp_path: Path) -> None:
    for path in [project, *project.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        proc = run_prefixlint("check", "--format", "json", ".", cwd=project, env={"HOME": str(tmp_path)})
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    finally:
        for path in [project, *project.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
