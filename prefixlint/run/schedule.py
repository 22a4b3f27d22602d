"""Scheduling a run's analyses: each source's analysis in this process, with the tokenizers it will
need loading in forked helpers ahead of their first use, or, for many sources, across a pool of
worker processes fed contiguous runs of the tree (a package's modules and what they import in one
worker), the modules with prompt text parsed once before the fork. What one source's analysis is
(`analyse`) is the caller's: prefixlint.api.analyse_source."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator

from prefixlint.core.files import decode_source
from prefixlint.core.findings import SourceResult
from prefixlint.plan import RunPlan
from prefixlint.run.sources import PARALLEL_MIN_SOURCES, Source

# One source's analysis with the run's plan (its raw results, with their verified fixes).
Analyse = Callable[[Source, RunPlan], list[SourceResult]]

# Tokenizer files loading in helpers at once, counted from the current source on: the next one
# loads while this one is analysed, and no more than two loads compete with this process for CPU.
TOKENIZERS_AHEAD = 2
# gc thresholds during a run (CPython's default: 700, 10, 10): a young collection per 20,000 new
# objects, a full one at most per 400 of them (and only once the old generation grew by a quarter).
RUN_GC_THRESHOLDS = (20_000, 20, 20)


def _renders(source: Source, data: bytes | None, run: RunPlan) -> bool:
    """Whether a source needs its tokenizer (a helper loading it is worth a fork): a template, a
    Python file with prompt text (its numbers are counted in tokens), not a base model's
    tokenizer_config.json without a chat template. `data`: its bytes as the run read them."""
    if source.kind in ("tokenizer_config", "python"):
        if data is None:  # unreadable: the analysis reports it, and loads nothing
            return False
        if source.kind == "python":
            from prefixlint.python import may_hold_prompts

            return run.python.numbers and may_hold_prompts(
                data.decode("utf-8", "replace"), run.python.sinks, run.python.sink_rows
            )
        return b"chat_template" in data
    return True


def _lint_in_order(
    sources: list[Source],
    run: RunPlan,
    analyse: Analyse,
    files: list[str | None],
    contents: list[bytes | None],
) -> Iterator[list[SourceResult]]:
    """`analyse` of each source in turn, with the tokenizers the templates need loading in
    forked helpers (prefixlint/models/tokenizer_process.py) ahead of their first use, so each load
    overlaps imports, compiling and rendering here. A helper stops after the last source that
    may use its tokenizer (a Python file counts tokens with it, but does not start one)."""
    from prefixlint.models.token_index import has_index
    from prefixlint.models.token_memo import has_book
    from prefixlint.models.tokens import start_loading, stop_all_loading, stop_loading

    # A source whose book holds its encodings from the last run, or whose tokenizer has an index,
    # likely loads no tokenizer at all.
    cache = run.cache_dir
    starts = [
        f
        if f is not None
        and _renders(s, data, run)
        and not (has_book(cache, f, s.path) or has_index(cache, f))
        else None
        for s, f, data in zip(sources, files, contents, strict=True)
    ]
    last_use = {f: i for i, f in enumerate(files) if f is not None}
    # A guess from the command line (launch.py) that missed, or that a book makes useless.
    stop_all_loading(keep={f for f in starts if f is not None})
    try:
        for i, source in enumerate(sources):
            ahead: list[str] = []
            for path in starts[i:]:
                if path is not None and path not in ahead:
                    start_loading(path)  # a no-op for one loaded or loading already
                    ahead.append(path)
                    if len(ahead) == TOKENIZERS_AHEAD:
                        break
            yield analyse(source, run)
            for path in [f for f, last in last_use.items() if last == i]:
                stop_loading(path, cache)  # a helper that served writes the tokenizer's index
    finally:
        for path in last_use:
            stop_loading(path)


def lint_all(
    sources: list[Source],
    run: RunPlan,
    workers: int | None,
    analyse: Analyse,
    files: list[str | None],
    contents: list[bytes | None],
) -> Iterator[list[SourceResult]]:
    """The raw results of `sources` (`analyse` of each: prefixlint.api.analyse_source), in order;
    `files`: the tokenizer file of each (the plan's, prefixlint/plan.py source_tokenizer_file),
    `contents`: the bytes of each as the run read them (None: unreadable), never read again here;
    in this process for a few, else in a process pool (processes, not threads: analysis is
    CPU-bound Python, and the render time limit uses SIGALRM, which needs each render in a main
    thread)."""
    if workers is None:
        workers = min(os.cpu_count() or 1, len(sources)) if len(sources) >= PARALLEL_MIN_SOURCES else 1
    with _fewer_collections():
        if workers <= 1:
            yield from _lint_in_order(sources, run, analyse, files, contents)
        else:
            yield from _lint_in_pool(sources, run, workers, analyse, files, contents)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """The cyclic GC collecting less often during a run: the parsed modules, kept for the whole run
    (millions of objects, none of them garbage), are walked by every full collection, which took
    ~17% of the CPU of a cold run on llama_index core. The old thresholds come back afterwards."""
    old = gc.get_threshold()
    gc.set_threshold(*RUN_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _lint_in_pool(
    sources: list[Source],
    run: RunPlan,
    workers: int,
    analyse: Analyse,
    files: list[str | None],
    contents: list[bytes | None],
) -> Iterator[list[SourceResult]]:
    """The raw results of `sources`, in order, from `workers` pool processes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from prefixlint.models.tokens import stop_all_loading

    stop_all_loading()  # each worker loads its own: a helper would only compete with them for a core
    # fork: workers start at once, with everything imported; a worker loads each tokenizer once.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    if method == "fork":
        _parse_ahead(sources, contents, run)
        gc.freeze()  # the modules parsed ahead: never walked by the workers' GC (nor their pages copied)
    batches = _batches(sources, files, workers)
    results: dict[int, list[SourceResult]] = {}
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method)) as pool:
            jobs = [([sources[i] for i in batch], run, analyse) for batch in batches]
            for batch, done in zip(batches, pool.map(_lint_batch, jobs), strict=True):
                results.update(zip(batch, done, strict=True))
    finally:
        gc.unfreeze()
    for i in range(len(sources)):
        yield results[i]


def _parse_ahead(sources: list[Source], contents: list[bytes | None], run: RunPlan) -> None:
    """The Python modules with prompt text parsed before the workers fork, which then share them:
    each module parsed once per run, whichever worker checks it and whichever imports it; and,
    when there is any, the project's words, which every worker checking one reads."""
    from prefixlint.python import has_prompt_shapes, parse_ahead, read_project_ahead

    full = prompts = False
    for source, data in zip(sources, contents, strict=True):
        if source.kind != "python" or data is None:
            continue
        try:
            text = decode_source(data)
        except ValueError:
            continue
        full = full or not parse_ahead(source.path, text, run.python)
        prompts = prompts or has_prompt_shapes(source.path, text, run.python)  # the screen's memo
        if full and prompts:
            break
    if prompts:
        read_project_ahead(run.python)


def _lint_batch(job: tuple[list[Source], RunPlan, Analyse]) -> list[list[SourceResult]]:
    sources, run, analyse = job
    return [analyse(source, run) for source in sources]


def _batches(sources: list[Source], files: list[str | None], workers: int) -> list[list[int]]:
    """Indices of `sources` in batches for pool workers, about one per worker. Sources that share a
    tokenizer file stay together, as a worker loads every tokenizer it meets (~0.5 s each), and
    each group is cut, in path order, into one contiguous run per worker of about equal size: a
    package's modules and the modules they import land in the same worker, which parses each once
    (interleaved small batches had every worker parse nearly every imported module of the tree)."""
    groups: dict[str | None, list[int]] = {}
    for i in sorted(range(len(sources)), key=lambda i: sources[i].path):
        groups.setdefault(files[i], []).append(i)
    batches = []
    for group in groups.values():
        sizes = [_size(sources[i].path) for i in group]
        total, filled, start, cut = sum(sizes), 0, 0, 1
        for n, size in enumerate(sizes):
            filled += size
            if cut < workers and filled >= total * cut / workers:
                batches.append(group[start : n + 1])
                start = n + 1
                while cut < workers and filled >= total * cut / workers:
                    cut += 1
        if start < len(group):
            batches.append(group[start:])
    return sorted(batches, key=len, reverse=True)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) + 1
    except OSError:
        return 1
