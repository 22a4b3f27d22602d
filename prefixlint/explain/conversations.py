"""Conversations in a request log: group an agent's requests into conversations and check each one
against the previous request of its conversation, on the body as the client sent it.

A cache reuses turn N's prompt for turn N+1 only if N+1 extends N. An agent harness that
re-serialises its own history breaks that, and the break is visible in the request bodies before
any template renders them: a block moved from `messages[0]` into the newest user message, a system
prompt replayed as a string instead of the block array first sent (its `cache_control` gone), a
trailing newline present on one turn and absent on the next, tools in another order, a message
dropped or inserted. Each break is reported with its part (`tools`, `system`, `messages`), the
message index, a kind, the tokens the server recomputes (counted on the rendered, tokenized prompts
the simulation already has) and the smallest text difference (found by explain/body_diff.py).

Grouping: requests that carry a session key (routing.SESSION_FIELDS) are only ever chained within
it; a request with history (an assistant turn) joins the open conversation whose last request
shares most of its paragraphs with it (a strict majority of that request's), so a conversation
survives the very rewrite being looked for; a request without history starts a conversation.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

from prefixlint.engines.packed import WIDTH, common_bytes_prefix
from prefixlint.explain.body_diff import (
    SYSTEM_ROLES,
    Change,
    break_difference,
    compare,
    has_cache_control,
    parts_of,
    pieces,
)
from prefixlint.explain.requests import Rendered
from prefixlint.explain.segments import Tokens

MAX_OPEN = 4096  # conversations kept open at once (the least recently continued one is closed)
# ... and at most about this many bytes held for them (prompt text as its body, 4 bytes a token):
# an agent's prompt can be 100,000 tokens, and `explain` stays under 1 GB.
MAX_HELD_BYTES = 256_000_000
MAX_BREAKS = 1000  # breaks kept for the report, the most costly first
COMMON = 64  # a paragraph in more open conversations than this (a shared reminder) tells none apart
HISTORY_ROLES = ("assistant", "model", "tool", "function")


@dataclass(frozen=True)
class Break:
    """Where request `request` (a log line) stops extending `previous`, the one before it in its
    conversation."""

    conversation: str
    request: int
    previous: int
    part: str  # "tools", "system" or "messages"
    message_index: int | None  # in the body's own list (Anthropic messages count after `system`)
    kind: str  # one of body_diff.KINDS
    tokens_lost: int
    difference: str  # "-" the previous request's text, "+" this one's, with a little context

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Turn:
    """The last request of an open conversation: what the next one is compared with."""

    conversation: str
    line: int
    session: str | None
    parts: dict[str, Any]
    ids: bytes  # the rendered prompt's packed token ids
    paragraphs: frozenset[int]
    size: int  # bytes it holds, about


# --- tokens ---------------------------------------------------------------------------------------


def _tokens_before(tokens: Tokens, char: int) -> int:
    """Tokens that start before character `char`."""
    lo, hi = 0, len(tokens)
    while lo < hi:
        mid = (lo + hi) // 2
        if tokens.char_at(mid) < char:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _part_end(rendered: Rendered, found: Change) -> int | None:
    """Where the previous prompt's text of the broken part ends (None: not found in it)."""
    request = rendered.request
    if found.part == "tools":
        span = rendered._tools_span()
        return span[1] if span else None
    k = found.index or 0
    if request.system_field:
        k = 0 if found.part == "system" else k + 1  # Anthropic: `system` is the first message here
    return next((end for index, _, end in rendered._message_spans() if index == k), None)


def tokens_lost(prev: _Turn, rendered: Rendered, tokens: Tokens, found: Change) -> int:
    """The previous prompt's tokens the new request does not start with: what the server computed
    for turn N and computes again. Where the text is unchanged and only a `cache_control`
    breakpoint vanished, a provider that reads its cache at breakpoints loses what that breakpoint
    cached: the previous prompt up to the end of the part that held it. A break in tools the
    template does not render loses the whole previous prompt."""
    shared = common_bytes_prefix(prev.ids, tokens.ids)
    lost = len(prev.ids) // WIDTH - shared
    if found.part == "tools" and rendered._tools_span() is None:
        # The template rendered no tools (the default ChatML one does not), but the server puts
        # them first: all of the previous prompt comes after the break.
        return len(prev.ids) // WIDTH
    vanished = has_cache_control(found.before) and not has_cache_control(found.after)
    if lost == 0 and found.kind in ("cache-control", "shape") and vanished:
        # Nothing lost in tokens: the previous prompt is a prefix of this one, so the part ends at
        # the same token in both, and this one's rendering tells where.
        end = _part_end(rendered, found)
        if end is not None:
            lost = min(_tokens_before(tokens, end), len(prev.ids) // WIDTH)
    return lost


# --- grouping -------------------------------------------------------------------------------------


def _paragraphs(messages: list[Any]) -> frozenset[int]:
    # Hashes, not texts: only equality is asked of them, and the index stays small.
    return frozenset(
        hash(p)
        for m in messages
        if not (isinstance(m, dict) and m.get("role") in SYSTEM_ROLES)
        for p in pieces(m)
    )


def _has_history(messages: list[Any]) -> bool:
    return any(isinstance(m, dict) and m.get("role") in HISTORY_ROLES for m in messages)


class Conversations:
    """Requests fed in log order, grouped and checked; `to_json()` is the report's part."""

    def __init__(
        self, max_open: int = MAX_OPEN, max_breaks: int = MAX_BREAKS, max_bytes: int = MAX_HELD_BYTES
    ) -> None:
        self.max_open, self.max_breaks, self.max_bytes = max_open, max_breaks, max_bytes
        self.held = 0  # bytes the open conversations hold, about
        self.open: OrderedDict[str, _Turn] = OrderedDict()
        self.index: dict[int, set[str]] = {}  # paragraph hash -> open conversations holding it
        self.sessions: dict[str | None, set[str]] = {}
        self.count = 0
        self.checked = 0
        self.by_kind: dict[str, int] = {}
        self._breaks: list[tuple[int, int, Break]] = []  # a min-heap by cost: the most costly kept
        self._names: dict[str, int] = {}
        self.previous_line: int | None = None  # the last request fed: the line it was checked against

    def feed(self, line: int, rendered: Rendered, tokens: Tokens) -> Break | None:
        """One request (log line `line`), rendered and tokenized; its break, if it has one."""
        request = rendered.request
        self.previous_line = None
        if request.prompt is not None:
            return None  # a plain prompt has no turns to compare
        parts = parts_of(request)
        messages = parts.get("messages") or []
        paragraphs = _paragraphs(messages)
        prev = self._previous(request.session, messages, paragraphs)
        self.previous_line = prev.line if prev is not None else None
        found_break = None
        if prev is None:
            name = self._name(request.session, line)
            self.count += 1
        else:
            name = prev.conversation
            self.checked += 1
            found = compare(prev.parts, parts)
            if found is None and common_bytes_prefix(prev.ids, tokens.ids) < len(prev.ids) // WIDTH:
                # The tokens part although no change that matters in general was seen: one that
                # usually renders the same (a string as a block list) does not with this template.
                found = compare(prev.parts, parts, strict=True)
            if found is not None:
                found_break = self._record(prev, line, rendered, tokens, found)
            self._close(name)
        size = 2 * len(rendered.text) + len(tokens.ids)  # a decoded body is about twice its text
        self._open(_Turn(name, line, request.session, parts, tokens.ids, paragraphs, size))
        return found_break

    def _record(self, prev: _Turn, line: int, rendered: Rendered, tokens: Tokens, found: Change) -> Break:
        item = Break(
            prev.conversation,
            line,
            prev.line,
            found.part,
            found.index,
            found.kind,
            tokens_lost(prev, rendered, tokens, found),
            break_difference(found),
        )
        self.by_kind[item.kind] = self.by_kind.get(item.kind, 0) + 1
        entry = (item.tokens_lost, -line, item)
        if len(self._breaks) < self.max_breaks:
            heapq.heappush(self._breaks, entry)
        elif entry[:2] > self._breaks[0][:2]:
            heapq.heapreplace(self._breaks, entry)
        return item

    def _name(self, session: str | None, line: int) -> str:
        """The session key (`#2`, `#3`… for later conversations of it), else the first line's."""
        base = session if session is not None else f"line {line}"
        n = self._names[base] = self._names.get(base, 0) + 1
        return base if n == 1 else f"{base}#{n}"

    def _previous(self, session: str | None, messages: list[Any], paragraphs: frozenset[int]) -> _Turn | None:
        """The open conversation this request continues, or None: it starts one."""
        if not _has_history(messages):
            return None
        same = self.sessions.get(session, set())
        if session is not None and len(same) == 1:
            return self.open[next(iter(same))]  # the session says which conversation it is
        votes: dict[str, int] = {}
        for p in paragraphs:
            holders = self.index.get(p)
            if holders and len(holders) <= COMMON:
                for name in holders & same:
                    votes[name] = votes.get(name, 0) + 1
        best: tuple[tuple[int, int, str], _Turn] | None = None
        for name, n in votes.items():
            turn = self.open[name]
            # Ties go to the latest request, then the name: the same choice whatever the hash seed.
            rank = (n, turn.line, name)
            if 2 * n > len(turn.paragraphs) and (best is None or rank > best[0]):
                best = (rank, turn)
        return best[1] if best else None

    def _open(self, turn: _Turn) -> None:
        self.open[turn.conversation] = turn
        self.sessions.setdefault(turn.session, set()).add(turn.conversation)
        for p in turn.paragraphs:
            self.index.setdefault(p, set()).add(turn.conversation)
        self.held += turn.size
        while len(self.open) > 1 and (len(self.open) > self.max_open or self.held > self.max_bytes):
            self._close(next(iter(self.open)))

    def _close(self, name: str) -> None:
        turn = self.open.pop(name)
        self.held -= turn.size
        self.sessions[turn.session].discard(name)
        for p in turn.paragraphs:
            holders = self.index[p]
            holders.discard(name)
            if not holders:
                del self.index[p]

    def breaks(self) -> list[Break]:
        """The kept breaks, the most costly first (then by log line)."""
        return [b for _, _, b in sorted(self._breaks, key=lambda e: (-e[0], -e[1]))]

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "requests_checked": self.checked,
            "breaks_by_kind": dict(sorted(self.by_kind.items(), key=lambda kv: (-kv[1], kv[0]))),
            "breaks": [b.to_json() for b in self.breaks()],
        }


def conversations_text(data: dict[str, Any], top: int) -> list[str]:
    """The report's lines on conversations: counts, then the top breaks with their difference."""
    breaks = data.get("breaks") or []
    out = [
        f"{data['count']:,} conversation(s); {data['requests_checked']:,} request(s) checked against the "
        f"previous one of their conversation: {sum(data.get('breaks_by_kind', {}).values()):,} break(s)"
    ]
    for rank, b in enumerate(breaks[:top], 1):
        where = b["part"] + (f"[{b['message_index']}]" if b["message_index"] is not None else "")
        out.append(
            f"{rank}. conversation {b['conversation']}: line {b['request']} does not extend line "
            f"{b['previous']} at {where} ({b['kind']}): {b['tokens_lost']:,} tokens recomputed"
        )
        out.extend("   " + diff_line for diff_line in b["difference"].splitlines())
    return out
