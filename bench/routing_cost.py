"""CPU cost of `explain --replicas N`: each routing policy's per-request routing and replica caches on
a generated log (bench/explain_throughput.py's four applications), next to `explain` without it.

    python bench/routing_cost.py [--requests 10000] [--replicas 4] [--keep LOG]

Two measurements, both CPU seconds (user+sys), never wall time:
- per policy: the log's requests are rendered and tokenized once (not timed), then each policy's
  simulation (`Routed`: its router and N engine caches) is fed all of them alone, timed with
  `time.process_time`; the figure is what that policy adds to `explain --replicas N`.
- whole runs: `python -m prefixlint explain --log LOG --template T --engine vllm` with and without
  `--replicas N` (every policy at once), each under `/usr/bin/time -f '%U %S'`.
Not run by the tests.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# This checkout's prefixlint, not an installed one; explain_throughput's log builder beside it.
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from explain_throughput import _renderer, log_and_template  # noqa: E402


def route_requests(log: str, template: str) -> tuple[list, float]:
    """Every request of the log as the routers read it, and the CPU seconds spent making those
    views (routing text, GIE bytes) out of the rendered and tokenized requests (not timed)."""
    from prefixlint.engines.packed import pack
    from prefixlint.explain.reading import Reading
    from prefixlint.explain.routing import route_request
    from prefixlint.explain.stream import BATCH
    from prefixlint.explain.stream import log_requests as _requests
    from prefixlint.models.tokens import load_tokenizer

    tok = load_tokenizer(None).tokenizer
    renderer = _renderer(template)
    out, pending = [], []
    cpu = 0.0

    def flush() -> None:
        nonlocal cpu
        encs = tok.encode_batch([text for _, text in pending], add_special_tokens=False)
        seqs = [pack(enc.ids) for enc in encs]
        start = time.process_time()
        for (request, _), seq in zip(pending, seqs, strict=True):
            out.append(
                route_request(
                    seq, request.messages, request.prompt, request.session, request.now, request.cache_salt
                )
            )
        cpu += time.process_time() - start
        pending.clear()

    for chunk in _requests(log, 1.0, Reading()):
        pending.extend((request, renderer.render(request).text) for _, request in chunk)
        if len(pending) >= BATCH:
            flush()
    if pending:
        flush()
    return out, cpu


def per_policy(requests: list, replicas: int) -> None:
    from prefixlint.engines import load_engines
    from prefixlint.engines.simulate import REFERENCE_TOKENS
    from prefixlint.explain.routers import load_routers
    from prefixlint.explain.routing import POLICIES, Routed

    engine = load_engines()["vllm"]
    aliases = load_routers().aliases
    for policy in POLICIES:
        if policy in aliases:
            print(f"  {policy:<24} alias of {aliases[policy]}: shares its simulation")
            continue
        route = Routed(policy, replicas, engine, REFERENCE_TOKENS)
        start = time.process_time()
        for request in requests:
            route.feed(request)
        cpu = time.process_time() - start
        rate = route.summary()["hit_rate"]
        print(
            f"  {policy:<24} {cpu:6.2f} s CPU  ({cpu / len(requests) * 1e6:6.0f} us/request)  "
            f"vllm hit rate {float(rate):.2%}"  # type: ignore[arg-type]
        )


def whole_run(log: str, template: str, extra: list[str]) -> float:
    cmd = ["/usr/bin/time", "-f", "%U %S", sys.executable, "-m", "prefixlint", "explain"]
    cmd += ["--log", log, "--template", template, "--engine", "vllm", "--format", "json", *extra]
    out = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    if out.returncode:
        sys.exit(f"explain failed: {out.stderr[-2000:]}")
    user, system = out.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--keep", help="write the log here and keep it (reused if it exists)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log, template = log_and_template(tmp, args.keep, args.requests)
        requests, views = route_requests(str(log), str(template))
        tokens = sum(len(r.seq) // 4 for r in requests)
        print(f"log: {len(requests):,} requests, {tokens:,} prompt tokens; {args.replicas} replicas")
        print(f"the routers' view of each request (route_request, once for all policies): {views:.2f} s CPU")
        print("per policy (its router and replica caches, fed every request):")
        per_policy(requests, args.replicas)
        plain = whole_run(str(log), str(template), [])
        routed = whole_run(str(log), str(template), ["--replicas", str(args.replicas)])
        print(
            f"explain: {plain:.1f} s CPU; with --replicas {args.replicas} (every policy): {routed:.1f} s CPU "
            f"(+{routed - plain:.1f} s, {routed / plain - 1:+.0%})"
        )


if __name__ == "__main__":
    main()
