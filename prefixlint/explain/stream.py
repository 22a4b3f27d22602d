"""A request log as a stream: its lines read as requests of the detected format (iter_log), in
chunks (log_requests), rendered here or by worker processes (rendered_batches) and encoded in
batches of bounded size (encoded_batches), with the progress bar on stderr; a pipe is copied once
(spooled), for explain_log's passes read the log again."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any, Protocol

from prefixlint.explain.formats import DETECT_LINES, DETECT_RECORDS, decode, detect, kind_of, requests_of
from prefixlint.explain.reading import (
    LogFiles,
    LogLimitError,
    LogLimits,
    LogPath,
    Reading,
    Skip,
    log_size,
    size_text,
    utf8_len,
)
from prefixlint.explain.render_pool import RenderPool
from prefixlint.explain.requests import Rendered, Renderer, Request, RequestError, check_request_size
from prefixlint.explain.segments import SegmentEncoder, Tokens

BATCH = 256  # requests per encode_batch call: enough to use every core, little to hold
PARALLEL_BYTES = 8 << 20  # a log this large (≈1,000 requests) is rendered by worker processes
# At most this many UTF-8 bytes of prompts are encoded at once (or one prompt): a tokenizer holds
# ~400 bytes per token, and a prompt has at most one token per byte, so a batch stays under 1 GB.
BATCH_BYTES = 1_000_000
TRIM_AFTER_CHARS = 200_000  # a batch this large is followed by a malloc_trim (see release_if_large)


def open_log(path: LogPath, reading: Reading | None = None) -> LogFiles:
    """The log (or logs, read as one) within `reading`'s limits, each gunzipped if it starts with
    the gzip magic; its position on disk drives the progress bar. Raises LogLimitError."""
    return LogFiles(path, reading)


def iter_log(log: LogFiles, interval: float = 1.0) -> Iterator[tuple[int, Request | RequestError]]:
    """(line number, request or the reason it is not one), streaming; blank lines are skipped. The
    format is `reading.log_format`, else told from the first readable records (and set there).
    Stops after `limits.requests` requests (noting the line in `reading.stopped_at`)."""
    limits, reading = log.limits, log.reading
    log_format = detected_format(log)
    index = requests = 0  # records read (the clock of requests without a time); requests among them
    for number, line in log.lines():
        if isinstance(line, Skip):
            yield number, RequestError(line.detail, line.reason)
            continue
        if limits.requests and requests >= limits.requests:
            reading.stopped_at = number
            return
        for item in line_items(line, log_format, index, interval, limits):
            requests += isinstance(item, Request)
            yield number, item
            index += 1


def detected_format(log: LogFiles) -> str:
    """`reading.log_format`, else told from the log's first readable records (and set there); the
    lines read to tell it are given again by `log.lines()`."""
    reading = log.reading
    if reading.log_format is None:
        head: list[tuple[int, bytes | Skip]] = []
        # A server log may open with many lines that are no request: look past them, boundedly.
        recognised: list[Any] = []
        for item in log.lines():
            head.append(item)
            if isinstance(item[1], Skip):
                continue
            try:
                value = decode(item[1], None, log.limits.depth)
            except RequestError:
                value = None
            if kind_of(value) is not None:
                recognised.append(value)
            if len(recognised) >= DETECT_RECORDS or len(head) >= DETECT_LINES:
                break
        reading.log_format = detect(recognised)
        log.unread(head)
    return reading.log_format


def line_items(
    line: bytes, log_format: str, index: int, interval: float, limits: LogLimits
) -> list[Request | RequestError]:
    """The requests of one log line (or the reasons they are none), within `limits`; `index`: the
    records before it (the clock of requests without a time of their own). Here or on a worker."""
    try:
        items = requests_of(decode(line, log_format, limits.depth), log_format, index, interval)
    except RequestError as exc:
        items = [exc]
    out: list[Request | RequestError] = []
    for item in items:
        if isinstance(item, Request):
            try:
                check_request_size(item, limits.messages)
            except RequestError as exc:
                item = exc
        if isinstance(item, RequestError):
            item = RequestError(str(item)[:200], item.reason)
        out.append(item)
    return out


class Progress:
    """A progress bar on stderr, only when stderr is a terminal; driven by the position in the raw
    file that the reader last reported (requests are still in flight after the file is closed)."""

    def __init__(self, total: int, enabled: bool | None = None) -> None:
        self.total = max(total, 1)
        self.position = 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.last = 0.0

    def update(self, requests: int, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()  # display only, never part of a result
        if not final and now - self.last < 0.2:
            return
        self.last = now
        done = min(self.position / self.total, 1.0) if not final else 1.0
        bar = "#" * int(done * 30)
        sys.stderr.write(f"\rexplain [{bar:<30}] {done:6.1%} {requests:,} requests")
        if final:
            sys.stderr.write("\n")
        sys.stderr.flush()


class Renders(Protocol):
    """What renders chunks of requests elsewhere, in order: RenderPool, or a Dask stage."""

    def render(
        self, chunks: Iterator[list[tuple[int, Request]]], errors: Any
    ) -> Iterator[list[tuple[int, Rendered]]]: ...


def log_requests(
    path: LogPath, interval: float, reading: Reading, progress: Progress | None = None
) -> Iterator[list[tuple[int, Request]]]:
    """The log's requests in chunks of BATCH, read within `reading`'s limits; unusable lines are
    counted in `reading.skips` by reason."""
    lines = open_log(path, reading)
    try:
        chunk: list[tuple[int, Request]] = []
        for number, item in iter_log(lines, interval):
            if isinstance(item, RequestError):
                reading.skips.add(number, Skip(item.reason, str(item)))
                continue
            chunk.append((number, item))
            if len(chunk) >= BATCH:
                if progress is not None:
                    progress.position = lines.position()
                yield chunk
                chunk = []
        if chunk:
            if progress is not None:
                progress.position = lines.position()
            yield chunk
    finally:
        lines.close()


def rendered_batches(
    path: LogPath,
    renderer: Renderer,
    interval: float,
    reading: Reading,
    progress: Progress | None = None,
    pool: Renders | None = None,
) -> Iterator[list[tuple[int, Rendered]]]:
    """Rendered requests in batches of at most BATCH_BYTES of prompt text, by `pool`'s workers or
    here; a render that raises, or a prompt over a limit, is counted in `reading.skips`."""
    chunks = log_requests(path, interval, reading, progress)
    if pool is not None:
        for batch in pool.render(chunks, reading.skips):
            yield from by_bytes(batch)
        return
    for chunk in chunks:
        batch: list[tuple[int, Rendered]] = []
        for number, request in chunk:
            try:
                batch.append((number, renderer.render(request)))
            except RequestError as exc:  # the template raised, or the prompt is over a limit
                reading.skips.add(number, Skip(exc.reason, str(exc)))
        yield from by_bytes(batch)


def by_bytes(batch: list[tuple[int, Rendered]]) -> Iterator[list[tuple[int, Rendered]]]:
    """`batch` cut so that no piece holds more than BATCH_BYTES of prompt text (or one prompt)."""
    piece: list[tuple[int, Rendered]] = []
    size = 0
    for item in batch:
        text_size = utf8_len(item[1].text)
        if piece and size + text_size > BATCH_BYTES:
            yield piece
            piece, size = [], 0
        piece.append(item)
        size += text_size
    if piece:
        yield piece


def encoded_batches(
    path: LogPath,
    renderer: Renderer,
    encoder: SegmentEncoder,
    interval: float,
    reading: Reading,
    progress: Progress | None = None,
    pool: RenderPool | None = None,
    texts_of: Callable[[list[tuple[int, Rendered]]], list[str]] = lambda batch: [r.text for _, r in batch],
) -> Iterator[tuple[list[tuple[int, Rendered]], list[Tokens]]]:
    """Rendered requests in batches with the tokens of `texts_of(batch)` (by default their prompts).
    With worker processes rendering, a batch is encoded on a second thread while this one waits for
    the next: the tokenizer releases the GIL, so parsing, rendering and encoding all overlap. Without
    them, encoding waits for the render: a render limits the whole process's memory while it runs."""
    if pool is None:
        for batch in rendered_batches(path, renderer, interval, reading, progress):
            yield batch, encoder.encode(texts_of(batch))
        return
    with ThreadPoolExecutor(1) as thread:
        pending = None
        for batch in rendered_batches(path, renderer, interval, reading, progress, pool):
            job = thread.submit(encoder.encode, texts_of(batch))
            if pending is not None:
                yield pending[0], pending[1].result()
            pending = (batch, job)
        if pending is not None:
            yield pending[0], pending[1].result()


def render_workers(path: LogPath, workers: int | None) -> int:
    """Render processes: one per core for a log large enough to repay starting them."""
    if workers is not None:
        return workers
    return (os.cpu_count() or 1) if log_size(path) >= PARALLEL_BYTES else 1


@contextlib.contextmanager
def spooled(path: str, reading: Reading) -> Iterator[str]:
    """`path` itself when it is a regular file; else (a pipe, `/dev/stdin`, `<(zcat …)`) a
    temporary copy of what it gives, made once and removed afterwards: the what-if pass and a
    start-over on whole prompts read the log again, and a pipe can be read only once. The copy is
    of the bytes as they come (a gzip stream stays compressed), at most `log_bytes` of them."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        regular = True  # not there: reading it reports that, naming the file
    if regular:
        yield path
        return
    limit = reading.limits.log_bytes
    with tempfile.TemporaryDirectory(prefix="prefixlint-log-") as folder:
        copy = os.path.join(folder, "log")
        copied = 0
        try:
            with open(path, "rb") as source, open(copy, "wb") as target:
                while chunk := source.read(1 << 20):
                    copied += len(chunk)
                    if limit and copied > limit:
                        raise LogLimitError(
                            f"{path}: more than {size_text(limit)} read from this pipe; stopped "
                            "(limit log_bytes; raise it with --limit log_bytes=N)"
                        )
                    target.write(chunk)
        except OSError as exc:
            raise LogLimitError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        yield copy


def release_if_large(batch: list[tuple[int, Rendered]]) -> None:
    """After a batch of large prompts, give the tokenizer's freed memory back to the system: its
    threads' malloc arenas otherwise keep each one's high-water mark, and the peak grows with every
    large batch (glibc only; elsewhere nothing to do)."""
    if sum(len(r.text) for _, r in batch) >= TRIM_AFTER_CHARS and (trim := _malloc_trim()) is not None:
        trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
