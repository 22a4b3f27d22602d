"""The analysis of an app prompt template (prefixlint/jinja/classify.py says which files are).

An app renders such a template itself, with its own variables, to get one prompt (a system
prompt, one user message). So there are no conversations and no turns here: every variable the
template (or a file it includes) reads gets a value, then one variable at a time gets another
value, each render is tokenized, and the first divergent token is traced to the template span
(in whichever file) that printed it. Whether a variable varies per request is told by its name
(prefixlint/jinja/variables.py) or by the config's `variables.static`/`variables.dynamic`:

- an id, a machine value or user data by name -> PFX102 / PFX104 / PFX105;
- named like the current date or time (`current_date`, `now`, `today`) -> PFX101, a warning at most:
  where the value is filled in is not visible here, only the name;
- a name that says nothing (`persona`, `tools_description`) is app configuration, held fixed.

A finding needs static text after the value; one that costs no whole cache block of the engine
(prefixlint.engines.severity.loss_severity) is info at most.
"""

from __future__ import annotations

import contextlib
import json
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jinja2

from prefixlint.core.findings import Diagnostic, Severity, SourceResult, Span
from prefixlint.core.words import counted
from prefixlint.engines import Engine
from prefixlint.jinja.analyze import below_engine_minimum, divergence_evidence
from prefixlint.jinja.environment import (
    TEMPLATE_FILENAME,
    RenderBudget,
    RenderClock,
    make_environment,
    recursion_limit,
    time_limit,
)
from prefixlint.jinja.inputs import BASE_TIME
from prefixlint.jinja.loader import PromptLoader, prompt_loader
from prefixlint.jinja.template import ENV_GLOBALS, ChatTemplate, describe_error, error_line
from prefixlint.jinja.tokenized import TokenizedRender, tokenize_renders
from prefixlint.jinja.tracer import TracedRender, TracedTemplate, TracingLoader
from prefixlint.jinja.variables import clock_named, provenance_code, sample_values
from prefixlint.models.tokens import LoadedTokenizer, common_prefix_len, token_at_char

if TYPE_CHECKING:
    from prefixlint.plan import TemplatePart

CONTEXT_CHARS = 40
# Attribute names jinja2 and its sandbox probe on values: a sample value must not pretend to have them.
_PROBED = frozenset({"unsafe_callable", "alters_data"})


class Sample:
    """A stand-in value for an app variable whose type is unknown: it prints as its text, and
    survives what templates do with inputs: `{% for x in v %}` (two items), `v.attr`, `v['key']`,
    `v.method()`, `v|join`, `'a' + v`, `v|length`, `range(v)`, `v > 3` (compared as text). Each
    derived value carries the text it came from, so two samples of a variable differ wherever
    they are printed."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def __getattr__(self, name: str) -> Sample:
        if name.startswith(("_", "jinja")) or name in _PROBED:
            raise AttributeError(name)
        return Sample(f"{self.text}.{name}")

    def __getitem__(self, key: Any) -> Sample:
        return self if isinstance(key, slice) else Sample(f"{self.text}[{key}]")

    def __call__(self, *args: Any, **kwargs: Any) -> Sample:
        return self

    def __iter__(self) -> Iterator[Sample]:
        return iter((Sample(f"{self.text}[0]"), Sample(f"{self.text}[1]")))

    def __len__(self) -> int:
        return 2

    def __bool__(self) -> bool:
        return True

    def __add__(self, other: Any) -> str:
        return self.text + str(other)

    def __radd__(self, other: Any) -> str:
        return str(other) + self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sample) and other.text == self.text

    def __lt__(self, other: Any) -> bool:
        return self.text < str(other)

    def __gt__(self, other: Any) -> bool:
        return self.text > str(other)

    def __le__(self, other: Any) -> bool:
        return self.text <= str(other)

    def __ge__(self, other: Any) -> bool:
        return self.text >= str(other)

    def _same(self, *args: Any) -> Sample:  # arithmetic on an unknown number: still the sample
        return self

    __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = __rtruediv__ = _same
    __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = __neg__ = __round__ = __abs__ = _same

    def __index__(self) -> int:  # `range(limit)`, `items[:limit]`, `'-' * width`
        return 2

    def __int__(self) -> int:
        return 2

    def __float__(self) -> float:
        return 2.0

    def __hash__(self) -> int:
        return hash(self.text)

    def __contains__(self, item: Any) -> bool:
        return False


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    # HF's tojson, with sample values printed as their text.
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys, default=str
    )


@dataclass
class PromptTemplate(ChatTemplate):
    """An app prompt template: the HF environment and its limits, plus a loader for its includes
    (`search_path`: the folders after the template's own)."""

    search_path: tuple[str, ...] = ()
    tracing: TracingLoader = field(init=False)

    def __post_init__(self) -> None:
        inner = prompt_loader(self.path, self.search_path)
        if isinstance(inner, PromptLoader):
            inner.max_bytes = self.limits.file_bytes
        self.tracing = TracingLoader(inner)
        self.clock = RenderClock(BASE_TIME)
        self.env = make_environment(self.clock, self.limits, self.tracing)
        self.env.filters["tojson"] = self.env.checked_filter(_tojson, "tojson")
        self.budget = RenderBudget(self.limits)
        self._renders = {}

    def _compile(self) -> TracedTemplate:
        traced = super()._compile()
        self.tracing.traced = traced
        return traced

    def load_includes(self) -> None:
        """Load every file the template names by a constant (includes of includes too), so their
        variables are known before the first render. A file that cannot be loaded is left for
        the render to report, at the line that names it."""
        from jinja2 import meta

        pending = list(meta.find_referenced_templates(self.env.parse(self.traced.source)))
        seen: set[str] = set()
        with time_limit(self.limits.seconds, "compiling"), recursion_limit(self.limits.recursion):
            while pending:
                name = pending.pop(0)
                if name is None or name in seen:
                    continue
                seen.add(name)
                before = len(self.traced.fragment_references)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", SyntaxWarning)
                        self.env.get_template(name)
                except Exception:  # noqa: BLE001, S112 - untrusted input; the render reports it
                    continue
                pending += self.traced.fragment_references[before:]

    @property
    def inputs(self) -> list[str]:
        """The variables the app passes: everything the template and its includes read that the
        environment does not define."""
        names = self.traced.undeclared | self.traced.fragment_undeclared
        return sorted(n for n in names if n not in ENV_GLOBALS and n not in self.env.globals)

    def render_values(self, values: dict[str, Any]) -> TracedRender:
        self.clock.now = BASE_TIME
        self.clock.calls.clear()
        return self.budget.run(lambda limits: self.traced.render(dict(values), limits))


@dataclass(frozen=True)
class _Varied:
    name: str
    code: str
    clock_like: bool


def _varied(template: PromptTemplate, part: TemplatePart) -> list[_Varied]:
    """The variables to vary: the config's dynamic ones, and those whose names say id, machine,
    user data or clock, unless the config says static or `--var` fixes their value."""
    out = []
    for name in template.inputs:
        if name in part.static_variables or name in part.template_vars:
            continue
        code = provenance_code(name)
        if clock_named(name):
            out.append(_Varied(name, "PFX101", True))
        elif code is not None:
            out.append(_Varied(name, code, False))
        elif name in part.dynamic_variables:
            out.append(_Varied(name, "PFX105", False))
    return out


def error_location(exc: BaseException, traced: TracedTemplate) -> tuple[str | None, int]:
    """(included file or None for the template, line) of the innermost template frame that raised."""
    fragments = {path for path, _ in traced.files}
    if isinstance(exc, jinja2.TemplateSyntaxError) and exc.filename in fragments and exc.lineno:
        return exc.filename, int(exc.lineno)
    where: tuple[str | None, int] = (None, error_line(exc))
    for frame, line in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if filename == TEMPLATE_FILENAME:
            where = (None, line)
        elif filename in fragments:
            where = (filename, line)
    return where


def _error_message(exc: BaseException) -> str:
    if isinstance(exc, jinja2.TemplateNotFound):
        return f"includes a template that is not there: {exc.message}"
    return f"raises {describe_error(exc)}"


def _span(template: PromptTemplate, path: str | None, line: int, column: int = 1) -> Span:
    return Span(path, line, column) if path else template.span(line, column)


def _first_difference(a: str, b: str) -> int | None:
    if a == b:
        return None
    return common_prefix_len(a, b)


def _static_after(a: str, b: str, d: int, end_a: int) -> str:
    """The text both renders share after the divergence at `d`, up to `end_a` in `a` (where the
    next per-request value starts): static text the cache would have held."""
    end_b = end_a + len(b) - len(a)
    left, right = a[d:end_a], b[d : max(d, end_b)]
    n = 0
    while n < min(len(left), len(right)) and left[-1 - n] == right[-1 - n]:
        n += 1
    return left[len(left) - n :] if n else ""


def _finding(
    template: PromptTemplate,
    base: TokenizedRender,
    other: TokenizedRender,
    v: _Varied,
    d: int,
    end: int,
    engine: Engine | None,
    tokenizer: LoadedTokenizer,
) -> Diagnostic | None:
    tail = _static_after(base.text, other.text, d, end)
    # Not the value's own last characters ("Alice Martin" and "Bo Chen" both end in "n").
    printed_end = base.traced.piece_range(d)[1]
    tail = tail[max(0, printed_end - (end - len(tail))) :]
    if not tail.strip():
        return None
    t = common_prefix_len(base.ids, other.ids)
    lost = max(0, token_at_char(base.offsets, end) - token_at_char(base.offsets, end - len(tail)))
    origin = base.traced.origin_at(d)
    from prefixlint.core.rules import RULES
    from prefixlint.engines.severity import Cost, cost_severity

    severity = RULES[v.code].default_severity
    if v.clock_like:
        severity = min(severity, Severity.WARNING)
        what = (
            f"`{v.name}` is named like the current date or time: filled in per request, it is rendered "
            f"at token {t:,}, ahead of {counted(lost, 'static token')} that {'is' if lost == 1 else 'are'} "
            "computed again whenever it changes (where its value comes from is not visible here)"
        )
    else:
        kind = {"PFX102": "an id", "PFX104": "a per-machine value", "PFX105": "per-request input"}[v.code]
        what = (
            f"`{v.name}` (template variable, {kind} by its name) is rendered at token {t:,}, ahead of "
            f"{counted(lost, 'static token')}; a different value per request makes them all uncacheable"
        )
    start = end - len(tail)
    cost = Cost(t, lost, len(base.ids), (base.text[:d], base.text[start:end], base.text))
    costed, note = cost_severity(severity, cost, engine, tokenizer)
    if costed < severity and not note:
        if v.code == "PFX105":
            return None  # per-request input, meant to vary: a few tokens after it lose nothing kept
        what += " (no whole cache block of the engine lost)"
    elif note:
        what += f"; {note}"
    severity = costed
    varied = f"app prompt template; varied: template variable `{v.name}`"
    evidence = divergence_evidence(base.text, other.text, len(base.ids), d, t, lost, varied, engine)
    return Diagnostic(
        v.code, _span(template, origin.path, origin.line, origin.column), what, severity, evidence=evidence
    )


def _values(names: list[str]) -> dict[str, Any]:
    return {
        n: Sample(sample_values(n)[0] if provenance_code(n) or clock_named(n) else f"{n} value")
        for n in names
    }


def sample_inputs(template: PromptTemplate, part: TemplatePart) -> dict[str, Any]:
    """The values the base render gives every variable; `--var NAME=VALUE` renders NAME with that
    value, as the app passes it."""
    return _values(template.inputs) | part.template_vars


def analyze_prompt_template(
    template: PromptTemplate, tokenizer: LoadedTokenizer, part: TemplatePart
) -> SourceResult:
    from prefixlint.jinja.broken import compile_diagnostic

    result = SourceResult(template.path, "prompt_template", tokenizer=tokenizer.name)
    failed = compile_diagnostic(template)
    if failed is not None:
        result.diagnostics.append(failed)
        return result
    with contextlib.suppress(ValueError):  # over the time limit: the render reports what fails
        template.load_includes()
    base_values = sample_inputs(template, part)
    try:
        base = TokenizedRender(template.render_values(base_values))
    except Exception as exc:  # noqa: BLE001 - whatever an untrusted template raises is a finding
        path, line = error_location(exc, template.traced)
        result.diagnostics.append(
            Diagnostic("PFX002", _span(template, path, line), _error_message(exc), Severity.ERROR)
        )
        return result

    varied = _varied(template, part)
    renders: list[tuple[_Varied, TokenizedRender]] = []
    for v in varied:
        values = dict(base_values, **{v.name: Sample(sample_values(v.name)[1])})
        try:
            renders.append((v, TokenizedRender(template.render_values(values))))
        except Exception as exc:  # noqa: BLE001
            path, line = error_location(exc, template.traced)
            message = f"{_error_message(exc)} with another value of `{v.name}`; analysed with the others"
            result.diagnostics.append(
                Diagnostic("PFX002", _span(template, path, line), message, Severity.WARNING)
            )
    tokenize_renders([base, *(r for _, r in renders)], tokenizer)

    engine = part.engine
    starts = sorted(d for _, r in renders if (d := _first_difference(base.text, r.text)) is not None)
    for v, r in renders:
        d = _first_difference(base.text, r.text)
        if d is None:
            continue
        end = next((s for s in starts if s > d), len(base.text))  # where the next varying value starts
        diagnostic = _finding(template, base, r, v, d, end, engine, tokenizer)
        if diagnostic is not None:
            result.diagnostics.append(diagnostic)

    result.total_tokens = len(base.ids)
    result.cacheable_prefix_tokens = min(
        [common_prefix_len(base.ids, r.ids) for _, r in renders] or [len(base.ids)]
    )
    below = below_engine_minimum(result.cacheable_prefix_tokens, engine, template.span(1))
    if below is not None:
        result.diagnostics.append(below)
    return result
