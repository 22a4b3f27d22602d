"""Request bodies (OpenAI chat completions, Anthropic messages, plain prompts) into one shape, and
their rendering into the prompt text the engine sees, with the request section at any character."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from prefixlint.explain.routing import session_key
from prefixlint.jinja.inputs import BASE_TIME
from prefixlint.jinja.template import ChatTemplate

# Used when no template is given: a ChatML rendering, so that chat bodies still become prompts.
DEFAULT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
DEFAULT_TEMPLATE_PATH = "<default ChatML>"


class RequestError(ValueError):
    """A request body that is not one of the accepted shapes."""


@dataclass
class Request:
    """One request: chat (messages, tools, template kwargs) or a plain prompt; `now` is the clock
    the template reads (from the log line, else a fixed base plus the request's index)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    prompt: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    now: datetime = BASE_TIME
    system_field: bool = False  # Anthropic: the system prompt came from the top-level `system`
    session: str | None = None  # the session/user/conversation id a session router would use


def _text_of(content: Any) -> Any:
    """Content parts with only text become one string (as vLLM does for string-format templates)."""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "\n".join(str(p.get("text", "")) for p in content)
    return content


def _anthropic_messages(body: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _text_of(system)})
    for msg in body.get("messages") or []:
        content = msg.get("content")
        if isinstance(content, list):
            texts, calls, results = [], [], []
            for block in content:
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "text":
                    texts.append(str(block.get("text", "")))
                elif kind == "tool_use":
                    calls.append(
                        {
                            "id": block.get("id"),
                            "type": "function",
                            "function": {
                                "name": block.get("name"),
                                "arguments": json.dumps(block.get("input", {})),
                            },
                        }
                    )
                elif kind == "tool_result":
                    results.append(
                        {
                            "role": "tool",
                            "tool_call_id": block.get("tool_use_id"),
                            "content": _text_of(block.get("content", "")),
                        }
                    )
            if texts or calls:
                out: dict[str, Any] = {"role": msg.get("role"), "content": "\n".join(texts)}
                if calls:
                    out["tool_calls"] = calls
                messages.append(out)
            messages.extend(results)
        else:
            messages.append({"role": msg.get("role"), "content": content})
    return messages, bool(system)


def _is_anthropic(body: dict[str, Any]) -> bool:
    if "system" in body or "anthropic_version" in body:
        return True
    if any(isinstance(t, dict) and "input_schema" in t for t in body.get("tools") or []):
        return True
    return any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
        for m in body.get("messages") or []
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
    )


def _parse_time(value: Any) -> datetime | None:
    try:
        if isinstance(value, int | float):
            return datetime.fromtimestamp(float(value), UTC)
        if isinstance(value, str):
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def parse_request(data: Any, index: int = 0, interval: float = 1.0) -> Request:
    """A log line or a request file's JSON (or a plain string) as a Request.

    Accepts a body, or `{"body"|"request": body, "timestamp"|"time"|"created": …}` from a gateway log.
    """
    if isinstance(data, str):
        return Request(prompt=data, now=BASE_TIME + timedelta(seconds=index * interval))
    if not isinstance(data, dict):
        raise RequestError(f"a request is a JSON object or a string, not {type(data).__name__}")
    stamp = next((data[k] for k in ("timestamp", "time", "created") if k in data), None)
    body = data.get("body", data.get("request", data))
    if not isinstance(body, dict):
        raise RequestError("`body` is not a JSON object")
    stamp = stamp if stamp is not None else body.get("created")
    now = _parse_time(stamp) or BASE_TIME + timedelta(seconds=index * interval)
    session = session_key(body, data)
    if isinstance(body.get("prompt"), str):
        return Request(prompt=body["prompt"], now=now, session=session)
    if not isinstance(body.get("messages"), list):
        raise RequestError("neither `messages` (chat) nor `prompt` (plain text) in the request")
    kwargs = body.get("chat_template_kwargs") or {}
    tools = body.get("tools") or None
    if _is_anthropic(body):
        messages, system_field = _anthropic_messages(body)
        if tools:
            tools = [
                {
                    "type": "function",
                    "function": {
                        "name": t.get("name"),
                        "description": t.get("description", ""),
                        "parameters": t.get("input_schema", {}),
                    },
                }
                if isinstance(t, dict) and "input_schema" in t
                else t
                for t in tools
            ]
        return Request(
            messages, tools, kwargs=dict(kwargs), now=now, system_field=system_field, session=session
        )
    messages = [
        {**m, "content": _text_of(m.get("content"))} if isinstance(m, dict) else m for m in body["messages"]
    ]
    return Request(messages, tools, kwargs=dict(kwargs), now=now, session=session)


def read_request_file(path: str) -> Request:
    """A request file: a JSON body, or anything else as a plain-text prompt."""
    text = Path(path).read_text(encoding="utf-8-sig")
    try:
        data = json.loads(text)
    except ValueError:
        return Request(prompt=text)
    return parse_request(data)


def open_log(path: str) -> tuple[IO[bytes], IO[bytes]]:
    """(lines, raw): the log's lines (gunzipped if it starts with the gzip magic) and the raw file,
    whose position drives the progress bar."""
    raw = open(path, "rb")  # noqa: SIM115 - the caller closes it after streaming
    if raw.read(2) == b"\x1f\x8b":
        raw.seek(0)
        return gzip.GzipFile(fileobj=raw), raw
    raw.seek(0)
    return raw, raw


def iter_log(lines: IO[bytes], interval: float = 1.0) -> Iterator[tuple[int, Request | RequestError]]:
    """(line number, request or the reason it is not one), streaming; blank lines are skipped."""
    index = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            yield number, parse_request(data, index, interval)
        except (ValueError, RequestError) as exc:
            yield number, RequestError(str(exc)[:200])
        index += 1


class Renderer:
    """Renders requests through one chat template (the user's, or the default ChatML one)."""

    def __init__(self, template: ChatTemplate | None) -> None:
        self.user_template = template is not None
        self.template = template or ChatTemplate(DEFAULT_TEMPLATE, DEFAULT_TEMPLATE_PATH)
        self.template.streaming = True  # requests are independent: a budget each, no memo

    def render(self, request: Request) -> Rendered:
        if request.prompt is not None:
            return Rendered(request, request.prompt, None)
        traced = self.template.render(
            request.messages, tools=request.tools, now=request.now, **request.kwargs
        )
        return Rendered(request, traced.text, traced if self.user_template else None)


@dataclass
class Rendered:
    request: Request
    text: str
    traced: Any  # TracedRender of the user's template, or None (plain prompt, default template)

    def template_line(self, char: int) -> int | None:
        """The user's template line that produced character `char` (None without a template)."""
        if self.traced is None or char >= len(self.text):
            return None
        return self.traced.origin_at(char).line

    def section_at(self, char: int) -> str:
        """Which part of the request character `char` belongs to: "tools", "system", "messages[k]",
        "generation prompt" or "prompt". Found by locating each message's text in the prompt in
        order; template text before a message belongs to that message (its header), template text
        before the first message to the system/tools preamble."""
        request = self.request
        if request.prompt is not None:
            return "prompt"
        tools_span = self._tools_span()
        if tools_span and tools_span[0] <= char < tools_span[1]:
            return "tools"
        cursor = 0
        offset = 1 if request.system_field else 0  # Anthropic: messages[k] counts from after `system`
        for k, msg in enumerate(request.messages):
            content = msg.get("content") if isinstance(msg, dict) else None
            text = content.strip() if isinstance(content, str) else ""
            found = self.text.find(text, cursor) if text else -1
            if found < 0:
                continue
            end = found + len(text)
            if char < end:
                if msg.get("role") == "system" or (cursor == 0 and char < found):
                    return "system"  # a system message, or the template's preamble before the first one
                return f"messages[{k - offset}]"
            cursor = end
        return "generation prompt" if cursor else "system"

    def _tools_span(self) -> tuple[int, int] | None:
        names = [
            str((t.get("function") or t).get("name"))
            for t in self.request.tools or []
            if isinstance(t, dict) and isinstance(t.get("function") or t, dict)
        ]
        hits = [(self.text.find(n), n) for n in names if n and n != "None"]
        hits = [(p, n) for p, n in hits if p >= 0]
        if not hits:
            return None
        start = self.text.rfind("\n", 0, min(p for p, _ in hits)) + 1
        last = max(p + len(n) for p, n in hits)
        end = self.text.find("\n", last)
        return start, end if end >= 0 else len(self.text)
