"""`prefixlint explain --log`: stream a request log through the renderer, the tokenizer (batched)
and the cache simulation; cluster divergences into causes; re-simulate the top ones moved."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, partial
from typing import TYPE_CHECKING, Any

from prefixlint.engines import Engine
from prefixlint.engines.packed import pack
from prefixlint.engines.simulate import REFERENCE_TOKENS, Simulation
from prefixlint.explain.breakpoints import ProviderBreakpoints, breakpoints_text
from prefixlint.explain.causes import (
    Cause,
    Clusters,
    Divergence,
    Span,
    classify,
    diverge,
    divergence_span,
    example_texts,
)
from prefixlint.explain.conversations import Conversations, conversations_text
from prefixlint.explain.reading import LogLimitError, Reading, Skip, size_text, utf8_len
from prefixlint.explain.render_pool import RenderPool
from prefixlint.explain.replies import batch_replies
from prefixlint.explain.requests import Rendered, Renderer, Request, RequestError, iter_log, open_log
from prefixlint.explain.routing import Routing, route_request
from prefixlint.explain.segments import SegmentEncoder, SegmentMismatch, Tokens
from prefixlint.tokens import LoadedTokenizer

if TYPE_CHECKING:
    from prefixlint.explain.observed import LogObservations

BATCH = 256  # requests per encode_batch call: enough to use every core, little to hold
PARALLEL_BYTES = 8 << 20  # a log this large (≈1,000 requests) is rendered by worker processes
# After this many requests, the top causes so far get their what-ifs simulated along with the log
# (their prompts so far replayed first); only a cause that enters the top later needs a second pass.
PROVISIONAL = 2048
# At most this many UTF-8 bytes of prompts are encoded at once (or one prompt): a tokenizer holds
# ~400 bytes per token, and a prompt has at most one token per byte, so a batch stays under 1 GB.
BATCH_BYTES = 1_000_000
TRIM_AFTER_CHARS = 200_000  # a batch this large is followed by a malloc_trim (see _release_if_large)
SHOWN_BREAKS = 5  # conversation breaks the text report shows (the JSON has them all)
EXAMPLE_TOKENS = 8_192  # tokens kept of each cause's example prompt (the page's representative)
SMALL_BATCH = 16  # texts under which the breakpoint replay encodes one by one


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


@dataclass
class LogReport:
    requests: int
    tokens: int
    engines: dict[str, dict[str, object]]
    causes: list[Cause]
    skipped: int
    skip_reasons: list[str]
    primary: str
    representative: dict[str, Any] = field(default_factory=dict)
    routing: dict[str, dict[str, object]] | None = None  # per policy, with --replicas
    log_format: str | None = None
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    sample: dict[str, int] | None = None  # set when --max-requests stopped the reading
    conversations: dict[str, Any] | None = None  # Conversations.to_json(): turns that break the prefix
    breakpoints: dict[str, Any] | None = None  # ProviderBreakpoints.to_json(), for Anthropic bodies

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "requests": self.requests,
            "tokens": self.tokens,
            "skipped": self.skipped,
            "skip_reasons": self.skip_reasons,
            "skipped_by_reason": self.skipped_by_reason,
            "log_format": self.log_format,
            "sample": self.sample,
            "engine": self.primary,
            "engines": self.engines,
            "routing": self.routing,
            "causes": [c.to_json(self.requests, self.primary) for c in self.causes],
            "conversations": self.conversations,
            "breakpoints": self.breakpoints,
        }


def _requests(
    path: str, interval: float, reading: Reading, progress: Progress | None = None
) -> Iterator[list[tuple[int, Request]]]:
    """The log's requests in chunks of BATCH, read within `reading`'s limits; unusable lines are
    counted in `reading.skips` by reason."""
    lines, raw = open_log(path, reading)
    try:
        chunk: list[tuple[int, Request]] = []
        for number, item in iter_log(lines, interval):
            if isinstance(item, RequestError):
                reading.skips.add(number, Skip(item.reason, str(item)))
                continue
            chunk.append((number, item))
            if len(chunk) >= BATCH:
                if progress is not None:
                    progress.position = raw.tell()
                yield chunk
                chunk = []
        if chunk:
            if progress is not None:
                progress.position = raw.tell()
            yield chunk
    finally:
        lines.close()
        raw.close()


def _batches(
    path: str,
    renderer: Renderer,
    interval: float,
    reading: Reading,
    progress: Progress | None = None,
    pool: RenderPool | None = None,
) -> Iterator[list[tuple[int, Rendered]]]:
    """Rendered requests in batches of at most BATCH_BYTES of prompt text, by `pool`'s workers or
    here; a render that raises, or a prompt over a limit, is counted in `reading.skips`."""
    chunks = _requests(path, interval, reading, progress)
    if pool is not None:
        for batch in pool.render(chunks, reading.skips):
            yield from _by_bytes(batch)
        return
    for chunk in chunks:
        batch: list[tuple[int, Rendered]] = []
        for number, request in chunk:
            try:
                batch.append((number, renderer.render(request)))
            except RequestError as exc:  # the template raised, or the prompt is over a limit
                reading.skips.add(number, Skip(exc.reason, str(exc)))
        yield from _by_bytes(batch)


def _by_bytes(batch: list[tuple[int, Rendered]]) -> Iterator[list[tuple[int, Rendered]]]:
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


def _encoded(
    path: str,
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
        for batch in _batches(path, renderer, interval, reading, progress):
            yield batch, encoder.encode(texts_of(batch))
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as thread:
        pending = None
        for batch in _batches(path, renderer, interval, reading, progress, pool):
            job = thread.submit(encoder.encode, texts_of(batch))
            if pending is not None:
                yield pending[0], pending[1].result()
            pending = (batch, job)
        if pending is not None:
            yield pending[0], pending[1].result()


def _workers(path: str, workers: int | None) -> int:
    """Render processes: one per core for a log large enough to repay starting them."""
    import os

    if workers is not None:
        return workers
    return (os.cpu_count() or 1) if os.path.getsize(path) >= PARALLEL_BYTES else 1


def explain_log(
    path: str,
    renderer: Renderer,
    tokenizer: LoadedTokenizer,
    engines: list[Engine],
    *,
    capacity: int | None = None,
    top: int = 10,
    what_ifs: int = 3,
    interval: float = 1.0,
    progress: bool | None = None,
    segments: str | None = None,
    replicas: int | None = None,
    routing: str = "round-robin",
    workers: int | None = None,
    reading: Reading | None = None,
    observations: LogObservations | None = None,
) -> LogReport:
    """Simulate the log, cluster its divergences, and re-simulate the top causes moved. The log is
    read within `reading`'s limits (LogLimitError when a whole-file limit is crossed); what the log
    says the server did is gathered in `observations`.

    `segments` forces the encoder's mode ("lines", "special", "whole"); by default the strongest
    the tokenizer allows. `workers`: render processes (default: one per core for a large log).
    `replicas`: also simulate that many caches behind each routing policy (`routing` runs now)."""
    reading = reading or Reading()
    with _spooled(path, reading) as readable:
        try:
            return _explain_file(
                readable,
                renderer,
                tokenizer,
                engines,
                capacity=capacity,
                top=top,
                what_ifs=what_ifs,
                interval=interval,
                progress=progress,
                segments=segments,
                replicas=replicas,
                routing=routing,
                workers=workers,
                reading=reading,
                observations=observations,
            )
        except LogLimitError as exc:  # named by the file the user gave, not by its copy
            raise LogLimitError(str(exc).replace(readable, path)) from exc


@contextlib.contextmanager
def _spooled(path: str, reading: Reading) -> Iterator[str]:
    """`path` itself when it is a regular file; else (a pipe, `/dev/stdin`, `<(zcat …)`) a
    temporary copy of what it gives, made once and removed afterwards: the what-if pass and a
    start-over on whole prompts read the log again, and a pipe can be read only once. The copy is
    of the bytes as they come (a gzip stream stays compressed), at most `log_bytes` of them."""
    import os
    import stat
    import tempfile

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


def _explain_file(
    path: str,
    renderer: Renderer,
    tokenizer: LoadedTokenizer,
    engines: list[Engine],
    *,
    capacity: int | None,
    top: int,
    what_ifs: int,
    interval: float,
    progress: bool | None,
    segments: str | None,
    replicas: int | None,
    routing: str,
    workers: int | None,
    reading: Reading,
    observations: LogObservations | None,
) -> LogReport:
    """explain_log of a log on disk."""
    count = _workers(path, workers)
    with RenderPool(renderer, count) if count > 1 else contextlib.nullcontext() as pool:
        run = partial(
            _simulate,
            path,
            renderer,
            tokenizer,
            engines,
            pool=pool,
            capacity=capacity,
            top=top,
            what_ifs=what_ifs,
            interval=interval,
            progress=progress,
            replicas=replicas,
            routing=routing,
        )
        try:
            return run(SegmentEncoder(tokenizer.tokenizer, segments), reading, observations)
        except SegmentMismatch:  # cutting prompts changed some prompt's tokens: start over, whole
            if observations is not None:
                observations.reset()
            return run(SegmentEncoder(tokenizer.tokenizer, "whole"), reading.again(), observations)


def _simulate(
    path: str,
    renderer: Renderer,
    tokenizer: LoadedTokenizer,
    engines: list[Engine],
    encoder: SegmentEncoder,
    reading: Reading,
    observations: LogObservations | None,
    *,
    pool: RenderPool | None,
    capacity: int | None,
    top: int,
    what_ifs: int,
    interval: float,
    progress: bool | None,
    replicas: int | None,
    routing: str,
) -> LogReport:
    import os

    sim = Simulation(engines, capacity, counts=True)
    router = Routing(replicas, routing, engines[0], capacity or REFERENCE_TOKENS) if replicas else None
    clusters = Clusters()
    conversations = Conversations()
    providers: ProviderBreakpoints | None = None  # made at the log's first Anthropic body
    bar = Progress(os.path.getsize(path), progress)

    def decode(ids: list[int]) -> str:
        return tokenizer.tokenizer.decode(ids, skip_special_tokens=False)

    first: tuple[Rendered, Tokens] | None = None
    early: list[Rendered] | None = []  # the prompts so far, until the provisional causes are chosen
    inline: WhatIfs | None = None
    for batch, encoded in _encoded(path, renderer, encoder, interval, reading, bar, pool):
        replies = batch_replies(encoder, [r for _, r in batch])
        for (number, rendered), tokens, reply in zip(batch, encoded, replies, strict=True):
            seq = tokens.ids
            seen: list[Divergence | None] = []
            match = sim.feed(
                seq,
                lambda found, seq=seq, seen=seen: seen.append(
                    diverge(seq, found.length, sim.reference, found)
                ),
                reply=reply,
                salt=rendered.request.cache_salt,
                cache_key=rendered.request.cache_key,
            )
            if observations is not None:
                observations.add(rendered.request, seq, match.length, sim, number)
            if router is not None:
                request = rendered.request
                router.feed(
                    route_request(
                        seq,
                        request.messages,
                        request.prompt,
                        request.session,
                        request.now,
                        request.cache_salt,
                    )
                )
            conversations.feed(number, rendered, tokens)
            request = rendered.request
            if request.anthropic and request.body is not None:
                providers = providers or _provider_breakpoints(tokenizer)
                if providers is not None:
                    providers.feed(number, request.body, request.now, conversations.previous_line)
            if first is None:
                first = (rendered, tokens)
            div = seen[0]
            if div is None:
                continue
            char, line = key_char_line(rendered, tokens, div)
            span = divergence_span(rendered.text, tokens.char_at, len(tokens), div)
            key = (line if line is not None else rendered.request.prompt is None, span.anchor)

            make = partial(_new_cause, key, renderer, rendered, tokens, div, number, decode, span)
            clusters.add(key, div.lost, make)
        rendered_batch = [r for _, r in batch]
        if inline is not None:
            inline.feed(encoder, rendered_batch)
        elif early is not None:
            early.extend(rendered_batch)
            if len(early) >= PROVISIONAL:
                inline = WhatIfs(engines, _patterns(_movable(clusters.ranked()[:top], what_ifs)))
                inline.feed(encoder, early)
                early = None
        del encoded
        _release_if_large(batch)
        bar.update(sim.requests)
    bar.update(sim.requests, final=True)
    causes = clusters.ranked()[:top]
    primary = engines[0].name
    movable = _movable(causes, what_ifs)
    if early is not None:  # a short log: its prompts are all here
        inline = WhatIfs(engines, _patterns(movable))
        inline.feed(encoder, early)
    rates = inline.rates() if inline is not None else {}
    missing = [p for p in _patterns(movable) if p not in rates]
    if missing:
        again = WhatIfs(engines, missing)
        for batch in _batches(path, renderer, interval, reading.again(), None, pool):
            again.feed(encoder, [r for _, r in batch])
            _release_if_large(batch)
        rates.update(again.rates())
    for cause in movable:
        cause.what_if = rates[cause.span.pattern()]  # type: ignore[union-attr, index]
    skips = reading.skips
    report = LogReport(sim.requests, sim.tokens, sim.summary(), causes, skips.total, skips.examples, primary)
    report.log_format = reading.log_format
    report.skipped_by_reason = skips.counts()
    if reading.stopped_at is not None:
        report.sample = {"max_requests": reading.limits.requests, "stopped_at_line": reading.stopped_at}
    shown = causes[0].example_ids if causes else first[1].id_list()[:EXAMPLE_TOKENS] if first else []
    report.representative = _representative(sim, shown, decode, causes[0] if causes else None)
    examples = [c.example_ids for c in causes] + ([first[1].id_list()[:EXAMPLE_TOKENS]] if first else [])
    paths = [(ids, sim.reference.counts_along(pack(ids))) for ids in examples if ids]
    report.representative["tree"] = _prefix_tree(paths, 0, decode)
    report.routing = router.summary() if router is not None else None
    report.conversations = conversations.to_json()
    report.breakpoints = providers.to_json() if providers is not None else None
    return report


def _provider_breakpoints(tokenizer: LoadedTokenizer) -> ProviderBreakpoints | None:
    """The breakpoint model of the engine data's `anthropic` profile (None if a user's engines file
    gives it no breakpoints), counting each block's tokens with the run's tokenizer."""
    from prefixlint.engines import load_engines

    engine = load_engines().get("anthropic")
    if engine is None or engine.breakpoints is None:
        return None

    def count(texts: list[str]) -> list[int]:
        # A turn adds a few blocks: a batch's thread pool costs more than it saves below SMALL_BATCH.
        encode = tokenizer.tokenizer
        if len(texts) < SMALL_BATCH:
            return [len(encode.encode(text, add_special_tokens=False).ids) for text in texts]
        return [len(e.ids) for e in encode.encode_batch(texts, add_special_tokens=False)]

    return ProviderBreakpoints(engine, count)


def _new_cause(
    key: tuple[Any, ...],
    renderer: Renderer,
    rendered: Rendered,
    tokens: Tokens,
    div: Divergence,
    number: int,
    decode: Callable[[list[int]], str],
    span: Span,
) -> Cause:
    """A cluster's first member becomes its example (sections and lines are worked out only here)."""
    char, line = key_char_line(rendered, tokens, div)
    a, b = example_texts(decode, tokens.ids, div)
    return Cause(
        key=key,
        anchor=key[1],
        section=rendered.section_at(char),
        template_line=line,
        template_text=renderer.template.traced.line_text(line).strip() if line else "",
        token_index=div.token_index,
        char_offset=char,
        example_a=a,
        example_b=b,
        kind=classify(a, b),
        request=number,
        example_ids=tokens.id_list()[:EXAMPLE_TOKENS],
        span=span,
    )


def key_char_line(rendered: Rendered, tokens: Tokens, div: Divergence) -> tuple[int, int | None]:
    char = tokens.char_at(div.token_index)
    return char, rendered.template_line(char)


def _movable(causes: list[Cause], what_ifs: int) -> list[Cause]:
    """The top causes that lose tokens and have a span that can be found in any prompt."""
    return [c for c in causes if c.tokens_lost > 0 and c.span and c.span.pattern()][:what_ifs]


def _patterns(causes: list[Cause]) -> list[str]:
    return [c.span.pattern() for c in causes]  # type: ignore[misc, union-attr]


class WhatIfs:
    """Each span pattern's what-if: every prompt with that cause's span moved to the end of its
    message, simulated. The moved prompts share their segments with the originals: few are
    encoded again."""

    def __init__(self, engines: list[Engine], patterns: list[str]) -> None:
        self.patterns = list(dict.fromkeys(patterns))
        self.sims = [Simulation(engines) for _ in self.patterns]

    def feed(self, encoder: SegmentEncoder, prompts: list[Rendered]) -> None:
        """The next prompts of the log, in order; one pattern's worth of text encoded at a time."""
        from prefixlint.explain.whatif import move_span

        if not self.patterns or not prompts:
            return
        replies = batch_replies(encoder, prompts)
        for pattern, sim in zip(self.patterns, self.sims, strict=True):
            moved = encoder.encode([move_span(r, pattern) for r in prompts])
            for tokens, reply, r in zip(moved, replies, prompts, strict=True):
                sim.feed(tokens.ids, reply=reply, salt=r.request.cache_salt, cache_key=r.request.cache_key)

    def rates(self) -> dict[str, dict[str, float]]:
        return {
            pattern: {name: float(v["hit_rate"]) for name, v in sim.summary().items()}  # type: ignore[arg-type]
            for pattern, sim in zip(self.patterns, self.sims, strict=True)
        }


def _release_if_large(batch: list[tuple[int, Rendered]]) -> None:
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


def _representative(
    sim: Simulation, ids: list[int], decode: Callable[[list[int]], str], cause: Cause | None
) -> dict[str, Any]:
    """One prompt as tokens with how many requests shared the prefix up to each, for the page."""
    counts = sim.reference.counts_along(pack(ids))
    return {
        "tokens": [decode([t]) for t in ids],
        "shared_by": counts,
        "divergence": cause.token_index if cause else None,
    }


def _prefix_tree(
    paths: list[tuple[list[int], list[int]]], start: int, decode: Callable[[list[int]], str]
) -> list[dict[str, Any]]:
    """Where the representative requests (each cause's example, the log's first request) branch:
    the runs of tokens they share from `start`, each with how many requests of the log shared the
    prompt up to its end and what follows it, widest branches first. `paths`: (ids, counts along)."""
    groups: dict[int, list[tuple[list[int], list[int]]]] = {}
    for ids, counts in paths:
        if len(ids) > start:
            groups.setdefault(ids[start], []).append((ids, counts))
    nodes = []
    for group in groups.values():
        end = start + 1
        while all(len(ids) > end for ids, _ in group) and len({ids[end] for ids, _ in group}) == 1:
            end += 1
        shared = max(counts[end - 1] if end - 1 < len(counts) else 0 for _, counts in group)
        nodes.append(
            {
                "start": start,
                "tokens": end - start,
                "text": decode(group[0][0][start:end]),
                "shared_by": shared,
                "children": _prefix_tree(group, end, decode),
            }
        )
    return sorted(nodes, key=lambda n: -n["shared_by"])


__all__ = ["LogReport", "Request", "explain_log"]


def nothing_read(path: str, report: LogReport) -> str | None:
    """Why a log gave no request to explain, naming the file and the skip reasons (a usage error:
    0 requests and a 0% hit rate would read like a real result); None when it gave some."""
    if report.requests:
        return None
    if not report.skipped:
        return f"{path}: no request in this log: it holds no line"
    reasons = ", ".join(f"{n:,} {reason}" for reason, n in report.skipped_by_reason.items())
    lines = "line" if report.skipped == 1 else "lines"
    return (
        f"{path}: no readable request in this log: {report.skipped:,} {lines} skipped ({reasons}; "
        f"first: {report.skip_reasons[0]}); `--log-format` names the format when detection guesses wrong"
    )


def log_text(report: LogReport) -> str:
    """The log explanation as plain lines: hit rates, then causes with their what-ifs."""
    out = [f"{report.requests:,} requests, {report.tokens:,} prompt tokens"]
    if report.sample:
        out.append(
            f"sampled: the first {report.sample['max_requests']:,} requests of the log (--max-requests); "
            f"reading stopped at line {report.sample['stopped_at_line']:,}"
        )
    if report.skipped:
        reasons = ", ".join(f"{n:,} {reason}" for reason, n in report.skipped_by_reason.items())
        lines = "line" if report.skipped == 1 else "lines"
        out.append(f"{report.skipped:,} {lines} skipped ({reasons}; first: {report.skip_reasons[0]})")
    for name, v in report.engines.items():
        line = (
            f"  {name:<10} hit rate {float(v['hit_rate']):7.2%}  ({int(v['hit_tokens']):,} tokens from cache)"  # type: ignore[arg-type]
        )
        lru = v.get("lru")
        if isinstance(lru, dict):
            line += f"; LRU {lru['capacity_tokens']:,} tokens: {lru['hit_rate']:.2%}"
        out.append(line)
    if report.routing:
        policies = ", ".join(
            f"{name} {float(v['hit_rate']):.2%}" + (" (now)" if v["current"] else "")  # type: ignore[arg-type]
            for name, v in report.routing.items()
        )
        replicas = next(iter(report.routing.values()))["replicas"]
        out.append(f"  {report.primary} over {replicas} replicas, by routing: {policies}")
    if not report.causes:
        out.append("No request diverges from an earlier one: nothing to explain.")
    for rank, c in enumerate(report.causes, 1):
        share = c.count / report.requests if report.requests else 0.0
        where = c.section + (
            f", template line {c.template_line}: {c.template_text}" if c.template_line else ""
        )
        out.append(f"{rank}. {share:.1%} of requests diverge at token {c.token_index} in {where}")
        out.append(f"   {c.kind}: {c.example_a!r} vs {c.example_b!r}")
        if c.tokens_lost:
            out.append(f"   {c.tokens_lost:,} static tokens after it recomputed")
        else:
            out.append("   nothing static follows: the requests' own content differs from here")
        if c.what_if and c.span is not None:
            before = float(report.engines[report.primary]["hit_rate"])  # type: ignore[arg-type]
            after = c.what_if.get(report.primary, 0.0)
            saved = c.ttft_ms_saved_per_request
            out.append(
                f"   what if {c.span.text!r} (after `{c.anchor}`) moved to the end of its message: "
                f"{report.primary} hit rate {before:.1%} → {after:.1%}"
                + (f", {saved:,.0f} ms less TTFT per request" if saved is not None else "")
            )
    if report.breakpoints:
        out += breakpoints_text(report.breakpoints, SHOWN_BREAKS)
    if report.conversations and report.conversations["count"]:
        out += conversations_text(report.conversations, SHOWN_BREAKS)
    return "\n".join(out) + "\n"
