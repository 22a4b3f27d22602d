"""Anthropic's cache as it works: read and written only at `cache_control` breakpoints.

A request is a sequence of content blocks in the provider's order: each tool, each system block, each
message's content blocks (a string content is one text block). A breakpoint is a block carrying
`cache_control`, or with a top-level `cache_control` (automatic caching) the request's last block.
At each breakpoint the provider looks for an entry of the same prefix at that block or one of the
blocks before it, up to `lookback_blocks` in all, and serves the latest one found; then it writes
the prefix up to each breakpoint, if that is at least the model's minimum. Entries live
`ttl_seconds` (or an hour with `"ttl": "1h"`) from their last use, on the log's clock. A request
with more breakpoints than `max_breakpoints` is refused by the API: nothing is read or written.

`BreakpointCache` is the model (hand-checked in tests/test_breakpoints.py); `ProviderBreakpoints`
feeds it a log's Anthropic bodies and judges each breakpoint against the next request of its
conversation: a breakpoint that request does not read, and why, is a PFX503 finding.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prefixlint.engines import Breakpoints, Engine
from prefixlint.explain.body_diff import strip_cache_control

CODE, NAME = "PFX503", "unread-cache-breakpoint"
MAX_ENTRIES = 1_000_000  # cache entries kept (the least recently used dropped first)
MAX_PENDING = 4096  # requests kept for judging against their conversation's next one
MAX_FINDINGS = 100  # distinct (reason, place) findings kept
MEMO = 200_000  # block token counts remembered (by a digest of the text: memory stays flat)
REASONS = {
    "below-minimum": "its prefix is {tokens:,} tokens, under {model}'s minimum of {minimum:,}: "
    "it is never written",
    "too-many": "the request carries {count} breakpoints, over the limit of {limit}: the API refuses it",
    "after-volatile": "it comes after {changed}, which the next request of the conversation changes: "
    "its entry is never read",
    "trailing-message": "it sits on the request's last message, which the next request does not repeat: "
    "its entry is never read",
    "beyond-lookback": "the next request's nearest breakpoint after it is {distance} blocks on, beyond the "
    "{lookback}-block lookback: its entry is never read",
    "no-later-breakpoint": "the next request has no breakpoint at or after it: its entry is never read",
    "expired": "the next request comes {gap:,.0f} s later, after its {ttl:,} s TTL: its entry expired",
}


@dataclass(frozen=True)
class Block:
    part: str  # "tools", "system" or "messages"
    index: int  # the tool, the system block, or the message
    block: int | None  # the content block within a message (None: a string content, a tool)
    key: str  # what identifies it in a prefix (its role and text, or its JSON without markers)
    cache_control: Any  # its `cache_control`, or None

    def where(self) -> str:
        return _where(self.part, self.index, self.block)


def _where(part: str, index: int, block: int | None) -> str:
    return f"{part}[{index}]" + (f".content[{block}]" if block is not None else "")


def _canon(value: Any) -> str:
    return json.dumps(strip_cache_control(value), ensure_ascii=False, sort_keys=True, default=str)


def _block_key(block: Any) -> str:
    # A text block and a string content are the same prompt text.
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type") == "text":
        return str(block.get("text", ""))
    return _canon(block)


def blocks_of(body: dict[str, Any]) -> list[Block]:
    """The request's content blocks in the order the provider caches them: tools, system, messages."""
    out = [
        Block("tools", i, None, _canon(t), t.get("cache_control") if isinstance(t, dict) else None)
        for i, t in enumerate(body.get("tools") or [])
    ]
    system = body.get("system")
    for i, b in enumerate(system if isinstance(system, list) else [system] if system else []):
        out.append(Block("system", i, None, "system\0" + _block_key(b), _marker(b)))
    for k, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if isinstance(content, list):
            for j, b in enumerate(content):
                out.append(Block("messages", k, j, f"{role}\0{_block_key(b)}", _marker(b)))
        else:
            out.append(Block("messages", k, None, f"{role}\0{_block_key(content or '')}", None))
    return out


def _marker(block: Any) -> Any:
    return block.get("cache_control") if isinstance(block, dict) else None


def breakpoints_of(body: dict[str, Any], blocks: Sequence[Block]) -> list[tuple[int, Any]]:
    """(block position, its cache_control) of each breakpoint: the marked blocks, and with a
    top-level `cache_control` the last block (automatic caching takes one slot)."""
    marked = [(i, b.cache_control) for i, b in enumerate(blocks) if b.cache_control]
    auto = body.get("cache_control")
    if auto and blocks and all(i != len(blocks) - 1 for i, _ in marked):
        marked.append((len(blocks) - 1, auto))
    return marked


def prefix_hashes(model: str | None, blocks: Sequence[Block]) -> list[bytes]:
    """The hash of the prefix ending at each block (one model's cache is not another's)."""
    out: list[bytes] = []
    running = hashlib.blake2b(str(model).encode(), digest_size=12).digest()
    for b in blocks:
        running = hashlib.blake2b(running + b.key.encode("utf-8", "surrogatepass"), digest_size=12).digest()
        out.append(running)
    return out


@dataclass
class Served:
    """What the provider did with one request."""

    read: int  # prompt tokens served from cache
    written: int  # tokens written to the cache beyond what was read
    refused: bool  # over the breakpoint limit: the API refuses it


@dataclass
class _Entry:
    tokens: int
    expires: float
    ttl: int


class BreakpointCache:
    """Cache entries by prefix hash, each with its tokens and when it expires (seconds)."""

    def __init__(self, rules: Breakpoints, max_entries: int = MAX_ENTRIES) -> None:
        self.rules = rules
        self.max_entries = max_entries
        self.entries: OrderedDict[bytes, _Entry] = OrderedDict()

    def serve(
        self,
        hashes: Sequence[bytes],
        cumulative: Sequence[int],
        breakpoints: Sequence[tuple[int, Any]],
        now: float,
        minimum: int,
    ) -> Served:
        """One request: `hashes[i]` the prefix hash ending at block i, `cumulative[i]` its tokens."""
        rules = self.rules
        if len(breakpoints) > rules.max_breakpoints:
            return Served(0, 0, True)
        read = 0
        for at, _ in breakpoints:
            for q in range(at, max(at - rules.lookback_blocks, -1), -1):
                entry = self.entries.get(hashes[q])
                if entry is None:
                    continue
                if entry.expires <= now:
                    del self.entries[hashes[q]]
                    continue
                entry.expires = now + entry.ttl  # a read refreshes the entry
                self.entries.move_to_end(hashes[q])
                read = max(read, entry.tokens)
                break
        written = 0
        for at, control in breakpoints:
            if cumulative[at] < minimum:
                continue
            ttl = rules.ttl(control)
            entry = self.entries.get(hashes[at])
            if entry is None:
                self.entries[hashes[at]] = _Entry(cumulative[at], now + ttl, ttl)
                written = max(written, cumulative[at] - read)
            else:
                entry.expires, entry.ttl = max(entry.expires, now + ttl), max(entry.ttl, ttl)
            self.entries.move_to_end(hashes[at])
        while len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)
        return Served(read, written, False)


@dataclass
class _Request:
    """What a request left to judge its breakpoints by, once its conversation's next one comes."""

    line: int
    model: str | None
    places: list[tuple[str, int, int | None]]  # (part, index, block) of each block, not its text
    hashes: list[bytes]
    cumulative: list[int]
    breakpoints: list[tuple[int, Any]]
    now: float
    served: Served
    last_message: int | None  # the index of its last message


@dataclass
class Finding:
    reason: str
    request: int  # the log line of the request whose breakpoint is not read
    next_request: int | None  # the line of its conversation's next request (None: judged alone)
    part: str
    message_index: int
    block_index: int | None
    breakpoint_tokens: int  # the prefix the breakpoint caches
    tokens_lost: int  # of it, what the next request does not read (or, never written, all of it)
    message: str
    count: int = 1  # requests of the log with this finding at this place

    def to_json(self) -> dict[str, Any]:
        return {
            "code": CODE,
            "name": NAME,
            "reason": self.reason,
            "request": self.request,
            "next_request": self.next_request,
            "part": self.part,
            "message_index": self.message_index,
            "block_index": self.block_index,
            "breakpoint_tokens": self.breakpoint_tokens,
            "tokens_lost": self.tokens_lost,
            "count": self.count,
            "message": self.message,
        }


@dataclass
class ProviderBreakpoints:
    """A log's Anthropic bodies through the breakpoint model, in log order. `count_tokens` gives
    the tokens of each block's text (the run's tokenizer: Anthropic's own is not public)."""

    engine: Engine
    count_tokens: Callable[[list[str]], list[int]]
    requests: int = 0
    prompt_tokens: int = 0
    read_tokens: int = 0
    written_tokens: int = 0
    refused: int = 0
    models: dict[str, int] = field(default_factory=dict)
    _findings: dict[tuple[str, str, int | None], Finding] = field(default_factory=dict)
    _pending: OrderedDict[int, _Request] = field(default_factory=OrderedDict)
    _memo: OrderedDict[bytes, int] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        assert self.engine.breakpoints is not None
        self.cache = BreakpointCache(self.engine.breakpoints)

    def feed(self, line: int, body: dict[str, Any], now: datetime, previous: int | None) -> None:
        """One Anthropic body (log line `line`, sent at `now`); `previous`: the line of the request
        before it in its conversation, whose breakpoints it is judged to read or not."""
        blocks = blocks_of(body)
        if not blocks:
            return
        model = body.get("model") if isinstance(body.get("model"), str) else None
        cumulative, total = [], 0
        for n in self._tokens([b.key for b in blocks]):
            total += n
            cumulative.append(total)
        hashes = prefix_hashes(model, blocks)
        marks = breakpoints_of(body, blocks)
        minimum = self.engine.minimum_for(model)
        clock = now.timestamp()
        served = self.cache.serve(hashes, cumulative, marks, clock, minimum)
        self.requests += 1
        self.prompt_tokens += total
        self.read_tokens += served.read
        self.written_tokens += served.written
        self.refused += served.refused
        self.models[str(model)] = self.models.get(str(model), 0) + 1
        last = max((b.index for b in blocks if b.part == "messages"), default=None)
        places = [(b.part, b.index, b.block) for b in blocks]
        cur = _Request(line, model, places, hashes, cumulative, marks, clock, served, last)
        self._judge_alone(cur, minimum)
        before = self._pending.pop(previous, None) if previous is not None else None
        if before is not None and not cur.served.refused:
            self._judge(before, cur)
        if marks and not served.refused:
            self._pending[line] = cur
            while len(self._pending) > MAX_PENDING:
                self._pending.popitem(last=False)

    def _tokens(self, texts: list[str]) -> list[int]:
        keys = [hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).digest() for t in texts]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._memo}
        # A lone surrogate (JSON allows one) is no text a tokenizer takes: count it as a `?`.
        safe = [t.encode("utf-8", "replace").decode("utf-8") for t in missing.values()]
        counted = self.count_tokens(safe) if safe else []
        for key, n in zip(missing, counted, strict=True):
            self._memo[key] = n
        for key in keys:
            self._memo.move_to_end(key)
        out = [self._memo[k] for k in keys]
        while len(self._memo) > MEMO:
            self._memo.popitem(last=False)
        return out

    def _judge_alone(self, cur: _Request, minimum: int) -> None:
        limit = self.cache.rules.max_breakpoints
        if cur.served.refused:
            at = cur.breakpoints[limit][0]
            self._add("too-many", cur, None, at, cur.cumulative[at], count=len(cur.breakpoints), limit=limit)
            return
        for at, _ in cur.breakpoints:
            tokens = cur.cumulative[at]
            if tokens < minimum:
                self._add(
                    "below-minimum", cur, None, at, tokens, tokens=tokens, model=cur.model, minimum=minimum
                )

    def _judge(self, before: _Request, cur: _Request) -> None:
        """Each written breakpoint of `before` that `cur`, its conversation's next request, does not
        read (nor read past), with the reason."""
        rules = self.cache.rules
        minimum = self.engine.minimum_for(before.model)
        shared = _shared_blocks(before.hashes, cur.hashes)
        for at, control in before.breakpoints:
            tokens = before.cumulative[at]
            if tokens < minimum or cur.served.read >= tokens:
                continue  # never written (reported alone), or read
            lost = tokens - cur.served.read
            if shared <= at:
                part, index, block = before.places[shared]
                if part == "messages" and index == before.last_message:
                    self._add("trailing-message", before, cur, at, lost)
                else:
                    self._add("after-volatile", before, cur, at, lost, changed=_where(part, index, block))
                continue
            gap, ttl = cur.now - before.now, rules.ttl(control)
            later = [q for q, _ in cur.breakpoints if q >= at]
            if gap >= ttl:
                self._add("expired", before, cur, at, lost, gap=gap, ttl=ttl)
            elif later and min(later) - at < rules.lookback_blocks:
                continue  # within reach, yet gone: dropped from a full cache (MAX_ENTRIES), no fault
            elif later:
                self._add(
                    "beyond-lookback",
                    before,
                    cur,
                    at,
                    lost,
                    distance=min(later) - at,
                    lookback=rules.lookback_blocks,
                )
            else:
                self._add("no-later-breakpoint", before, cur, at, lost)

    def _add(
        self, reason: str, req: _Request, nxt: _Request | None, at: int, lost: int, **values: Any
    ) -> None:
        part, index, block = req.places[at]
        key = (reason, part, None if part == "messages" else index)
        found = self._findings.get(key)
        if found is not None:
            found.count += 1
            found.tokens_lost += lost
            return
        if len(self._findings) >= MAX_FINDINGS:
            return
        self._findings[key] = Finding(
            reason,
            req.line,
            nxt.line if nxt is not None else None,
            part,
            index,
            block,
            req.cumulative[at],
            lost,
            f"the cache breakpoint at {_where(part, index, block)} can never be read: "
            + REASONS[reason].format(**values),
        )

    def findings(self) -> list[Finding]:
        """The findings, the most costly first (then by log line)."""
        return sorted(self._findings.values(), key=lambda f: (-f.tokens_lost, f.request, f.reason))

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine.name,
            "requests": self.requests,
            "models": dict(sorted(self.models.items())),
            "prompt_tokens": self.prompt_tokens,
            "read_tokens": self.read_tokens,
            "written_tokens": self.written_tokens,
            "hit_rate": round(self.read_tokens / self.prompt_tokens, 6) if self.prompt_tokens else 0.0,
            "refused": self.refused,
            "findings": [f.to_json() for f in self.findings()],
        }


def _shared_blocks(a: Sequence[bytes], b: Sequence[bytes]) -> int:
    """Leading blocks two requests share (their prefix hashes agree up to there)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def breakpoints_text(data: dict[str, Any], top: int) -> list[str]:
    """The report's lines on the breakpoint model: its hit rate, then the top findings."""
    out = [
        f"  {data['engine']} breakpoints: hit rate {data['hit_rate']:.2%} ({data['read_tokens']:,} of "
        f"{data['prompt_tokens']:,} tokens read at cache_control breakpoints, "
        f"{data['requests']:,} request(s))"
    ]
    for f in data["findings"][:top]:
        count, lost = f"{f['count']:,} request(s)", f"{f['tokens_lost']:,} tokens"
        out.append(f"{CODE} line {f['request']}: {f['message']} ({count}, {lost})")
    return out
