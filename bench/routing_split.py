"""Throughput of `explain --replicas N` routing simulation with the per-replica split on local Dask
workers (`--dask local:W`: explain/replica_split.py) beside the ordered one in one process, on
bench/explain_throughput.py's generated log.

    python bench/routing_split.py [--requests 10000] [--replicas 4] [--routing session]
                                  [--cache-tokens N] [--workers 1,2] [--keep LOG]

The log's requests are rendered and tokenized once (not timed; bench/routing_cost.py's
`route_requests`), then fed to `Routing` (every policy, `--routing` the current one) in one process,
and again with a LocalCluster of W worker processes, where the policies that route by the request
alone (routing.SPLITTABLE) simulate their replicas; the cache-aware and GIE routers stay in this
process either way. For each run: requests per second of wall time until the summary is in
(the split's includes its tasks' last results; the cluster's start is not counted), and this
process's CPU seconds (`time.process_time`: what bounds a cluster, the choices and the ordered
routers run here). Whether each split summary equals the ordered one is printed, not asserted.
Not run by the tests.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# This checkout's prefixlint, not an installed one; the log builder and its views beside this file.
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from explain_throughput import log_and_template  # noqa: E402
from routing_cost import route_requests  # noqa: E402


def timed(requests: list, routing: object) -> tuple[dict, float, float]:
    """(summary, wall seconds, this process's CPU seconds) of feeding every request."""
    wall, cpu = time.perf_counter(), time.process_time()
    for request in requests:
        routing.feed(request)  # type: ignore[attr-defined]
    summary = routing.summary()  # type: ignore[attr-defined]
    return summary, time.perf_counter() - wall, time.process_time() - cpu


def line(name: str, count: int, wall: float, cpu: float, base: float) -> str:
    return (
        f"{name:<34} {count / wall:8,.0f} requests/s ({wall:6.2f} s wall)  "
        f"this process {cpu:6.2f} s CPU ({cpu / base:4.0%} of ordered)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--routing", default="session")
    parser.add_argument("--cache-tokens", type=int, help="each replica's capacity (default: the reference's)")
    parser.add_argument("--workers", default="1,2", help="local worker counts, comma-separated")
    parser.add_argument("--keep", help="write the log here and keep it (reused if it exists)")
    args = parser.parse_args()

    import distributed

    from prefixlint.engines import load_engines
    from prefixlint.engines.simulate import REFERENCE_TOKENS
    from prefixlint.explain.dask_stage import Connection
    from prefixlint.explain.routing import SPLITTABLE, Routing

    engine = load_engines()["vllm"]
    capacity = args.cache_tokens or REFERENCE_TOKENS
    with tempfile.TemporaryDirectory() as tmp:
        log, template = log_and_template(tmp, args.keep, args.requests)
        requests, _ = route_requests(str(log), str(template))
    tokens = sum(len(r.seq) // 4 for r in requests)
    print(
        f"log: {len(requests):,} requests, {tokens:,} prompt tokens; {args.replicas} replicas, "
        f"--routing {args.routing}, {capacity:,} tokens each; split: {', '.join(sorted(SPLITTABLE))}"
    )
    make = [args.replicas, args.routing, engine, capacity]
    ordered, wall, base = timed(requests, Routing(*make))  # type: ignore[arg-type]
    print(line("ordered, one process", len(requests), wall, base, base))
    for count in (int(w) for w in args.workers.split(",")):
        cluster = distributed.LocalCluster(
            n_workers=count,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        with cluster, Connection(cluster.scheduler_address) as dask:
            split, wall, cpu = timed(requests, Routing(*make, dask))  # type: ignore[arg-type]
        same = "same summary" if split == ordered else "SUMMARY DIFFERS"
        print(
            line(f"split, {count} local worker{'s' * (count > 1)}", len(requests), wall, cpu, base)
            + f"  {same}"
        )


if __name__ == "__main__":
    main()
