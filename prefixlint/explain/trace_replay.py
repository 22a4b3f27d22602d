"""`explain --trace TRACE.jsonl`: a Mooncake-format trace from any tool (explain/trace_export.py
writes one) replayed through the engines' caches and the routing policies.

A trace holds block hashes, not text: each request becomes a sequence of stand-in tokens, every
token of block i the integer of `hash_ids[i]` (numbered in order of first appearance), so two
requests share exactly the blocks whose ids agree from the first on; the tokens its ids do not
cover, and the `output_length - 1` reply tokens the server computed, are tokens of this request
alone. The same simulation as a log's then counts each engine's hits by its own rule. For a
block-based engine whose blocks are the trace's (vLLM at the block size it was exported with) this
is the log's own replay; an engine that caches per token (SGLang) is counted at the trace's block
granularity (it may share part of a block in a log), and a reply that a next turn re-reads hits in
a log but not here. No cause can be told: the report says so.

Mooncake's readers disagree on a last partial block: Dynamo's generator hashes it (hash_ids cover
ceil(input_length / block) blocks), prefixlint's export does not; both read correctly here.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from prefixlint.engines import Engine
from prefixlint.engines.packed import pack
from prefixlint.engines.simulate import REFERENCE_TOKENS, Simulation
from prefixlint.engines.stackdist import CapacityCurve, curve_engine
from prefixlint.explain.log_report import LogReport
from prefixlint.explain.reading import LogFile, Reading, Skip, decode_json
from prefixlint.explain.routing import Routing, route_request
from prefixlint.explain.stream import Progress
from prefixlint.jinja.inputs import BASE_TIME

NO_CAUSES = (
    "a trace holds block hashes, not text: hit rates only; no cause can be told "
    "(explain --log on the log itself gives them)"
)
_OWN = 0x40000000  # stand-in tokens of one request alone: above every block's number
# A trace whose ids leave more than a block of most prompts uncovered was likely hashed in larger
# blocks than the block size it is read with.
UNCOVERED_SHARE = 0.9


@dataclass(frozen=True)
class TraceRequest:
    timestamp: float  # ms
    input_length: int
    output_length: int
    hash_ids: list[int]
    session: str | None


class TraceLineError(ValueError):
    """Why a trace line is not a request: the reason key and the detail."""

    def __init__(self, detail: str, reason: str) -> None:
        super().__init__(detail)
        self.reason = reason


def parse_line(value: object, block_size: int) -> TraceRequest:
    """One decoded trace line as a request; raises TraceLineError."""
    if not isinstance(value, dict):
        raise TraceLineError(f"a trace line is a JSON object, not {type(value).__name__}", "not-an-object")
    length = value.get("input_length")
    if not _count(length):
        if "text_input" in value or "messages" in value:
            raise TraceLineError("a trace line with text instead of `input_length`", "text-trace-line")
        raise TraceLineError("`input_length` is not a whole number >= 0", "bad-input-length")
    output = value.get("output_length", 0)
    if output is None:
        output = 0
    if not _count(output):
        raise TraceLineError("`output_length` is not a whole number >= 0", "bad-output-length")
    ids = value.get("hash_ids", [])
    if not isinstance(ids, list) or not all(_count(i) for i in ids):
        raise TraceLineError("`hash_ids` is not a list of whole numbers >= 0", "bad-hash-ids")
    if (len(ids) - 1) * block_size >= length and ids:
        raise TraceLineError(
            f"{len(ids)} hash_ids of {block_size} tokens are more than input_length {length} "
            "(the trace's block size is smaller: give it with --block-size)",
            "hash-ids-beyond-input",
        )
    stamp = value.get("timestamp", value.get("delay"))
    if stamp is not None and (isinstance(stamp, bool) or not isinstance(stamp, int | float)):
        raise TraceLineError("`timestamp` is not a number of ms", "bad-timestamp")
    session = value.get("session_id")
    return TraceRequest(
        float(stamp) if stamp is not None else -1.0,
        length,  # type: ignore[arg-type]
        output,  # type: ignore[arg-type]
        ids,
        str(session) if isinstance(session, str | int) and not isinstance(session, bool) else None,
    )


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_trace(path: str, block_size: int, reading: Reading) -> Iterator[tuple[int, TraceRequest | Skip]]:
    """(line number, request or why the line is not one), within `reading`'s limits."""
    log = LogFile(path, reading)
    try:
        for number, line in log.lines():
            if isinstance(line, Skip):
                yield number, line
                continue
            value = decode_json(line, reading.limits.depth)
            if isinstance(value, Skip):
                yield number, value
                continue
            try:
                yield number, parse_line(value, block_size)
            except TraceLineError as exc:
                yield number, Skip(exc.reason, str(exc))
    finally:
        log.close()
        log.raw.close()


class StandIns:
    """The stand-in tokens of trace requests: a block's tokens its id's number, the rest unique."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._numbers: dict[int, int] = {}  # hash id -> its number, in order of first appearance
        self._own = 0

    def tokens(self, request: TraceRequest) -> tuple[bytes, bytes]:
        """(prompt, computed reply) of `request`, packed."""
        size, numbers = self.block_size, self._numbers
        ids: list[int] = []
        for h in request.hash_ids:
            ids += [numbers.setdefault(h, len(numbers) + 1)] * size
        del ids[request.input_length :]
        self._own = (self._own + 1) % _OWN
        own = _OWN | self._own
        ids += [own] * (request.input_length - len(ids))
        return pack(ids), pack([own] * max(request.output_length - 1, 0))

    def routing_text(self, request: TraceRequest) -> str:
        """What a text-reading router sees of a request: its blocks' numbers, one word each."""
        return " ".join(str(self._numbers[h]) for h in request.hash_ids)


def explain_trace(
    path: str,
    engines: list[Engine],
    *,
    block_size: int,
    capacity: int | None = None,
    replicas: int | None = None,
    routing: str = "round-robin",
    curve: bool = False,
    progress: bool | None = None,
    reading: Reading | None = None,
    dask: str | None = None,
) -> LogReport:
    """Replay the trace at `path` (blocks of `block_size` tokens); LogLimitError as a log's. `dask`:
    a Dask scheduler's address, or `local[:N]`, where the replicas of the routing policies that can
    be split are simulated (explain/replica_split.py); DaskError when it cannot be used."""
    reading = reading or Reading()
    sim = Simulation(engines, capacity)
    of = curve_engine(engines) if curve else None
    tally = CapacityCurve(of) if of is not None else None
    stand_ins = StandIns(block_size)
    bar = Progress(os.path.getsize(path) if os.path.isfile(path) else 0, progress)
    uncovered = with_ids = 0
    with contextlib.ExitStack() as stack:
        connection = None
        if dask is not None and replicas:
            from prefixlint.explain.dask_stage import Connection

            connection = stack.enter_context(Connection(dask))
        cap = capacity or REFERENCE_TOKENS
        router = Routing(replicas, routing, engines[0], cap, connection) if replicas else None
        for number, item in read_trace(path, block_size, reading):
            if isinstance(item, Skip):
                reading.skips.add(number, item)
                continue
            if reading.limits.requests and sim.requests >= reading.limits.requests:
                reading.stopped_at = number
                break
            seq, reply = stand_ins.tokens(item)
            sim.feed(seq, reply=reply)
            if tally is not None:
                tally.feed(seq, reply)
            if item.hash_ids:
                with_ids += 1
                uncovered += item.input_length - len(item.hash_ids) * block_size > block_size
            if router is not None:
                # a line without a time arrives a second after the one before, as a log's would
                ms = item.timestamp if item.timestamp >= 0 else sim.requests * 1000.0
                when = BASE_TIME + timedelta(milliseconds=ms)
                text = stand_ins.routing_text(item)
                router.feed(route_request(seq, [], text, item.session, when))
            bar.update(sim.requests)
        routed = router.summary() if router is not None else None  # the workers' totals, while they are up
    bar.update(sim.requests, final=True)
    skips = reading.skips
    report = LogReport(
        sim.requests, sim.tokens, sim.summary(), [], skips.total, skips.examples, engines[0].name
    )
    report.log_format = "mooncake-trace"
    report.skipped_by_reason = skips.counts()
    if reading.stopped_at is not None:
        report.sample = {"max_requests": reading.limits.requests, "stopped_at_line": reading.stopped_at}
    report.routing = routed
    report.trace = {"block_size": block_size, "causes": None, "note": NO_CAUSES}
    if with_ids and uncovered >= UNCOVERED_SHARE * with_ids:
        report.trace["warning"] = (
            f"the hash_ids of {uncovered:,} of {with_ids:,} requests leave more than a block of "
            f"{block_size} tokens uncovered: the trace was likely hashed in larger blocks (Mooncake's "
            "published traces: 512); give its block size with --block-size"
        )
    if tally is not None:
        report.capacity_curve = [p.to_json() for p in tally.points()]
        report.curve_engine = tally.engine.name
    return report


__all__ = ["NO_CAUSES", "TraceRequest", "explain_trace", "read_trace"]
