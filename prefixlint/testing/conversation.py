"""`assert_conversation_stable`: run the user's agent loop turn by turn and fail at the first turn
whose request does not extend the previous one, naming the part, the message and the user's line
that made it.

A turn's request is compared with the previous turn's as `explain --log` compares a conversation's
requests (prefixlint/explain/conversations.py: the same parts, kinds and differences); the user's
line is where the differing value was made, told by tracemalloc (each object's allocation
traceback, its innermost frame in the user's code: the differing message's content, else the
message, else its list), else the line the loop yielded or returned it. tracemalloc sees only what
was allocated while the loop ran: a literal's constant, or a small dict reused from CPython's free
list, has no traceback, and the next object out (or the yield) is named instead.
"""

from __future__ import annotations

import inspect
import os
import sys
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prefixlint.testing.record import is_library

TRACE_FRAMES = 64  # frames tracemalloc keeps per allocation: deep enough to reach the user's code


@dataclass(frozen=True)
class ConversationStability:
    """The outcome; `message` says it in one paragraph (the AssertionError's text on failure)."""

    stable: bool
    turns: int  # turns run
    turn: int | None  # the first turn (from 0) whose request does not extend the one before
    part: str | None  # "tools", "system" or "messages"
    message_index: int | None
    kind: str | None  # one of explain's conversation kinds (`moved`, `edited`, `whitespace`, …)
    difference: str | None
    tokens_lost: int  # tokens of the previous turn's prompt the new one does not start with
    path: str | None
    line: int | None
    message: str

    @property
    def where(self) -> str | None:
        return f"{self.path}:{self.line}" if self.path else None


class ConversationUnstableError(AssertionError):
    """A turn's request does not extend the previous one; `.result` holds the ConversationStability."""

    def __init__(self, result: ConversationStability) -> None:
        super().__init__(result.message)
        self.result = result


ConversationUnstableError.__module__ = "prefixlint.testing"


def _as_body(value: Any) -> dict[str, Any]:
    from prefixlint.testing.compare import PromptShapeError, _as_message

    if isinstance(value, list | tuple):
        return {"messages": [_as_message(m) for m in value]}
    if isinstance(value, dict):
        return value
    raise PromptShapeError(
        f"each turn must give a request body (a dict) or a list of chat messages, not {type(value).__name__}"
    )


def _turns(steps: Any, turns: int | None) -> Iterator[tuple[Any, tuple[str, int] | None]]:
    """(request, the line that gave it) per turn: a generator's `yield` line, a callable's `return`."""
    if inspect.isgeneratorfunction(steps):
        steps = steps()
    if callable(steps) and not inspect.isgenerator(steps):
        if turns is None:
            raise ValueError("turns: how many turns to run steps(k) for (k = 0, 1, …)")
        code = getattr(steps, "__code__", None)
        for k in range(turns):
            returned: list[tuple[str, int]] = []

            def profile(frame: Any, event: str, arg: Any, returned: list[tuple[str, int]] = returned) -> None:
                if event == "return" and frame.f_code is code:
                    returned.append((frame.f_code.co_filename, frame.f_lineno))

            previous = sys.getprofile()
            sys.setprofile(profile if code is not None else previous)
            try:
                value = steps(k)
            finally:
                sys.setprofile(previous)
            yield value, returned[-1] if returned else None
        return
    if not isinstance(steps, Iterable):
        raise TypeError(f"steps: a callable steps(k) or an iterable of requests, not {type(steps).__name__}")
    iterator = iter(steps)
    for k, value in enumerate(iterator):
        if turns is not None and k >= turns:
            break
        frame = getattr(iterator, "gi_frame", None)
        yield value, (frame.f_code.co_filename, frame.f_lineno) if frame is not None else None


def _made_at(*values: Any) -> tuple[str, int] | None:
    """The user's line that allocated the first of `values` tracemalloc knows."""
    for value in values:
        if value is None:
            continue
        trace = tracemalloc.get_object_traceback(value)
        if trace is None:
            continue
        for frame in reversed(list(trace)):  # the innermost first
            if not is_library(frame.filename):
                return frame.filename, frame.lineno
    return None


def _shown(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith(os.pardir) else rel


def _differing(body: dict[str, Any], part: str, index: int | None) -> list[Any]:
    """The objects of `body` the break is in, the most specific first (a message's content, then
    the message; a tool; the system prompt)."""
    if part == "system" and not isinstance(body.get("messages"), list):
        return [body.get("system")]
    if part == "system" and body.get("system") is not None:
        system = body["system"]
        item = (
            system[index] if isinstance(system, list) and index is not None and index < len(system) else None
        )
        return [item, system]
    items = body.get("tools") if part == "tools" else body.get("messages")
    if not isinstance(items, list) or index is None or index >= len(items):
        return [items]
    item = items[index]
    content = item.get("content") if isinstance(item, dict) else None
    return [content, item, items]


def check_conversation_stable(
    steps: Callable[[int], Any] | Iterable[Any],
    *,
    turns: int | None = None,
    template: str | None = None,
    tokenizer: str | None = None,
) -> ConversationStability:
    """Run the agent loop `steps` (a callable giving turn k's request, run for `turns` turns, or an
    iterable/generator of requests, each a request body or a list of messages) and compare each
    turn's request with the previous one. Never raises for a break (see
    `assert_conversation_stable`); raises what `steps` raises, and ValueError/TypeError for bad
    input. `template`/`tokenizer` as for check_prefix_stable: the rendering the tokens are counted on."""
    from prefixlint.explain.body_diff import break_difference, compare
    from prefixlint.explain.requests import RequestError, parse_request
    from prefixlint.models.tokens import common_prefix_len
    from prefixlint.testing.compare import PromptShapeError, load_renderer, prompt_of

    renderer, loaded = load_renderer(template, tokenizer)
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start(TRACE_FRAMES)
    try:
        prev: tuple[dict[str, Any], list[int]] | None = None
        count = 0
        for k, (value, gave) in enumerate(_turns(steps, turns)):
            count = k + 1
            body = _as_body(value)
            try:
                parts = parse_request(body).body or {}
            except RequestError as exc:
                raise PromptShapeError(f"turn {k}: not a request body: {exc}") from None
            ids = loaded.encode_many([prompt_of(body, renderer).text])[0].ids
            if prev is not None:
                prev_parts, prev_ids = prev
                shared = common_prefix_len(prev_ids, ids)
                found = compare(prev_parts, parts)
                if found is None and shared < len(prev_ids):
                    found = compare(prev_parts, parts, strict=True)  # as explain: the tokens part
                if found is not None:
                    made = _made_at(*_differing(body, found.part, found.index)) or gave
                    return _failed(k, count, found, break_difference(found), len(prev_ids) - shared, made)
            prev = (parts, ids)
    finally:
        if not tracing:
            tracemalloc.stop()
    return ConversationStability(
        True,
        count,
        None,
        None,
        None,
        None,
        None,
        0,
        None,
        None,
        f"every turn of {count} extends the one before",
    )


def _failed(
    turn: int, turns: int, found: Any, diff: str, lost: int, made: tuple[str, int] | None
) -> ConversationStability:
    path, line = (_shown(made[0]), made[1]) if made else (None, None)
    where = f"{found.part}[{found.index}]" if found.index is not None else found.part
    site = f"{path}:{line}" if path else "(the line that made it was not found)"
    message = "\n".join(
        [
            f"{site} turn {turn}'s request does not extend turn {turn - 1}'s at {where} ({found.kind}): "
            f"{lost:,} tokens of turn {turn - 1}'s prompt recomputed",
            *("  " + d for d in diff.splitlines()),
            "  fix: append to the history as it was sent; never re-serialise, reorder or edit earlier parts",
        ]
    )
    return ConversationStability(
        False, turns, turn, found.part, found.index, found.kind, diff, lost, path, line, message
    )


def assert_conversation_stable(
    steps: Callable[[int], Any] | Iterable[Any],
    *,
    turns: int | None = None,
    template: str | None = None,
    tokenizer: str | None = None,
) -> ConversationStability:
    """`check_conversation_stable`, raising ConversationUnstableError (an AssertionError) at the
    first turn that does not extend the previous one; returns the ConversationStability otherwise."""
    __tracebackhide__ = True
    result = check_conversation_stable(steps, turns=turns, template=template, tokenizer=tokenizer)
    if not result.stable:
        raise ConversationUnstableError(result)
    return result
