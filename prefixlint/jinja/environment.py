"""Render chat templates exactly as Hugging Face transformers (and so vLLM and SGLang) do.

The environment mirrors `transformers.utils.chat_template_utils._cached_compile_jinja_template`:
`ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks)`, the `loopcontrols` and `generation`
extensions, HF's `tojson`, `raise_exception`, `strftime_now`, a safe `dict` and `namespace`. The one
difference is on purpose: `strftime_now` reads a clock the linter sets, never the machine's.
Limits stop hostile templates (tests/test_sandbox.py, tests/test_limits.py): time per render and per
template, output size, the size of any value built while rendering (strings, lists, integers), memory,
recursion depth. A render over a limit raises `RenderLimitError`; attribute walks to `__class__` and
the like raise `SecurityError` where they happen instead of rendering as an empty string.
"""

from __future__ import annotations

import functools
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from prefixlint.core.limits import Limits  # defined without jinja2, so Options needs no jinja2 import

TEMPLATE_FILENAME = "<template>"


class RenderLimitError(ValueError):
    """A render (or a compile) ran over a limit. A ValueError, so that code handling a bad
    template handles it too."""


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
                "Chat templates cannot store underscore-prefixed attributes on a namespace, "
                f"but got {name!r}."
            )


_FORMAT_NUMBER = re.compile(r"\d+")
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})


class _LimitedSandbox(ImmutableSandboxedEnvironment):
    """HF's sandbox, plus caps on every value a template builds: the results of operators, calls,
    filters and `~`, checked before a known amplifier runs (a width, a replace, a join) and after
    anything else, so growth stops at the cap instead of at the machine's memory."""

    intercepted_binops = frozenset({"*", "**", "+", "%", "//"})
    max_value_len = 2_000_000
    max_int_bits = 65_536

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Block bodies (`{% set %}…{% endset %}`, macros, `{% filter %}`) join with `environment.concat`.
        self.concat = self.checked_join(ImmutableSandboxedEnvironment.concat)

    def check_value(self, value: Any) -> Any:
        if isinstance(value, (str, list, tuple, dict, bytes)) and len(value) > self.max_value_len:
            raise RenderLimitError(f"a value longer than {self.max_value_len:,} items")
        if isinstance(value, int) and value.bit_length() > self.max_int_bits:
            raise RenderLimitError(f"an integer larger than {self.max_int_bits:,} bits")
        return value

    def _check_size(self, size: int) -> None:
        if size > self.max_value_len:
            raise RenderLimitError(f"a value longer than {self.max_value_len:,} items")

    def _check_format(self, fmt: str, args: Any = ()) -> None:
        # Widths and precisions in a format string allocate before anything can be checked.
        if any(int(n) > self.max_value_len for n in _FORMAT_NUMBER.findall(fmt) if len(n) < 40):
            raise RenderLimitError("a format width beyond the value limit")
        values = args if isinstance(args, (tuple, list)) else (args,)
        if "*" in fmt and any(isinstance(v, int) and abs(v) > self.max_value_len for v in values):
            raise RenderLimitError("a format width beyond the value limit")

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if (
            operator == "**"
            and isinstance(left, int)
            and isinstance(right, int)
            and right > 1
            and (right > self.max_int_bits or max(left.bit_length(), 1) * right > self.max_int_bits * 2)
        ):
            raise RenderLimitError("an exponent beyond the integer limit")
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
                    self._check_size(len(seq) * n)
        if operator == "%" and isinstance(left, str):
            self._check_format(left, right)
        return self.check_value(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str):
            __self._precheck_str_method(owner, getattr(__obj, "__name__", ""), args, kwargs)
        return __self.check_value(super().call(__context, __obj, *args, **kwargs))

    def _precheck_str_method(self, s: str, name: str, args: tuple, kwargs: dict) -> None:
        first = args[0] if args else next(iter(kwargs.values()), None)
        if name in _WIDTH_METHODS and isinstance(first, int):
            self._check_size(first)
        elif name == "expandtabs":
            self._check_size(len(s) + s.count("\t") * (first if isinstance(first, int) else 8))
        elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
            self._check_size(len(s) + s.count(args[0]) * max(0, len(args[1]) - len(args[0])))
        elif name == "join" and isinstance(first, (list, tuple)):
            self._check_size(len(s) * len(first) + sum(len(x) for x in first if isinstance(x, str)))
        elif name in ("format", "format_map"):
            self._check_format(s, args)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        # `'{:>999999999}'.format(x)` allocates in C, where no time limit can interrupt it.
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt = value.__self__

        def checked(*args: Any, **kwargs: Any) -> str:
            self._check_format(fmt, args + tuple(kwargs.values()))
            return self.check_value(wrapped(*args, **kwargs))

        return checked

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # HF renders `''.__class__` alone as an empty string; a linter says what the template tried.
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe.")

    def checked_join(self, join: Callable[[Any], str]) -> Callable[[Any], str]:
        """`~` and block bodies (`{% set %}…`, macros): join, then check the size."""

        def checked(parts: Any) -> str:
            return self.check_value(join(parts))

        return checked

    def checked_filter(self, func: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(func)  # keeps `jinja_pass_arg`, so the filter still gets its context
        def checked(*args: Any, **kwargs: Any) -> Any:
            values = [a for a in args if isinstance(a, str)]
            if name in ("center", "indent") and len(args) >= 2 and isinstance(args[-1], int):
                self._check_size(args[-1] * max(1, values[-1].count("\n") + 1 if values else 1))
            if name == "replace" and len(values) >= 3:
                s, old, new = values[-3:]
                self._check_size(len(s) + s.count(old) * max(0, len(new) - len(old)))
            if name == "tojson" and isinstance(kwargs.get("indent", args[2] if len(args) > 2 else 0), int):
                self._check_size(kwargs.get("indent", args[2] if len(args) > 2 else 0))
            if name == "format" and values:
                self._check_format(values[0], args[1:])
            return self.check_value(func(*args, **kwargs))

        return checked


class _LimitedTemplate(jinja2.Template):
    """Compiled templates join `~` operands with runtime helpers the sandbox never sees; swap in
    size-checked ones."""

    @classmethod
    def _from_namespace(
        cls, environment: jinja2.Environment, namespace: Any, globals: Any
    ) -> jinja2.Template:
        if isinstance(environment, _LimitedSandbox):
            for name in ("str_join", "markup_join"):
                if name in namespace:
                    namespace[name] = environment.checked_join(namespace[name])
        return super()._from_namespace(environment, namespace, globals)


_LimitedSandbox.template_class = _LimitedTemplate


def make_environment(
    clock: RenderClock, limits: Limits | None = None, loader: jinja2.BaseLoader | None = None
) -> ImmutableSandboxedEnvironment:
    """The HF environment with prefixlint's limits. `loader`: only for app prompt templates (a
    chat template is served without one, so it gets none: renders stay byte-identical)."""
    limits = limits or Limits()
    env = _LimitedSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[GenerationTag, jinja2.ext.loopcontrols],
        loader=loader,
    )
    env.max_value_len = limits.output_chars or sys.maxsize  # 0: no limit
    env.max_int_bits = limits.int_bits or sys.maxsize
    env.filters["tojson"] = _tojson
    env.filters = {name: env.checked_filter(f, name) for name, f in env.filters.items()}
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


class time_limit:  # noqa: N801 - used like the context-manager function it replaced
    """Raise RenderLimitError after `seconds` (main thread only; elsewhere no limit). Not nestable.

    The alarm repeats every 50 ms until the block ends: an exception raised while a gc callback or
    a `__del__` runs is swallowed by Python, and a one-shot alarm would leave the render unbounded.
    It only raises while the block's frame is on the stack, so a late alarm never escapes it."""

    REPEAT = 0.05

    def __init__(self, seconds: float, what: str = "render") -> None:
        self.seconds, self.what = seconds, what
        self.previous: Any = None
        self.frame: Any = None

    def __enter__(self) -> time_limit:
        if threading.current_thread() is threading.main_thread() and self.seconds > 0:
            self.frame = sys._getframe(1)
            self.previous = signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.seconds, self.REPEAT)
        return self

    def _on_alarm(self, signum: int, frame: Any) -> None:
        while frame is not None and frame is not self.frame:
            frame = frame.f_back
        if frame is None:  # the block is over: a late alarm
            self._disarm()
            return
        raise RenderLimitError(f"{self.what} took longer than {self.seconds:g} s")

    def _disarm(self) -> None:
        if self.frame is not None:
            self.frame = None
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)

    def __exit__(self, *exc: object) -> None:
        self._disarm()


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as fh:
            import resource

            return int(fh.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, ImportError, IndexError):
        return None


@contextmanager
def memory_limit(extra_bytes: int) -> Iterator[None]:
    """Let the process grow by at most `extra_bytes` of address space (Linux; elsewhere no limit),
    so a single huge allocation (`'a'|center(10**10)`) fails with MemoryError instead of swapping."""
    current = _address_space() if extra_bytes > 0 else None
    if current is None:
        yield
        return
    import resource

    previous = resource.getrlimit(resource.RLIMIT_AS)
    wanted = current + extra_bytes
    if previous[1] != resource.RLIM_INFINITY:
        wanted = min(wanted, previous[1])
    try:
        resource.setrlimit(resource.RLIMIT_AS, (wanted, previous[1]))
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, previous)


@contextmanager
def recursion_limit(frames: int) -> Iterator[None]:
    """Allow `frames` more Python frames than the caller has: deep recursion (macros, nested
    expressions) stops with RecursionError well before the C stack does."""
    if frames <= 0:
        yield
        return
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(depth + frames, 100))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def render_limited(template: jinja2.Template, context: dict[str, Any], limits: Limits) -> str:
    """Render under the time, output-size, memory and recursion limits."""
    parts: list[str] = []
    size = 0
    try:
        with time_limit(limits.seconds), memory_limit(limits.memory_bytes), recursion_limit(limits.recursion):
            for chunk in template.generate(**context):
                size += len(chunk)
                if limits.output_chars and size > limits.output_chars:
                    raise RenderLimitError(f"output longer than {limits.output_chars:,} characters")
                parts.append(chunk)
    except MemoryError:
        parts.clear()
        raise RenderLimitError(
            f"render needed more than {limits.memory_bytes / 2**20:,.0f} MB of memory"
        ) from None
    return "".join(parts)


class RenderBudget:
    """What one template may still spend. Once a render runs over a limit, later renders of the
    same template fail at once with the same error: a bomb costs one time limit, not one per
    scenario and variant."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.spent = 0.0
        self.tripped: str | None = None

    def run(self, render: Callable[[Limits], Any]) -> Any:
        """Call `render` with the limits that remain (its time limit never exceeds the budget)."""
        if self.tripped is not None:
            raise RenderLimitError(self.tripped)
        seconds = self.limits.seconds
        if self.limits.template_seconds > 0:
            remaining = self.limits.template_seconds - self.spent
            if remaining <= 0:
                self.tripped = f"renders took longer than {self.limits.template_seconds:g} s in total"
                raise RenderLimitError(self.tripped)
            seconds = min(seconds, remaining) if seconds > 0 else remaining
        start = time.monotonic()  # spends a budget; never decides a finding
        try:
            return render(replace(self.limits, seconds=seconds))
        except RenderLimitError as exc:
            self.tripped = str(exc)
            raise
        finally:
            self.spent += time.monotonic() - start
