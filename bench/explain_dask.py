"""Throughput of `prefixlint explain --log` with its heavy stage (render, tokenize) on 1 and 2 local
Dask workers (`--dask local:N`), beside the run in one process, on a generated log of N requests.

    python bench/explain_dask.py [--requests 10000] [--keep LOG] [--also-pool]

The log is explain_throughput.py's (four applications, long system prompts, tools, multi-turn
sessions, ChatML template with tools), written to a temp dir. Each run is the CLI as a user runs
it (`explain --log LOG --template T --format json`, three engines, top 10 causes, 3 what-ifs), in
a fresh process, one after the other. For each: requests per second of wall time (noisy on a
shared machine), the CPU seconds of the run (user+sys of the process and of every worker it
started and reaped), split into the driver (this process: reading lines, simulation, causes,
what-ifs) and the workers, requests per CPU second, and the driver's CPU per request beside the
single process's (what bounds a cluster's throughput: the ordered simulation runs in the driver).
The JSON of every run must be the one of the single-process run, byte for byte (said at the end).
`--also-pool` adds the local render pool (`--workers 2`). Not run by the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# This checkout's prefixlint (not an installed one) and explain_throughput.py beside this file.
sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]
from explain_throughput import log_and_template  # noqa: E402

RUNS = {
    "one process": ["--workers", "1"],
    "dask, 1 local worker": ["--dask", "local:1"],
    "dask, 2 local workers": ["--dask", "local:2"],
}
POOL = {"render pool, 2 processes": ["--workers", "2"]}


def child(log: str, template: str, out: str, extra: list[str]) -> None:
    """One run of the CLI in this process; prints its CPU seconds (own, and its reaped workers')."""
    from prefixlint.launch import main

    sys.argv = ["prefixlint", "explain", "--log", log, "--template", template, "--format", "json", *extra]
    buffer = io.StringIO()
    start = time.perf_counter()
    code = 0
    with contextlib.redirect_stdout(buffer):
        try:
            main()
        except SystemExit as exc:
            code = int(exc.code or 0)
    wall = time.perf_counter() - start
    Path(out).write_text(buffer.getvalue(), encoding="utf-8")
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    driver, workers = own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime
    print(json.dumps({"code": code, "wall": wall, "driver_cpu": driver, "workers_cpu": workers}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--keep", help="write the log here and keep it (reused if it exists)")
    parser.add_argument("--also-pool", action="store_true", help="also the local render pool (--workers 2)")
    parser.add_argument("--child", nargs=3, metavar=("LOG", "TEMPLATE", "OUT"), help=argparse.SUPPRESS)
    args, extra = parser.parse_known_args()
    if args.child:
        child(*args.child, extra)
        return
    with tempfile.TemporaryDirectory() as tmp:
        log, template = log_and_template(tmp, args.keep, args.requests)
        print(f"log: {args.requests:,} requests, {log.stat().st_size / 1e6:,.0f} MB")
        runs = RUNS | (POOL if args.also_pool else {})
        outputs: dict[str, str] = {}
        base = 0.0  # the single-process run's CPU per request: what the driver's is compared with
        for name, options in runs.items():
            out = Path(tmp) / f"run{len(outputs)}.json"
            cmd = [sys.executable, __file__, "--child", str(log), str(template), str(out), *options]
            done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
            if done.returncode:
                sys.exit(f"{name}: failed (exit {done.returncode})")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            if figures["code"] not in (0, 1):
                sys.exit(f"{name}: explain exited {figures['code']}")
            outputs[name] = out.read_text(encoding="utf-8")
            requests = json.loads(outputs[name])["requests"]
            driver, workers, wall = figures["driver_cpu"], figures["workers_cpu"], figures["wall"]
            cpu = driver + workers
            base = base or driver / requests
            print(
                f"{name:<26} {requests / wall:7,.0f} requests/s ({wall:6.1f} s wall)  CPU {cpu:6.1f} s "
                f"(driver {driver:6.1f}, workers {workers:6.1f})  {requests / cpu:6,.0f} requests per CPU s  "
                f"driver {1000 * driver / requests:5.2f} ms CPU per request "
                f"({driver / requests / base:4.0%} of one process)"
            )
        reference = next(iter(outputs.values()))
        same = [name for name, text in outputs.items() if text == reference]
        print(f"JSON identical to the single-process run: {len(same)} of {len(outputs)} runs")


if __name__ == "__main__":
    main()
