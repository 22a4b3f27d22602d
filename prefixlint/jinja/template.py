"""A chat template ready to analyse: its source, where it came from, the special tokens and extra
variables it needs, and a traced render that mirrors `tokenizer.apply_chat_template`."""

from __future__ import annotations

import copy
import json
import re
import traceback
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

import jinja2

from prefixlint.core.controls import control_strings
from prefixlint.core.findings import Span
from prefixlint.jinja.environment import (
    TEMPLATE_FILENAME,
    ClockCall,
    Limits,
    RenderBudget,
    RenderClock,
    alias_reasoning_fields,
    make_environment,
    recursion_limit,
    time_limit,
)
from prefixlint.jinja.inputs import BASE_TIME, TOOLS
from prefixlint.jinja.tracer import TracedRender, TracedTemplate
from prefixlint.jinja.variables import sample_values

# Names the serving stack always passes, or that the environment defines.
STACK_INPUTS = frozenset({"messages", "tools", "documents", "add_generation_prompt"})
ENV_GLOBALS = frozenset(
    {"raise_exception", "strftime_now", "namespace", "dict", "range", "lipsum", "cycler", "joiner"}
)
_UNDEFINED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)' is undefined")


def unread_variables(given: list[str], reads: list[list[str]]) -> list[str]:
    """A warning for each `--var` name that no template checked reads (`reads`: each template's
    variables), naming the ones they do read and the closest to a misspelt name."""
    import difflib

    known = sorted({n for names in reads for n in names})
    out = []
    for name in given:
        if name in known:
            continue
        if not reads:
            out.append(f"--var {name}: no template was checked, so nothing reads it")
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        listed = ", ".join(known[:20]) + (", …" if len(known) > 20 else "") if known else "none"
        noun = "the template reads" if len(reads) == 1 else "the templates read"
        out.append(f"--var {name}: no template checked reads `{name}`{hint} ({noun}: {listed})")
    return out


@dataclass
class ChatTemplate:
    """One chat template. `line_offset`/`fixed_line` map template lines to lines of the file that
    holds it (a tokenizer_config.json holds the whole template on one JSON line)."""

    source: str
    path: str
    name: str = ""
    special_tokens: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    fixed_line: int | None = None
    extra_kwargs: dict[str, Any] = field(default_factory=dict)
    setup_notes: list[str] = field(default_factory=list)
    # Rendering a stream of independent requests (`explain --log`): each render gets its own time
    # budget and nothing is memoized, so a long log is neither cut off nor kept in memory.
    streaming: bool = False

    def __post_init__(self) -> None:
        self.clock = RenderClock(BASE_TIME)
        self.env = make_environment(self.clock, self.limits)
        self.budget = RenderBudget(self.limits)
        # Successful renders by _render_key; failures are not kept (a limit may depend on time).
        self._renders: dict[str, tuple[TracedRender, list[ClockCall]]] = {}

    def _compile(self) -> TracedTemplate:
        try:
            with (
                time_limit(self.limits.seconds, "compiling"),
                recursion_limit(self.limits.recursion),
                warnings.catch_warnings(),
            ):
                # Python warns on odd generated code (`{{ 1[0] }}`); the render reports it properly.
                warnings.simplefilter("ignore", SyntaxWarning)
                return TracedTemplate(self.env, self.source)
        except SyntaxError as exc:  # Python's, on the code Jinja generated: `{% break %}` outside a loop
            raise jinja2.TemplateSyntaxError(str(exc.msg), self._generated_code_line(exc)) from None

    def _generated_code_line(self, exc: SyntaxError) -> int:
        """The template line behind a SyntaxError in the Python code Jinja generates for it."""
        try:
            code = str(self.env.compile(self.source, raw=True))
            compile(code, TEMPLATE_FILENAME, "exec")
            return 1
        except SyntaxError as err:
            python_line = err.lineno or 0
        except Exception:
            return 1
        m = re.search(r"^debug_info = '([^']*)'", code, re.MULTILINE)
        pairs = [part.split("=") for part in m.group(1).split("&") if "=" in part] if m else []
        lines = [int(t) for t, py in pairs if int(py) <= python_line]  # template=python, in order
        return lines[-1] if lines else 1

    @cached_property
    def traced(self) -> TracedTemplate:
        """Compile once (raises jinja2.TemplateSyntaxError; RenderLimitError, a ValueError, when
        compiling runs over the time limit)."""
        return self._compile()

    @cached_property
    def external_variables(self) -> frozenset[str]:
        """Variables the template reads that neither the stack nor the environment provides."""
        return frozenset(
            n
            for n in self.traced.undeclared
            if n not in STACK_INPUTS
            and n not in ENV_GLOBALS
            and not n.endswith("_token")
            and n != "additional_special_tokens"
        )

    @property
    def reads(self) -> list[str]:
        """The variables a caller can set (`--var`): everything the template reads that the
        environment does not define. Raises what compiling raises."""
        names = self.traced.undeclared
        return sorted(n for n in names if n not in ENV_GLOBALS and n not in self.env.globals)

    @cached_property
    def controls(self) -> tuple[str, ...]:
        """The template's control strings (prefixlint/core/controls.py), longest first."""
        return control_strings(self.traced.source, special=self.special_tokens.values())

    def with_variables(self, variables: dict[str, Any]) -> ChatTemplate:
        """The same template with `variables` fixed for every render on top of its own, as a user
        passes them with `--var`; it shares this one's compiled code and renders."""
        other = copy.copy(self)
        other.extra_kwargs = {**self.extra_kwargs, **variables}
        other.setup_notes = list(self.setup_notes)
        return other

    def span(self, line: int, column: int = 1) -> Span:
        if self.fixed_line is not None:
            return Span(self.path, self.fixed_line, 1)
        return Span(self.path, line, column)

    def template_span(self, line: int, column: int = 1) -> Span:
        """A place in the template's own lines (Diagnostic.origin); for a template inside a JSON
        file, whose lines are not the file's, the path is `path[name]` (`path[]` for the only one)."""
        return Span(self.path if self.fixed_line is None else f"{self.path}[{self.name}]", line, column)

    def where(self, line: int) -> str:
        """How a message names a template line ("line 9", or "template line 9" inside a JSON file)."""
        if self.fixed_line is None:
            return f"line {line}"
        return f"line {line} of the chat template{f' {self.name!r}' if self.name else ''}"

    def context(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The variables `apply_chat_template` passes: special tokens, then the request."""
        return {
            **self.special_tokens,
            **self.extra_kwargs,
            **kwargs,
            "messages": alias_reasoning_fields(messages),
            "tools": tools,
            "documents": None,
            "add_generation_prompt": add_generation_prompt,
        }

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        now: datetime = BASE_TIME,
        **kwargs: Any,
    ) -> TracedRender:
        """Render as the serving stack would, with the clock set to `now`."""
        context = self.context(messages, tools=tools, add_generation_prompt=add_generation_prompt, **kwargs)
        if self.streaming:
            self.budget = RenderBudget(self.limits)
        key = None if self.streaming else self._render_key(context, now)
        if key is not None and key in self._renders and self.budget.tripped is None:
            traced, calls = self._renders[key]
            self.clock.now, self.clock.calls = now, list(calls)
            return traced
        self.clock.now = now
        self.clock.calls.clear()
        traced = self.budget.run(lambda limits: self.traced.render(context, limits))
        if key is not None:
            self._renders[key] = (traced, list(self.clock.calls))
        return traced

    def _render_key(self, context: dict[str, Any], now: datetime) -> str | None:
        """What a render's output can depend on: the context variables the template reads (a
        template that never reads `tools` renders the same with and without them) and, if it calls
        `strftime_now`, the clock. The analyses ask for many requests that are the same once
        reduced to these; each is rendered once."""
        reads = self.traced.undeclared | self.env.globals.keys()
        used = {k: v for k, v in context.items() if k in reads}
        clock = now.isoformat() if "strftime_now" in self.traced.source else None
        try:
            return json.dumps([used, clock], sort_keys=True)
        except (TypeError, ValueError):
            return None  # not plain data: no safe key, so no reuse

    def supply_required_variables(self, messages: list[dict[str, Any]], tools: list | None) -> None:
        """Give values to variables the template cannot render without (e.g. `functions`), so the
        analysis can go on; each one is noted for the report. A template that does not compile
        is left alone (the analysis reports it as PFX001)."""
        try:
            attempts = len(self.external_variables)
        except jinja2.TemplateSyntaxError:
            return
        for _ in range(attempts):
            try:
                self.render(messages, tools=tools)
                return
            except jinja2.UndefinedError as exc:
                m = _UNDEFINED.search(str(exc))
                if not m or m.group(1) not in self.external_variables or m.group(1) in self.extra_kwargs:
                    return
                name = m.group(1)
                self.extra_kwargs[name] = placeholder_value(name)
                self.setup_notes.append(
                    f"raises without `{name}`; analysed with {name}={self.extra_kwargs[name]!r:.40}"
                )
            except Exception:
                return


def placeholder_value(name: str) -> Any:
    """A plausible value for a variable the template requires, chosen by its name."""
    if "tool" in name.lower() or "function" in name.lower():
        return json.dumps(TOOLS, indent=4)
    return sample_values(name)[0]


def error_line(exc: BaseException) -> int:
    """The template line an exception was raised at (Jinja rewrites tracebacks to template lines)."""
    lineno = getattr(exc, "lineno", None)
    if isinstance(exc, jinja2.TemplateSyntaxError) and lineno:
        return int(lineno)
    line = 0
    for frame, tb_line in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == TEMPLATE_FILENAME:
            line = tb_line
    return line or 1


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:240] if text else type(exc).__name__
