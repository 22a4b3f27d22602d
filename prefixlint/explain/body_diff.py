"""How a request body differs from the previous one of its conversation (compare): the first
change, in the order a prompt is built (tools, system, messages), with its part, message index and
kind, and the smallest text difference that shows it (break_difference). The values are compared
as the client sent them: key order kept, `cache_control` markers told apart from text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from prefixlint.explain.requests import Request

KINDS = ("whitespace", "edited", "moved", "reordered", "shape", "cache-control", "removed", "added")
CONTEXT = 24  # characters of unchanged text shown on each side of a difference
SHOWN = 240  # characters of a changed span shown at most
SYSTEM_ROLES = ("system", "developer")


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


def has_cache_control(value: Any) -> bool:
    """Whether `value` carries a `cache_control` marker anywhere."""
    if isinstance(value, dict):
        return "cache_control" in value or any(has_cache_control(v) for v in value.values())
    return isinstance(value, list) and any(has_cache_control(v) for v in value)


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


def pieces(value: Any) -> list[str]:
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


def break_difference(found: Change) -> str:
    """The smallest difference of a break `compare` found (what a report shows under it)."""
    return _diff_of(found.kind, found.before, found.after)


# --- the comparison -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
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
    return has_cache_control(b) and not has_cache_control(a)


def _breakpoint_lost(part: str, prev: list[Any], cur: list[Any], i: int) -> bool:
    """Whether a change of `cache_control` or shape alone at `i` loses a cache entry. A breakpoint
    added loses nothing. In the history, a breakpoint moved to a later message is what Anthropic
    documents for a conversation (a string content becomes a block list to carry it): the later
    breakpoint reads the earlier entry back, so only one that vanished with none after it counts.
    In the system prompt and tools any change of them counts (a replay as a string, its marker gone)."""
    if part != "messages":
        return not _only_added(prev[i], cur[i])
    return (
        has_cache_control(prev[i])
        and not has_cache_control(cur[i])
        and not any(has_cache_control(m) for m in cur[i + 1 :])
    )


def _compare_list(
    part: str, prev: list[Any], cur: list[Any], extend: bool, strict: bool = False
) -> Change | None:
    """The first place where `cur` does not repeat `prev` (as a prefix when `extend`); `strict`:
    a change of markers or shape that loses no cache entry counts too."""
    if part == "tools" and prev != cur and sorted(map(_canon, prev)) == sorted(map(_canon, cur)):
        i = next(k for k, (a, b) in enumerate(zip(prev, cur, strict=True)) if _exact(a) != _exact(b))
        return Change(part, i, "reordered", _names(prev), _names(cur))
    for i, a in enumerate(prev):
        b = cur[i] if i < len(cur) else None
        kind = _pair_kind(a, b) if b is not None else "removed"
        if kind is None:
            continue
        where = "system" if isinstance(a, dict) and a.get("role") in SYSTEM_ROLES else part
        if kind in ("cache-control", "shape") and not strict and not _breakpoint_lost(where, prev, cur, i):
            continue
        if kind in ("cache-control", "shape", "reordered") and b is not None:
            return Change(where, i, kind, a, b)
        placed = _aligned(prev, cur, i, kind)
        if placed == "added":
            return Change(where, i, "added", None, cur[i])
        if placed == "removed":
            return Change(where, i, "removed", a, None)
        if placed is None and part == "messages" and _moved(prev, cur, i):
            placed = "moved"
        return Change(where, i, placed or kind, a, b)
    if not extend and len(cur) > len(prev):
        return Change(part, len(prev), "added", None, cur[len(prev)])
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
    kept = set(pieces(cur[i]))
    gone = [p for p in pieces(prev[i]) if p not in kept]
    later = [" ".join(_text(m.get("content") if isinstance(m, dict) else m).split()) for m in cur[i + 1 :]]
    return bool(gone) and all(any(p in text for text in later) for p in gone)


def _system_list(value: Any) -> list[Any]:
    return [] if value is None else value if isinstance(value, list) else [value]


def compare(prev: dict[str, Any], cur: dict[str, Any], strict: bool = False) -> Change | None:
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
            return Change("system", 0, kind, a, b)
    return _compare_list("messages", prev.get("messages") or [], cur.get("messages") or [], True, strict)
