"""Request bodies (OpenAI chat completions, Anthropic messages, plain prompts) into one shape, and
their rendering into the prompt text the engine sees, with the request section at any character."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from prefixlint.explain.reading import (
    DEFAULT_LIMITS,
    Skip,
    decode_json,
    lone_surrogate,
    size_text,
    utf8_size_over,
)
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
    """A record that is not analysed: not one of the accepted shapes, or over a limit. `reason` is
    the short key it is counted under."""

    def __init__(self, message: str, reason: str = "not-a-request") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class Request:
    """One request: chat (messages, tools, template kwargs) or a plain prompt; `now` is the clock
    the template reads (from the log line, else a fixed base plus the request's index)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    prompt: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    now: datetime = BASE_TIME
    logged_time: bool = False  # `now` is the log's own timestamp (a trace keeps it)
    system_field: bool = False  # Anthropic: the system prompt came from the top-level `system`
    # What the log says the server did (None where it does not say): prompt tokens it counted, of
    # which it served from cache; time to first token in seconds; the request's `cache_salt`.
    observed_prompt_tokens: int | None = None
    observed_cached_tokens: int | None = None
    ttft: float | None = None
    cache_salt: str | None = None
    session: str | None = None  # the session/user/conversation id a session router would use
    cache_key: str | None = None  # OpenAI's `prompt_cache_key`: hashed into the route with the prefix
    anthropic: bool = False  # read as an Anthropic Messages body (its cache works at breakpoints)
    reply: Reply | None = None  # the server's reply, where the log has the response
    # The body's `system`, `tools` and `messages` as the client sent them (content blocks,
    # `cache_control`), for comparing a conversation's turns (explain/conversations.py); None where
    # the log holds no body (vLLM lines, OTel spans). Never sent to a render worker.
    body: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        # Render workers need what the template reads, not the raw body: do not pickle it twice.
        return {k: v for k, v in self.__dict__.items() if k != "body"}


@dataclass
class Reply:
    """What a logged response says the server generated: the text, its token ids where the server
    returned them (vLLM's `return_token_ids`), why it stopped, and how many tokens it counted."""

    text: str
    token_ids: list[int] | None = None
    finish_reason: str | None = None
    stop_reason: Any = None  # vLLM: None for the end-of-sequence token, else the stop string or id
    completion_tokens: int | None = None


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


def _check_shape(body: dict[str, Any]) -> None:
    """The containers the request's readers index into are what they expect: messages and tools are
    lists of objects, template kwargs an object (anything else in a log is a skipped request)."""
    for k, msg in enumerate(body["messages"]):
        if not isinstance(msg, dict):
            raise RequestError(f"messages[{k}] is {type(msg).__name__}, not an object")
    tools = body.get("tools")
    if tools and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise RequestError("`tools` is not a list of objects")
    kwargs = body.get("chat_template_kwargs")
    if kwargs and not isinstance(kwargs, dict):
        raise RequestError("`chat_template_kwargs` is not an object")


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
            "not-a-request-object",
        )
    stamp = next((data[k] for k in ("timestamp", "time", "created") if k in data), None)
    body = data.get("body", data.get("request", data))
    if not isinstance(body, dict):
        raise RequestError("`body` is not a JSON object", "body-not-an-object")
    stamp = stamp if stamp is not None else body.get("created")
    logged = _parse_time(stamp)
    now = logged or BASE_TIME + timedelta(seconds=index * interval)
    session = session_key(body, data)
    request = _parse_body(body, now, session, anthropic)
    request.logged_time = logged is not None
    return request


def _parse_body(body: dict[str, Any], now: datetime, session: str | None, anthropic: bool | None) -> Request:
    """The request a body holds, read as a chat or a plain prompt."""
    if isinstance(body.get("prompt"), str):
        return Request(prompt=body["prompt"], now=now, session=session)
    if "messages" not in body and is_responses_body(body):
        body = _responses_as_chat(body)
    if not isinstance(body.get("messages"), list):
        raise RequestError(
            "neither `messages` (chat) nor `prompt` (plain text) in the request", "no-messages-or-prompt"
        )
    _check_shape(body)
    kwargs = body.get("chat_template_kwargs") or {}
    tools = body.get("tools") or None
    raw = {"system": body.get("system"), "tools": tools, "messages": body["messages"]}
    # What the provider's cache reads besides the prompt: the model (its minimum length) and a
    # top-level `cache_control` (Anthropic's automatic breakpoint).
    raw.update({k: body[k] for k in ("model", "cache_control") if k in body})
    key = body.get("prompt_cache_key")
    cache_key = key if isinstance(key, str) and key else None
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
        return Request(
            messages,
            tools,
            kwargs=dict(kwargs),
            now=now,
            system_field=system_field,
            session=session,
            cache_key=cache_key,
            anthropic=True,
            body=raw,
        )
    messages = [
        {**m, "content": _text_of(m.get("content"))} if isinstance(m, dict) else m for m in body["messages"]
    ]
    return Request(
        messages, tools, kwargs=dict(kwargs), now=now, session=session, cache_key=cache_key, body=raw
    )


def read_request_file(path: str, limits: Any = DEFAULT_LIMITS) -> Request:
    """A request file: a JSON body, or anything else as a plain-text prompt (read within `limits`:
    a file over `line_bytes`, too deep or with too many messages is a RequestError)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limits.line_bytes + 1) if limits.line_bytes else fh.read()
    except OSError as exc:
        raise RequestError(f"{path}: cannot read: {exc.strerror or exc}", "unreadable") from exc
    if limits.line_bytes and len(data) > limits.line_bytes:
        raise RequestError(
            f"{path}: larger than {size_text(limits.line_bytes)} (limit line_bytes)", "line-too-long"
        )
    value = decode_json(data, limits.depth)
    if isinstance(value, Skip):
        if value.reason == "json-too-deep":
            raise RequestError(f"{path}: {value.detail}", value.reason)
        try:
            return Request(prompt=data.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise RequestError(f"{path}: not UTF-8 at byte {exc.start}", "not-utf8") from exc
    try:
        request = parse_request(value)
        check_request_size(request, limits.messages)
    except RequestError as exc:
        raise RequestError(f"{path}: {exc}", exc.reason) from exc
    return request


def check_request_size(request: Request, messages: int) -> None:
    """Raise RequestError for a request with more than `messages` messages or tools."""
    counted = max(len(request.messages), len(request.tools) if isinstance(request.tools, list) else 0)
    if messages and counted > messages:
        raise RequestError(
            f"{counted:,} messages or tools, over {messages:,} (limit messages)", "too-many-messages"
        )


class Renderer:
    """Renders requests through one chat template (the user's, or the default ChatML one)."""

    def __init__(self, template: ChatTemplate | None, max_bytes: int = DEFAULT_LIMITS.request_bytes) -> None:
        self.max_bytes = max_bytes  # the most the tokenizer is given (UTF-8 bytes of one prompt)
        self.user_template = template is not None
        self.template = template or ChatTemplate(DEFAULT_TEMPLATE, DEFAULT_TEMPLATE_PATH)
        self.template.streaming = True  # requests are independent: a budget each, no memo

    def render(self, request: Request) -> Rendered:
        """The prompt; a RequestError if the template raises for this request, the prompt is over
        `max_bytes` or holds what no tokenizer takes."""
        if request.prompt is not None:
            rendered = Rendered(request, request.prompt, None)
        else:
            try:
                traced = self.template.render(
                    request.messages, tools=request.tools, now=request.now, **request.kwargs
                )
            except Exception as exc:  # the user's template (or its kwargs) raising for this request
                detail = f"the template raised {type(exc).__name__}: {str(exc)[:120]}"
                raise RequestError(detail, "template-error") from exc
            rendered = Rendered(request, traced.text, traced if self.user_template else None)
        bad = lone_surrogate(rendered.text)
        if bad is not None:
            raise RequestError(f"the prompt holds a lone surrogate at character {bad:,}", "invalid-unicode")
        size = utf8_size_over(rendered.text, self.max_bytes)
        if size is not None:
            raise RequestError(
                f"the prompt is {size_text(size)}, over {size_text(self.max_bytes)} (limit request_bytes)",
                "request-too-large",
            )
        return rendered


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
