"""Conversations in a request log: group an agent's requests into conversations and check each one
against the previous request of its conversation, on the body as the client sent it.

A cache reuses turn N's prompt for turn N+1 only if N+1 extends N. An agent harness that
re-serialises its own history breaks that, and the break is visible in the request bodies before
any template renders them: a block moved from `messages[0]` into the newest user message, a system
prompt replayed as a string instead of the block array first sent (its `cache_control` gone), a
trailing newline present on one turn and absent on the next, tools in another order, a message
dropped or inserted. Each break is reported with its part (`tools`, `system`, `messages`), the
message index, a kind, the tokens the server recomputes (counted on the rendered, tokenized prompts
the simulation already has) and the smallest text difference.

Grouping: requests that carry a session key (routing.SESSION_FIELDS) are only ever chained within
it; a request with history (an assistant turn) joins the open conversation whose last request
shares most of its paragraphs with it (a strict majority of that request's), so a conversation
survives the very rewrite being looked for; a request without history starts a conversation.
"""

from __future__ import annotations

import heapq
import json
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

from prefixlint.engines.packed import common_bytes_prefix
from prefixlint.explain.requests import Rendered, Request
from prefixlint.explain.segments import Tokens

KINDS = ("whitespace", "edited", "moved", "reordered", "shape", "cache-control", "removed", "added")
MAX_OPEN = 4096  # conversations kept open at once (the least recently continued one is closed)
# ... and at most about this many bytes held for them (prompt text as its body, 4 bytes a token):
# an agent's prompt can be 100,000 tokens, and `explain` stays under 1 GB.
MAX_HELD_BYTES = 256_000_000
MAX_BREAKS = 1000  # breaks kept for the report, the most costly first
COMMON = 64  # a paragraph in more open conversations than this (a shared reminder) tells none apart
CONTEXT = 24  # characters of unchanged text shown on each side of a difference
SHOWN = 240  # characters of a changed span shown at most
HISTORY_ROLES = ("assistant", "model", "tool", "function")
SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True)
class Break:
    """Where request `request` (a log line) stops extending `previous`, the one before it in its
    conversation."""

    conversation: str
    request: int
    previous: int
    part: str  # "tools", "system" or "messages"
    message_index: int | None  # in the body's own list (Anthropic messages count after `system`)
    kind: str  # one of KINDS
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


def parts_of(request: Request) -> dict[str, Any]:
    """`system`, `tools` and `messages` as sent (the normalised ones where the log had no body)."""
    if request.body is not None:
        return request.body
    return {"system": None, "tools": request.tools, "messages": request.messages}


# --- the values compared ------------------------------------------------------------------------


def _exact(value: Any) -> str:
    # Key order is kept: a template's `tojson` prints keys in the order they came.
    return json.dumps(value, ensure_ascii=False, default=str)


def _canon(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def strip_cache_control(value: Any) -> Any:
    """`value` without its `cache_control` markers (they change what a provider caches, not text)."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def _has_cc(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(_has_cc(v) for v in value.values())
    return isinstance(value, list) and any(_has_cc(v) for v in value)


def _text(content: Any) -> str:
    """The text a content renders as: a string, or text blocks joined by newlines (as
    requests._text_of joins them), other blocks as their JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            if isinstance(b, dict) and b.get("type") == "text"
            else _canon(strip_cache_control(b))
            for b in content
        )
    return _canon(strip_cache_control(content))


def _flat(value: Any) -> str:
    """A message, tool or system value as the text it renders to (role and other fields included)."""
    if isinstance(value, dict) and ("role" in value or "content" in value):
        rest = {k: v for k, v in value.items() if k not in ("role", "content", "cache_control")}
        return f"{value.get('role')}\n{_text(value.get('content'))}" + (
            f"\n{_canon(strip_cache_control(rest))}" if rest else ""
        )
    if isinstance(value, str | list) or value is None:
        return _text(value)
    return _canon(strip_cache_control(value))


def _squash(text: str) -> str:
    return "".join(text.split())


def _loose(value: Any) -> str:
    """What two values share when only whitespace, shape or `cache_control` differ (alignment)."""
    return " ".join(_flat(value).split())


def _pair_kind(a: Any, b: Any) -> str | None:
    """How value `b` differs from `a`, the one in the same place of the previous request."""
    if _exact(a) == _exact(b):
        return None
    sa, sb = strip_cache_control(a), strip_cache_control(b)
    if _exact(sa) == _exact(sb):
        return "cache-control"
    if _canon(sa) == _canon(sb):
        return "reordered"  # the same keys in another order: `tojson` prints them so
    ta, tb = _flat(a), _flat(b)
    if ta == tb:
        return "shape"
    return "whitespace" if _squash(ta) == _squash(tb) else "edited"


def _pieces(value: Any) -> list[str]:
    """A message's paragraphs (blocks split at blank lines), whitespace collapsed."""
    content = value.get("content") if isinstance(value, dict) else value
    blocks = content if isinstance(content, list) else [content]
    out = []
    for block in blocks:
        for para in _text([block] if isinstance(block, dict) else block).split("\n\n"):
            norm = " ".join(para.split())
            if norm:
                out.append(norm)
    return out


def difference(a: str, b: str, quote: bool = True) -> str:
    """The smallest difference of two texts: their common start and end cut to a little context;
    each side a JSON string (`quote`: newlines show), or as it is (JSON already)."""
    start = 0
    limit = min(len(a), len(b))
    while start < limit and a[start] == b[start]:
        start += 1
    end = 0
    while end < limit - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1

    def show(text: str) -> str:
        middle = text[start : len(text) - end]
        if len(middle) > SHOWN:
            middle = middle[: SHOWN // 2] + "…" + middle[-SHOWN // 2 :]
        head = ("…" if start > CONTEXT else "") + text[max(0, start - CONTEXT) : start]
        tail_at = len(text) - end
        tail = text[tail_at : tail_at + CONTEXT] + ("…" if end > CONTEXT else "")
        shown = head + middle + tail
        return json.dumps(shown, ensure_ascii=False) if quote else shown

    return f"-{show(a)}\n+{show(b)}"


def _shorten(value: Any, keep: int = 28) -> Any:
    """`value` with its long strings cut in the middle, so that its JSON shows its shape."""
    if isinstance(value, str) and len(value) > 2 * keep + 1:
        return value[:keep] + "…" + value[-keep:]
    if isinstance(value, dict):
        return {k: _shorten(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v, keep) for v in value]
    return value


def _diff_of(kind: str, a: Any, b: Any) -> str:
    # Shape and markers are in the JSON, not in the text: show the JSON (its texts cut short).
    if kind in ("cache-control", "shape", "reordered") and a is not None and b is not None:
        return difference(_exact(_shorten(a)), _exact(_shorten(b)), quote=False)
    return difference("" if a is None else _flat(a), "" if b is None else _flat(b))


def break_difference(found: _Found) -> str:
    """The smallest difference of a break `compare` found (what a report shows under it)."""
    return _diff_of(found.kind, found.before, found.after)


# --- the comparison -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    part: str
    index: int | None
    kind: str
    before: Any
    after: Any


def _aligned(prev: list[Any], cur: list[Any], i: int, kind: str | None) -> str | None:
    """Removed, added or reordered at `i`, told by where the neighbours went; None: in place."""
    la, lb = [_loose(v) for v in prev], [_loose(v) for v in cur]
    if i < len(lb) and la[i] == lb[i]:
        return kind  # only whitespace, shape or markers differ
    if i >= len(lb) or (i + 1 < len(la) and la[i + 1] == lb[i]):
        return "removed"
    if i + 1 < len(lb) and la[i] == lb[i + 1]:
        return "added"
    if la[i] in lb[i + 1 :] and lb[i] in la[i + 1 :]:
        return "reordered"
    return None


def _names(tools: list[Any]) -> list[Any]:
    """Tools by name (what tells an order apart), the whole tool where it has none."""
    out = []
    for tool in tools:
        inner = tool.get("function", tool) if isinstance(tool, dict) else tool
        out.append(inner.get("name", tool) if isinstance(inner, dict) else tool)
    return out


def _only_added(a: Any, b: Any) -> bool:
    return _has_cc(b) and not _has_cc(a)


def _breakpoint_lost(part: str, prev: list[Any], cur: list[Any], i: int) -> bool:
    """Whether a change of `cache_control` or shape alone at `i` loses a cache entry. A breakpoint
    added loses nothing. In the history, a breakpoint moved to a later message is what Anthropic
    documents for a conversation (a string content becomes a block list to carry it): the later
    breakpoint reads the earlier entry back, so only one that vanished with none after it counts.
    In the system prompt and tools any change of them counts (a replay as a string, its marker gone)."""
    if part != "messages":
        return not _only_added(prev[i], cur[i])
    return _has_cc(prev[i]) and not _has_cc(cur[i]) and not any(_has_cc(m) for m in cur[i + 1 :])


def _compare_list(
    part: str, prev: list[Any], cur: list[Any], extend: bool, strict: bool = False
) -> _Found | None:
    """The first place where `cur` does not repeat `prev` (as a prefix when `extend`); `strict`:
    a change of markers or shape that loses no cache entry counts too."""
    if part == "tools" and prev != cur and sorted(map(_canon, prev)) == sorted(map(_canon, cur)):
        i = next(k for k, (a, b) in enumerate(zip(prev, cur, strict=True)) if _exact(a) != _exact(b))
        return _Found(part, i, "reordered", _names(prev), _names(cur))
    for i, a in enumerate(prev):
        b = cur[i] if i < len(cur) else None
        kind = _pair_kind(a, b) if b is not None else "removed"
        if kind is None:
            continue
        where = "system" if isinstance(a, dict) and a.get("role") in SYSTEM_ROLES else part
        if kind in ("cache-control", "shape") and not strict and not _breakpoint_lost(where, prev, cur, i):
            continue
        if kind in ("cache-control", "shape", "reordered") and b is not None:
            return _Found(where, i, kind, a, b)
        placed = _aligned(prev, cur, i, kind)
        if placed == "added":
            return _Found(where, i, "added", None, cur[i])
        if placed == "removed":
            return _Found(where, i, "removed", a, None)
        if placed is None and part == "messages" and _moved(prev, cur, i):
            placed = "moved"
        return _Found(where, i, placed or kind, a, b)
    if not extend and len(cur) > len(prev):
        return _Found(part, len(prev), "added", None, cur[len(prev)])
    return None


def _moved(prev: list[Any], cur: list[Any], i: int) -> bool:
    """Text gone from message `i` that turns up in a later message of this request. Not when `i`
    was the previous request's newest user message: a harness that injects a block only into the
    newest message (environment details) edits the one before on every turn."""
    last_user = max(
        (k for k, m in enumerate(prev) if isinstance(m, dict) and m.get("role") == "user"), default=-1
    )
    if i == last_user:
        return False
    kept = set(_pieces(cur[i]))
    gone = [p for p in _pieces(prev[i]) if p not in kept]
    later = [" ".join(_text(m.get("content") if isinstance(m, dict) else m).split()) for m in cur[i + 1 :]]
    return bool(gone) and all(any(p in text for text in later) for p in gone)


def _system_list(value: Any) -> list[Any]:
    return [] if value is None else value if isinstance(value, list) else [value]


def compare(prev: dict[str, Any], cur: dict[str, Any], strict: bool = False) -> _Found | None:
    """The first break of `cur` against `prev`, in the order a prompt is built (Anthropic's
    documented order, tools → system → messages; chat templates put tools and system first too).
    `strict`: changes of markers or shape that lose no cache entry count too."""
    tools = _compare_list("tools", prev.get("tools") or [], cur.get("tools") or [], False, strict)
    if tools is not None:
        return tools
    a, b = prev.get("system"), cur.get("system")
    if _exact(a) != _exact(b):
        if isinstance(a, list) and isinstance(b, list):
            found = _compare_list("system", a, b, False, strict)
            if found is not None:
                return found
        kind = "added" if a is None else "removed" if b is None else _pair_kind(a, b) or "edited"
        if strict or not (kind in ("cache-control", "shape") and _only_added(a, b)):
            return _Found("system", 0, kind, a, b)
    return _compare_list("messages", prev.get("messages") or [], cur.get("messages") or [], True, strict)


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


def _part_end(rendered: Rendered, found: _Found) -> int | None:
    """Where the previous prompt's text of the broken part ends (None: not found in it)."""
    request = rendered.request
    if found.part == "tools":
        span = rendered._tools_span()
        return span[1] if span else None
    k = found.index or 0
    if request.system_field:
        k = 0 if found.part == "system" else k + 1  # Anthropic: `system` is the first message here
    return next((end for index, _, end in rendered._message_spans() if index == k), None)


def tokens_lost(prev: _Turn, rendered: Rendered, tokens: Tokens, found: _Found) -> int:
    """The previous prompt's tokens the new request does not start with: what the server computed
    for turn N and computes again. Where the text is unchanged and only a `cache_control`
    breakpoint vanished, a provider that reads its cache at breakpoints loses what that breakpoint
    cached: the previous prompt up to the end of the part that held it. A break in tools the
    template does not render loses the whole previous prompt."""
    shared = common_bytes_prefix(prev.ids, tokens.ids)
    lost = len(prev.ids) // 4 - shared
    if found.part == "tools" and rendered._tools_span() is None:
        # The template rendered no tools (the default ChatML one does not), but the server puts
        # them first: all of the previous prompt comes after the break.
        return len(prev.ids) // 4
    vanished = _has_cc(found.before) and not _has_cc(found.after)
    if lost == 0 and found.kind in ("cache-control", "shape") and vanished:
        # Nothing lost in tokens: the previous prompt is a prefix of this one, so the part ends at
        # the same token in both, and this one's rendering tells where.
        end = _part_end(rendered, found)
        if end is not None:
            lost = min(_tokens_before(tokens, end), len(prev.ids) // 4)
    return lost


# --- grouping -------------------------------------------------------------------------------------


def _paragraphs(messages: list[Any]) -> frozenset[int]:
    # Hashes, not texts: only equality is asked of them, and the index stays small.
    return frozenset(
        hash(p)
        for m in messages
        if not (isinstance(m, dict) and m.get("role") in SYSTEM_ROLES)
        for p in _pieces(m)
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
            if found is None and common_bytes_prefix(prev.ids, tokens.ids) < len(prev.ids) // 4:
                # The tokens part although no change that matters in general was seen: one that
                # usually renders the same (a string as a block list) does not with this template.
                found = compare(prev.parts, parts, strict=True)
            if found is not None:
                found_break = self._record(prev, line, rendered, tokens, found)
            self._close(name)
        size = 2 * len(rendered.text) + len(tokens.ids)  # a decoded body is about twice its text
        self._open(_Turn(name, line, request.session, parts, tokens.ids, paragraphs, size))
        return found_break

    def _record(self, prev: _Turn, line: int, rendered: Rendered, tokens: Tokens, found: _Found) -> Break:
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
