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
    """A record that is not a usable request; `reason` is its short category, for counting."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


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
    # What the log says the server did (None where it does not say): prompt tokens it counted, of
    # which it served from cache; time to first token in seconds; the request's `cache_salt`.
    observed_prompt_tokens: int | None = None
    observed_cached_tokens: int | None = None
    ttft: float | None = None
    cache_salt: str | None = None


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


def is_responses_body(body: dict[str, Any]) -> bool:
    """An OpenAI Responses API body: `instructions`, or `input` items with roles (a bare string
    `input` alone is as likely an embeddings request)."""
    items = body.get("input")
    if isinstance(body.get("instructions"), str) and isinstance(items, str | list):
        return True
    return isinstance(items, list) and any(isinstance(i, dict) and "role" in i for i in items)


def _responses_as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI Responses API body (`instructions`, `input`) as a chat body: the instructions are
    the system message; message items keep their role, their `input_text` parts their text."""
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body["input"]
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
    else:
        for item in items:
            if isinstance(item, dict) and "role" in item:
                content = item.get("content")
                if isinstance(content, list):
                    content = "\n".join(
                        str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
                    )
                messages.append({"role": item["role"], "content": content})
    return {**body, "messages": messages}


def is_anthropic_body(body: dict[str, Any]) -> bool:
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


def parse_request(data: Any, index: int = 0, interval: float = 1.0, anthropic: bool | None = None) -> Request:
    """A log line or a request file's JSON (or a plain string) as a Request.

    Accepts a body, or `{"body"|"request": body, "timestamp"|"time"|"created": …}` from a gateway log.
    `anthropic`: read the body as Anthropic's (True) or OpenAI's (False); None tells them apart.
    """
    if isinstance(data, str):
        return Request(prompt=data, now=BASE_TIME + timedelta(seconds=index * interval))
    if not isinstance(data, dict):
        raise RequestError(
            f"a request is a JSON object or a string, not {type(data).__name__}",
            reason="not a request object",
        )
    stamp = next((data[k] for k in ("timestamp", "time", "created") if k in data), None)
    body = data.get("body", data.get("request", data))
    if not isinstance(body, dict):
        raise RequestError("`body` is not a JSON object", reason="body is not an object")
    stamp = stamp if stamp is not None else body.get("created")
    now = _parse_time(stamp) or BASE_TIME + timedelta(seconds=index * interval)
    if isinstance(body.get("prompt"), str):
        return Request(prompt=body["prompt"], now=now)
    if "messages" not in body and is_responses_body(body):
        body = _responses_as_chat(body)
    if not isinstance(body.get("messages"), list):
        raise RequestError(
            "neither `messages` (chat) nor `prompt` (plain text) in the request",
            reason="no messages or prompt",
        )
    kwargs = body.get("chat_template_kwargs") or {}
    tools = body.get("tools") or None
    if anthropic if anthropic is not None else is_anthropic_body(body):
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
        return Request(messages, tools, kwargs=dict(kwargs), now=now, system_field=system_field)
    messages = [
        {**m, "content": _text_of(m.get("content"))} if isinstance(m, dict) else m for m in body["messages"]
    ]
    return Request(messages, tools, kwargs=dict(kwargs), now=now)


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


def iter_log(
    lines: IO[bytes], interval: float = 1.0, log_format: str | None = None, found: list[str] | None = None
) -> Iterator[tuple[int, Request | RequestError]]:
    """(line number, request or the reason it is not one), streaming; blank lines are skipped. The
    format is `log_format`, else told from the first readable records (appended to `found`)."""
    from itertools import chain

    from prefixlint.explain.formats import DETECT_LINES, DETECT_RECORDS, decode, detect, kind_of, requests_of

    head: list[tuple[int, bytes]] = []
    numbered = ((n, line) for n, line in enumerate(lines, 1) if line.strip())
    if log_format is None:
        # A server log may open with many lines that are no request: look past them, boundedly.
        recognised: list[Any] = []
        for item in numbered:
            head.append(item)
            try:
                value = decode(item[1], None)
            except RequestError:
                value = None
            if kind_of(value) is not None:
                recognised.append(value)
            if len(recognised) >= DETECT_RECORDS or len(head) >= DETECT_LINES:
                break
        log_format = detect(recognised)
    if found is not None:
        found.append(log_format)
    index = 0
    for number, line in chain(head, numbered):
        try:
            items = requests_of(decode(line, log_format), log_format, index, interval)
        except RequestError as exc:
            items = [exc]
        for item in items:
            yield number, item
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
        offset = 1 if request.system_field else 0  # Anthropic: messages[k] counts from after `system`
        cursor = 0
        for k, found, end in self._message_spans():
            if char < end:
                if request.messages[k].get("role") == "system" or (cursor == 0 and char < found):
                    return "system"  # a system message, or the template's preamble before the first one
                return f"messages[{k - offset}]"
            cursor = end
        return "generation prompt" if cursor else "system"

    def message_end(self, char: int) -> int:
        """Where the content of the message holding character `char` ends (template text before a
        message belongs to it); the prompt's end for a plain prompt or past the last message."""
        if self.request.prompt is None:
            for _, _, end in self._message_spans():
                if char < end:
                    return end
        return len(self.text)

    def _message_spans(self) -> list[tuple[int, int, int]]:
        """(index, start, end) of each message's text content found in the prompt, in order."""
        out: list[tuple[int, int, int]] = []
        cursor = 0
        for k, msg in enumerate(self.request.messages):
            content = msg.get("content") if isinstance(msg, dict) else None
            text = content.strip() if isinstance(content, str) else ""
            found = self.text.find(text, cursor) if text else -1
            if found < 0:
                continue
            cursor = found + len(text)
            out.append((k, found, cursor))
        return out

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
