"""Fuzzing `prefixlint explain`: whatever the log (or request file), the run ends with a report
(exit 0, skips counted by reason) or a named whole-file error (exit 2: a limit, or not one
readable request) — never a traceback.

The cases come from tests/hostile_logs.py, one per seed. The default run tries a short sample; the
long run (`-m fuzz_long`: 10,000 logs, 500 request pairs, 10,000 Prometheus scrapes and server
command lines; PREFIXLINT_FUZZ_LOGS sets the number)
prints the figures:

    PYTHONPATH=$PWD python -m pytest -m fuzz_long tests/test_fuzz_logs.py -s
"""

from __future__ import annotations

import json
import math
import os
import resource
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostile_logs import FUZZ_LIMITS, Case, make_case, make_command, make_scrape

from prefixlint.cli import cli
from prefixlint.explain.server import ServerArgsError, metrics_from, parse_server_args
from prefixlint.explain.server_inputs import InputError, parse_metrics

LONG_LOGS = int(os.environ.get("PREFIXLINT_FUZZ_LOGS", "10000"))
SECONDS_PER_INPUT = 30.0  # generous on a shared machine; the figures printed are the real ones
# What ends a run on a whole file: a limit, or a log without one readable request.
WHOLE_FILE_LIMITS = (
    "limit ratio",
    "limit log_bytes",
    "limit seconds",
    "no readable request in this log",
    "no request in this log",
)


def run_explain(args: list[str]) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, seconds) of `prefixlint explain ARGS` run in this process; any
    exception other than the exit itself fails the test with its traceback."""
    start = time.perf_counter()
    result = CliRunner().invoke(cli, ["explain", *args])
    seconds = time.perf_counter() - start
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        trace = "".join(traceback.format_exception(result.exception))
        pytest.fail(f"explain {' '.join(args)} raised:\n{trace}")
    return result.exit_code, result.stdout, result.stderr, seconds


def check_log_case(case: Case, folder: Path) -> tuple[float, str]:
    """Run one hostile log; assert the outcome is a report or a named whole-file error."""
    path = folder / f"case{case.seed}.log"
    path.write_bytes(case.data)
    options = [arg for name, value in sorted(case.limits.items()) for arg in ("--limit", f"{name}={value}")]
    what_if = "1" if case.seed % 4 == 0 else "0"  # the what-if pass reads the log again
    code, out, err, seconds = run_explain(
        ["--log", str(path), "--format", "json", "--what-if", what_if, *options]
    )
    assert "Traceback" not in err + out and "panicked" not in err + out, err
    assert code in (0, 2), (case.seed, code, out, err)
    if code == 2:
        assert err.startswith(f"prefixlint: error: {path}: "), (case.seed, err)
        assert any(name in err for name in WHOLE_FILE_LIMITS), (case.seed, err)
        outcome = "error: " + next(name for name in WHOLE_FILE_LIMITS if name in err)
    else:
        data = json.loads(out)
        assert data["skipped"] == sum(data["skipped_by_reason"].values())
        limit = case.limits.get("requests")
        if limit:
            assert data["requests"] <= limit
        outcome = "report"
    assert seconds < SECONDS_PER_INPUT, (case.seed, seconds)
    return seconds, outcome


def check_pair_case(seed: int, folder: Path) -> float:
    """Two request files from one hostile log's first lines: a result, or a usage error naming them."""
    lines = make_case(seed).data.split(b"\n")
    a, b = folder / f"a{seed}.json", folder / f"b{seed}.json"
    a.write_bytes(lines[0])
    b.write_bytes(lines[-1] if len(lines) > 1 else lines[0])
    options = [
        "--max-request-bytes",
        str(FUZZ_LIMITS["request_bytes"]),
        "--max-messages",
        str(FUZZ_LIMITS["messages"]),
        "--limit",
        f"depth={FUZZ_LIMITS['depth']}",
    ]
    code, out, err, seconds = run_explain([str(a), str(b), "--format", "json", *options])
    assert code in (0, 2), (seed, code, out, err)
    if code == 0:
        assert "token_index" in json.loads(out)
    else:
        assert err.startswith("prefixlint: error: ") and (str(a) in err or str(b) in err), (seed, err)
    return seconds


def check_server_inputs(seed: int) -> float:
    """A mutated Prometheus scrape and server command line: a result or a named InputError."""
    start = time.perf_counter()
    try:
        metrics = parse_metrics(make_scrape(seed), "scrape.prom")
        assert metrics.skips.total == sum(metrics.skips.counts().values())
    except InputError as exc:
        assert str(exc).startswith("scrape.prom: ")
    try:
        parse_server_args(make_command(seed))  # the meaning (explain/server.py) on the bounded reader
    except ServerArgsError as exc:
        assert str(exc).startswith("--server-args")
    try:
        hit_rate = metrics_from(make_scrape(seed), "scrape.prom").hit_rate
        assert hit_rate is None or math.isfinite(hit_rate)
    except ServerArgsError as exc:
        assert str(exc).startswith("scrape.prom: ")
    seconds = time.perf_counter() - start
    assert seconds < SECONDS_PER_INPUT, (seed, seconds)
    return seconds


def test_fuzz_logs_short(tmp_path: Path) -> None:
    for seed in range(40):
        check_log_case(make_case(seed), tmp_path)
    for seed in range(10):
        check_pair_case(seed, tmp_path)
    for seed in range(50):
        check_server_inputs(seed)


@pytest.mark.fuzz_long
def test_fuzz_logs_long(tmp_path: Path) -> None:
    started = time.perf_counter()
    slowest = (0.0, -1)
    outcomes: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for seed in range(LONG_LOGS):
        case = make_case(seed)
        seconds, outcome = check_log_case(case, tmp_path)
        (tmp_path / f"case{seed}.log").unlink()
        slowest = max(slowest, (seconds, seed))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        kinds[case.kind] = kinds.get(case.kind, 0) + 1
    pairs = max(LONG_LOGS // 20, 1)
    pair_slowest = max(check_pair_case(seed, tmp_path) for seed in range(pairs))
    server_slowest = max(check_server_inputs(seed) for seed in range(LONG_LOGS))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\nfuzz logs: {LONG_LOGS} logs + {pairs} request pairs in {time.perf_counter() - started:.0f} s, "
        f"0 tracebacks; slowest log: seed {slowest[1]} ({make_case(slowest[1]).kind}) {slowest[0]:.2f} s; "
        f"slowest pair {pair_slowest:.2f} s; {LONG_LOGS} scrapes + command lines, slowest "
        f"{server_slowest:.3f} s; peak RSS of the test process {peak_mb:.0f} MB"
    )
    print(f"kinds: {dict(sorted(kinds.items()))}")
    print(f"outcomes: {dict(sorted(outcomes.items()))}")
