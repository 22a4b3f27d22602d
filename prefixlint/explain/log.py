"""`prefixlint explain --log`: a request log, streamed (explain/stream.py) through the renderer and
the tokenizer, replayed through the cache simulation; its divergences clustered into causes, the
top ones re-simulated moved (explain/whatif.py); the report, as JSON and as text."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from prefixlint.engines import Engine, load_engines
from prefixlint.engines.packed import WIDTH, pack
from prefixlint.engines.simulate import REFERENCE_TOKENS, Simulation
from prefixlint.engines.stackdist import CapacityCurve, curve_engine
from prefixlint.explain.breakpoints import ProviderBreakpoints
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
from prefixlint.explain.conversations import Conversations
from prefixlint.explain.log_report import LogReport
from prefixlint.explain.reading import LogLimitError, LogPath, Reading, as_paths, log_size
from prefixlint.explain.render_pool import RenderPool
from prefixlint.explain.replies import batch_replies
from prefixlint.explain.requests import Rendered, Renderer, Request
from prefixlint.explain.routing import Routing, route_request
from prefixlint.explain.segments import Encodes, SegmentEncoder, SegmentMismatch, Tokens
from prefixlint.explain.stream import (
    Progress,
    encoded_batches,
    release_if_large,
    render_workers,
    rendered_batches,
    spooled,
)
from prefixlint.explain.trace_export import TraceWriter
from prefixlint.explain.whatif import WhatIfs, movable_causes, patterns_of
from prefixlint.models.tokens import LoadedTokenizer

if TYPE_CHECKING:
    from collections.abc import Iterator

    from prefixlint.explain.dask_stage import DaskStage, WhatIfIds
    from prefixlint.explain.observed import LogObservations

# After this many requests, the top causes so far get their what-ifs simulated along with the log
# (their prompts so far replayed first); only a cause that enters the top later needs a second pass.
PROVISIONAL = 2048
EXAMPLE_TOKENS = 8_192  # tokens kept of each cause's example prompt (the page's representative)
SMALL_BATCH = 16  # texts under which the breakpoint replay encodes one by one


def explain_log(
    path: LogPath,
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
    curve: bool = False,
    export: TraceWriter | None = None,
    dask: str | None = None,
) -> LogReport:
    """Simulate the log, cluster its divergences, and re-simulate the top causes moved. The log (or
    several, read as one in the order given: reading.LogFiles) is read within `reading`'s limits
    (LogLimitError when a whole-file limit is crossed); what the log says the server did is
    gathered in `observations`.

    `segments` forces the encoder's mode ("lines", "special", "whole"); by default the strongest
    the tokenizer allows. `workers`: render processes (default: one per core for a large log).
    `replicas`: also simulate that many caches behind each routing policy (`routing` runs now).
    `curve`: also measure the capacity curve; `export`: also write the log as a trace. `dask`: a Dask
    scheduler's address, or `local[:N]`: render and encode there (explain/dask_stage.py), not here."""
    reading = reading or Reading()
    paths = as_paths(path)
    with contextlib.ExitStack() as stack:
        readable = tuple(stack.enter_context(spooled(p, reading)) for p in paths)
        try:
            return _explain_file(
                readable if len(readable) > 1 else readable[0],
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
                curve=curve,
                export=export,
                dask=dask,
            )
        except LogLimitError as exc:  # named by the file the user gave, not by its copy
            message = str(exc)
            for copy, given in zip(readable, paths, strict=True):
                message = message.replace(copy, given)
            raise LogLimitError(message) from exc


def _explain_file(
    path: LogPath,
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
    curve: bool,
    export: TraceWriter | None,
    dask: str | None,
) -> LogReport:
    """explain_log of a log on disk."""
    count = render_workers(path, workers) if dask is None else 1
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(RenderPool(renderer, count)) if count > 1 else None
        stage = None
        if dask is not None:
            from prefixlint.explain.dask_stage import DaskStage

            stage = stack.enter_context(DaskStage(dask, renderer, tokenizer))
        run = partial(
            _simulate,
            path,
            renderer,
            tokenizer,
            engines,
            pool=pool,
            stage=stage,
            capacity=capacity,
            top=top,
            what_ifs=what_ifs,
            interval=interval,
            progress=progress,
            replicas=replicas,
            routing=routing,
            curve=curve,
            export=export,
        )
        try:
            return run(SegmentEncoder(tokenizer.tokenizer, segments), reading, observations)
        except SegmentMismatch:  # cutting prompts changed some prompt's tokens: start over, whole
            if observations is not None:
                observations.reset()
            if export is not None:
                export.reset()
            return run(SegmentEncoder(tokenizer.tokenizer, "whole"), reading.again(), observations)


def _simulate(
    path: LogPath,
    renderer: Renderer,
    tokenizer: LoadedTokenizer,
    engines: list[Engine],
    encoder: SegmentEncoder,
    reading: Reading,
    observations: LogObservations | None,
    *,
    pool: RenderPool | None,
    stage: DaskStage | None,
    capacity: int | None,
    top: int,
    what_ifs: int,
    interval: float,
    progress: bool | None,
    replicas: int | None,
    routing: str,
    curve: bool,
    export: TraceWriter | None,
) -> LogReport:
    sim = Simulation(engines, capacity, counts=True)
    of = curve_engine(engines) if curve else None
    tally = CapacityCurve(of) if of is not None else None
    router = Routing(replicas, routing, engines[0], capacity or REFERENCE_TOKENS, stage) if replicas else None
    clusters = Clusters()
    conversations = Conversations()
    providers: ProviderBreakpoints | None = None  # made at the log's first Anthropic body
    bar = Progress(log_size(path), progress)

    def decode(ids: list[int]) -> str:
        return tokenizer.tokenizer.decode(ids, skip_special_tokens=False)

    # The what-ifs' moved prompts are encoded where the log's prompts are.
    moved: Encodes = stage.encoder(encoder.mode) if stage is not None else encoder
    first: tuple[Rendered, Tokens] | None = None
    early: list[Rendered] | None = []  # the prompts so far, until the provisional causes are chosen
    inline: WhatIfs | None = None
    for batch, encoded, replies, moved_there in _heavy_batches(
        path, renderer, encoder, interval, reading, bar, pool, stage
    ):
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
            if tally is not None:
                tally.feed(seq, reply, rendered.request.cache_salt, rendered.request.cache_key)
            if export is not None:
                export.add(rendered.request, seq, len(reply) // WIDTH)
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
            if moved_there is not None and moved_there.patterns == tuple(inline.patterns):
                inline.feed_moved(rendered_batch, replies, moved_there.ids)
            else:
                inline.feed(moved, rendered_batch, replies)
        elif early is not None:
            early.extend(rendered_batch)
            if len(early) >= PROVISIONAL:
                inline = WhatIfs(engines, patterns_of(movable_causes(clusters.ranked()[:top], what_ifs)))
                inline.feed(moved, early)
                early = None
                if stage is not None:  # the chunks sent from now on come back with them moved
                    stage.what_if_patterns = tuple(inline.patterns)
        del encoded
        release_if_large(batch)
        bar.update(sim.requests)
    bar.update(sim.requests, final=True)
    causes = clusters.ranked()[:top]
    primary = engines[0].name
    movable = movable_causes(causes, what_ifs)
    if early is not None:  # a short log: its prompts are all here
        inline = WhatIfs(engines, patterns_of(movable))
        inline.feed(moved, early)
    rates = inline.rates() if inline is not None else {}
    missing = [p for p in patterns_of(movable) if p not in rates]
    if missing:
        again = WhatIfs(engines, missing)
        for batch in rendered_batches(path, renderer, interval, reading.again(), None, stage or pool):
            again.feed(moved, [r for _, r in batch])
            release_if_large(batch)
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
    if curve:
        report.capacity_curve = [p.to_json() for p in tally.points()] if tally is not None else []
        report.curve_engine = of.name if of is not None else None
    return report


def _heavy_batches(
    path: LogPath,
    renderer: Renderer,
    encoder: SegmentEncoder,
    interval: float,
    reading: Reading,
    bar: Progress,
    pool: RenderPool | None,
    stage: DaskStage | None,
) -> Iterator[tuple[list[tuple[int, Rendered]], list[Tokens], list[bytes], WhatIfIds | None]]:
    """The log's requests rendered, with their prompts' tokens, their replies' computed tokens and
    the what-ifs' moved ids where the workers made them, in order: by the Dask stage's workers, or
    here (rendered by `pool`'s processes if any)."""
    if stage is not None:
        yield from stage.encoded_log(path, interval, reading, bar, encoder.mode)
        return
    for batch, encoded in encoded_batches(path, renderer, encoder, interval, reading, bar, pool):
        yield batch, encoded, batch_replies(encoder, [r for _, r in batch]), None


def _provider_breakpoints(tokenizer: LoadedTokenizer) -> ProviderBreakpoints | None:
    """The breakpoint model of the engine data's `anthropic` profile (None if a user's engines file
    gives it no breakpoints), counting each block's tokens with the run's tokenizer."""
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
