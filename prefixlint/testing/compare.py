"""From what the build returned to the first divergent token between two worlds and the call
whose returned value put the differing text there.

The build's output goes through the same request parsing and chat template rendering as
`prefixlint explain`, and the same tokenizer loading and common-prefix helpers as `check`."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from prefixlint.models.tokens import LoadedTokenizer, TokenizerError, common_prefix_len, token_at_char
from prefixlint.testing.record import Call


class PromptShapeError(TypeError):
    """The build returned something that is neither a prompt, messages nor a request body."""


def load_renderer(template: str | None, tokenizer: str | None) -> tuple[Any, LoadedTokenizer]:
    """The request renderer (the chat template as `explain` resolves it: a template file, a
    tokenizer_config.json or a model folder; else plain ChatML) and the tokenizer."""
    from prefixlint.explain.command import ExplainError, resolve
    from prefixlint.explain.requests import Renderer

    if template is not None and not Path(template).exists():
        raise ValueError(f"{template}: no such file or folder")
    folder = template if template is not None and Path(template).is_dir() else None
    try:
        chat_template, loaded = resolve(None if folder else template, folder, tokenizer)
    except (ExplainError, TokenizerError, OSError, ValueError) as exc:
        raise ValueError(str(exc)) from None
    if template is not None and chat_template is None:
        raise ValueError(f"{template}: no chat template found there")
    return Renderer(chat_template), loaded


@dataclass(frozen=True)
class Prompt:
    """The text an engine sees, and where the last message's content starts in it: what follows
    is a new request's own in real traffic, so static text there is not counted as lost."""

    text: str
    last_message_start: int
    template_calls: tuple[Call, ...] = ()  # the chat template's own clock reads (`strftime_now`)


def _last_message_start(text: str, messages: list[Any]) -> int:
    for message in reversed(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and content.strip():
            at = text.rfind(content.strip())
            return at if at >= 0 else len(text)
    return len(text)


# LangChain's message types, by their `type`, as chat roles.
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "chat": "user"}


def _as_message(message: Any) -> Any:
    """A message object (LangChain's BaseMessage, any object with `role`/`type` and `content`)
    as the dict a chat template reads; dicts pass as they are."""
    if isinstance(message, dict) or not hasattr(message, "content"):
        return message
    role = getattr(message, "role", None) or _ROLES.get(str(getattr(message, "type", "")))
    return {"role": role, "content": message.content} if role else message


def prompt_of(value: Any, renderer: Any, now: datetime | None = None) -> Prompt:
    """The prompt an engine would see for a build's return value: a string as it is, chat
    messages or an OpenAI/Anthropic request body rendered through the chat template, whose
    `strftime_now` reads `now` (the world's clock) when given."""
    from prefixlint.explain.requests import RequestError, parse_request
    from prefixlint.jinja.template import describe_error

    if isinstance(value, str):
        return Prompt(value, len(value))
    if isinstance(value, list | tuple):
        value = {"messages": [_as_message(m) for m in value]}
    if not isinstance(value, dict):
        raise PromptShapeError(
            "build() must return a prompt string, a list of chat messages or a request body (a dict), "
            f"not {type(value).__name__}"
        )
    try:
        request = parse_request(value)
    except RequestError as exc:
        raise PromptShapeError(f"build() returned a dict that is not a request body: {exc}") from None
    if now is not None:
        request.now = now
    try:
        text = renderer.render(request).text
    except RequestError as exc:  # the template raised (its own error is the cause), or a limit
        raised = describe_error(exc.__cause__) if exc.__cause__ is not None else str(exc)
        raise ValueError(
            f"the chat template {renderer.template.path} raised for the built request: {raised}"
        ) from None
    if request.prompt is not None:
        return Prompt(text, len(text))
    return Prompt(text, _last_message_start(text, request.messages), _template_clock_calls(renderer))


def _template_clock_calls(renderer: Any) -> tuple[Call, ...]:
    """The `strftime_now` calls of the render just made, as Calls at the template's own lines."""
    if not renderer.user_template:
        return ()
    template = renderer.template
    calls = []
    for clock in template.clock.calls:
        span = template.span(clock.line or 1)
        calls.append(Call("clock", f'strftime_now("{clock.fmt}")', (span.path, span.line), clock.value))
    return tuple(calls)


@dataclass(frozen=True)
class Divergence:
    """Where two renderings of the same request first differ, and what that costs."""

    char: int  # first differing character
    token: int  # first differing token (the shared token prefix)
    tokens: int  # tokens of the first rendering
    static_lost: int  # tokens both renderings share after it, before the last message: recomputed
    token_a: str
    token_b: str


def diverge(first: Prompt, other: Prompt, tokenizer: LoadedTokenizer) -> Divergence | None:
    """None when both prompts are the same."""
    text_a, text_b = first.text, other.text
    if text_a == text_b:
        return None
    a, b = tokenizer.encode_many([text_a, text_b])
    token = common_prefix_len(a.ids, b.ids)
    char = common_prefix_len(text_a, text_b)
    # Static tokens after the divergence: those both renderings share, in order, after it and
    # before the last message's content.
    end = max(token, token_at_char(a.offsets, first.last_message_start))
    matcher = difflib.SequenceMatcher(None, a.ids[token:end], b.ids[token:], autojunk=False)
    static = sum(block.size for block in matcher.get_matching_blocks())
    return Divergence(
        char=char,
        token=token,
        tokens=len(a.ids),
        static_lost=static,
        token_a=_token_text(text_a, a.offsets, token),
        token_b=_token_text(text_b, b.offsets, token),
    )


def _token_text(text: str, offsets: list[tuple[int, int]], index: int) -> str:
    if index >= len(offsets):
        return ""
    start, end = offsets[index]
    return text[start:end]


CLOCK_FORMATS = (
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%dT%H:%M:%SZ",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d",
    "%Y%m%d",
    "%H:%M:%S",
    "%H:%M",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%A, %B %d, %Y",
    "%A %d %B %Y",
    "%a, %d %b %Y %H:%M:%S",
    "%B %d",
    "%d %B",
    "%B %Y",
    "%A",
    "%c",
    "%x",
    "%X",
)


def renderings(value: Any) -> list[str]:
    """The texts a returned value is likely to appear as in a prompt."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, bytes | bytearray):
        return [value.hex()] if value else []
    if isinstance(value, UUID):
        return [str(value), value.hex]
    if isinstance(value, datetime):
        return _clock_texts(value)
    if isinstance(value, date):
        return [value.isoformat(), *(value.strftime(f) for f in CLOCK_FORMATS if "%H" not in f)]
    if isinstance(value, bool):
        return [str(value)]
    if isinstance(value, int | float):
        return [str(value), repr(value)]
    if isinstance(value, list | tuple):
        return [text for item in value[:64] for text in renderings(item)]
    text = str(value)
    return [text] if text.strip() and " object at 0x" not in text else []


def _clock_texts(moment: datetime) -> list[str]:
    """A frozen clock reading as it is usually printed: ISO forms, strftime forms, timestamps."""
    naive = moment.replace(tzinfo=None)  # naive now() reads the wall time of the frozen zone
    stamp = moment.timestamp()
    texts = [moment.isoformat(), naive.isoformat(), str(naive), str(moment), str(int(stamp)), str(stamp)]
    texts += [
        str(int(stamp * 1000)),
        naive.isoformat(timespec="seconds"),
        naive.isoformat(timespec="minutes"),
    ]
    texts += [naive.strftime(f) for f in CLOCK_FORMATS]
    return list(dict.fromkeys(t for t in texts if t))


def covers(text: str, rendering: str, char: int) -> bool:
    """Whether an occurrence of `rendering` in `text` spans character `char`."""
    return text.find(rendering, max(0, char - len(rendering) + 1), char + len(rendering)) >= 0


def cause_at(char: int, text: str, calls: list[Call]) -> Call | None:
    """The call whose returned value's text spans `char` in `text`: the longest such text (one
    character from `secrets.choice` spans it by chance more easily than a whole word), the first
    call in call order among equals (an outer call before the ones it made)."""
    best: Call | None = None
    longest = 0
    for call in calls:
        length = max((len(r) for r in renderings(call.value) if covers(text, r, char)), default=0)
        if length > longest:
            best, longest = call, length
    return best
