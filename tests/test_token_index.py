"""A tokenizer's index (prefixlint/models/token_index.py) encodes as the whole tokenizer does, ids and
offsets, for every BPE tokenizer of the corpus; declines what it cannot answer instead of
answering wrong; and is never read for another tokenizer file or when damaged."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CORPUS, FIXTURES
from test_tokenizer_process import TEXTS as HELPER_TEXTS
from test_tokenizer_process import _as_lists

from prefixlint.models import token_index, tokens
from prefixlint.models.token_index import Unusable, index_file, index_for, wants_index, write_index
from prefixlint.models.token_memo import remembering
from prefixlint.models.tokens import resolve_tokenizer_path

DEFAULT = str(resolve_tokenizer_path(None))
CORPUS_TOKENIZERS = ["gpt2", "gpt-neox-20b_olmo1", "olmo2_dolma2", "qwen3", "mistral-7b-v0.1", "deepseek-v3"]


def _corpus_file(name: str) -> str:
    folder = CORPUS / "tokenizers" / name
    found = [folder / f for f in ("tokenizer.json", "tokenizer.json.gz") if (folder / f).is_file()]
    if not found:
        pytest.skip(f"{folder} is not beside this checkout")
    return str(found[0])


def _texts() -> list[str]:
    # The helper's texts and a few more.
    texts = [*HELPER_TEXTS, "<|endoftext|>x<|endoftext|> <|endoftext|>", "<s>[INST] hi [/INST]</s>"]
    texts.append(" " * 40 + "x" + "\n" * 20 + "=" * 60 + "1234567890" * 5)
    texts += [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "templates").glob("*.jinja"))[:12]]
    rng = random.Random(27)
    alphabet = "abcdefgh ABC  \n\t.,;:!?'\"<>|{}[]()-_=+0123456789éüßçñ中文日本語한국어👍🏽\u0301\u200d"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120))) for _ in range(150)]
    return texts


@pytest.fixture(autouse=True)
def no_open_indexes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(token_index, "_OPEN", {})
    yield


@pytest.mark.parametrize("name", ["embedded", *CORPUS_TOKENIZERS])
def test_the_index_encodes_as_the_whole_tokenizer(tmp_path: Path, name: str) -> None:
    path = DEFAULT if name == "embedded" else _corpus_file(name)
    whole = tokens.load_backend(path)
    write_index(str(tmp_path), path, whole)
    index = index_for(str(tmp_path), path)
    assert index is not None
    texts = _texts()
    answered = 0
    # A few texts at a time, as a run asks: the tokenizer it builds grows from call to call.
    for at in range(0, len(texts), 7):
        chunk = texts[at : at + 7]
        try:
            got = index.encode_batch(chunk)
        except Unusable:  # declined (words too long to be worth the look-ups), never answered wrong
            assert name == "mistral-7b-v0.1" or any(len(t) > 2_000 for t in chunk), chunk
            continue
        assert _as_lists(got) == _as_lists(whole.encode_batch(chunk, add_special_tokens=False))
        answered += len(chunk)
    assert answered >= len(texts) // 2
    assert index.added_texts == frozenset(
        t.content for t in whole.get_added_tokens_decoder().values() if t.content
    )
    for token in (
        "<|endoftext|>",
        "<｜User｜>",
        "<s>",
        "<unk>",
        "hello",
        "Ġthe",
        "▁the",
        "not-a-token-at-all",
    ):
        assert index.token_to_id(token) == whole.token_to_id(token), token


def test_an_index_is_written_once_and_not_read_for_another_stamp(tmp_path: Path) -> None:
    tokenizer = tmp_path / "model" / "tokenizer.json"
    tokenizer.parent.mkdir()
    shutil.copy(_corpus_file("gpt2"), tokenizer)
    cache = str(tmp_path / "cache")
    assert wants_index(cache, str(tokenizer))
    write_index(cache, str(tokenizer), tokens.load_backend(str(tokenizer)))
    written = os.stat(index_file(cache, str(tokenizer))).st_mtime_ns
    assert not wants_index(cache, str(tokenizer)) and index_for(cache, str(tokenizer)) is not None
    write_index(cache, str(tokenizer), tokens.load_backend(str(tokenizer)))  # holds already: not rewritten
    assert os.stat(index_file(cache, str(tokenizer))).st_mtime_ns == written
    # The same path, another file: the index of the old one is not read, and is written again.
    shutil.copy(_corpus_file("gpt-neox-20b_olmo1"), tokenizer)
    token_index._OPEN.clear()
    assert index_for(cache, str(tokenizer)) is None and wants_index(cache, str(tokenizer))
    write_index(cache, str(tokenizer), tokens.load_backend(str(tokenizer)))
    index = index_for(cache, str(tokenizer))
    assert index is not None
    text = "The other tokenizer's ids: 12345 \u00e9t\u00e9"
    whole = tokens.load_backend(str(tokenizer)).encode(text, add_special_tokens=False)
    assert index.encode_batch([text])[0].ids == whole.ids


def test_a_tokenizer_it_cannot_serve_is_noted_once(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    # WordPiece: its tokens carry a `##` prefix, they are no substrings of the word.
    wordpiece = Tokenizer(models.WordPiece({"[UNK]": 0, "hel": 1, "##lo": 2}, unk_token="[UNK]"))
    wordpiece.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    wordpiece.save(str(path))
    cache = str(tmp_path / "cache")
    write_index(cache, str(path), wordpiece)
    assert index_for(cache, str(path)) is None
    assert not os.path.exists(index_file(cache, str(path)))
    assert not wants_index(cache, str(path))  # the note says so: no run builds it again


def _damage(index: Path, how: str) -> None:
    if how == "garbage":
        index.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
        return
    db = sqlite3.connect(index)
    if how == "rows":
        db.execute("UPDATE vocab SET id = 'x', rank = 'q'")
    elif how == "meta":
        (skeleton,) = db.execute("SELECT value FROM meta WHERE key = 'skeleton'").fetchone()
        data = json.loads(skeleton)
        data["added_tokens"] = [{"content": 5}]
        db.execute("UPDATE meta SET value = ? WHERE key = 'skeleton'", (json.dumps(data),))
    elif how == "schema":
        db.execute("DROP TABLE vocab")
        db.execute("CREATE VIEW vocab AS SELECT 'a' AS token, random() AS id, '' AS merges")
    db.commit()
    db.close()


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_LOADED", {})
    monkeypatch.setattr(tokens, "_LOADING", {})


TEXTS = ["Hello there, a few words.", "<|endoftext|> and 12345 \u00e9t\u00e9", "中文 👍🏽"]


def test_a_tokenizer_with_an_index_answers_without_loading(tmp_path: Path, fresh_registry: None) -> None:
    path = _corpus_file("gpt2")
    whole = tokens.load_backend(path)
    write_index(str(tmp_path), path, whole)
    with remembering(str(tmp_path), str(tmp_path / "chat.jinja")):
        loaded = tokens.load_tokenizer_file(path)
        got = loaded.encode_many(TEXTS)
        assert loaded.token_to_id("<|endoftext|>") == whole.token_to_id("<|endoftext|>")
        assert loaded.added_texts == frozenset({"<|endoftext|>"})
    assert _as_lists(got) == _as_lists(whole.encode_batch(TEXTS, add_special_tokens=False))
    assert loaded._tokenizer is None  # the index answered all of it


@pytest.mark.parametrize("how", ["garbage", "rows", "meta", "schema"])
def test_a_damaged_index_is_a_miss_never_a_wrong_answer(
    tmp_path: Path, fresh_registry: None, how: str
) -> None:
    path = _corpus_file("gpt2")
    whole = tokens.load_backend(path)
    write_index(str(tmp_path), path, whole)
    _damage(Path(index_file(str(tmp_path), path)), how)
    token_index._OPEN.clear()
    with remembering(str(tmp_path), str(tmp_path / "chat.jinja")):
        loaded = tokens.load_tokenizer_file(path)
        assert loaded.token_to_id("hello") == whole.token_to_id("hello")
        got = loaded.encode_many(TEXTS)
    assert _as_lists(got) == _as_lists(whole.encode_batch(TEXTS, add_special_tokens=False))
    assert loaded._tokenizer is not None  # it loaded, as without an index
