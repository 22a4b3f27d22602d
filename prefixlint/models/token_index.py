"""One job: a tokenizer's vocabulary kept on disk as an index, so a text never encoded before is
encoded without loading the tokenizer.

Loading the embedded tokenizer (129,280 tokens, 127,741 merges) costs ~0.35 s of CPU, as much as
importing everything else a one-file hook run needs; a hook run whose prompt text changed used to
pay it for a few hundred new characters (the books of prefixlint/models/token_memo.py answer only texts
encoded before). A BPE tokenizer only ever uses, for a word, the tokens that are substrings of
that word, and the merges that build them. So a run that loaded the tokenizer writes, once, an
index of its vocabulary (one SQLite file under `<cache dir>/tokindex-v1/`): every token with its
id and the merges that produce it, and the rest of the tokenizer.json (normalizer, pre-tokenizer,
added tokens, post-processor) as a *skeleton*. To encode new texts, a later run splits them into
words with the skeleton, looks up every substring of every word, and builds a `tokenizers`
tokenizer that holds only the tokens found (a few thousand, a few ms to build) with the merges among
them in their ranks, and the added tokens whose text occurs: the same library encodes with the
same pipeline, so the ids and offsets are those of the whole tokenizer. What the index cannot
answer (a tokenizer that is not a plain BPE, words so long that the look-ups would cost a load, a
damaged file) it declines, raising, and the caller loads the tokenizer as before. The index is
written by the process that loaded the tokenizer: this one, or the helper before it is stopped.

The file holds its tokenizer's identity (the file's stamp, the `tokenizers` library's, prefixlint's
own; as the books do) and is ignored when that changed. Opened read-only, with SQL functions kept
out of the schema, every value's type checked: a hostile cache dir can give wrong counts, as a
hostile result cache can, but never runs code or stops a run.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.models.backend import Encoded
from prefixlint.models.token_memo import identity as book_identity

if TYPE_CHECKING:
    import sqlite3

    from tokenizers import Encoding, Tokenizer

FORMAT = "tokindex-v1"
# Variables per look-up query: under SQLite's smallest limit (999, before 3.32).
_QUERY_CHUNK = 900
# Look-ups cost ~3 µs each and a load ~3 µs per token of the vocabulary: past half the
# vocabulary's size in substrings to look up, loading the tokenizer is cheaper (and past a
# bound, whatever an index says its vocabulary's size is).
_LOOKUPS_PER_TOKEN = 0.5
_MAX_LOOKUPS = 250_000


# The tables, as sqlite_master must show them: a view or a trigger in their place is no index.
# A token has one row per merge that produces it (rank, and where the merge cuts it), or one
# row with neither when no merge does (a character, an added token's text).
_SCHEMA = {
    "meta": "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "vocab": "CREATE TABLE vocab (token TEXT NOT NULL, id INTEGER NOT NULL, rank INTEGER, cut INTEGER)",
    "vocab_token": "CREATE INDEX vocab_token ON vocab (token)",
}


def identity(tokenizer_path: str) -> list[Any]:
    """What must not change for an index of `tokenizer_path` to hold (a book's identity)."""
    return [FORMAT, *book_identity(tokenizer_path)[1:]]


def _file(cache_dir: str, tokenizer_path: str, suffix: str) -> str:
    key = os.path.abspath(tokenizer_path).encode()  # one file per tokenizer: a new stamp replaces it
    return os.path.join(cache_dir, FORMAT, hashlib.sha256(key).hexdigest()[:32] + suffix)


def index_file(cache_dir: str, tokenizer_path: str) -> str:
    return _file(cache_dir, tokenizer_path, ".sqlite")


def has_index(cache_dir: str | None, tokenizer_path: str) -> bool:
    """Whether an index may answer for this tokenizer (its identity is checked when it is opened):
    then a helper loading the tokenizer ahead of use is likely wasted."""
    return cache_dir is not None and os.path.isfile(index_file(cache_dir, tokenizer_path))


def _eligible(data: dict[str, Any]) -> bool:
    """A BPE model whose merges alone decide each word's tokens: no dropout (randomness), no
    subword prefix or word suffix (the tokens would not be substrings of the word)."""
    model = data.get("model")
    return (
        isinstance(model, dict)
        and model.get("type") == "BPE"
        and not model.get("dropout")
        and not model.get("continuing_subword_prefix")
        and not model.get("end_of_word_suffix")
        and isinstance(model.get("vocab"), dict)
        and isinstance(model.get("merges"), list)
    )


def write_index(cache_dir: str, tokenizer_path: str, backend: Tokenizer) -> None:
    """Write the index of `backend`, just loaded from `tokenizer_path` (as load_backend builds it),
    unless one holds already or another process is writing it; for a tokenizer the index cannot
    serve, a note that says so, so that no run tries again (~0.7-1 s of CPU for the embedded default)."""
    if not wants_index(cache_dir, tokenizer_path):
        return
    try:
        os.makedirs(os.path.join(cache_dir, FORMAT), exist_ok=True)
        with _writing(_file(cache_dir, tokenizer_path, ".lock")) as mine:
            if mine:
                _write(cache_dir, tokenizer_path, backend)
    except OSError:
        pass  # a read-only cache dir: the next run only loads the tokenizer again
    _OPEN.pop((os.fspath(cache_dir), os.path.abspath(tokenizer_path)), None)


def wants_index(cache_dir: str, tokenizer_path: str) -> bool:
    """Whether `cache_dir` lacks an index of this tokenizer that holds, and a note that it has none."""
    return index_for(cache_dir, tokenizer_path) is None and not _refused(cache_dir, tokenizer_path)


def _refused(cache_dir: str, tokenizer_path: str) -> bool:
    try:
        with open(_file(cache_dir, tokenizer_path, ".refused.json"), encoding="utf-8") as fh:
            return json.load(fh) == identity(tokenizer_path)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def _writing(lock_path: str) -> Iterator[bool]:
    """Whether this process may write the index: no other holds the lock (released if it dies)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): two runs may both write; the last rename wins
        yield True
        return
    fd = os.open(lock_path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _write(cache_dir: str, tokenizer_path: str, backend: Tokenizer) -> None:
    import sqlite3

    data = json.loads(backend.to_str())
    if not _eligible(data):
        _replace(_file(cache_dir, tokenizer_path, ".refused.json"), json.dumps(identity(tokenizer_path)))
        return
    model = data["model"]
    vocab, merges = model["vocab"], model["merges"]
    model["vocab"], model["merges"] = {}, []
    pairs = bool(merges) and isinstance(merges[0], list)
    first: dict[str, tuple[int, int]] = {}  # the merge that produces a token (almost always the only one)
    more: list[tuple[str, int, int, int]] = []
    for rank, merge in enumerate(merges):
        left, right = merge if pairs else merge.split(" ", 1)
        token = left + right
        if token in first:
            more.append((token, vocab[token], rank, len(left)))
        else:
            first[token] = (rank, len(left))
    meta = {
        "identity": identity(tokenizer_path),
        "skeleton": data,
        "pairs": pairs,
        "longest": max(map(len, vocab), default=0),
        "size": len(vocab),
        "alphabet": {t: i for t, i in vocab.items() if len(t) == 1},
    }
    target = index_file(cache_dir, tokenizer_path)
    tmp = f"{target}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    try:
        db = sqlite3.connect(tmp)
        try:
            db.execute("PRAGMA journal_mode = OFF")
            db.execute(_SCHEMA["meta"])
            db.execute(_SCHEMA["vocab"])
            db.executemany("INSERT INTO meta VALUES (?, ?)", ((k, json.dumps(v)) for k, v in meta.items()))
            rows = ((t, i, *first.get(t, (None, None))) for t, i in vocab.items())
            db.executemany("INSERT INTO vocab VALUES (?, ?, ?, ?)", itertools.chain(rows, more))
            db.execute(_SCHEMA["vocab_token"])  # after the rows: sorted once, in C
            db.commit()
        finally:
            db.close()
        os.replace(tmp, target)  # a concurrent run never reads half an index
    except sqlite3.Error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _replace(target: str, text: str) -> None:
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, target)


class Unusable(Exception):
    """The index cannot answer (malformed, another tokenizer's, or not worth it for these texts)."""


def _check(ok: bool) -> None:
    if not ok:
        raise Unusable


class TokenIndex:
    """An open index: encodes texts and answers token ids as the whole tokenizer would. What it
    builds grows within a run, as texts ask for more: a tokenizer holding more tokens, or more
    added tokens, than a text can use encodes it the same."""

    def __init__(self, db: sqlite3.Connection, meta: dict[str, Any]) -> None:
        self._db = db
        skeleton = meta["skeleton"]
        _check(_eligible(skeleton) and isinstance(skeleton.get("added_tokens"), list))
        self._skeleton = skeleton
        self._pairs = meta["pairs"] is True
        self._longest, self._size, alphabet = meta["longest"], meta["size"], meta["alphabet"]
        _check(type(self._longest) is int and type(self._size) is int and isinstance(alphabet, dict))
        _check(all(isinstance(t, str) and type(i) is int for t, i in alphabet.items()))
        self._alphabet: dict[str, int] = alphabet
        for token in skeleton["added_tokens"]:
            _check(isinstance(token, dict) and isinstance(token.get("content"), str))
            _check(type(token.get("id")) is int)
        # As the tokenizer adds them: one without text is no token.
        self._added: list[dict[str, Any]] = [t for t in skeleton["added_tokens"] if t["content"]]
        self._added_ids = {t["content"]: t["id"] for t in self._added}
        # The added tokens by their first characters: a text holds few of those, and a search
        # per added token costs 0.04 s on a template's renders (the embedded default has 1,283).
        self._by_start: dict[str, list[str]] = {}
        for content in self._added_ids:
            self._by_start.setdefault(content[:3], []).append(content)
        normalizer = skeleton.get("normalizer")
        # Added tokens marked `normalized` match the normalized text: with a normalizer that
        # changes text, one whose text does not occur in the input may still match.
        self._plain_normalizer = normalizer is None or normalizer == {"type": "Sequence", "normalizers": []}
        # Each string looked up: its id and the merges that produce it (rank, cut), or None.
        self._found: dict[str, tuple[int, list[tuple[int, int]]] | None] = {}
        self._words: set[str] = set()  # the words whose substrings were looked up
        self._vocab: dict[str, int] = {}  # the tokens found in them,
        self._merges: set[tuple[int, str, str]] = set()  # the merges that build those,
        self._holds: set[str] = set()  # and the added tokens whose text occurred
        self._tokenizer: Tokenizer | None = None  # holds all of the above and the alphabet

    @property
    def added_texts(self) -> frozenset[str]:
        return frozenset(self._added_ids)

    def token_to_id(self, token: str) -> int | None:
        """As `Tokenizer.token_to_id`: an added token's id first, else the vocabulary's."""
        if token in self._added_ids:
            return self._added_ids[token]
        self._look_up([token])
        found = self._found[token]
        return found[0] if found is not None else None

    def encode_batch(self, texts: Sequence[str]) -> list[Encoded]:
        """The encodings of `texts` (no special tokens added); raises Unusable.

        The tokenizer built so far encodes them, and its tokens give the words the model sees
        (a word's tokens spell it, down to its characters, which the tokenizer always holds):
        if every word's substrings were looked up, those are the encodings; else the new words'
        are looked up and the tokenizer built again encodes the texts that hold them once more."""
        joined = "\0".join(texts)
        added = {
            c for start, group in self._by_start.items() if start in joined for c in group if c in joined
        }
        if not self._plain_normalizer:
            added |= {t["content"] for t in self._added if t.get("normalized")}
        if not added <= self._holds:
            self._holds |= added
            self._tokenizer = None
        encodings = self._encode(texts)
        words = [_words_of(e) for e in encodings]
        new = set().union(*words) - self._words
        if new:
            self._add_words(new)
            again = [i for i, spelt in enumerate(words) if not spelt.isdisjoint(new)]
            for i, encoding in zip(again, self._encode([texts[i] for i in again]), strict=True):
                # Words come from the pre-tokenizer, whatever the vocabulary: the same ones again.
                _check(_words_of(encoding) <= self._words)
                encodings[i] = encoding
        return [Encoded(e.ids, e.offsets) for e in encodings]

    def _encode(self, texts: Sequence[str]) -> list[Encoding]:
        if self._tokenizer is None:
            # A merge's halves are substrings of the same words: looked up, in the vocabulary.
            _check(all(a in self._vocab and b in self._vocab for _, a, b in self._merges))
            self._tokenizer = self._build(self._vocab, sorted(self._merges))
        return self._tokenizer.encode_batch(list(texts), add_special_tokens=False)

    def _add_words(self, words: set[str]) -> None:
        """Look up every substring of `words` (as long as the longest token) and hold the tokens
        found, with the merges that build them."""
        cost = sum(len(w) * min(len(w), self._longest) for w in words)
        _check(cost <= min(_LOOKUPS_PER_TOKEN * self._size, _MAX_LOOKUPS))
        substrings = {w[i:j] for w in words for i in range(len(w)) for j in range(i + 1, self._end(w, i))}
        self._words |= words
        for token in self._look_up(substrings):
            found = self._found[token]
            if found is None:
                continue
            self._vocab[token] = found[0]
            self._merges.update((rank, token[:cut], token[cut:]) for rank, cut in found[1])
            self._tokenizer = None

    def _end(self, word: str, start: int) -> int:
        return min(len(word), start + self._longest) + 1

    def _look_up(self, strings: Iterable[str]) -> list[str]:
        """Look up in the vocabulary those of `strings` never looked up; returns them."""
        todo = [s for s in strings if s not in self._found]
        for s in todo:
            self._found[s] = None
        for at in range(0, len(todo), _QUERY_CHUNK):
            chunk = todo[at : at + _QUERY_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT token, id, rank, cut FROM vocab WHERE token IN ({marks})"
            for token, token_id, rank, cut in self._db.execute(query, chunk):
                _check(isinstance(token, str) and type(token_id) is int)
                found = self._found[token]
                if found is None:
                    found = self._found[token] = (token_id, [])
                _check(found[0] == token_id)
                if rank is not None:
                    _check(type(rank) is int and type(cut) is int and 0 < cut < len(token))
                    found[1].append((rank, cut))
        return todo

    def _base(self) -> dict[str, int]:
        """The tokens a word may hold though they are no text of it: the unknown token, and the
        byte tokens (`<0x41>`) a tokenizer with `byte_fallback` writes for a character it lacks."""
        model = self._skeleton["model"]
        names = [model["unk_token"]] if isinstance(model.get("unk_token"), str) else []
        if model.get("byte_fallback"):
            names += [f"<0x{b:02X}>" for b in range(256)]
        self._look_up(names)
        return {name: found[0] for name in names if (found := self._found[name]) is not None}

    def _build(self, vocab: dict[str, int], merges: Iterable[tuple[int, str, str]]) -> Tokenizer:
        """The skeleton with `vocab`, `merges` (by rank) and the added tokens held."""
        from tokenizers import Tokenizer

        model = self._skeleton["model"]
        vocab = {**self._alphabet, **vocab, **self._base()}
        added = [t for t in self._added if t["content"] in self._holds]
        self._look_up(t["content"] for t in added)
        for token in added:
            content = token["content"]
            if self._found[content] is None:
                # Held by the model here though not in the whole vocabulary: one character would
                # be a word's symbol there, and a word of exactly its text would skip the merges.
                _check(len(content) > 1)
                matched_anywhere = not token.get("single_word") and self._plain_normalizer
                _check(matched_anywhere or not model.get("ignore_merges"))
            # An added token takes the model's id for its text, else the next free one: give it
            # its own in the model, as the vocabulary here is smaller than the whole one.
            _check(vocab.setdefault(content, token["id"]) == token["id"])
        listed = [[a, b] if self._pairs else f"{a} {b}" for _, a, b in merges]
        data = dict(self._skeleton, model=dict(model, vocab=vocab, merges=listed), added_tokens=added)
        tokenizer = Tokenizer.from_str(json.dumps(data))
        for token in added:
            _check(tokenizer.token_to_id(token["content"]) == token["id"])
        return tokenizer


def _words_of(encoding: Encoding) -> set[str]:
    """The words of an encoding, each spelt by its tokens (an added token is a word of its own)."""
    tokens, ids = encoding.tokens, encoding.word_ids
    text = "".join(tokens)
    ends = list(itertools.accumulate(map(len, tokens)))
    cuts = [end for end, a, b in zip(ends, ids, ids[1:], strict=False) if a != b]  # pairs
    return {text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])}


# The indexes this run opened, by cache dir and tokenizer file (None: none that holds).
_OPEN: dict[tuple[str, str], TokenIndex | None] = {}


def index_for(cache_dir: str, tokenizer_path: str) -> TokenIndex | None:
    """The index of `tokenizer_path` in `cache_dir`, if one holds and can serve it; opened once."""
    key = (os.fspath(cache_dir), os.path.abspath(tokenizer_path))  # one however they are spelt
    if key not in _OPEN:
        _OPEN[key] = _open(cache_dir, tokenizer_path)
    return _OPEN[key]


def _open(cache_dir: str, tokenizer_path: str) -> TokenIndex | None:
    import sqlite3

    path = index_file(cache_dir, tokenizer_path)
    if not os.path.isfile(path):
        return None
    try:
        db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
        db.execute("PRAGMA trusted_schema = OFF")
        schema = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))
        if schema != _SCHEMA:
            db.close()
            return None
        meta = {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM meta")}
        if meta.get("identity") != identity(tokenizer_path):
            db.close()
            return None
        return TokenIndex(db, meta)
    except (sqlite3.Error, ValueError, TypeError, KeyError, AttributeError, Unusable):
        return None
