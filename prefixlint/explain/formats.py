"""Request log formats: one decoded record (a JSON value, or a raw text line for vLLM's own log) into
Requests, or the reason it is not one; and which format a log is, from its first readable records.

Formats, each read as its own documentation describes it:
- `openai` / `anthropic`: a request body, alone or wrapped by a gateway as
  `{"request"|"body": …, "response": …, "timestamp": …}`; the response's `usage` gives what the
  server reused (`prompt_tokens_details.cached_tokens`, or Anthropic's `cache_read_input_tokens`).
- `litellm`: LiteLLM's StandardLoggingPayload (alone or under `standard_logging_object`): `messages`,
  `prompt_tokens`, `startTime`/`completionStartTime` (time to first token), `response.usage`.
- `otel`: OpenTelemetry GenAI spans exported as JSON, one span (SDK console exporter, attributes as
  an object) or an OTLP `resourceSpans` envelope (attributes as key/value lists); the prompt from
  `gen_ai.system_instructions` + `gen_ai.input.messages`, or the older `gen_ai.prompt.N.role/content`.
- `vllm-log`: vLLM's `--enable-log-requests` lines, `Received request ID: prompt: '…', params: …`
  (or, in later versions, `Request ID details: prompt: '…'` at DEBUG level): the prompt as the
  server rendered it.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from prefixlint.explain.reading import DEFAULT_LIMITS, Skip, decode_json
from prefixlint.explain.requests import (
    Reply,
    Request,
    RequestError,
    is_anthropic_body,
    is_responses_body,
    parse_request,
)
from prefixlint.jinja.inputs import BASE_TIME

FORMATS = ("openai", "anthropic", "litellm", "otel", "vllm-log")
# Formats whose one line can hold any number of requests (an OTLP export batches spans); in the
# others each line is one record, so a line's clock index is known before it is decoded.
MANY_PER_LINE = frozenset({"otel"})
DETECT_RECORDS = 32  # recognised records looked at to tell the log's format
DETECT_LINES = 2000  # lines read at most to find them (a server log opens with its start-up lines)

# vLLM up to 0.10 logs the prompt at INFO in its "Received request" line; later versions log
# "Received request ID: params: …" at INFO and the prompt in "Request ID details: prompt: …" at DEBUG.
_VLLM_LINE = re.compile(r"(?:Received request|Request) (?P<id>\S+?)(?: details)?: prompt: (?P<prompt>'|\")")
_VLLM_PARAMS_LINE = re.compile(r"Received request \S+: params: ")
VLLM_NO_PROMPT = "vllm line without the prompt (newer vLLM logs it at DEBUG: VLLM_LOGGING_LEVEL=DEBUG)"


def kind_of(value: Any) -> str | None:
    """The format one decoded record looks like (None: none of them)."""
    if isinstance(value, str):
        return "vllm-log" if _VLLM_LINE.search(value) or _VLLM_PARAMS_LINE.search(value) else None
    if not isinstance(value, dict):
        return None
    if "resourceSpans" in value or _span_attributes(value) is not None:
        return "otel"
    if isinstance(value.get("standard_logging_object"), dict) or (
        "call_type" in value and "messages" in value and "startTime" in value
    ):
        return "litellm"
    body = value.get("body", value.get("request", value))
    if isinstance(body, dict) and (
        isinstance(body.get("messages"), list)
        or isinstance(body.get("prompt"), str)
        or is_responses_body(body)
    ):
        return "anthropic" if is_anthropic_body(body) else "openai"
    return None


def detect(values: list[Any]) -> str:
    """The most common format among the first records (openai when none is recognised)."""
    kinds = Counter(k for k in map(kind_of, values[:DETECT_RECORDS]) if k is not None)
    if not kinds:
        return "openai"
    if {"openai", "anthropic"} >= set(kinds):
        return kinds.most_common(1)[0][0]  # a gateway log may hold both; each body is told apart below
    return max(kinds, key=lambda k: (kinds[k], -FORMATS.index(k)))


def decode(line: bytes, fmt: str | None, depth: int = DEFAULT_LIMITS.depth) -> Any:
    """A log line as a JSON value (nested at most `depth` deep: reading.decode_json); as text in
    vLLM's own log (or, while the format is not yet known (`fmt` None), where the line does not
    look like JSON). Raises RequestError with the reason it is neither."""
    text = line.decode("utf-8", errors="replace").strip()
    if fmt == "vllm-log" or (fmt is None and not text.startswith(("{", "[", '"'))):
        return text
    value = decode_json(line, depth)
    if isinstance(value, Skip):
        raise RequestError(value.detail, value.reason)
    return value


def requests_of(value: Any, fmt: str, index: int, interval: float) -> list[Request | RequestError]:
    """The requests in one record of format `fmt` (`index`: requests before it, for the clock)."""
    try:
        if fmt == "vllm-log":
            return [_vllm_line(value, index, interval)]
        if fmt == "otel":
            return _otel(value, index, interval)
        if fmt == "litellm":
            return [_litellm(value, index, interval)]
        return [_body(value, index, interval, fmt)]
    except RequestError as exc:
        return [exc]
    except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a field of an unexpected type
        return [
            RequestError(
                f"malformed {fmt} record: {type(exc).__name__}: {exc}"[:200], reason=f"malformed-{fmt}"
            )
        ]


# --- OpenAI / Anthropic bodies -----------------------------------------------------------------


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)  # OTLP JSON writes 64-bit integers as strings
    return None


def usage_counts(usage: Any) -> tuple[int | None, int | None]:
    """(prompt tokens, of which the server served from cache) from an OpenAI or Anthropic `usage`."""
    if not isinstance(usage, dict):
        return None, None
    if isinstance(usage.get("input_tokens_details"), dict):  # OpenAI Responses API
        return _int(usage.get("input_tokens")), _int(usage["input_tokens_details"].get("cached_tokens"))
    if "input_tokens" in usage and "prompt_tokens" not in usage:
        # Anthropic: input_tokens counts only what follows the last cache breakpoint.
        parts = [
            _int(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        read = _int(usage.get("cache_read_input_tokens"))
        return sum(p or 0 for p in parts), read
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
    return _int(usage.get("prompt_tokens")), cached


def _response_usage(data: dict[str, Any]) -> Any:
    response = data.get("response")
    if isinstance(response, dict):
        inner = response.get("body", response)  # OpenAI batch output nests the body
        if isinstance(inner, dict) and "usage" in inner:
            return inner["usage"]
    return data.get("usage")


def _ttft_seconds(data: dict[str, Any]) -> float | None:
    for key, scale in (
        ("ttft_ms", 1e-3),
        ("time_to_first_token_ms", 1e-3),
        ("ttft", 1.0),
        ("time_to_first_token", 1.0),
    ):
        value = data.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return value * scale
    return None


def _reply(data: dict[str, Any]) -> Reply | None:
    """The first choice of a logged OpenAI-style response (chat `message.content` or completion
    `text`), or None where the log has no response."""
    response = data.get("response")
    if isinstance(response, dict) and isinstance(response.get("body"), dict):
        response = response["body"]  # OpenAI batch output nests the body
    choices = response.get("choices") if isinstance(response, dict) else None
    if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
        return None
    choice = choices[0]
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else choice.get("text")
    if not isinstance(text, str):
        return None
    ids = choice.get("token_ids")
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    return Reply(
        text,
        ids if isinstance(ids, list) and all(_int(i) is not None for i in ids) else None,
        choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None,
        choice.get("stop_reason"),
        _int(usage.get("completion_tokens")),
    )


def _body(data: Any, index: int, interval: float, fmt: str) -> Request:
    request = parse_request(data, index, interval, anthropic=True if fmt == "anthropic" else None)
    if isinstance(data, dict):
        body = data.get("body", data.get("request", data))
        request.observed_prompt_tokens, request.observed_cached_tokens = usage_counts(_response_usage(data))
        request.reply = _reply(data)
        request.ttft = _ttft_seconds(data)
        salt = body.get("cache_salt") if isinstance(body, dict) else None
        request.cache_salt = salt if isinstance(salt, str) and salt else None
    return request


# --- LiteLLM StandardLoggingPayload ------------------------------------------------------------


def _litellm(value: Any, index: int, interval: float) -> Request:
    payload = value.get("standard_logging_object", value) if isinstance(value, dict) else None
    if not isinstance(payload, dict) or "messages" not in payload:
        raise RequestError(
            "not a LiteLLM standard logging payload (no `messages`)", reason="not-a-litellm-record"
        )
    if payload.get("status") == "failure":
        raise RequestError("a failed call (status: failure)", reason="failed-call")
    messages = payload["messages"]
    params = payload.get("model_parameters") if isinstance(payload.get("model_parameters"), dict) else {}
    if isinstance(messages, str):
        body: dict[str, Any] = {"prompt": messages}
    elif isinstance(messages, list):
        body = {"messages": messages}
        if params.get("tools"):
            body["tools"] = params["tools"]
    else:
        raise RequestError("LiteLLM `messages` is neither a list nor a string", reason="malformed-litellm")
    start = payload.get("startTime")
    request = parse_request(
        {"body": body, "timestamp": start} if start is not None else body, index, interval
    )
    usage = (
        (payload.get("response") or {}).get("usage") if isinstance(payload.get("response"), dict) else None
    )
    if usage is None and isinstance(payload.get("metadata"), dict):
        usage = payload["metadata"].get("usage_object")
    prompt, cached = usage_counts(usage)
    request.observed_prompt_tokens = prompt if prompt is not None else _int(payload.get("prompt_tokens"))
    request.observed_cached_tokens = cached
    first, end = payload.get("completionStartTime"), payload.get("endTime")
    numbers = all(isinstance(t, int | float) for t in (start, first, end))
    # Without streaming LiteLLM sets completionStartTime to endTime: the whole call, not a TTFT.
    if numbers and start <= first < end:
        request.ttft = float(first - start)
    return request


# --- OpenTelemetry GenAI spans -----------------------------------------------------------------


def _otlp_value(value: Any) -> Any:
    """An OTLP JSON AnyValue ({"stringValue": …}, {"intValue": "12"}, …) as a plain value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return _int(value["intValue"])
    if "arrayValue" in value:
        return [_otlp_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    return None


def _span_attributes(span: Any) -> dict[str, Any] | None:
    """A span's attributes as a dict, if it is a span with GenAI attributes (None otherwise)."""
    if not isinstance(span, dict):
        return None
    attrs = span.get("attributes")
    if isinstance(attrs, list):
        attrs = {a.get("key"): _otlp_value(a.get("value")) for a in attrs if isinstance(a, dict)}
    if not isinstance(attrs, dict) or not any(isinstance(k, str) and k.startswith("gen_ai.") for k in attrs):
        return None
    return attrs


def _json_attr(value: Any) -> Any:
    """A structured attribute, recorded as JSON text where the exporter has no structured values."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _parts_text(parts: Any) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(text, tool calls, tool responses) of a GenAI message's parts."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content", "")))
        elif kind == "tool_call":
            args = part.get("arguments")
            calls.append(
                {
                    "id": part.get("id"),
                    "type": "function",
                    "function": {
                        "name": part.get("name"),
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        elif kind == "tool_call_response":
            response = part.get("response")
            results.append(
                {
                    "tool_call_id": part.get("id"),
                    "content": response if isinstance(response, str) else json.dumps(response),
                }
            )
    return "\n".join(texts), calls, results


def _genai_messages(attrs: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Chat messages from `gen_ai.system_instructions` + `gen_ai.input.messages` (semantic
    conventions 1.37+), else from the older flattened `gen_ai.prompt.N.role` / `.content`."""
    messages: list[dict[str, Any]] = []
    system = _json_attr(attrs.get("gen_ai.system_instructions"))
    if system:
        text = system if isinstance(system, str) else _parts_text(system)[0]
        messages.append({"role": "system", "content": text})
    inputs = _json_attr(attrs.get("gen_ai.input.messages"))
    if isinstance(inputs, list):
        for msg in inputs:
            if not isinstance(msg, dict):
                continue
            text, calls, results = _parts_text(msg.get("parts"))
            role = msg.get("role")
            if results:
                messages += [{"role": "tool", **r} for r in results]
                continue
            out: dict[str, Any] = {"role": role, "content": text}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
        return messages
    indexed: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = re.fullmatch(r"gen_ai\.prompt\.(\d+)\.(role|content)", key)
        if m:
            indexed.setdefault(int(m.group(1)), {})[m.group(2)] = value
    if not indexed:
        return None
    return messages + [
        {"role": indexed[k].get("role", "user"), "content": indexed[k].get("content", "")}
        for k in sorted(indexed)
    ]


def _span_time(span: dict[str, Any]) -> datetime | None:
    nanos = _int(span.get("startTimeUnixNano"))
    if nanos is not None:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)
    start = span.get("start_time")
    if isinstance(start, str):
        try:
            moment = datetime.fromisoformat(start.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


def _span(span: Any, index: int, interval: float) -> Request:
    attrs = _span_attributes(span)
    if attrs is None:
        raise RequestError("a span without GenAI attributes", reason="span-without-gen-ai-attributes")
    messages = _genai_messages(attrs)
    if messages is None:
        raise RequestError(
            "a GenAI span without its prompt (content capture off?)", reason="span-without-prompt-content"
        )
    logged = _span_time(span)
    request = Request(
        messages=messages,
        now=logged or BASE_TIME + timedelta(seconds=index * interval),
        logged_time=bool(logged),
    )
    tools = _json_attr(attrs.get("gen_ai.tool.definitions"))
    if isinstance(tools, list) and tools:
        request.tools = tools
    request.observed_prompt_tokens = _int(
        attrs.get("gen_ai.usage.input_tokens", attrs.get("gen_ai.usage.prompt_tokens"))
    )
    request.observed_cached_tokens = _int(
        attrs.get("gen_ai.usage.cache_read.input_tokens", attrs.get("gen_ai.usage.cache_read_input_tokens"))
    )
    return request


def _otel(value: Any, index: int, interval: float) -> list[Request | RequestError]:
    if isinstance(value, dict) and "resourceSpans" in value:
        spans = [
            span
            for resource in value.get("resourceSpans") or []
            for scope in (resource or {}).get("scopeSpans") or []
            for span in (scope or {}).get("spans") or []
        ]
    else:
        spans = [value]
    out: list[Request | RequestError] = []
    for span in spans:
        try:
            out.append(_span(span, index + len(out), interval))
        except RequestError as exc:
            out.append(exc)
    return out


# --- vLLM --enable-log-requests lines ----------------------------------------------------------


def _vllm_line(line: Any, index: int, interval: float) -> Request:
    text = line if isinstance(line, str) else ""
    m = _VLLM_LINE.search(text)
    if m is None and _VLLM_PARAMS_LINE.search(text):
        raise RequestError("a `Received request` line without the prompt", reason=VLLM_NO_PROMPT)
    if m is None:
        raise RequestError("not a vLLM `Received request` line", reason="not-a-vllm-request-line")
    literal = _string_literal(text, m.start("prompt"))
    try:
        prompt = ast.literal_eval(literal)  # vLLM logs the prompt with %r: a Python string literal
    except (ValueError, SyntaxError) as exc:
        raise RequestError(
            f"the logged prompt is not a whole string literal: {exc}", reason="unreadable-vllm-prompt"
        ) from exc
    if not isinstance(prompt, str):
        raise RequestError("the logged prompt is None (token ids only)", reason="vllm-prompt-not-logged")
    return Request(prompt=prompt, now=BASE_TIME + timedelta(seconds=index * interval))


def _string_literal(text: str, start: int) -> str:
    """The Python string literal opening at `start` (its quote), up to its closing quote."""
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return text[start : i + 1]
        i += 1
    return text[start:]  # cut short (a truncated line): literal_eval will say so
