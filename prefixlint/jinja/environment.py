"""Render chat templates exactly as Hugging Face transformers (and so vLLM and SGLang) do.

The environment mirrors `transformers.utils.chat_template_utils._cached_compile_jinja_template`:
`ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks)`, the `loopcontrols` and `generation`
extensions, HF's `tojson`, `raise_exception`, `strftime_now`, a safe `dict` and `namespace`. The one
difference is on purpose: `strftime_now` reads a clock the linter sets, never the machine's.
Limits (time, output size) stop hostile templates; a render over a limit raises `RenderLimitError`.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATE_FILENAME = "<template>"


class RenderLimitError(Exception):
    """A render ran over the time or output-size limit."""


@dataclass(frozen=True)
class Limits:
    seconds: float = 5.0
    output_chars: int = 2_000_000


@dataclass(frozen=True)
class ClockCall:
    """One `strftime_now(fmt)` call: the template line that made it, the format and what it returned."""

    line: int
    fmt: str
    value: str


@dataclass
class RenderClock:
    """The clock `strftime_now` reads. The linter sets `now`; calls are recorded with their line."""

    now: datetime
    calls: list[ClockCall] = field(default_factory=list)

    def strftime_now(self, fmt: str) -> str:
        value = self.now.strftime(str(fmt))
        self.calls.append(ClockCall(_calling_template_line(), str(fmt), value))
        return value


def _calling_template_line() -> int:
    """The template line of the innermost template frame on the stack (0 when unknown)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == TEMPLATE_FILENAME:
            template = frame.f_globals.get("__jinja_template__")
            if template is not None:
                return template.get_corresponding_lineno(frame.f_lineno)
            return 0
        frame = frame.f_back
    return 0


class GenerationTag(jinja2.ext.Extension):
    """`{% generation %}…{% endgeneration %}`: transformers' assistant-mask tag; renders its body."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_generation_support")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _generation_support(self, caller: jinja2.runtime.Macro) -> str:
        return caller()


def _raise_exception(message: Any) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    # HF's tojson: no HTML escaping, keys in the caller's order, options passed through.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class _TemplateDict:
    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    # As in transformers: namespaces refuse underscore-prefixed attributes.
    def __init__(*args: Any, **kwargs: Any) -> None:
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}."
            )


class _LimitedSandbox(ImmutableSandboxedEnvironment):
    """HF's sandbox, plus a cap on the size of strings and lists built by `*` and `+`."""

    intercepted_binops = frozenset({"*", "**", "+"})
    max_value_len = 2_000_000

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int) and right > 4096:
            raise RenderLimitError("exponent too large")
        if operator == "*" and isinstance(left, (str, list, tuple)) and isinstance(right, int):
            if len(left) * right > self.max_value_len:
                raise RenderLimitError("value too large")
        if operator == "*" and isinstance(right, (str, list, tuple)) and isinstance(left, int):
            if len(right) * left > self.max_value_len:
                raise RenderLimitError("value too large")
        result = super().call_binop(context, operator, left, right)
        if isinstance(result, (str, list)) and len(result) > self.max_value_len:
            raise RenderLimitError("value too large")
        return result


def make_environment(clock: RenderClock) -> ImmutableSandboxedEnvironment:
    env = _LimitedSandbox(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = clock.strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    return env


# Reasoning names transformers copies into one another before rendering (transformers >= 5).
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def alias_reasoning_fields(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fill `reasoning_content` and `thinking` from whichever reasoning field a message has."""
    out = []
    for message in messages:
        reasoning = next((message[k] for k in REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise RenderLimitError after `seconds` (main thread only; elsewhere no limit)."""
    import threading

    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise RenderLimitError(f"render took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def render_limited(template: jinja2.Template, context: dict[str, Any], limits: Limits) -> str:
    """Render under the time and output-size limits."""
    parts: list[str] = []
    size = 0
    with time_limit(limits.seconds):
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > limits.output_chars:
                raise RenderLimitError(f"output longer than {limits.output_chars:,} characters")
            parts.append(chunk)
    return "".join(parts)
