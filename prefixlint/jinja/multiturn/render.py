"""The scenarios that apply to a template, and their turns rendered: every render the multi-turn
analysis needs before it needs a tokenizer (done while one may still be loading in a helper).

A template that reads `tools` gets an agent loop in the first tool-call shape it renders; one whose
model writes reasoning gets reasoning replies, in the mode whose generation prompt leaves thinking
open (a switch the caller fixed with `--var` is never overridden). Each distinct request is rendered
once (`Renderer`); a request the template raises for is recorded with its line and error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prefixlint.jinja.inputs import TOOLS
from prefixlint.jinja.multiturn.scenarios import TOOL_CALL_SHAPES, USERS, Scenario, agentic, chat_scenarios
from prefixlint.jinja.reasoning import ReasoningFormat, reasoning_format
from prefixlint.jinja.switches import caller_switches, switch_values
from prefixlint.jinja.template import ChatTemplate, describe_error, error_line
from prefixlint.jinja.tokenized import TokenizedRender as _Render


class Renderer:
    """Renders each distinct request once; a request the template raises for gives None."""

    def __init__(self, template: ChatTemplate) -> None:
        self.template = template
        self.cache: dict[str, _Render | None] = {}
        self.errors: dict[str, tuple[int, str]] = {}  # (template line, error) of a request that raised

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list | None,
        gen: bool = True,
        kwargs: dict[str, Any] | None = None,
    ) -> _Render | None:
        # The caller's `--var`s (the template's extra_kwargs) win over a scenario's mode.
        kwargs = {k: v for k, v in (kwargs or {}).items() if k not in self.template.extra_kwargs} or None
        key = self._key(messages, tools, gen, kwargs)
        if key not in self.cache:
            try:
                traced = self.template.render(
                    messages, tools=tools, add_generation_prompt=gen, **(kwargs or {})
                )
                self.cache[key] = _Render(traced)
            except Exception as exc:  # an untrusted template raises anything: PFX002 for the scenario
                self.cache[key] = None
                self.errors[key] = (error_line(exc), describe_error(exc))
        return self.cache[key]

    @staticmethod
    def _key(
        messages: list[dict[str, Any]], tools: list | None, gen: bool, kwargs: dict[str, Any] | None
    ) -> str:
        return json.dumps([messages, tools is not None, gen, kwargs or {}], sort_keys=True, default=str)

    def failure(self, scenario: Scenario) -> tuple[int, str, str] | None:
        """(line, error, where) of the first turn of `scenario` the template raises for, if any."""
        for k, render in enumerate(self.turns(scenario), 1):
            if render is None:
                mode = {k: v for k, v in scenario.kwargs if k not in self.template.extra_kwargs} or None
                line, error = self.errors[self._key(scenario.turn(k), scenario.tools, True, mode)]
                return line, error, f"in the multi-turn scenario «{scenario.label}» at turn {k}"
        return None

    def turns(self, scenario: Scenario) -> list[_Render | None]:
        mode = dict(scenario.kwargs) or None
        return [
            self.render(scenario.turn(k), scenario.tools, True, mode) for k in range(1, scenario.turns + 1)
        ]

    def texts(self, tools: list | None, kwargs: dict[str, Any] | None) -> Callable[[list, bool], str | None]:
        """render() as reasoning_format wants it: messages and add_generation_prompt → text."""

        def text(messages: list[dict[str, Any]], gen: bool) -> str | None:
            render = self.render(messages, tools, gen, kwargs)
            return render.text if render is not None else None

        return text


def _reasoning_modes(
    template: ChatTemplate, renderer: Renderer, scenarios: list[Scenario], fmt: ReasoningFormat
) -> tuple[list[Scenario], ReasoningFormat]:
    """Reasoning replies match the mode tried (issue 14, point 4): where the generation prompt
    closes the think block (thinking off) the model writes no reasoning, so reasoning scenarios run
    with the switch that opens it (`enable_thinking=true`), or not at all. A switch the caller
    fixed with `--var` is never overridden. The format is read again in the mode found."""
    reasoning = {s.name for s in scenarios if any(step.reasoning for step in s.steps)}
    if not reasoning:
        return scenarios, fmt
    probe = next(s for s in scenarios if s.name in reasoning)
    mode = _thinking_mode(template, renderer, probe, fmt)
    if mode is None:  # thinking is off and no switch turns it on: no reasoning to keep
        return [s for s in scenarios if s.name not in reasoning], fmt
    if mode:
        fmt = reasoning_format(template, renderer.texts(probe.tools, mode), USERS[0]) or fmt
    out = []
    for scenario in scenarios:
        if scenario.name in reasoning:
            scenario = scenario.with_kwargs(mode) if mode else scenario
            scenario = scenario.with_reasoning_field(fmt.field) if fmt.field else scenario
        out.append(scenario)
    return out, fmt


def _thinking_mode(
    template: ChatTemplate, renderer: Renderer, scenario: Scenario, fmt: ReasoningFormat
) -> dict[str, Any] | None:
    """{} when the generation prompt leaves thinking open; else the first setting of a switch the
    caller did not fix that opens it; None when none does."""
    first = renderer.render(scenario.turn(1), scenario.tools)
    if first is None or not fmt.closes(first.text):
        return {}
    for name in caller_switches(template):
        if name in template.extra_kwargs:
            continue
        for value in switch_values(template, name):
            render = renderer.render(scenario.turn(1), scenario.tools, True, {name: value})
            if render is not None and not fmt.closes(render.text):
                return {name: value}
    return None


def _reads(template: ChatTemplate) -> frozenset[str]:
    return template.traced.undeclared


def _scenarios(
    template: ChatTemplate, renderer: Renderer, failures: list[tuple[int, str, str]] | None = None
) -> tuple[list[Scenario], ReasoningFormat | None]:
    """The scenarios that apply to this template, each rendering at least its first turn, and its
    reasoning format (None: not a reasoning model's template); an agent loop no tool-call shape
    renders goes to `failures` (with the first shape's error)."""
    source = template.traced.source
    reads_tools = "tools" in _reads(template)
    first = chat_scenarios(reads_tools=False, tools_required=False)[0]
    tools_required = (
        reads_tools
        and renderer.render(first.turn(1), None) is None
        and renderer.render(first.turn(1), TOOLS) is not None
    )
    fmt = reasoning_format(template, renderer.texts(TOOLS if tools_required else None, None), USERS[0])
    scenarios = chat_scenarios(reads_tools=reads_tools, tools_required=tools_required, reasoning=fmt)
    if reads_tools and "tool_calls" in source:
        # Reasoning in a tool call's message goes in the field the template reads (none: no such loop).
        for reasoning in (None, fmt) if fmt is not None and fmt.field else (None,):
            tried = [agentic(arguments_as, content, reasoning) for arguments_as, content in TOOL_CALL_SHAPES]
            working = next((c for c in tried if all(r is not None for r in renderer.turns(c))), None)
            if working is not None:
                scenarios.append(working)
            elif failures is not None:
                failed = renderer.failure(tried[0])
                if failed is not None:
                    failures.append(failed)
    if fmt is None:
        return scenarios, None
    return _reasoning_modes(template, renderer, scenarios, fmt)


@dataclass
class MultiTurnRenders:
    """The scenarios that apply and their turns, rendered (memoized by the renderer)."""

    renderer: Renderer
    scenarios: list[Scenario] | None  # None: the template does not even compile
    # (template line, error, which scenario and turn) of each scenario the template raises for
    failures: list[tuple[int, str, str]] = field(default_factory=list)
    reasoning: ReasoningFormat | None = None  # how its model writes reasoning (None: it does not)


def render_multiturn(template: ChatTemplate) -> MultiTurnRenders:
    """Every render the analysis needs before it needs a tokenizer, in the order it would do them:
    done while a tokenizer may still be loading in a helper (prefixlint/models/tokenizer_process.py)."""
    renderer = Renderer(template)
    failures: list[tuple[int, str, str]] = []
    try:
        scenarios, fmt = _scenarios(template, renderer, failures)
    except Exception:  # a template that does not even compile is reported elsewhere
        return MultiTurnRenders(renderer, None)
    for scenario in scenarios:
        failed = renderer.failure(scenario)
        if failed is not None:
            failures.append(failed)
    return MultiTurnRenders(renderer, scenarios, failures, fmt)
