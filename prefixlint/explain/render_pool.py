"""One job: render a log's requests in worker processes, so that rendering (pure Python, the
largest cost once prompts are tokenized segment by segment) uses every core.

Workers are spawned, not forked: a fork would copy a loaded tokenizer's thread pool, which
`tokenizers` refuses to use (it warns on stderr and runs single-threaded). Each worker compiles the
same template from its source; compiling is deterministic, so the trace it sends back (where each
output piece starts, and which template piece produced it) maps onto the parent's compiled
template unchanged. Renders stay bounded as in the parent: each worker applies the template's
time, memory and recursion limits to its own renders.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections import deque
from collections.abc import Iterator
from typing import Any

from prefixlint.explain.reading import Skip, Skips
from prefixlint.explain.requests import Rendered, Renderer, Request, RequestError
from prefixlint.jinja.template import ChatTemplate
from prefixlint.jinja.tracer import TracedRender

_renderer: Renderer | None = None  # in a worker: its own renderer


def _start(fields: dict[str, Any] | None, max_bytes: int) -> None:
    global _renderer
    _renderer = Renderer(ChatTemplate(**fields) if fields is not None else None, max_bytes)


def _render(chunk: list[tuple[int, Request]]) -> list[tuple[str, Any]]:
    """("ok", (text, trace)) or ("error", (reason, detail)) per request, in order."""
    assert _renderer is not None
    out: list[tuple[str, Any]] = []
    for _number, request in chunk:
        try:
            rendered = _renderer.render(request)
        except RequestError as exc:  # the template raised, or the prompt is over a limit
            out.append(("error", (exc.reason, str(exc))))
            continue
        traced = rendered.traced
        out.append(
            ("ok", (rendered.text, (traced._starts, traced._piece_ids) if traced is not None else None))
        )
    return out


class RenderPool:
    """Worker processes rendering chunks of requests, a bounded number in flight."""

    def __init__(self, renderer: Renderer, workers: int) -> None:
        self.renderer = renderer
        template = renderer.template if renderer.user_template else None
        fields = (
            {f.name: getattr(template, f.name) for f in dataclasses.fields(template) if f.init}
            if template is not None
            else None
        )
        self.window = 2 * workers + 2  # chunks in flight: every worker busy, memory bounded
        self.pool = multiprocessing.get_context("spawn").Pool(workers, _start, (fields, renderer.max_bytes))

    def __enter__(self) -> RenderPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.terminate()
        self.pool.join()

    def render(
        self, chunks: Iterator[list[tuple[int, Request]]], errors: Skips
    ) -> Iterator[list[tuple[int, Rendered]]]:
        """The chunks rendered, in order; requests whose render raised are counted in `errors`."""
        pending: deque[tuple[list[tuple[int, Request]], Any]] = deque()
        for chunk in chunks:
            pending.append((chunk, self.pool.apply_async(_render, (chunk,))))
            if len(pending) >= self.window:
                yield self._collect(*pending.popleft(), errors)
        while pending:
            yield self._collect(*pending.popleft(), errors)

    def _collect(
        self, chunk: list[tuple[int, Request]], job: Any, errors: Skips
    ) -> list[tuple[int, Rendered]]:
        traced = self.renderer.template.traced if self.renderer.user_template else None
        out = []
        for (number, request), (status, value) in zip(chunk, job.get(), strict=True):
            if status == "error":
                errors.add(number, Skip(*value))
                continue
            text, trace = value
            rendered_trace = TracedRender(traced, text, *trace) if trace is not None and traced else None
            out.append((number, Rendered(request, text, rendered_trace)))
        return out
