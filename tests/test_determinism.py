"""The same corpus gives byte-identical JSON whatever the time zone, locale, hash seed and system
date: findings come from the clock prefixlint injects, never from the machine's.

The system date is faked by a `sitecustomize.py` put on PYTHONPATH (no libfaketime needed): it
moves `time.time`, `datetime.now`, `date.today` and friends to a chosen instant.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, run_prefixlint

FAKE_CLOCK = '''
"""Fake the system date for a test (tests/test_determinism.py)."""
import datetime as _dt
import time as _time

_FAKE = {fake!r}  # seconds since the epoch
_offset = _FAKE - _time.time()
_real_time, _real_time_ns = _time.time, _time.time_ns
_time.time = lambda: _real_time() + _offset
_time.time_ns = lambda: _real_time_ns() + int(_offset * 1e9)
def _at_now(real):
    return lambda secs=None: real(_time.time() if secs is None else secs)


_time.localtime = _at_now(_time.localtime)
_time.gmtime = _at_now(_time.gmtime)
_time.ctime = _at_now(_time.ctime)


class _FakeDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return cls.fromtimestamp(_time.time(), tz)

    @classmethod
    def utcnow(cls):
        return cls.utcfromtimestamp(_time.time())

    @classmethod
    def today(cls):
        return cls.fromtimestamp(_time.time())


class _FakeDate(_dt.date):
    @classmethod
    def today(cls):
        return cls.fromtimestamp(_time.time())


_dt.datetime = _FakeDatetime
_dt.date = _FakeDate
'''

# (name, environment, faked date as epoch seconds or None)
VARIANTS = [
    ("baseline", {"TZ": "UTC", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"}, None),
    ("kiritimati", {"TZ": "Pacific/Kiritimati", "LC_ALL": "C", "PYTHONHASHSEED": "4242"}, None),
    ("st_johns_y2038", {"TZ": "America/St_Johns", "LANG": "POSIX", "PYTHONHASHSEED": "random"}, 2147483000),
    ("kathmandu_y2k_eve", {"TZ": "Asia/Kathmandu", "LC_ALL": "C.utf8", "PYTHONHASHSEED": "1"}, 946684799),
    ("leap_day", {"TZ": "Europe/Berlin", "PYTHONHASHSEED": "99"}, 1709251199),  # 2024-02-29 23:59:59 Z
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fixture corpus (templates with clocks, ids, tokenizer_config lists; Python)."""
    root = tmp_path_factory.mktemp("corpus")
    shutil.copytree(FIXTURES / "templates", root / "templates")
    shutil.copytree(FIXTURES / "python", root / "python")
    shutil.copytree(FIXTURES / "hostile", root / "hostile")
    # A date rendered right before a finding: its evidence shows the date the render used, so any
    # read of the machine's clock would show in the JSON.
    (root / "dated.jinja").write_text(
        "Date: {{ strftime_now('%Y-%m-%d') }}\nRequest: {{ request_id }}\nYou are a helpful assistant.\n"
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
        encoding="utf-8",
    )
    return root


# The corpus's sources are analysed by a pool of worker processes (run/schedule.py); the same run in
# one process must give the same bytes: what one module's findings see of another must not depend
# on which modules a process happened to parse first.
ONE_PROCESS = """
import prefixlint.run.schedule as _schedule
_schedule.PARALLEL_MIN_SOURCES = 10**9
"""


def _run(corpus: Path, tmp: Path, env: dict[str, str], fake: int | None, one_process: bool = False) -> str:
    extra = {"PYTHONPATH": str(REPO)}
    if fake is not None or one_process:
        site = tmp / f"site_{fake}_{one_process}"
        site.mkdir(exist_ok=True)
        code = (FAKE_CLOCK.format(fake=float(fake)) if fake is not None else "") + (
            ONE_PROCESS if one_process else ""
        )
        (site / "sitecustomize.py").write_text(code, encoding="utf-8")
        extra["PYTHONPATH"] = f"{site}:{REPO}"
    proc = run_prefixlint("check", "--no-cache", "--format", "json", ".", cwd=corpus, env={**env, **extra})
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    return proc.stdout


def test_json_is_byte_identical_across_environments(corpus: Path, tmp_path: Path) -> None:
    outputs = {name: _run(corpus, tmp_path, env, fake) for name, env, fake in VARIANTS}
    baseline = outputs["baseline"]
    assert '"PFX101"' in baseline and "Date: 2025" in baseline  # the clock shows in the evidence
    for name, out in outputs.items():
        assert out == baseline, f"{name} differs from baseline"


def test_json_is_byte_identical_in_one_process_and_in_the_pool(corpus: Path, tmp_path: Path) -> None:
    env = VARIANTS[0][1]
    assert len(list(corpus.rglob("*.py"))) >= 12  # enough sources for the pool (PARALLEL_MIN_SOURCES)
    assert _run(corpus, tmp_path, env, None, one_process=True) == _run(corpus, tmp_path, env, None)


def test_the_fake_clock_works(tmp_path: Path) -> None:
    """Guard for the test above: with the sitecustomize, the process sees the faked date."""
    import subprocess

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FAKE_CLOCK.format(fake=946684799.0), encoding="utf-8")
    code = "import datetime as d, time; print(d.datetime.now(d.timezone.utc).year, time.gmtime().tm_year)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site)},
        check=True,
    ).stdout
    assert out.split() == ["1999", "1999"]
