"""Speed of the trace export, the trace replay and the capacity curve, on a generated log of N
requests (default 30,000; the shapes of bench/explain_throughput.py's log), in CPU seconds.

    python bench/capacity_curve.py [--requests 30000] [--keep DIR]

Phases, each in a fresh process (`python3 -m prefixlint explain …`, CPU time of the child):
- log: `explain --log LOG --export-trace TRACE`: render, tokenize, simulate, and write the trace;
- log+curve: the same with `--capacity-curve` (the curve's own cost is the difference);
- trace: `explain --trace TRACE` (no text: the simulation alone);
- trace+curve: the same with `--capacity-curve`.
Then, in this process, the curve alone over the trace's blocks beside vLLM's block pool simulated
at each of the curve's sizes: what one pass saves over one simulation per size, and a check that
the two agree. Not run by the tests.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from explain_throughput import TEMPLATE, build_log  # noqa: E402


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: list[str]) -> tuple[float, dict]:
    before = _child_cpu()
    done = subprocess.run(
        [sys.executable, "-m", "prefixlint", "explain", *args, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return _child_cpu() - before, json.loads(done.stdout)


def _in_process(trace: str, points: list[dict]) -> None:
    from prefixlint.engines import load_engines
    from prefixlint.engines.simulate import Simulation
    from prefixlint.engines.stackdist import CapacityCurve
    from prefixlint.explain.reading import Reading
    from prefixlint.explain.trace_replay import StandIns, TraceRequest, read_trace

    vllm = load_engines()["vllm"]
    stand_ins = StandIns(vllm.block_size)
    lines = read_trace(trace, vllm.block_size, Reading())
    requests = [stand_ins.tokens(r) for _, r in lines if isinstance(r, TraceRequest)]
    start = time.process_time()
    curve = CapacityCurve(vllm)
    for prompt, reply in requests:
        curve.feed(prompt, reply)
    one_pass = time.process_time() - start
    print(
        f"curve alone: {len(requests):,} requests in {one_pass:.2f} CPU s = {len(requests) / one_pass:,.0f} "
        f"requests/s, {len(curve.distances):,} distinct blocks, {len(points)} sizes"
    )
    sizes = [p["tokens"] for p in points][:: max(len(points) // 4, 1)]
    start = time.process_time()
    agree = 0
    for size in sizes:
        sim = Simulation([vllm], size)
        for prompt, reply in requests:
            sim.feed(prompt, reply=reply)
        pool, counted = sim.lru["vllm"][1].hit_tokens, curve.hit_tokens(size)
        agree += pool == counted
        print(f"  {size:>12,} tokens: pool {pool / curve.tokens:.4%}, curve {counted / curve.tokens:.4%}")
    each = (time.process_time() - start) / len(sizes)
    print(
        f"vLLM's pool simulated per size: {each:.2f} CPU s a size ({each * len(points):.1f} s for the "
        f"curve's {len(points)} sizes); equal to the curve at {agree} of {len(sizes)} sizes checked"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=30_000)
    parser.add_argument("--keep", help="a folder to keep the log and the trace in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        log, template, trace = folder / "log.jsonl", folder / "template.jinja", folder / "trace.jsonl"
        build_log(log, args.requests)
        template.write_text(TEMPLATE, encoding="utf-8")
        base = ["--log", str(log), "--template", str(template), "--export-trace", str(trace)]
        n = args.requests
        cpu, data = _run(base)
        rate = data["engines"]["vllm"]["hit_rate"]
        print(f"log (export): {cpu:.1f} CPU s = {n / cpu:,.0f} requests/s; vllm {rate:.2%}")
        with_curve, data = _run([*base, "--capacity-curve"])
        print(f"log+curve: {with_curve:.1f} CPU s = {n / with_curve:,.0f} requests/s")
        cpu, replay = _run(["--trace", str(trace)])
        rate = replay["engines"]["vllm"]["hit_rate"]
        print(f"trace: {cpu:.1f} CPU s = {n / cpu:,.0f} requests/s; vllm {rate:.2%}")
        traced, replay = _run(["--trace", str(trace), "--capacity-curve"])
        print(f"trace+curve: {traced:.1f} CPU s = {n / traced:,.0f} requests/s")
        same = replay["capacity_curve"] == data["capacity_curve"]
        print(f"the log's curve and its trace's curve are {'equal' if same else 'DIFFERENT'}")
        _in_process(str(trace), data["capacity_curve"])


if __name__ == "__main__":
    main()
