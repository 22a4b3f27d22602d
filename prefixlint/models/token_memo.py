"""Encodings remembered across runs, so a run loads a tokenizer only for text it has never encoded.

Loading the embedded tokenizer costs ~0.35 s of CPU, as much as importing everything else a
one-file pre-commit run needs, and most edits leave the prompt text alone: a Python file edited
outside its prompts, a template's comment or a change that renders the same. So each analysis of
a source (`api.analyse_source`) opens a *book* per tokenizer it uses, one JSON file under
`<cache dir>/tokens-v1/`, named by the tokenizer file and the source's path. The tokenizer
(`tokens.LoadedTokenizer`) reads a text's encoding from the book before encoding it, and a
tokenizer whose book exists is not loaded at all unless a text misses: the book's existence
says the file loaded when the book was written. When the analysis ends, the book is rewritten
with what it asked, and what the analysis before asked that this one did not (a concise run and
a JSON run of a file ask different texts), so it follows the source and stays two runs' size; an
analysis that asked exactly what the book held writes nothing.

A book holds its tokenizer's identity (the file's stamp, the `tokenizers` library's, prefixlint's
own) and is ignored when that changed. JSON, as the result cache, with every entry's shape checked
before it is used: a hostile cache dir can give wrong counts, as a hostile result cache can, but
never runs code or stops a run.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from prefixlint.core.fingerprint import package_digest, stamp
from prefixlint.models.backend import Encoded

FORMAT = "tokens-v1"


@functools.cache
def _library_stamp() -> list[Any]:
    """The installed `tokenizers` (found, not imported: a helper cannot fork once it is)."""
    import importlib.util

    spec = importlib.util.find_spec("tokenizers")
    return stamp(spec.origin) if spec is not None and spec.origin else []


def identity(tokenizer_path: str) -> list[Any]:
    """What must not change for a book of `tokenizer_path` to hold."""
    return [FORMAT, stamp(os.path.abspath(tokenizer_path)), _library_stamp(), package_digest()]


def book_file(directory: str, tokenizer_path: str, source_path: str) -> str:
    """The book of `source_path`'s texts as `tokenizer_path` encodes them."""
    key = json.dumps([os.path.abspath(tokenizer_path), os.path.abspath(source_path)])
    return os.path.join(directory, FORMAT, hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def has_book(cache_dir: str | None, tokenizer_path: str, source_path: str) -> bool:
    """Whether a book may answer for this source (its identity is checked when it is read): then
    a helper loading the tokenizer ahead of use is likely wasted."""
    return cache_dir is not None and os.path.isfile(book_file(cache_dir, tokenizer_path, source_path))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _encoding(raw: Any) -> Encoded | None:
    """An entry as an encoding: `[ids, flat offsets]`, else None (a malformed entry is a miss)."""
    if not (
        isinstance(raw, list) and len(raw) == 2 and isinstance(raw[0], list) and isinstance(raw[1], list)
    ):
        return None
    ids, flat = raw
    if (
        len(flat) != 2 * len(ids)
        or not all(type(i) is int for i in ids)
        or not all(type(o) is int for o in flat)
    ):
        return None
    return Encoded(list(ids), list(zip(flat[::2], flat[1::2], strict=True)))


class Book:
    """One source's encodings by one tokenizer: what the last analysis asked (and what the one
    before it asked that the last did not: a concise run and a JSON run of the same file ask
    different texts), and what this one asks."""

    def __init__(self, path: str | None, tokenizer_path: str) -> None:
        self.path = path  # None: kept in memory for this analysis only, never read or written
        self.identity = identity(tokenizer_path)
        self._last: dict[str, Any] = {}  # asked by the last analysis
        self._older: dict[str, Any] = {}  # asked by the one before it, not by the last
        self._used: dict[str, Any] = {}
        self._decoded: dict[str, Encoded | None] = {}  # the entries read so far, as encodings
        self.vouches = False  # the book was written after the tokenizer loaded, and still holds
        if path is None:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("identity") == self.identity:
            last, older = data.get("entries"), data.get("older")
            if isinstance(last, dict) and isinstance(older, dict):
                self._last, self._older, self.vouches = last, older, True

    def _get(self, key: str) -> Any:
        if key in self._used:
            return self._used[key]
        for known in (self._last, self._older):
            if key in known:
                self._used[key] = known[key]
                return known[key]
        raise KeyError(key)

    def encoding(self, text: str) -> Encoded | None:
        key = "e:" + _digest(text)
        if key in self._decoded:  # a text asked again in one analysis is checked and rebuilt once
            return self._decoded[key]
        try:
            raw = self._get(key)
        except KeyError:
            return None
        found = self._decoded[key] = _encoding(raw)
        return found

    def put_encoding(self, text: str, ids: Sequence[int], offsets: Sequence[tuple[int, int]]) -> None:
        key = "e:" + _digest(text)
        self._used[key] = [list(ids), [o for pair in offsets for o in pair]]
        self._decoded.pop(key, None)

    def token_id(self, token: str) -> tuple[bool, int | None]:
        """(found, the id or None for a token the vocabulary lacks)."""
        try:
            raw = self._get("t:" + token)
        except KeyError:
            return False, None
        return (True, raw) if raw is None or type(raw) is int else (False, None)

    def put_token_id(self, token: str, found: int | None) -> None:
        self._used["t:" + token] = found

    def added_texts(self) -> frozenset[str] | None:
        try:
            raw = self._get("added")
        except KeyError:
            return None
        return frozenset(raw) if isinstance(raw, list) and all(isinstance(t, str) for t in raw) else None

    def put_added_texts(self, texts: frozenset[str]) -> None:
        self._used["added"] = sorted(texts)

    def save(self) -> None:
        """Write what this analysis asked (and what the last one asked that this one did not),
        unless the book holds exactly that already."""
        if self.path is None:
            return
        older = {k: v for k, v in self._last.items() if k not in self._used}
        if not self._used or (self.vouches and self._used.keys() == self._last.keys() and not self._older):
            return
        data = {"identity": self.identity, "entries": self._used, "older": older}
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                # dumps, not dump: only dumps encodes in C (a template's book takes 0.04 s in Python)
                fh.write(json.dumps(data, separators=(",", ":")))
            os.replace(tmp, self.path)  # a concurrent run never reads half a book
        except OSError:
            pass  # a read-only cache dir: the next run only loads the tokenizer again


class _Scope:
    """The books of one source's analysis, opened as its tokenizers are first asked."""

    def __init__(self, directory: str | None, source_path: str) -> None:
        self.directory, self.source_path = directory, source_path
        self.books: dict[str, Book] = {}

    def book(self, tokenizer_path: str) -> Book:
        key = os.path.abspath(tokenizer_path)  # one book however the path is spelt
        found = self.books.get(key)
        if found is None:
            where = book_file(self.directory, key, self.source_path) if self.directory is not None else None
            found = Book(where, key)
            self.books[key] = found
        return found


_scope: _Scope | None = None


@contextlib.contextmanager
def remembering(cache_dir: str | None, source_path: str, in_memory: bool = False) -> Iterator[None]:
    """Within this block, tokenizers read and record the encodings of `source_path`'s book; no
    book without a cache dir (`--no-cache`: a cold run), unless `in_memory`: then one that lives
    for this block only (the fixed texts a fix is verified on encode mostly what the check did)."""
    global _scope
    if cache_dir is None and not in_memory:
        yield
        return
    outer, _scope = _scope, _Scope(cache_dir, source_path)
    try:
        yield
    finally:
        scope, _scope = _scope, outer
        for book in scope.books.values():
            book.save()


def cache_dir_in_use() -> str | None:
    """The cache dir of the source being analysed, if it is analysed with a cache."""
    return _scope.directory if _scope is not None else None


def book_for(tokenizer_path: str) -> Book | None:
    """The current source's book for `tokenizer_path`, if a source is being analysed with a cache."""
    return _scope.book(tokenizer_path) if _scope is not None else None
