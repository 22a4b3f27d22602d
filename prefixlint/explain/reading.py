"""Reading untrusted request logs: bytes (plain or gzip) → bounded lines → JSON values.

Logs come from production and from strangers. Everything here is bounded before it is held: the
decompressed size and the decompressed/compressed ratio of the file (a gzip bomb stops early), the
bytes of one line (read in bounded pieces, never whole), the nesting depth of a JSON value (counted
before `json.loads` can recurse). A bad line is a `Skip` with a reason, counted, and the run goes
on; a file over a whole-file limit raises `LogLimitError`, naming the file and the limit.
"""

from __future__ import annotations

import json
import os
import re
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import accumulate
from typing import IO, Any

MB = 1_000_000
GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 16  # compressed bytes read at a time
READ_SIZE = 1 << 20  # log bytes read at a time
_NON_SPACE = re.compile(rb"\S")


@dataclass(frozen=True)
class LogLimits:
    """What one `explain` run may read; 0 turns a limit off. The CLI sets them with `--max-*`
    options and `--limit NAME=VALUE` (NAME a field below)."""

    log_bytes: int = 16_000 * MB  # bytes of the log after decompression (whole file: stop)
    # Decompressed / compressed bytes of a gzip log, once past `ratio_after`: real logs are ~15:1, a
    # log of one request repeated ~300:1, blank lines or zeros ~1,000:1 (deflate's most).
    ratio: int = 500
    ratio_after: int = 64 * MB  # decompressed bytes before the ratio is enforced (small files inflate)
    line_bytes: int = 16 * MB  # one line of the log, or one request file (longer: skipped)
    depth: int = 128  # JSON nesting (objects and arrays) of one line (deeper: skipped)
    request_bytes: int = 1 * MB  # UTF-8 bytes of one rendered prompt: the most the tokenizer sees
    messages: int = 10_000  # messages (and tools) of one request
    requests: int = 1_000_000  # requests analysed per run: the first ones of the log (a sample)
    seconds: float = 0.0  # wall-clock budget of the whole run (stop, exit 2); off by default

    def with_overrides(self, pairs: dict[str, float]) -> LogLimits:
        """These limits with some fields replaced (names checked, values non-negative)."""
        known = {f.name: f.type for f in fields(self)}
        for name, value in pairs.items():
            if name not in known:
                raise ValueError(f"unknown limit {name!r}; known: {', '.join(known)}")
            if not 0 <= value < float("inf"):
                raise ValueError(f"limit {name} must be a number >= 0, not {value:g}")
        return replace(self, **{k: (v if known[k] == "float" else int(v)) for k, v in pairs.items()})


DEFAULT_LIMITS = LogLimits()


class LogLimitError(Exception):
    """A whole-file limit was crossed (or the file cannot be read): the run stops, exit 2."""


@dataclass(frozen=True)
class Skip:
    """Why one line or request was not analysed: a short stable `reason` key and a detail."""

    reason: str
    detail: str

    def __str__(self) -> str:
        return self.detail


@dataclass
class Skips:
    """Skipped lines counted by reason, with the first few kept as examples."""

    by_reason: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    keep: int = 5

    def add(self, number: int, skip: Skip) -> None:
        self.by_reason[skip.reason] += 1
        if len(self.examples) < self.keep:
            self.examples.append(f"line {number}: {skip.detail}")

    @property
    def total(self) -> int:
        return sum(self.by_reason.values())

    def counts(self) -> dict[str, int]:
        """Counts by reason, most frequent first, ties by name (deterministic)."""
        return dict(sorted(self.by_reason.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class Reading:
    """One run's reading of a log: its limits, the skips so far, the wall-clock budget (shared by
    every pass over the log) and the line where `requests` stopped the reading (None: read whole)."""

    limits: LogLimits = DEFAULT_LIMITS
    skips: Skips = field(default_factory=Skips)
    started: float = field(default_factory=time.monotonic)  # for the budget only, never a result
    stopped_at: int | None = None
    # The log's format (explain/formats.py): given (`--log-format`), else set when detected.
    log_format: str | None = None

    def again(self) -> Reading:
        """A fresh reading of the same log for another pass: same limits, budget and format, own
        skips."""
        return Reading(self.limits, started=self.started, log_format=self.log_format)

    def check_clock(self, path: str) -> None:
        seconds = self.limits.seconds
        if seconds and time.monotonic() - self.started > seconds:
            raise LogLimitError(
                f"{path}: not done within {seconds:g} s; stopped "
                "(limit seconds; change it with --max-seconds)"
            )


def size_text(n: float) -> str:
    return f"{n / MB:g} MB" if n >= MB else f"{n:,.0f} bytes"


# --- bytes ----------------------------------------------------------------------------------------


class _LimitedSource:
    """The log's bytes (gunzipped when it starts with the gzip magic: every member of a multi-member
    file, a truncated or corrupt end noted in `cut`), checked against the whole-file limits."""

    def __init__(self, raw: IO[bytes], path: str, limits: LogLimits) -> None:
        self.raw, self.path, self.limits = raw, path, limits
        head = raw.read(2)  # kept, not sought back: a pipe cannot seek
        self.gzip = head == GZIP_MAGIC
        self.inflater: Any = zlib.decompressobj(wbits=31) if self.gzip else None
        self.pending = head  # input not yet handed on (compressed input, for gzip)
        self.compressed = len(head) if self.gzip else 0  # compressed bytes consumed
        self.produced = 0  # bytes handed out (after decompression)
        self.cut: Skip | None = None  # why the gzip data ended early

    def read(self, size: int) -> bytes:
        """Up to `size` bytes (b"" at the end); LogLimitError past a whole-file limit."""
        try:
            data = self._next(size)
        except OSError as exc:
            raise LogLimitError(f"{self.path}: cannot read: {exc}") from exc
        self.produced += len(data)
        self._check()
        return data

    def _next(self, size: int) -> bytes:
        if not self.gzip:
            if self.pending:
                head, self.pending = self.pending, b""
                return head
            return self.raw.read(size)
        while True:
            if self.inflater.eof and not self._next_member():
                return b""
            data = self.inflater.unconsumed_tail or self.pending or self._read_compressed()
            self.pending = b""
            if not data:
                self.cut = Skip("gzip-truncated", "the gzip data ends before its end-of-stream marker")
                return b""
            try:
                out = self.inflater.decompress(data, size)
            except zlib.error as exc:
                self.cut = Skip(
                    "gzip-corrupt", f"the gzip data is corrupt after {self.produced:,} bytes ({exc})"
                )
                return b""
            if out:
                return out

    def _read_compressed(self) -> bytes:
        data = self.raw.read(CHUNK)
        self.compressed += len(data)
        return data

    def _next_member(self) -> bool:
        """After a member's end: start the next member, if any (zero padding is not one)."""
        rest = self.inflater.unused_data.lstrip(b"\x00")
        while not rest:
            more = self._read_compressed()
            if not more:
                return False
            rest = more.lstrip(b"\x00")
        self.inflater = zlib.decompressobj(wbits=31)
        self.pending = rest
        return True

    def _check(self) -> None:
        limits = self.limits
        if limits.log_bytes and self.produced > limits.log_bytes:
            raise LogLimitError(
                f"{self.path}: more than {size_text(limits.log_bytes)} of log data; stopped "
                f"(limit log_bytes; raise it with --limit log_bytes=N)"
            )
        if (
            self.gzip
            and limits.ratio
            and self.produced > limits.ratio_after
            and self.produced > limits.ratio * max(self.compressed, 1)
        ):
            raise LogLimitError(
                f"{self.path}: {self.compressed:,} compressed bytes inflated to more than "
                f"{size_text(self.produced)}, over {limits.ratio}:1 (a gzip bomb?); stopped "
                f"(limit ratio; raise it with --limit ratio=N)"
            )


class LogFile:
    """An open log: `lines()` yields (line number, bytes or Skip); `raw` is the file on disk, whose
    position drives the progress bar. Close it (or use it in a `with`)."""

    def __init__(self, path: str, reading: Reading | None = None) -> None:
        self.reading = reading or Reading()
        limits = self.reading.limits
        try:
            self.raw: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise LogLimitError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        self.path, self.limits = path, limits
        self.source = _LimitedSource(self.raw, path, limits)
        self.line_count = 0  # the file's lines, once `lines()` has read it to its end

    def lines(self) -> Iterator[tuple[int, bytes | Skip]]:
        """Non-blank lines without their line ending, numbered from 1, or a Skip for one over
        `line_bytes` (never held whole); when gzip data ends early, a Skip for the cut line.

        Read in chunks and searched with bytes methods, so a flood of blank lines costs no Python
        loop per line."""
        limit = self.limits.line_bytes
        buf, pos, number = b"", 0, 0  # `number`: newlines before buf[pos]
        eof = False
        while True:
            self.reading.check_clock(self.path)
            found = _NON_SPACE.search(buf, pos)
            if found is None:  # only blank lines (or the blank start of one) left in the buffer
                number += buf.count(b"\n", pos)
                tail = max(buf.rfind(b"\n", pos) + 1, pos)
                if limit and len(buf) - tail > limit:
                    tail = len(buf)  # a run of spaces longer than a line: nothing of it is kept
                buf, pos = buf[tail:], 0
                if eof:
                    break
                more = self.source.read(READ_SIZE)
                eof = not more
                buf += more
                continue
            start = max(buf.rfind(b"\n", pos, found.start()) + 1, pos)
            number += buf.count(b"\n", pos, start)
            end = buf.find(b"\n", found.start())
            if end < 0:  # the line goes on past the buffer
                if limit and len(buf) - start > limit:
                    rest = self._discard_line()
                    yield (
                        number + 1,
                        Skip("line-too-long", f"longer than {size_text(limit)} (limit line_bytes)"),
                    )
                    number += 1
                    if rest is None:
                        eof, buf, pos = True, b"", 0
                        break
                    buf, pos = rest, 0
                    continue
                if eof:
                    cut = self.source.cut
                    if cut is not None:
                        yield number + 1, Skip(cut.reason, f"the line is cut off: {cut.detail}")
                        return
                    end = len(buf)
                else:
                    buf, pos = buf[start:], 0
                    more = self.source.read(READ_SIZE)
                    eof = not more
                    buf += more
                    continue
            line = buf[start:end].rstrip(b"\r")
            number += 1
            pos = end + 1
            if limit and len(line) > limit:
                yield number, Skip("line-too-long", f"longer than {size_text(limit)} (limit line_bytes)")
            else:
                yield number, line
        self.line_count = number
        if self.source.cut is not None:
            yield number + 1, self.source.cut

    def _discard_line(self) -> bytes | None:
        """Read past the rest of an over-long line: what follows its end, or None at the file's end."""
        while True:
            self.reading.check_clock(self.path)
            more = self.source.read(READ_SIZE)
            if not more:
                return None
            cut = more.find(b"\n")
            if cut >= 0:
                return more[cut + 1 :]

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


LogPath = str | Sequence[str]  # one log, or several read as one (LogFiles)


def as_paths(path: LogPath) -> tuple[str, ...]:
    return (path,) if isinstance(path, str) else tuple(path)


def log_size(path: LogPath) -> int:
    """The bytes on disk of the log (of every file of it)."""
    return sum(os.path.getsize(p) for p in as_paths(path))


class LogFiles:
    """Logs read as one, in the order given: each file opened (and gunzipped, and bounded by the
    limits) on its own when the one before it ends, its lines numbered on from the last line of the
    one before, as `cat A B` numbers them. `lines()` goes on where its last call stopped, after the
    lines given back with `unread`; `position()` is the bytes read of the files on disk."""

    def __init__(self, path: LogPath, reading: Reading | None = None) -> None:
        self.paths = as_paths(path)
        self.reading = reading or Reading()
        self.limits = self.reading.limits
        self.file = LogFile(self.paths[0], self.reading)  # the one being read
        self.path = self.file.path
        self._before = 0  # bytes of the files read to their end
        self._read = self._lines()
        self._unread: list[tuple[int, bytes | Skip]] = []

    def _lines(self) -> Iterator[tuple[int, bytes | Skip]]:
        offset = 0
        for k, path in enumerate(self.paths):
            if k:
                self._before += self.file.raw.tell()
                self.file.close()
                self.file = LogFile(path, self.reading)
                self.path = path
            last = 0
            for number, line in self.file.lines():
                last = number
                yield offset + number, line
            offset += max(last, self.file.line_count)

    def lines(self) -> Iterator[tuple[int, bytes | Skip]]:
        while self._unread:
            yield self._unread.pop(0)
        # Not `yield from`: closing this generator (a caller that stops early) must leave the files'
        # own one open for the next call.
        for item in self._read:  # noqa: UP028
            yield item

    def unread(self, lines: list[tuple[int, bytes | Skip]]) -> None:
        """Give `lines` (the last ones read) back: the next `lines()` starts with them."""
        self._unread[:0] = lines

    def position(self) -> int:
        return self._before + self.file.raw.tell()

    def close(self) -> None:
        self.file.close()


# --- JSON -----------------------------------------------------------------------------------------

_STRINGS = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)  # possessive: linear on any input
_DEPTH = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _DEPTH)


def json_depth_over(data: bytes, limit: int) -> bool:
    """Whether `data`'s brackets outside strings nest deeper than `limit` (an upper bound on how
    deep `json.loads` would recurse). Linear time, no recursion."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False  # the common case, at C speed
    brackets = _STRINGS.sub(b"", data).translate(None, _NOT_BRACKETS)
    return len(brackets) > limit and max(accumulate(_DEPTH[b] for b in brackets)) > limit


def decode_json(data: bytes, depth: int = DEFAULT_LIMITS.depth) -> Any:
    """One JSON value, or a Skip: too deep, not UTF-8, not JSON (the reason says which)."""
    if depth and json_depth_over(data, depth):
        return Skip("json-too-deep", f"JSON nested deeper than {depth} (limit depth)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Skip("not-utf8", f"not UTF-8 at byte {exc.start}")
    try:
        return json.loads(text)
    except RecursionError:  # cannot happen below the depth limit; kept as a reason, never a crash
        return Skip("json-too-deep", "JSON nested too deep to decode")
    except ValueError as exc:
        return Skip("invalid-json", f"not JSON: {str(exc)[:120]}")


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> int | None:
    """Where `text` holds a lone surrogate (JSON allows `\\ud800`; no tokenizer takes it), or None."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return found.start() if found else None


def utf8_len(text: str) -> int:
    """UTF-8 bytes of `text` (ASCII, the common case, without encoding)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def utf8_size_over(text: str, limit: int) -> int | None:
    """The UTF-8 size of `text` if it is over `limit` bytes, else None (encoded only when it may be:
    a character is at most 4 bytes)."""
    if not limit or len(text) * 4 <= limit:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None
