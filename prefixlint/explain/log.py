"""`prefixlint explain --log`: stream a request log through the renderer, the tokenizer (batched)
and the cache simulation; cluster divergences into causes; re-simulate the top ones moved."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, partial
from typing import TYPE_CHECKING, Any

from prefixlint.engines import Engine
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
from prefixlint.explain.reading import Reading, Skip, utf8_len
from prefixlint.explain.requests import Rendered, Renderer, Request, RequestError, iter_log, open_log
from prefixlint.explain.simulate import Simulation, pack
from prefixlint.tokens import LoadedTokenizer

if TYPE_CHECKING:
    from prefixlint.explain.observed import LogObservations

KEPT_ERRORS = 5  # unusable lines quoted in the report (all are counted by reason)
BATCH = 256  # requests per encode_batch call: enough to use every core, little to hold
# ...and at most this many UTF-8 bytes of prompts (or one prompt): a tokenizer holds ~400 bytes per
# token, and a prompt has at most one token per byte, so a batch stays well under 1 GB.
BATCH_BYTES = 1_000_000
TRIM_AFTER_CHARS = 200_000  # a batch this large is followed by a malloc_trim (see _release_if_large)
EXAMPLE_TOKENS = 8_192  # tokens kept of each cause's example prompt (the page's representative)


class Progress:
    """A progress bar on stderr, only when stderr is a terminal; driven by the raw file position."""

    def __init__(self, raw: Any, total: int, enabled: bool | None = None) -> None:
        self.raw, self.total = raw, max(total, 1)
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.last = 0.0

    def update(self, requests: int, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()  # display only, never part of a result
        if not final and now - self.last < 0.2:
            return
        self.last = now
        done = min(self.raw.tell() / self.total, 1.0) if not final else 1.0
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
    log_format: str | None = None
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    sample: dict[str, int] | None = None  # set when --max-requests stopped the reading

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
            "causes": [c.to_json(self.requests, self.primary) for c in self.causes],
        }


def _batches(
    path: str, renderer: Renderer, interval: float, reading: Reading, progress: Progress | None = None
) -> Iterator[list[tuple[int, Rendered]]]:
    """Rendered requests in batches; unusable lines are counted in `reading.skips` by reason."""
    lines, raw = open_log(path, reading)
    skips = reading.skips
    try:
        if progress is not None:
            progress.raw = raw
        batch: list[tuple[int, Rendered]] = []
        size = 0
        for number, item in iter_log(lines, interval):
            if isinstance(item, RequestError):
                skips.add(number, Skip(item.reason, str(item)))
                continue
            try:
                rendered = renderer.render(item)
            except RequestError as exc:  # the template raised, or the prompt is over a limit
                skips.add(number, Skip(exc.reason, str(exc)))
                continue
            text_size = utf8_len(rendered.text)
            if batch and size + text_size > BATCH_BYTES:
                yield batch
                batch, size = [], 0
            batch.append((number, rendered))
            size += text_size
            if len(batch) >= BATCH:
                yield batch
                batch, size = [], 0
        if batch:
            yield batch
    finally:
        lines.close()


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
    reading: Reading | None = None,
    observations: LogObservations | None = None,
) -> LogReport:
    """Simulate the log, cluster its divergences, and re-simulate the top causes moved. The log is
    read within `reading`'s limits (LogLimitError when a whole-file limit is crossed)."""
    import os

    sim = Simulation(engines, capacity, counts=True)
    clusters = Clusters()
    reading = reading or Reading()
    bar = Progress(None, os.path.getsize(path), progress)

    def decode(ids: list[int]) -> str:
        return tokenizer.tokenizer.decode(ids, skip_special_tokens=False)

    first: tuple[Rendered, list[int]] | None = None
    for batch in _batches(path, renderer, interval, reading, bar):
        encodings = tokenizer.encode_many([r.text for _, r in batch])
        for (number, rendered), enc in zip(batch, encodings, strict=True):
            seq = pack(enc.ids)
            seen: list[Divergence | None] = []
            match = sim.feed(
                seq,
                lambda found, seq=seq, seen=seen: seen.append(
                    diverge(seq, found.length, sim.unbounded, found)
                ),
            )
            if observations is not None:
                observations.add(rendered.request, seq, match.length)
            if first is None:
                first = (rendered, enc.ids[:EXAMPLE_TOKENS])
            div = seen[0]
            if div is None:
                continue
            char, line = key_char_line(rendered, enc, div)
            span = divergence_span(rendered.text, enc.offsets, div)
            key = (line if line is not None else rendered.request.prompt is None, span.anchor)

            make = partial(_new_cause, key, renderer, rendered, enc, seq, div, number, decode, span)
            clusters.add(key, div.lost, make)
        del encodings, enc  # before the next batch is encoded, not after
        _release_if_large(batch)
        bar.update(sim.requests)
    bar.update(sim.requests, final=True)
    causes = clusters.ranked()[:top]
    primary = engines[0].name
    movable = [c for c in causes if c.tokens_lost > 0 and c.span and c.span.pattern()][:what_ifs]
    if movable:
        _what_if(path, renderer, tokenizer, engines, movable, capacity, interval, reading.again())
    skips = reading.skips
    report = LogReport(sim.requests, sim.tokens, sim.summary(), causes, skips.total, skips.examples, primary)
    report.log_format = reading.log_format
    report.skipped_by_reason = skips.counts()
    if reading.stopped_at is not None:
        report.sample = {"max_requests": reading.limits.requests, "stopped_at_line": reading.stopped_at}
    shown = causes[0].example_ids if causes else first[1] if first else []
    report.representative = _representative(sim, shown, decode, causes[0] if causes else None)
    return report


def _new_cause(
    key: tuple[Any, ...],
    renderer: Renderer,
    rendered: Rendered,
    enc: Any,
    seq: bytes,
    div: Divergence,
    number: int,
    decode: Callable[[list[int]], str],
    span: Span,
) -> Cause:
    """A cluster's first member becomes its example (sections and lines are worked out only here)."""
    char, line = key_char_line(rendered, enc, div)
    a, b = example_texts(decode, seq, div)
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
        example_ids=enc.ids[:EXAMPLE_TOKENS],
        span=span,
    )


def key_char_line(rendered: Rendered, enc: Any, div: Divergence) -> tuple[int, int | None]:
    char = enc.offsets[div.token_index][0]
    return char, rendered.template_line(char)


def _what_if(
    path: str,
    renderer: Renderer,
    tokenizer: LoadedTokenizer,
    engines: list[Engine],
    causes: list[Cause],
    capacity: int | None,
    interval: float,
    reading: Reading,
) -> None:
    """One more pass: every cause's span moved to the end of each prompt, all simulated at once."""
    from prefixlint.explain.whatif import move_span

    sims = [Simulation(engines) for _ in causes]
    for batch in _batches(path, renderer, interval, reading):
        for cause, sim in zip(causes, sims, strict=True):  # one batch's worth of text at a time
            pattern = cause.span.pattern()  # type: ignore[union-attr]
            for enc in tokenizer.encode_many([move_span(r, pattern) for _, r in batch]):  # type: ignore[arg-type]
                sim.feed(enc.ids)
        _release_if_large(batch)
    for cause, sim in zip(causes, sims, strict=True):
        cause.what_if = {name: float(v["hit_rate"]) for name, v in sim.summary().items()}  # type: ignore[arg-type]


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
    counts = sim.unbounded.counts_along(pack(ids))
    return {
        "tokens": [decode([t]) for t in ids],
        "shared_by": counts,
        "divergence": cause.token_index if cause else None,
    }


__all__ = ["LogReport", "Request", "explain_log"]


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
        out.append(f"{report.skipped:,} lines skipped ({reasons}; first: {report.skip_reasons[0]})")
    for name, v in report.engines.items():
        line = (
            f"  {name:<10} hit rate {float(v['hit_rate']):7.2%}  ({int(v['hit_tokens']):,} tokens from cache)"  # type: ignore[arg-type]
        )
        lru = v.get("lru")
        if isinstance(lru, dict):
            line += f"; LRU {lru['capacity_tokens']:,} tokens: {lru['hit_rate']:.2%}"
        out.append(line)
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
    return "\n".join(out) + "\n"
