"""One job: the heavy stage of `explain --log` (rendering, tokenizing, the replies' tokens) as Dask
tasks over chunks of the log (`--dask ADDRESS`, or `local[:N]` for a LocalCluster of N workers);
the ordered, cheap simulation in this process consumes their tokens in log order (and sends the
replicas of the routing policies that can be split to the same workers: explain/replica_split.py).

Dask is an optional extra: nothing here imports it before a stage is opened, and a run without
`--dask` never does. What a worker needs travels with the work, so a remote worker needs only
prefixlint installed, the same version (checked: each worker's digest of prefixlint's own files
must equal this one's, else the run stops before any task): the tokenizer as its JSON text (which
also covers one built from a GGUF file), the template as its source and fields, the limits. Each
worker builds its renderer and its segment encoder once and keeps them for every later chunk.

Identical results to the local run: a worker renders and encodes exactly as this process would
(the same template, tokenizer and segment mode, the mode chosen here by the probes), and the
batches are cut at the same requests and bytes as `stream.rendered_batches` cuts them. A segment
mismatch a worker finds is raised here, and the run starts over encoding whole prompts, as a local
run does. (Each worker samples the prompts it encodes for that check, so on a tokenizer whose cuts
are wrong for some prompts the two runs may notice at different prompts; both then report what the
whole-prompt encoding gives.)
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import pickle
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prefixlint.explain import stream
from prefixlint.explain.formats import MANY_PER_LINE
from prefixlint.explain.reading import LogFiles, LogLimits, LogPath, Reading, Skip, Skips
from prefixlint.explain.render_pool import rebuild, render_chunk, renderer_of, template_fields
from prefixlint.explain.replies import batch_replies
from prefixlint.explain.requests import Rendered, Renderer, Request
from prefixlint.explain.segments import SegmentEncoder, SegmentMismatch, Tokens
from prefixlint.explain.stream import (
    Progress,
    by_bytes,
    detected_format,
    line_items,
    log_requests,
    open_log,
)
from prefixlint.explain.whatif import moved_ids
from prefixlint.models.tokens import LoadedTokenizer

INSTALL = "pip install 'prefixlint[dask]'"
# A what-if's encoding goes ahead of the log's chunks queued behind it: the simulation waits for it.
URGENT = 10
CONNECT_SECONDS = 20  # a scheduler that does not answer within this is reported, not waited for


@dataclass(frozen=True)
class WhatIfIds:
    """A batch's what-if prompts as a worker encoded them: for each of `patterns`, the packed ids of
    every prompt of the batch with that pattern's span moved."""

    patterns: tuple[str, ...]
    ids: list[list[bytes]]


# What the stage yields per batch: the rendered requests, their prompts' tokens, their replies'
# computed tokens, the what-ifs' moved ids where the workers made them.
Heavy = tuple[list[tuple[int, Rendered]], list[Tokens], list[bytes], "WhatIfIds | None"]


class DaskError(Exception):
    """--dask cannot be used: Dask is not installed, the address is wrong or does not answer, or a
    worker runs another prefixlint. One line, said to the user as it is."""


def parse_address(text: str) -> tuple[str | None, int | None]:
    """(scheduler address, None) or (None, local workers) for `local` / `local:N`; DaskError else."""
    name, colon, count = text.partition(":")
    if name != "local":
        if not text.strip():
            raise DaskError("--dask: give a scheduler's address (tcp://HOST:8786) or local[:N]")
        return text, None
    if not colon:
        return None, 0  # a LocalCluster's own choice: one worker per core
    if not count.isdigit() or int(count) < 1:
        raise DaskError(f"--dask {text}: expected local or local:N with N a number of workers >= 1")
    return None, int(count)


# In a worker: the renderer and encoder of each spec it was given, by the spec's key.
_built: dict[tuple[str, str], tuple[Renderer, SegmentEncoder]] = {}


def _worker_state(spec: dict[str, Any], mode: str) -> tuple[Renderer, SegmentEncoder]:
    key = (spec["key"], mode)
    state = _built.get(key)
    if state is None:
        # One task runs per worker thread: the workers are the parallelism. The tokenizer's own
        # threads on top of them spin on the same cores (38% more CPU per chunk measured here).
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from tokenizers import Tokenizer

        renderer = renderer_of(spec["fields"], spec["user_template"], spec["max_bytes"])
        encoder = SegmentEncoder(Tokenizer.from_str(spec["tokenizer"]), mode)
        state = _built[key] = (renderer, encoder)
    return state


def heavy_chunk(
    spec: dict[str, Any], mode: str, patterns: tuple[str, ...], chunk: list[tuple[int, Request]]
) -> tuple[str, Any]:
    """A Dask task: the chunk rendered, its prompts' tokens, its replies' computed tokens and, for
    each what-if pattern, its moved prompts' ids, as ("ok", (answers, tokens, replies, moved));
    ("mismatch", message) if cutting changed some prompt's tokens. The what-ifs' prompts are moved
    and encoded here: only their ids travel back, not their texts there and their tokens back."""
    renderer, encoder = _worker_state(spec, mode)
    answers = render_chunk(renderer, chunk)
    prompts = [r for _, r in rebuild(renderer, chunk, answers, Skips())]
    try:
        tokens = encoder.encode([r.text for r in prompts]) if prompts else []
        replies = batch_replies(encoder, prompts)
        moved = [moved_ids(encoder, prompts, pattern) for pattern in patterns]
    except SegmentMismatch as exc:
        return "mismatch", str(exc)
    return "ok", (answers, tokens, replies, moved)


def lines_chunk(
    spec: dict[str, Any],
    mode: str,
    patterns: tuple[str, ...],
    reading: tuple[str, float, LogLimits],
    lines: list[tuple[bytes, int]],
) -> tuple[str, Any]:
    """A Dask task: log lines (each with its clock index) decoded into requests, then as
    `heavy_chunk`: ("ok", (items, requests, bodies, heavy)) with each line's one item (the index of
    its request in `requests`, or the (reason, detail) it is none), the requests' bodies (a pickled
    request leaves its body behind) and heavy_chunk's answer for the requests. The main process
    then neither decodes the log nor sends the requests out."""
    log_format, interval, limits = reading
    items: list[int | tuple[str, str]] = []
    requests: list[tuple[int, Request]] = []
    for line, index in lines:
        (item,) = line_items(line, log_format, index, interval, limits)
        if isinstance(item, Request):
            items.append(len(requests))
            requests.append((index, item))
        else:
            items.append((item.reason, str(item)))
    status, heavy = heavy_chunk(spec, mode, patterns, requests)
    if status != "ok":
        return status, heavy
    return "ok", (items, [r for _, r in requests], [r.body for _, r in requests], heavy)


def encode_texts(spec: dict[str, Any], mode: str, texts: list[str]) -> tuple[str, Any]:
    """A Dask task: the texts' tokens, as ("ok", tokens), or ("mismatch", message)."""
    _, encoder = _worker_state(spec, mode)
    try:
        return "ok", encoder.encode(texts)
    except SegmentMismatch as exc:
        return "mismatch", str(exc)


def render_only(spec: dict[str, Any], chunk: list[tuple[int, Request]]) -> list[tuple[str, Any]]:
    """A Dask task: the chunk rendered only (a later pass over the log that encodes here)."""
    renderer, _ = _worker_state(spec, "whole")
    return render_chunk(renderer, chunk)


def worker_digest() -> str:
    from prefixlint.core.fingerprint import package_content_digest

    return package_content_digest()


@dataclass(frozen=True, slots=True)
class _Record:
    """What the workers answered for one request: its render answer and, if it rendered, its
    prompt's tokens, its reply's computed tokens and its moved prompts' ids (for `patterns`)."""

    answer: tuple[str, Any]
    tokens: Any = None
    reply: bytes = b""
    patterns: tuple[str, ...] = ()
    moved: tuple[bytes, ...] = ()


def _records(heavy: tuple[Any, ...], patterns: tuple[str, ...]) -> list[_Record]:
    """heavy_chunk's answer, one record per request."""
    answers, tokens, replies, moved = heavy
    per_request = list(zip(*moved, strict=True)) if moved else [()] * len(tokens)
    encoded = iter(zip(tokens, replies, per_request, strict=True))
    out = []
    for answer in answers:
        if answer[0] != "ok":
            out.append(_Record(answer))
            continue
        t, reply, ids = next(encoded)
        out.append(_Record(answer, t, reply, patterns, tuple(ids)))
    return out


def _line_batches(log: LogFiles) -> Iterator[list[tuple[int, bytes | Skip, int]]]:
    """The log's lines in batches of stream.BATCH records, each (number, bytes or Skip, the clock index of
    its record: the records before it, as stream.iter_log counts them)."""
    batch: list[tuple[int, bytes | Skip, int]] = []
    index = records = 0
    for number, line in log.lines():
        batch.append((number, line, index))
        if not isinstance(line, Skip):
            index += 1
            records += 1
            if records >= stream.BATCH:  # read at each run: the tests make it small
                yield batch
                batch, records = [], 0
    if batch:
        yield batch


class Connection:
    """A Dask client (and the LocalCluster it started, if any) whose every worker runs this
    prefixlint; `addresses`: the workers', sorted."""

    def __init__(self, address: str) -> None:
        scheduler, local = parse_address(address)
        try:
            import distributed
        except ImportError:
            raise DaskError(f"--dask needs Dask, which is not installed: {INSTALL}") from None
        self.cluster: Any = None
        try:
            if scheduler is None:
                options: dict[str, Any] = {"n_workers": local} if local else {}
                self.cluster = distributed.LocalCluster(
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    # Only a crash is worth a word: a worker whose heartbeat misses the scheduler
                    # as the cluster closes (a loaded machine) logs an ERROR with a traceback that
                    # means nothing to the user, whose results are already in.
                    silence_logs=logging.CRITICAL,
                    **options,
                )
                self.client = distributed.Client(self.cluster, timeout=CONNECT_SECONDS)
            else:
                self.client = distributed.Client(scheduler, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError, ValueError) as exc:
            self.close()
            raise DaskError(f"--dask {address}: cannot reach the scheduler: {exc}") from None
        try:
            self._check_workers(address)
        except BaseException:
            self.close()
            raise

    def _check_workers(self, address: str) -> None:
        """At least one worker, each running this prefixlint (the digest of its files)."""
        from prefixlint.core.fingerprint import package_content_digest

        try:
            self.client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        except TimeoutError:
            raise DaskError(f"--dask {address}: no worker joined within {CONNECT_SECONDS} s") from None
        digests = self.client.run(worker_digest)
        self.addresses = sorted(digests)
        self.workers = len(digests)
        other = sorted(w for w, d in digests.items() if d != package_content_digest())
        if other:
            raise DaskError(
                f"--dask {address}: {len(other)} of {self.workers} workers (first {other[0]}) run another "
                "prefixlint than this one: install the same version on every worker"
            )

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        client, cluster = getattr(self, "client", None), self.cluster
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


class DaskStage(Connection):
    """A connection rendering and encoding chunks of a log in order, a bounded number in flight."""

    def __init__(self, address: str, renderer: Renderer, tokenizer: LoadedTokenizer) -> None:
        super().__init__(address)
        self.renderer = renderer
        try:
            fields, user_template = template_fields(renderer)
            spec = {
                "fields": fields,
                "user_template": user_template,
                "max_bytes": renderer.max_bytes,
                "tokenizer": tokenizer.tokenizer.to_str(),
            }
            spec["key"] = hashlib.sha256(pickle.dumps(spec)).hexdigest()
            self.spec = self.client.scatter(spec, broadcast=True)
        except BaseException:
            self.close()
            raise
        self.window = 2 * self.workers + 2  # chunks in flight: every worker busy, memory bounded
        # The what-ifs' span patterns, once the provisional causes are chosen: chunks sent from then
        # on come back with their moved prompts' ids.
        self.what_if_patterns: tuple[str, ...] = ()

    def __enter__(self) -> DaskStage:
        return self

    def _in_order(self, jobs: Iterator[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
        """(item, result) of each (item, future), in order, with at most `window` in flight."""
        pending: deque[tuple[Any, Any]] = deque()
        for job in jobs:
            pending.append(job)
            if len(pending) >= self.window:
                item, future = pending.popleft()
                yield item, future.result()
        while pending:
            item, future = pending.popleft()
            yield item, future.result()

    def encoded(
        self, chunks: Iterator[list[tuple[int, Request]]], errors: Skips, mode: str
    ) -> Iterator[Heavy]:
        """Rendered requests with their prompts' tokens, their replies' computed tokens and the
        what-ifs' moved ids (for the patterns in `what_if_patterns` when the chunk was sent, None
        before there were any), in batches cut as `stream.rendered_batches` cuts them; renders that
        raised are counted in `errors`. Raises SegmentMismatch when a worker's check finds a prompt
        the cuts changed."""
        submit = self.client.submit

        def send(chunk: list[tuple[int, Request]]) -> tuple[Any, Any]:
            patterns = self.what_if_patterns
            job = submit(heavy_chunk, self.spec, mode, patterns, chunk, pure=False)
            return (chunk, patterns), job

        for (chunk, patterns), (status, value) in self._in_order(send(c) for c in chunks):
            if status == "mismatch":
                raise SegmentMismatch(value)
            yield from self._pieces(chunk, _records(value, patterns), errors)

    def encoded_log(
        self, path: LogPath, interval: float, reading: Reading, progress: Progress, mode: str
    ) -> Iterator[Heavy]:
        """As `encoded` over the log's requests (stream.log_requests), but the workers decode its
        lines too: this process reads lines, numbers their records and consumes the answers in
        log order, skips, the request limit and the chunks as log_requests has them. A format whose
        line can hold many requests is decoded here (`encoded`)."""
        log = open_log(path, reading)
        with contextlib.closing(log):
            log_format = detected_format(log)
            if log_format in MANY_PER_LINE:
                log.close()
                yield from self.encoded(log_requests(path, interval, reading, progress), reading.skips, mode)
                return
            task = (log_format, interval, reading.limits)
            submit = self.client.submit

            def send(lines: list[tuple[int, bytes | Skip, int]]) -> tuple[Any, Any]:
                progress.position = log.position()
                sent = [(line, index) for _, line, index in lines if not isinstance(line, Skip)]
                patterns = self.what_if_patterns
                job = submit(lines_chunk, self.spec, mode, patterns, task, sent, pure=False)
                kept = [(n, line if isinstance(line, Skip) else None) for n, line, _ in lines]
                return (kept, patterns), job

            limit, requests = reading.limits.requests, 0
            chunk: list[tuple[int, Request]] = []
            records: list[_Record] = []
            for (kept, patterns), (status, value) in self._in_order(send(b) for b in _line_batches(log)):
                if status == "mismatch":
                    raise SegmentMismatch(value)
                items, found, bodies, heavy = value
                for request, body in zip(found, bodies, strict=True):
                    request.body = body
                done = iter(_records(heavy, patterns))
                answers = iter(items)
                for number, skip in kept:
                    if skip is not None:
                        reading.skips.add(number, skip)
                        continue
                    if limit and requests >= limit:
                        reading.stopped_at = number
                        break
                    item = next(answers)
                    if not isinstance(item, int):
                        reading.skips.add(number, Skip(*item))
                        continue
                    requests += 1
                    chunk.append((number, found[item]))
                    records.append(next(done))
                    if len(chunk) >= stream.BATCH:
                        yield from self._pieces(chunk, records, reading.skips)
                        chunk, records = [], []
                else:
                    continue
                break  # the request limit: the lines in flight after it are not read
            if chunk:
                yield from self._pieces(chunk, records, reading.skips)

    def _pieces(
        self, chunk: list[tuple[int, Request]], records: list[_Record], errors: Skips
    ) -> Iterator[Heavy]:
        """A chunk's requests rebuilt from their records, cut as `stream.by_bytes` cuts them (the
        what-ifs' moved ids only when every request of the chunk came back with the same ones)."""
        answers = [r.answer for r in records]
        encoded = [r for r in records if r.answer[0] == "ok"]
        kinds = {r.patterns for r in encoded}
        patterns = kinds.pop() if len(kinds) == 1 else ()
        start = 0
        for piece in by_bytes(rebuild(self.renderer, chunk, answers, errors)):
            these = encoded[start : start + len(piece)]
            start += len(piece)
            moved = None
            if patterns:
                moved = WhatIfIds(patterns, [[r.moved[k] for r in these] for k in range(len(patterns))])
            yield piece, [r.tokens for r in these], [r.reply for r in these], moved

    def render(
        self, chunks: Iterator[list[tuple[int, Request]]], errors: Skips
    ) -> Iterator[list[tuple[int, Rendered]]]:
        """The chunks rendered, in order (as RenderPool.render)."""
        submit = self.client.submit
        jobs = ((c, submit(render_only, self.spec, c, pure=False)) for c in chunks)
        for chunk, answers in self._in_order(jobs):
            yield rebuild(self.renderer, chunk, answers, errors)

    def encoder(self, mode: str) -> RemoteEncoder:
        """An encoder for the what-ifs' moved prompts whose work is done on the workers."""
        return RemoteEncoder(self, mode)


class RemoteEncoder:
    """SegmentEncoder.encode on the stage's workers (each one's segment cache warm from the log's
    chunks): the texts cut into slices, encoded there side by side, answered in order. Raises
    SegmentMismatch as the local encoder does."""

    def __init__(self, stage: DaskStage, mode: str) -> None:
        self.stage, self.mode = stage, mode

    def encode(self, texts: list[str]) -> list[Tokens]:
        if not texts:
            return []
        stage = self.stage
        # A slice per worker, of at most a chunk's worth of prompts: every worker busy, no task large.
        size = min(-(-len(texts) // stage.workers), stream.BATCH)
        futures = [
            stage.client.submit(
                encode_texts, stage.spec, self.mode, texts[i : i + size], pure=False, priority=URGENT
            )
            for i in range(0, len(texts), size)
        ]
        out: list[Tokens] = []
        for future in futures:
            status, value = future.result()
            if status == "mismatch":
                raise SegmentMismatch(value)
            out.extend(value)
        return out
