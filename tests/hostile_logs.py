"""Hostile request logs for `prefixlint explain`, generated from a seed (the same seed, the same file).

A case is a log file (plain or gzip) built from valid requests of every supported format, then
mutated at three levels: the JSON value (a node replaced by another type, nested deep, a list at and
over a limit, odd unicode), the line's bytes (cut, spliced, invalid UTF-8, stray brackets), and the
file (random bytes, gzip members concatenated, truncated, padded, followed by garbage, a bomb).
Sizes are drawn at and just over each limit of FUZZ_LIMITS.

A new log format plugs in by adding a function to FORMATS: `(rng) -> one valid JSON value or raw
line` (a `str` result that is not JSON-encoded is written as a raw text line).
"""

from __future__ import annotations

import gzip
import json
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Small limits so that "at and over each limit" stays fast; passed to the CLI as options.
FUZZ_LIMITS = {
    "line_bytes": 20_000,
    "depth": 24,
    "request_bytes": 8_000,
    "messages": 40,
    "requests": 60,
    "log_bytes": 2_000_000,
    "ratio": 30,
    "ratio_after": 200_000,
}
WORDS = [
    "tent",
    "stove",
    "boots",
    "refund",
    "order",
    "parcel",
    "the",
    "a",
    "of",
    "to",
    "and",
    "is",
    "in",
    "warehouse",
    "ships",
    "days",
]
ODD_TEXT = [
    "\ud800",
    "\udfff",
    "\x00",
    "\u202e",
    "🙂",
    "é",
    "\ufeff",
    "<|im_start|>",
    "<|im_end|>",
    "{{ 7*7 }}",
    "{% for %}",
    "\r\n",
    "\\",
    '"',
    " " * 50,
]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _openai(rng: random.Random) -> Any:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help. " + words(rng, 30)}]
    for _ in range(rng.randint(1, 3)):
        messages.append({"role": "user", "content": words(rng, rng.randint(1, 20))})
        if rng.random() < 0.3:
            call = {"id": "c1", "type": "function", "function": {"name": "find", "arguments": '{"q": 1}'}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": "c1", "content": words(rng, 5)})
        else:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": words(rng, 8)}]})
    body: dict[str, Any] = {"model": "m", "messages": messages[:-1]}
    if rng.random() < 0.4:
        params = {"type": "object", "properties": {"q": {"type": "string"}}}
        body["tools"] = [{"type": "function", "function": {"name": "find", "parameters": params}}]
    if rng.random() < 0.2:
        body["chat_template_kwargs"] = {"enable_thinking": False}
    return body


def _anthropic(rng: random.Random) -> Any:
    use = {"type": "tool_use", "id": "t1", "name": "find", "input": {"q": words(rng, 2)}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]}
    body: dict[str, Any] = {
        "anthropic_version": "2023-06-01",
        "system": [{"type": "text", "text": "Be brief. " + words(rng, 20)}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": words(rng, 6)}]},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result, {"type": "text", "text": words(rng, 4)}]},
        ],
    }
    if rng.random() < 0.5:
        body["tools"] = [{"name": "find", "input_schema": {"type": "object"}}]
    return body


def _prompt(rng: random.Random) -> Any:
    text = f"Current time: 2025-01-0{rng.randint(1, 9)}\n" + words(rng, 40)
    return {"prompt": text} if rng.random() < 0.7 else text  # a bare JSON string is a prompt too


def _gateway(rng: random.Random) -> Any:
    stamp: Any = rng.choice([1743465600 + rng.randint(0, 10**6), "2025-03-31T23:59:10Z", "yesterday"])
    return {"timestamp": stamp, "body": rng.choice([_openai, _anthropic])(rng)}


FORMATS: dict[str, Callable[[random.Random], Any]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "prompt": _prompt,
    "gateway": _gateway,
}


# --- JSON-level mutations -------------------------------------------------------------------------


def nested(depth: int, rng: random.Random) -> Any:
    value: Any = rng.choice(["x", 1, None])
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def _random_value(rng: random.Random) -> Any:
    limits = FUZZ_LIMITS
    return rng.choice(
        [
            None,
            True,
            0,
            -1,
            2**70,
            1e308,
            "",
            rng.choice(ODD_TEXT),
            "x" * rng.choice([limits["request_bytes"] - 1, limits["request_bytes"] + 1, 3000]),
            [],
            {},
            [None] * 3,
            {"role": 5, "content": {"type": "text"}},
            [{"type": "tool_use"}, {"type": "tool_result", "content": [1, {"type": "text", "text": 2}]}],
            nested(rng.choice([limits["depth"] - 2, limits["depth"], limits["depth"] + 1]), rng),
            [{"role": "user", "content": "hi"}] * rng.choice([limits["messages"], limits["messages"] + 1]),
        ]
    )


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _nodes(v, (*path, i))
    return out


def mutate_value(value: Any, rng: random.Random) -> Any:
    """A node of `value` replaced, deleted or given a sibling; the root may be replaced too."""
    path = rng.choice(_nodes(value))
    if not path:
        return _random_value(rng)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    key, kind = path[-1], rng.random()
    if kind < 0.6:
        parent[key] = _random_value(rng)
    elif kind < 0.8:
        del parent[key]
    elif isinstance(parent, dict):
        parent[rng.choice(["system", "tools", "prompt", "messages", "body", "created", "content"])] = (
            _random_value(rng)
        )
    else:
        parent.append(_random_value(rng))
    return value


# --- byte-level mutations -------------------------------------------------------------------------

BYTE_NOISE = [
    b"\xff",
    b"\xc3",
    b"\x00",
    b"[[[[",
    b"}}",
    b'"',
    b"\\",
    b"\n",
    b"\r",
    b"\xef\xbb\xbf",
    b"\\ud800",
]


def mutate_bytes(line: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 3)):
        i = rng.randint(0, len(line))
        kind = rng.randrange(5)
        if kind == 0:
            line = line[:i]  # cut
        elif kind == 1:
            line = line[:i] + rng.choice(BYTE_NOISE) + line[i:]
        elif kind == 2:
            line = line[:i] + rng.randbytes(rng.randint(1, 8)) + line[i:]
        elif kind == 3 and line:
            j = rng.randrange(len(line))
            line = line[:j] + bytes([line[j] ^ (1 << rng.randrange(8))]) + line[j + 1 :]
        else:
            line = line[:i] + line[i : i + 50] * 2 + line[i + 50 :]
    return line


# --- lines at and over each limit -----------------------------------------------------------------


def boundary_line(rng: random.Random) -> bytes:
    """A line exactly at a limit or one over it (line bytes, depth, prompt bytes, messages)."""
    limits, over = FUZZ_LIMITS, rng.randint(0, 1)
    which = rng.randrange(4)
    if which == 0:  # a line of exactly line_bytes (+1)
        head = b'{"prompt": "'
        return head + b"y" * (limits["line_bytes"] + over - len(head) - 2) + b'"}'
    if which == 1:  # brackets nested to depth (+1)
        return json.dumps({"prompt": "p", "x": nested(limits["depth"] - 1 + over, rng)}).encode()
    if which == 2:  # a prompt of request_bytes (+1), multi-byte characters near the end
        text = "z" * (limits["request_bytes"] - 4 + over) + "é" * 2
        return json.dumps({"prompt": text}, ensure_ascii=False).encode()
    messages = [{"role": "user", "content": "hi"}] * (limits["messages"] + over)
    return json.dumps({"messages": messages}).encode()


# --- files ----------------------------------------------------------------------------------------


@dataclass
class Case:
    seed: int
    kind: str
    data: bytes
    limits: dict[str, int]  # the limits the run uses (FUZZ_LIMITS, or {} for the defaults)


def _line(rng: random.Random) -> bytes:
    fmt = rng.choice(sorted(FORMATS))
    value = FORMATS[fmt](rng)
    roll = rng.random()
    if roll < 0.35:
        value = mutate_value(value, rng)
    try:
        line = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        line = b"[]"
    if 0.35 <= roll < 0.6:
        line = mutate_bytes(line, rng)
    elif roll > 0.92:
        line = boundary_line(rng)
    return line


def _gzip_container(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.randrange(6)
    if kind == 0:
        return "gzip", gzip.compress(data, mtime=0)
    if kind == 1:  # several members, as `cat a.gz b.gz` or a rotating logger writes
        cuts = sorted(rng.randint(0, len(data)) for _ in range(rng.randint(1, 4)))
        parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        return "gzip-members", b"".join(gzip.compress(p, mtime=0) for p in parts)
    if kind == 2:
        packed = gzip.compress(data, mtime=0)
        return "gzip-truncated", packed[: rng.randint(2, max(2, len(packed) - 1))]
    if kind == 3:
        return "gzip-padded", gzip.compress(data, mtime=0) + b"\x00" * rng.randint(1, 2000)
    if kind == 4:
        return "gzip-garbage", gzip.compress(data, mtime=0) + rng.randbytes(rng.randint(1, 64))
    packed = bytearray(gzip.compress(data, mtime=0))  # a flipped bit inside the deflate stream
    if len(packed) > 20:
        packed[rng.randrange(10, len(packed) - 8)] ^= 1 << rng.randrange(8)
    return "gzip-corrupt", bytes(packed)


def _bomb(rng: random.Random) -> bytes:
    """Blank lines (or zeros) that inflate far past the ratio limit."""
    filler = rng.choice([b"\n", b"\x00", b" "])
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = filler * (1 << 20)
    return b"".join(deflate.compress(chunk) for _ in range(rng.randint(1, 8))) + deflate.flush()


def make_case(seed: int) -> Case:
    rng = random.Random(seed)
    roll = rng.random()
    limits = dict(FUZZ_LIMITS) if rng.random() < 0.85 else {}
    if roll < 0.05:
        return Case(seed, "random-bytes", rng.randbytes(rng.randint(0, 5000)), limits)
    if roll < 0.08:
        return Case(seed, "gzip-bomb", _bomb(rng), dict(FUZZ_LIMITS))
    if roll < 0.11:  # at and over the whole-file size
        size = FUZZ_LIMITS["log_bytes"] + rng.choice([0, 1])
        line = json.dumps({"prompt": words(rng, 200)}).encode() + b"\n"
        body = line * (size // len(line)) + b" " * (size % len(line))
        return Case(seed, "log-bytes", body, {**FUZZ_LIMITS, "requests": 0})  # read to the end
    count = rng.choice([1, 2, 5, 20, FUZZ_LIMITS["requests"], FUZZ_LIMITS["requests"] + 1])
    lines = [_line(rng) for _ in range(count)]
    for _ in range(rng.randint(0, 3)):
        lines.insert(rng.randint(0, len(lines)), rng.choice([b"", b"   ", b"\t", b"\r"]))
    sep = b"\r\n" if rng.random() < 0.1 else b"\n"
    data = sep.join(lines) + (sep if rng.random() < 0.8 else b"")
    if rng.random() < 0.3:
        kind, data = _gzip_container(data, rng)
        return Case(seed, kind, data, limits)
    return Case(seed, "lines", data, limits)


def limit_options(limits: dict[str, int]) -> list[str]:
    return [arg for name, value in sorted(limits.items()) for arg in ("--limit", f"{name}={value}")]


# --- the other inputs explain reads: a Prometheus scrape, a server command line --------------------

SCRAPE_SEED = b"""# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen3-8B"} 120000.0
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 3000.0
sglang:cache_hit_rate{model_name="m",path="a\\"b\\\\c}d"} 0.25 1700000000000
process_start_time_seconds 1.7e+09
"""
COMMAND_SEEDS = [
    "vllm serve Qwen/Qwen3-8B --block-size 32 --no-enable-prefix-caching --port=8000",
    "python3 -m sglang.launch_server --model-path m --disable-radix-cache --mem-fraction-static 0.8",
    "/opt/bin/llama-server -m 'my model.gguf' -c 8192 --cache-reuse 256 -ngl -1",
]
COMMAND_NOISE = ["'", '"', "\\", "=", "--", "-", " ", "\x00", "\n", "$(rm -rf /)", "`x`", "é", "\ud800", "#"]


def make_scrape(seed: int) -> bytes:
    rng = random.Random(seed)
    if rng.random() < 0.1:
        return rng.randbytes(rng.randint(0, 3000))
    data = SCRAPE_SEED * rng.randint(1, 3)
    if rng.random() < 0.1:  # a sample with labels at and over the limit, or a very long line
        n = rng.choice([63, 64, 65, 3000])
        data += b"m{" + b",".join(b'l%d="v"' % i for i in range(n)) + b"} 1\n"
    if rng.random() < 0.05:
        data += b"m{" + b"}" * 70_000 + b" 1\n" + b"m " + b"1" * 70_000 + b"\n"
    return mutate_bytes(data, rng) if rng.random() < 0.9 else data


def make_command(seed: int) -> str:
    rng = random.Random(seed)
    text = rng.choice(COMMAND_SEEDS)
    for _ in range(rng.randint(1, 4)):
        i = rng.randint(0, len(text))
        text = text[:i] + rng.choice(COMMAND_NOISE) + text[i + rng.randint(0, 3) :]
    if rng.random() < 0.05:
        text += " --x" * rng.choice([1990, 2000, 3000])
    return text
