"""One job: render a log's requests in worker processes, so that rendering (pure Python, the
largest cost once prompts are tokenized segment by segment) uses every core.

Workers are spawned, not forked: a fork would copy a loaded tokenizer's thread pool, which
`tokenizers` refuses to use (it warns on stderr and runs single-threaded). Each worker compiles the
same template from its source; compiling is deterministic, so the trace it sends back (where each
output piece starts, and which template piece produced it) maps onto the parent's compiled
template unchanged. Renders stay bounded as in the parent: each worker applies the template's
time, memory and recursion limits to its own renders.

A worker can die outright (the OOM killer's SIGKILL, a crash in a library): the pool then breaks
and every chunk in flight is lost. The chunks not yet answered are rendered again by a new pool,
in order, so the report is the one a run without the death gives; after MAX_RESTARTS deaths the
run stops with RenderWorkerDied, naming what happened, rather than retrying for ever. Never a hang:
a multiprocessing.Pool restarts a dead worker but never answers its chunk.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from prefixlint.explain.reading import Skip, Skips
from prefixlint.explain.requests import Rendered, Renderer, Request, RequestError
from prefixlint.jinja.template import ChatTemplate
from prefixlint.jinja.tracer import TracedRender

_renderer: Renderer | None = None  # in a worker: its own renderer


def template_fields(renderer: Renderer) -> tuple[dict[str, Any], bool]:
    """What rebuilds `renderer`'s template in another process (its dataclass fields: the source,
    the `--var` kwargs, the limits) and whether it is the user's (a default template's renders are
    not traced back to it)."""
    template = renderer.template
    fields = {f.name: getattr(template, f.name) for f in dataclasses.fields(template) if f.init}
    return fields, renderer.user_template


def renderer_of(fields: dict[str, Any], user_template: bool, max_bytes: int) -> Renderer:
    """The renderer `template_fields` describes, rebuilt in a worker."""
    renderer = Renderer(ChatTemplate(**fields), max_bytes)
    renderer.user_template = user_template
    return renderer


def _start(fields: dict[str, Any], user_template: bool, max_bytes: int) -> None:
    global _renderer
    _renderer = renderer_of(fields, user_template, max_bytes)


def render_chunk(renderer: Renderer, chunk: list[tuple[int, Request]]) -> list[tuple[str, Any]]:
    """("ok", (text, trace)) or ("error", (reason, detail)) per request, in order: what a worker
    sends back, as `rebuild` takes it."""
    out: list[tuple[str, Any]] = []
    for _number, request in chunk:
        try:
            rendered = renderer.render(request)
        except RequestError as exc:  # the template raised, or the prompt is over a limit
            out.append(("error", (exc.reason, str(exc))))
            continue
        traced = rendered.traced
        out.append(
            ("ok", (rendered.text, (traced._starts, traced._piece_ids) if traced is not None else None))
        )
    return out


def _render(chunk: list[tuple[int, Request]]) -> list[tuple[str, Any]]:
    assert _renderer is not None
    return render_chunk(_renderer, chunk)


def rebuild(
    renderer: Renderer, chunk: list[tuple[int, Request]], answers: list[tuple[str, Any]], errors: Skips
) -> list[tuple[int, Rendered]]:
    """A worker's `render_chunk` answers as this process's rendered requests (traces mapped onto
    its own compiled template); a request whose render raised is counted in `errors`."""
    traced = renderer.template.traced if renderer.user_template else None
    out = []
    for (number, request), (status, value) in zip(chunk, answers, strict=True):
        if status == "error":
            errors.add(number, Skip(*value))
            continue
        text, trace = value
        rendered_trace = TracedRender(traced, text, *trace) if trace is not None and traced else None
        out.append((number, Rendered(request, text, rendered_trace)))
    return out


MAX_RESTARTS = 3  # worker deaths survived per run; the next one ends it


class RenderWorkerDied(Exception):
    """Render workers kept dying; the message says how (a signal, an exit status) and how often."""


def _how_they_died(pool: ProcessPoolExecutor) -> str:
    """What the pool's dead workers' exit statuses say ("killed by SIGKILL"), as far as it is known."""
    import signal

    # The executor keeps its process objects after it breaks; no public API says more. Its
    # manager thread reaps them (a status read while it does so is None) and sends SIGTERM to the
    # survivors: wait for it, and name a death the pool did not cause itself.
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(5)
    processes = getattr(pool, "_processes", None) or {}
    codes = [p.exitcode for p in processes.values() if p.exitcode not in (None, 0)]
    if not codes:
        return "ended abruptly"
    code = next((c for c in codes if c != -signal.SIGTERM), codes[0])
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        oom = " (as the out-of-memory killer sends)" if name == "SIGKILL" else ""
        return f"killed by {name}{oom}"
    return f"exited with status {code}"


class RenderPool:
    """Worker processes rendering chunks of requests, a bounded number in flight; a chunk lost with
    a dead worker is rendered again (see the module docstring)."""

    def __init__(self, renderer: Renderer, workers: int) -> None:
        self.renderer = renderer
        self._fields, self._user_template = template_fields(renderer)
        self.workers = workers
        self.window = 2 * workers + 2  # chunks in flight: every worker busy, memory bounded
        self.deaths: list[str] = []  # how each broken pool's worker died, in order
        self.pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("spawn")
        args = (self._fields, self._user_template, self.renderer.max_bytes)
        return ProcessPoolExecutor(self.workers, mp_context=context, initializer=_start, initargs=args)

    def __enter__(self) -> RenderPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop(self.pool)

    @staticmethod
    def _stop(pool: ProcessPoolExecutor) -> None:
        """Stop at once: a run that ends early (an error, Ctrl-C) must not wait for chunks in flight."""
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(5)

    def _restart(self) -> None:
        """A worker died and took the pool with it: note how, and start a new pool (or give up)."""
        self.deaths.append(_how_they_died(self.pool))
        self._stop(self.pool)
        if len(self.deaths) > MAX_RESTARTS:
            raise RenderWorkerDied(
                f"a render worker died {len(self.deaths)} times (the last one {self.deaths[-1]}); "
                "the log was not read to its end"
            )
        import sys

        # Said where the progress bar goes: the report itself is the same as without the death.
        warning = f"a render worker {self.deaths[-1]}; the requests it held are rendered again"
        sys.stderr.write(f"prefixlint: warning: {warning}\n")
        self.pool = self._new_pool()

    def _submit(self, chunk: list[tuple[int, Request]]) -> Future:
        while True:
            try:
                return self.pool.submit(_render, chunk)
            # It broke while idle, or as this submit started a worker: the pool's manager thread
            # closes the pipes a new worker is handed (OSError "handle is closed", or ValueError
            # "bad value(s) in fds_to_keep" from the spawn itself). A new pool takes the chunk.
            except (BrokenProcessPool, OSError, ValueError):
                self._restart()

    def render(
        self, chunks: Iterator[list[tuple[int, Request]]], errors: Skips
    ) -> Iterator[list[tuple[int, Rendered]]]:
        """The chunks rendered, in order; requests whose render raised are counted in `errors`."""
        pending: deque[tuple[list[tuple[int, Request]], Future]] = deque()
        for chunk in chunks:
            pending.append((chunk, self._submit(chunk)))
            if len(pending) >= self.window:
                yield self._collect(pending, errors)
        while pending:
            yield self._collect(pending, errors)

    def _collect(
        self, pending: deque[tuple[list[tuple[int, Request]], Future]], errors: Skips
    ) -> list[tuple[int, Rendered]]:
        """The oldest chunk in flight, rendered; if the pool broke, every chunk it had not answered
        is submitted again to a new one, in order, and the oldest is waited for again."""
        while True:
            chunk, job = pending[0]
            try:
                answers = job.result()
                break
            except BrokenProcessPool:
                self._restart()
                for i, (lost, future) in enumerate(pending):
                    if future.cancelled() or not future.done() or future.exception() is not None:
                        pending[i] = (lost, self._submit(lost))
        pending.popleft()
        return rebuild(self.renderer, chunk, answers, errors)
