"""The variants analysis of one chat template (DESIGN.md: analyses → variants).

For each scenario an app could be in (with or without a system message, with or without tools) it
renders a base request and variants of it that change one per-request thing at a time: the user's
text (length, script), earlier turns, the clock (same second, next second, next day, next month)
and request-scoped template variables. Everything that differs *before the user's own text starts*
and is followed by static text is a finding: the static text after it is what the cache loses.
Divergence points are measured in tokens of the model's tokenizer and traced to template lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prefixlint.core.controls import markup_suffix
from prefixlint.core.findings import Diagnostic, Evidence, Severity, SourceResult, Span
from prefixlint.core.words import counted
from prefixlint.engines import Engine, cacheable_per_engine
from prefixlint.engines.loss import engine_losses
from prefixlint.engines.severity import Cost
from prefixlint.jinja.broken import compile_diagnostic, render_error_diagnostics, unconfirmed_clock
from prefixlint.jinja.inputs import (
    ASSISTANT_REPLY,
    CLOCK_VARIANTS,
    TOOLS,
    USER_TURNS,
    conversation,
)
from prefixlint.jinja.merge import merge_same_origin
from prefixlint.jinja.template import ChatTemplate, describe_error, error_line
from prefixlint.jinja.tokenized import TokenizedRender, tokenize_renders
from prefixlint.jinja.variables import provenance_code, sample_values
from prefixlint.models.tokens import EMBEDDED_NAME, LoadedTokenizer, common_prefix_len, token_at_char
from prefixlint.plan import TemplatePart, as_template_part

if TYPE_CHECKING:
    from prefixlint.settings import Options

CONTEXT_CHARS = 40


@dataclass(frozen=True)
class Scenario:
    label: str
    system: bool
    tools: list[dict[str, Any]] | None


SCENARIOS = (
    Scenario("with a system message", True, None),
    Scenario("without a system message", False, None),
    Scenario("with tools and a system message", True, TOOLS),
    Scenario("with tools, without a system message", False, TOOLS),
)


@dataclass
class Render(TokenizedRender):
    """One rendered request: what varied, the traced text, where the user's text starts."""

    scenario: Scenario = field(kw_only=True)
    variant: str = field(kw_only=True)  # "base", "user text", "earlier turns", a clock label, "var0:…"
    content_start: int = field(kw_only=True)
    clock_calls: list = field(default_factory=list, kw_only=True)


@dataclass
class Finding:
    """A divergence ahead of static content, before it is merged across scenarios."""

    code: str
    line: int
    column: int
    scenario: Scenario
    message: str
    evidence: Evidence
    divergence: Divergence  # what the severity is measured on
    required: bool = True  # False: optional variables (info unless the user says they vary)
    origin_line: int = 0  # the template line that prints the divergent text (0: `line`)
    origin_column: int = 0  # and its column (0: `column`)
    # The value changes at most once a day (a date, not a time): the requests of a day still share
    # the prefix, so the cache is split per day, a lower kind of loss than per request.
    periodic: bool = False


# Clock variants that only a date (not a time) differs across: it changes once a day or a month.
_PERIODIC = frozenset({"after midnight", "every month"})


def _first_difference(a: str, b: str) -> int:
    return common_prefix_len(a, b) if a != b else len(a)


def _content_start(text: str, messages: list[dict[str, Any]]) -> int:
    """Where the first user-authored text of the request appears (len(text) if nowhere)."""
    for message in messages:
        if message["role"] != "system":
            at = text.find(message["content"].strip())
            if at >= 0:
                return at
    return len(text)


class _Renderer:
    """Renders requests for one template and remembers the ones that failed, by scenario."""

    def __init__(self, template: ChatTemplate) -> None:
        self.template = template
        self.failures: dict[tuple[int, str], list[str]] = {}

    def render(
        self, scenario: Scenario, variant: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> Render | None:
        try:
            traced = self.template.render(messages, tools=scenario.tools, **kwargs)
        except Exception as exc:  # whatever an untrusted template raises is a PFX002 for these inputs
            key = (error_line(exc), describe_error(exc))
            self.failures.setdefault(key, []).append(f"{scenario.label} ({variant})")
            return None
        calls = list(self.template.clock.calls)
        start = _content_start(traced.text, messages)
        return Render(traced, scenario=scenario, variant=variant, content_start=start, clock_calls=calls)


def _varied_variables(template: ChatTemplate, part: TemplatePart) -> list[tuple[str, str, bool]]:
    """(name, code, surely per request) of the template variables to vary: those the config says
    are dynamic, and those whose names say request, id or machine, unless the config says static."""
    out = []
    for name in sorted(template.external_variables):
        if name in part.static_variables:
            continue
        code = provenance_code(name)
        if name in part.dynamic_variables:
            out.append((name, code or "PFX105", True))
        elif code is not None:
            out.append((name, code, False))
    return out


def _render_variants(
    renderer: _Renderer, scenario: Scenario, variables: list[tuple[str, str, bool]]
) -> list[Render]:
    """The base request of a scenario, then one variant per per-request input."""
    template = renderer.template
    base_messages = conversation(USER_TURNS[0], system=scenario.system)
    base = renderer.render(scenario, "base", base_messages)
    if base is None:
        return []
    renders = [base]
    for text in USER_TURNS[1:]:
        r = renderer.render(scenario, "user text", conversation(text, system=scenario.system))
        if r:
            renders.append(r)
    history = [
        *conversation("Hello!", system=scenario.system),
        {"role": "assistant", "content": ASSISTANT_REPLY},
        {"role": "user", "content": USER_TURNS[0]},
    ]
    r = renderer.render(scenario, "earlier turns", history)
    if r:
        renders.append(r)
    for label, moment in CLOCK_VARIANTS:
        r = renderer.render(scenario, label, base_messages, now=moment)
        if r:
            renders.append(r)
    for name, code, declared in variables:
        # A variable the template cannot do without, or one the config says varies, is passed per request.
        required = declared or name in template.extra_kwargs
        first, second = sample_values(name)
        pair = []
        for value in (first, second):
            r = renderer.render(scenario, f"var:{name}", base_messages, **{name: value})
            if r is None:
                break
            pair.append(r)
        if len(pair) == 2:
            # The variable pair is compared with itself, not with the base (which may lack it).
            pair[0].variant = f"var0:{name}:{code}:{int(required)}"
            pair[1].variant = f"var1:{name}:{code}:{int(required)}"
            renders.extend(pair)
    return renders


def _context(text: str, at: int) -> str:
    return text[max(0, at - CONTEXT_CHARS) : at] + "‖" + text[at : at + CONTEXT_CHARS]


def _static_tail(a: Render, b: Render, d: int) -> str:
    """The text both renders share between the divergence and the user's text: static content
    the cache would have held, had nothing varied before it."""
    left, right = a.text[d : a.content_start], b.text[d : b.content_start]
    n = 0
    while n < min(len(left), len(right)) and left[-1 - n] == right[-1 - n]:
        n += 1
    return left[len(left) - n :] if n else ""


@dataclass(frozen=True)
class Divergence:
    """Where `b` parts from `a` ahead of static content, and what that costs."""

    char: int  # the first differing character
    token: int  # the first differing token: tokens before it are shared
    tail: str  # the static text both share after it, up to the user's text
    markers: bool  # the tail ends in turn markers in front of the user's text
    # The tokens before it, the static tokens of the tail a stable prompt would share (turn
    # markers at its end excluded), the prompt's length, and the same as text.
    cost: Cost

    @property
    def lost(self) -> int:
        return self.cost.static


def _compare(a: Render, b: Render, template: ChatTemplate) -> Divergence | None:
    """The divergence when `b` differs from `a` ahead of static content; None when the first
    difference is the user's own text or later."""
    d = _first_difference(a.text, b.text)
    if d >= min(a.content_start, b.content_start) or d >= len(a.text):
        return None
    tail = _static_tail(a, b, d)
    if not tail.strip():
        return None
    t = common_prefix_len(a.ids, b.ids)
    # The turn markers in front of the user's text cost nothing shareable (issue 23, point 5).
    markup = markup_suffix(tail, template.controls)
    content_end = token_at_char(a.offsets, a.content_start - markup)
    tail_tok = token_at_char(a.offsets, a.content_start - len(tail))
    start = a.content_start - len(tail)
    texts = (a.text[:d], a.text[start : a.content_start - markup], a.text)
    return Divergence(d, t, tail, markup > 0, Cost(t, max(0, content_end - tail_tok), len(a.ids), texts))


def _ahead(div: Divergence) -> str:
    """What follows the value, for a message: "ahead of 111 static tokens"."""
    if div.lost == 0 and div.markers:
        return "ahead of only the turn markers in front of the user's text (nothing shareable)"
    markers = " and the turn markers in front of the user's text" if div.markers else ""
    return f"ahead of {counted(div.lost, 'static token')}{markers}"


def _variant_label(r: Render) -> str:
    return f"template variable `{r.variant.split(':')[1]}`" if r.variant.startswith("var") else r.variant


def _evidence(a: Render, b: Render, d: int, t: int, lost: int, engine: Engine | None) -> Evidence:
    return divergence_evidence(
        a.text, b.text, len(a.ids), d, t, lost, f"{a.scenario.label}; varied: {_variant_label(b)}", engine
    )


def below_engine_minimum(
    cacheable: int, engine: Engine | None, span: Span, where: str = ""
) -> Diagnostic | None:
    """PFX502 when the engine caches nothing of a prefix this short (OpenAI: under 1,024 tokens)."""
    if engine is None or not engine.minimum_tokens or cacheable >= engine.minimum_tokens:
        return None
    message = (
        f"the static prefix is {cacheable:,} tokens{' ' + where if where else ''}; "
        f"{engine.name} caches nothing below {engine.minimum_tokens:,} tokens"
    )
    return Diagnostic("PFX502", span, message, Severity.INFO)


def divergence_evidence(
    text_a: str, text_b: str, tokens_a: int, d: int, t: int, lost: int, inputs: str, engine: Engine | None
) -> Evidence:
    """What a finding from two renders rests on: they agree up to char `d` / token `t`."""
    return Evidence(
        token_index=t,
        char_offset=d,
        cacheable_tokens=t,
        context_a=_context(text_a, d),
        context_b=_context(text_b, d),
        static_tokens_lost=lost,
        engines=cacheable_per_engine(t, tokens_a, engine),
        inputs=inputs,
        engines_lost=engine_losses(t, lost, tokens_a, engine),
    )


def _clock_finding(
    base: Render, other: Render, template: ChatTemplate, div: Divergence, engine: Engine | None
) -> Finding:
    d, t = div.char, div.token
    before = {(c.line, c.fmt): c.value for c in base.clock_calls}
    changed = [c for c in other.clock_calls if before.get((c.line, c.fmt)) not in (None, c.value)]
    call = changed[0] if changed else (other.clock_calls[0] if other.clock_calls else None)
    origin = base.traced.origin_at(d)
    line = call.line if call else origin.line
    column = max(1, template.traced.line_text(line).find("strftime_now") + 1) if call else origin.column
    fmt = call.fmt if call else "?"
    what = "time" if any(x in fmt for x in ("%H", "%M", "%S", "%c", "%X", "%f", "%I", "%p", "%T")) else "date"
    when = {
        "within the same second": "every request misses the cache",
        "every second": "every request in a new second misses the cache",
        "after midnight": "the cache is split once a day: the first requests after midnight recompute "
        "them, and a conversation that crosses midnight its history",
        "every month": "the cache is split once a month: the first requests of a month recompute them",
    }[other.variant]
    printed = f" (printed at {template.where(origin.line)})" if origin.line != line else ""
    called = f" at {template.where(line)}" if template.fixed_line is not None else ""
    message = (
        f'`strftime_now("{fmt}")`{called} renders the current {what} at token {t:,}{printed}, '
        f"{_ahead(div)}; {when}"
    )
    ev = _evidence(base, other, d, t, div.lost, engine)
    return Finding(
        "PFX101",
        line,
        column,
        base.scenario,
        message,
        ev,
        div,
        origin_line=origin.line,
        origin_column=origin.column,
        periodic=other.variant in _PERIODIC,
    )


def _variable_finding(
    a: Render, b: Render, template: ChatTemplate, div: Divergence, engine: Engine | None
) -> Finding:
    d, t = div.char, div.token
    _, name, code, required = a.variant.split(":")
    origin = a.traced.origin_at(d)
    kind = {"PFX102": "an id", "PFX104": "a per-machine value", "PFX105": "per-request input"}[code]
    passed = "required" if required == "1" else "optional"
    message = (
        f"`{name}` ({passed} template variable, {kind} by its name) is rendered at token {t:,}, "
        f"{_ahead(div)}; a different value per request makes them all uncacheable"
    )
    ev = _evidence(a, b, d, t, div.lost, engine)
    return Finding(code, origin.line, origin.column, a.scenario, message, ev, div, required=required == "1")


def _input_finding(
    base: Render, other: Render, template: ChatTemplate, div: Divergence, engine: Engine | None
) -> Finding | None:
    d, t, tail = div.char, div.token, div.tail
    gap_a = base.text[d : base.content_start - len(tail)]
    gap_b = other.text[d : other.content_start - len(tail)]
    # Point at the template text that appears in one render and not the other.
    origin = (other if gap_b and not gap_a else base).traced.origin_at(d)
    what = "the user's text" if other.variant == "user text" else "the earlier turns"
    whitespace = not gap_a.strip() and not gap_b.strip()
    if other.variant == "earlier turns" and not whitespace:
        return None  # blocks that move with the history are the multi-turn analysis's (PFX402)
    if whitespace:
        message = f"whitespace here depends on {what} ({gap_a!r} vs {gap_b!r}) at token {t:,}, {_ahead(div)}"
        ev = _evidence(base, other, d, t, div.lost, engine)
        return Finding("PFX301", origin.line, origin.column, base.scenario, message, ev, div)
    message = (
        f"the prompt changes with {what} at token {t:,}, before static content ends, {_ahead(div)}: "
        f"they cannot be cached ({gap_a[:30]!r} vs {gap_b[:30]!r})"
    )
    ev = _evidence(base, other, d, t, div.lost, engine)
    return Finding("PFX501", origin.line, origin.column, base.scenario, message, ev, div)


def _boundary_finding(
    base: Render, other: Render, engine: Engine | None, stand_in: bool = False
) -> Finding | None:
    """PFX302: the last static token spans into the user's text, so it differs per request."""
    d = _first_difference(base.text, other.text)
    if d != base.content_start or d == 0:
        return None
    t = common_prefix_len(base.ids, other.ids)
    if t >= len(base.offsets):
        return None
    token_start = base.offsets[t][0]
    if token_start >= d:
        return None
    merged = base.text[token_start:d]
    origin = base.traced.origin_at(token_start)
    message = (
        f"the static text {merged!r} before the user's turn merges with the user's first characters "
        f"into one token (token {t:,}); the cacheable prefix ends one token early"
    )
    if stand_in:
        message += (
            "; measured with the embedded stand-in tokenizer: pass `--tokenizer` with the model's own "
            "to confirm"
        )
    ev = _evidence(base, other, d, t, 1, engine)
    div = Divergence(
        d, t, merged, False, Cost(t, 1, len(base.ids), (base.text[:token_start], merged, base.text))
    )
    return Finding("PFX302", origin.line, origin.column, base.scenario, message, ev, div)


def _findings(
    renders: list[Render], template: ChatTemplate, engine: Engine | None, stand_in: bool = False
) -> list[Finding]:
    base = renders[0]
    findings: list[Finding] = []
    clock_done = False
    boundary_done = False
    by_variant: dict[str, Render] = {}
    for r in renders[1:]:
        if r.variant.startswith("var0:"):
            by_variant[r.variant] = r
            continue
        if r.variant.startswith("var1:"):
            first = by_variant.get("var0:" + r.variant[5:])
            cmp = _compare(first, r, template) if first else None
            if cmp:
                findings.append(_variable_finding(first, r, template, cmp, engine))
            continue
        cmp = _compare(base, r, template)
        if r.variant in ("user text", "earlier turns"):
            finding = _input_finding(base, r, template, cmp, engine) if cmp else None
            if finding:
                findings.append(finding)
            elif r.variant == "user text" and not boundary_done:
                boundary = _boundary_finding(base, r, engine, stand_in)
                if boundary:
                    findings.append(boundary)
                    boundary_done = True
        elif cmp and not clock_done:  # the finest clock granularity that shows is the one reported
            findings.append(_clock_finding(base, r, template, cmp, engine))
            clock_done = True
    return findings


def _merge(
    findings: list[Finding],
    working: list[Scenario],
    template: ChatTemplate,
    engine: Engine | None,
    tokenizer: LoadedTokenizer,
) -> list[tuple[Diagnostic, int]]:
    """One diagnostic per (code, line): an error where it happens in every scenario that renders,
    a warning where it depends on the scenario (a conditional clock, say); what it costs in the
    engine's blocks lowers it (prefixlint/engines/severity.py)."""
    from prefixlint.core.rules import RULES
    from prefixlint.engines.severity import cost_severity

    groups: dict[tuple[str, int], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.code, f.line), []).append(f)
    out = []
    for (code, line), group in groups.items():
        first = group[0]
        scenarios = [s for s in working if any(f.scenario == s for f in group)]
        severity = RULES[code].default_severity
        message = first.message
        if len(scenarios) < len(working):
            message += "; only " + " / ".join(s.label for s in scenarios)
            severity = min(severity, Severity.WARNING)
        if not first.required:
            message += "; the template has a default, so this matters only if you pass it per request"
            severity = Severity.INFO
        if first.periodic:
            severity = Severity(max(Severity.INFO, severity - 1))
        severity, note = cost_severity(severity, first.divergence.cost, engine, tokenizer, template.controls)
        if note:
            message += f"; {note}"
        origin = template.template_span(first.origin_line or line, first.origin_column or first.column)
        diag = Diagnostic(
            code, template.span(line, first.column), message, severity, evidence=first.evidence, origin=origin
        )
        out.append((diag, origin.line))
    return out


def cacheable_prefix(renders: list[Render]) -> int:
    """THE cacheable prefix of a chat template (issue 14, point 7; `check`'s JSON, `diff` and
    `explain TEMPLATE` all print this number): the leading tokens of the first scenario's base
    request that every per-request variant of it shares — another user text, earlier turns, the
    clock, and each template variable taken to vary per request (one the template requires or the
    config declares dynamic; an optional one keeps its default). The first divergent token of any
    finding of that scenario is therefore never past it."""
    base = renders[0]
    shared = [len(base.ids)]
    pairs: dict[str, Render] = {}
    for r in renders[1:]:
        if not r.variant.startswith("var"):
            shared.append(common_prefix_len(base.ids, r.ids))
        elif r.variant.endswith(":1"):  # a variable passed per request: its two values part here
            other = pairs.setdefault(r.variant[4:], r)
            if other is not r:
                shared.append(common_prefix_len(other.ids, r.ids))
    return min(shared)


def analyze_template(
    template: ChatTemplate,
    tokenizer: LoadedTokenizer,
    settings: TemplatePart | Options,
    *,
    hints: bool = True,
) -> SourceResult:
    """Every analysis of one chat template, with the run's template part (a library caller's
    `Options` resolve to it). `hints`: name the template settings that keep a multi-turn prefix
    stable, each verified by this same check run again with it as `--var`s."""
    part = as_template_part(settings)
    result = SourceResult(template.path, "jinja", name=template.name, tokenizer=tokenizer.name)
    failed = compile_diagnostic(template)  # compile first: a template that does not parse is PFX001
    if failed is not None:
        result.diagnostics.append(failed)
        return result

    for scenario in SCENARIOS:
        template.supply_required_variables(
            conversation(USER_TURNS[0], system=scenario.system), scenario.tools
        )
    renderer = _Renderer(template)
    variables = _varied_variables(template, part)
    per_scenario = [(s, _render_variants(renderer, s, variables)) for s in SCENARIOS]
    per_scenario = [(s, rs) for s, rs in per_scenario if rs]
    working = [s for s, _ in per_scenario]
    if not working:
        result.diagnostics.extend(render_error_diagnostics(renderer.failures, bool(working), template))
        result.diagnostics.extend(unconfirmed_clock(template))
        return result

    multiturn = None
    if part.multiturn:
        from prefixlint.jinja.multiturn import render_multiturn

        multiturn = render_multiturn(template)  # before the first encode: a tokenizer may be loading
        for line, error, where in multiturn.failures:  # a scenario that raises is a PFX002 too
            renderer.failures.setdefault((line, error), []).append(where)
    result.diagnostics.extend(render_error_diagnostics(renderer.failures, bool(working), template))
    all_renders = [r for _, rs in per_scenario for r in rs]
    tokenize_renders(all_renders, tokenizer)

    stand_in = tokenizer.name == EMBEDDED_NAME  # token boundaries it finds may not be the model's
    engine = part.engine
    findings = [f for _, rs in per_scenario for f in _findings(rs, template, engine, stand_in)]
    found = _merge(findings, working, template, engine, tokenizer)

    primary = per_scenario[0][1]
    result.total_tokens = len(primary[0].ids)
    result.cacheable_prefix_tokens = cacheable_prefix(primary)
    below = below_engine_minimum(
        result.cacheable_prefix_tokens, engine, template.span(1), primary[0].scenario.label
    )
    if below is not None:
        result.diagnostics.append(below)

    if multiturn is not None:
        from prefixlint.jinja.multiturn import analyze_multiturn

        def recheck(setting: dict[str, Any]) -> list[Diagnostic]:
            return analyze_template(
                template.with_variables(setting), tokenizer, part, hints=False
            ).diagnostics

        known = frozenset(d.code for d in result.diagnostics) | {d.code for d, _ in found}
        mt = analyze_multiturn(
            template, tokenizer, multiturn, engine, hints=hints, recheck=recheck, known=known
        )
        found.extend(zip(mt.diagnostics, mt.origin_lines, strict=True))
        result.multiturn_reuse = mt.reuse
    result.diagnostics.extend(merge_same_origin(found))
    return result
