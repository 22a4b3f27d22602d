"""GGUF model files in: their chat templates as sources, their tokenizer rebuilt with the same ids
as the tokenizer.json it was converted from, the local Ollama store, and headers that lie."""

from __future__ import annotations

import json
import struct
import time
import tracemalloc
from pathlib import Path

import pytest
from conftest import CORPUS, FIXTURES, needs_corpus, run_prefixlint
from gguf_files import read_tokenizer_json, write_gguf

from prefixlint.models.gguf import GGUFError, chat_templates, read_metadata
from prefixlint.models.gguf_tokenizer import build_tokenizer, load_gguf_tokenizer

TOKENIZERS = CORPUS / "tokenizers"
CLOCK = (FIXTURES / "templates" / "clock_in_system.jinja").read_text(encoding="utf-8")
# Scripts, digits, emoji, code, whitespace runs, CRLF, and special tokens inside the text.
SAMPLE = (
    "Hello, world! It's 2026-11-30 12:34:56.\n\nДобрый день — как дела? 你好，世界！こんにちは、カタカナ。"
    " مرحبا بالعالم. שלום. Ελληνικά. नमस्ते दुनिया. 🎉🚀 emoji\t tabs   spaces\r\n  <|im_start|>user\n"
    "x<|im_end|> <think>ok</think> <s>[INST] def f(x):\n    return x**2 # 12345678 ½ ﬁ café naïve ｆｕｌｌ"
)


def embedded_tokenizer() -> Path:
    from prefixlint.models.tokens import _embedded_dir

    return _embedded_dir() / "tokenizer.json"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Built GGUF tokenizers are cached under $XDG_CACHE_HOME: one per test, never the user's."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def reference_ids(tokenizer_json: Path, text: str) -> list[int]:
    from tokenizers import Tokenizer

    reference = Tokenizer.from_str(json.dumps(read_tokenizer_json(tokenizer_json)))
    reference.no_truncation()
    return reference.encode(text, add_special_tokens=False).ids


@needs_corpus
@pytest.mark.parametrize(
    ("folder", "pre", "extra"),
    [
        ("qwen3/tokenizer.json.gz", "qwen2", {}),  # Qwen-style byte-level BPE
        ("olmo2_dolma2/tokenizer.json", "llama-bpe", {}),  # Llama-3-style (cl100k) byte-level BPE
        ("deepseek-v3/tokenizer.json", "deepseek-v3", {}),
        # SentencePiece BPE with byte fallback: no merges in the file, derived from the scores.
        ("mistral-7b-v0.1/tokenizer.json", None, {"with_merges": False, "bos": "<s>", "eos": "</s>"}),
    ],
)
def test_token_ids_identical_to_the_tokenizer_json(
    tmp_path: Path, folder: str, pre: str | None, extra: dict
) -> None:
    source = TOKENIZERS / folder
    model = write_gguf(tmp_path / "m.gguf", source, pre=pre, **extra)
    built = build_tokenizer(read_metadata(model))
    assert built.warnings == []
    expected = reference_ids(source, SAMPLE)
    assert len(expected) > 100
    assert built.tokenizer.encode(SAMPLE, add_special_tokens=False).ids == expected
    for line in SAMPLE.splitlines():  # each piece alone: a space prefix, a special token first
        assert built.tokenizer.encode(line, add_special_tokens=False).ids == reference_ids(source, line)


@needs_corpus
def test_sentencepiece_special_tokens_and_bos_come_from_the_metadata(tmp_path: Path) -> None:
    source = TOKENIZERS / "mistral-7b-v0.1" / "tokenizer.json"
    model = write_gguf(tmp_path / "m.gguf", source, pre=None, with_merges=False, bos="<s>", eos="</s>")
    built = build_tokenizer(read_metadata(model))
    assert built.special_tokens == {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    # llama.cpp adds BOS to a SentencePiece vocabulary that does not say otherwise: id 1 first.
    assert built.tokenizer.encode("Hi").ids[0] == 1
    assert built.tokenizer.encode("Hi", add_special_tokens=False).ids[0] != 1


def test_unknown_pre_tokenizer_warns_and_splits_as_gpt2(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "m.gguf", embedded_tokenizer(), pre="made-up-2031")
    built = build_tokenizer(read_metadata(model))
    assert len(built.warnings) == 1
    assert "tokenizer.ggml.pre 'made-up-2031' is not one prefixlint knows" in built.warnings[0]
    assert "split as GPT-2 does" in built.warnings[0]
    from tokenizers import pre_tokenizers

    split = built.tokenizer.pre_tokenizer.pre_tokenize_str("it's 12345")
    gpt2 = pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str("it's 12345")
    assert [s for s, _ in split] == [s for s, _ in gpt2] == ["it", "'s", "Ġ12345"]
    clean = (FIXTURES / "templates" / "clean.jinja").read_text(encoding="utf-8")
    write_gguf(model, embedded_tokenizer(), pre="made-up-2031", templates={"": clean})
    result = run_prefixlint(
        "check", "--no-cache", "m.gguf", cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path)}
    )
    assert result.returncode == 0
    assert result.stderr.startswith(
        "prefixlint: warning: m.gguf: tokenizer.ggml.pre 'made-up-2031' is not one"
    )


def test_check_reports_the_clock_at_the_templates_line_with_the_gguf_tokenizer(tmp_path: Path) -> None:
    model = write_gguf(
        tmp_path / "tiny.gguf",
        embedded_tokenizer(),
        pre="deepseek-v3",
        templates={"": CLOCK, "tool_use": CLOCK},
    )
    result = run_prefixlint(
        "check", "--no-cache", "tiny.gguf", cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path)}
    )
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stdout.splitlines() if not line.startswith("  help: ")]
    # The clock is set at line 3 of the template (printed at line 6); lines are the template's.
    assert lines[0].startswith("tiny.gguf[chat_template.tool_use]:3:21: PFX101 clock-in-prefix: ")
    assert lines[1].startswith("tiny.gguf[chat_template]:3:21: PFX101 clock-in-prefix: ")
    assert "(printed at line 6)" in lines[1]
    assert lines[-1] == f"Found 2 findings in 1 file: 2 warnings (tokenizer: {model.name})."
    assert result.stderr == ""


def test_check_json_names_each_template_and_the_gguf_tokenizer(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "tiny.gguf", embedded_tokenizer(), pre="deepseek-v3", templates={"": CLOCK})
    result = run_prefixlint(
        "check", "--no-cache", "--format", "json", str(model), env={"XDG_CACHE_HOME": str(tmp_path)}
    )
    data = json.loads(result.stdout)
    assert [s["path"] for s in data["sources"]] == [f"{model}[chat_template]"]
    assert data["sources"][0]["kind"] == "gguf"
    assert data["sources"][0]["tokenizer"] == str(model)
    assert [(d["code"], d["line"]) for d in data["diagnostics"]] == [("PFX101", 3)]


def test_a_folder_of_models_and_a_gguf_without_template(tmp_path: Path) -> None:
    write_gguf(tmp_path / "a.gguf", embedded_tokenizer(), pre="deepseek-v3", templates={"": CLOCK})
    write_gguf(tmp_path / "base.gguf", embedded_tokenizer(), pre="deepseek-v3")
    result = run_prefixlint("check", "--no-cache", ".", cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert result.returncode == 1
    assert result.stdout.startswith("a.gguf[chat_template]:3:21: PFX101 ")
    assert "base.gguf: no tokenizer.chat_template in this GGUF: nothing checked" in result.stderr


def test_tokenizer_option_takes_a_gguf(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "m.gguf", embedded_tokenizer(), pre="deepseek-v3")
    template = tmp_path / "t.jinja"
    template.write_text(CLOCK, encoding="utf-8")
    result = run_prefixlint(
        "check", "--no-cache", "--tokenizer", str(model), str(template), env={"XDG_CACHE_HOME": str(tmp_path)}
    )
    assert result.returncode == 1
    (summary,) = [line for line in result.stdout.splitlines() if line.startswith("Found ")]
    assert f"(tokenizer: {model})" in summary


def test_render_names_a_template_of_the_gguf(tmp_path: Path) -> None:
    tool_use = "{{ bos_token }}TOOLS {{ messages[0].content }}"
    model = write_gguf(
        tmp_path / "m.gguf",
        embedded_tokenizer(),
        pre="deepseek-v3",
        templates={"": CLOCK, "tool_use": tool_use},
        bos="<｜begin▁of▁sentence｜>",
    )
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    result = run_prefixlint("render", str(model), "--name", "tool_use", "--no-generation-prompt", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<｜begin▁of▁sentence｜>TOOLS ")
    missing = run_prefixlint("render", str(model), "--name", "nope", env=env)
    assert missing.returncode == 2
    assert "no chat template named 'nope' (it has chat_template, chat_template.tool_use)" in missing.stderr


def test_the_built_tokenizer_is_cached_by_file_identity(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = write_gguf(tmp_path / "m.gguf", embedded_tokenizer(), pre="deepseek-v3")
    first = load_gguf_tokenizer(str(model))
    assert len(list((private_cache / "prefixlint" / "gguf-tokenizers").glob("*.json"))) == 1

    def no_build(_metadata: object) -> None:
        raise AssertionError("built again although cached")

    monkeypatch.setattr("prefixlint.models.gguf_tokenizer.build_tokenizer", no_build)
    again = load_gguf_tokenizer(str(model))
    assert again.tokenizer.encode(SAMPLE).ids == first.tokenizer.encode(SAMPLE).ids
    model.touch()  # a new mtime: another file as far as the cache knows
    with pytest.raises(AssertionError, match="built again"):
        load_gguf_tokenizer(str(model))


# --- Ollama's store -------------------------------------------------------------------------------


def ollama_store(root: Path, model: Path, name: str = "library/tiny", tag: str = "latest") -> Path:
    """Ollama's documented layout: manifests/HOST/NAMESPACE/MODEL/TAG naming blobs/sha256-HEX."""
    import hashlib
    import shutil

    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    shutil.copy(model, root / "blobs" / f"sha256-{digest}")
    manifest = root / "manifests" / "registry.ollama.ai" / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64, "size": 1},
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": 1},
    ]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}), encoding="utf-8")
    return root


def test_ollama_model_name_resolves_through_the_manifest(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "m.gguf", embedded_tokenizer(), pre="deepseek-v3", templates={"": CLOCK})
    store = ollama_store(tmp_path / "store", model, tag="8b")
    env = {"OLLAMA_MODELS": str(store), "XDG_CACHE_HOME": str(tmp_path)}
    result = run_prefixlint("check", "--no-cache", "ollama:tiny:8b", cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("ollama:tiny:8b[chat_template]:3:21: PFX101 ")
    template = tmp_path / "t.jinja"
    template.write_text(CLOCK, encoding="utf-8")
    as_tokenizer = run_prefixlint(
        "check", "--no-cache", "--tokenizer", "ollama:tiny:8b", str(template), env=env
    )
    assert as_tokenizer.returncode == 1, as_tokenizer.stderr
    (summary,) = [line for line in as_tokenizer.stdout.splitlines() if line.startswith("Found ")]
    assert "store/blobs/sha256-" in summary


def test_ollama_model_not_pulled_is_a_clear_error(tmp_path: Path) -> None:
    from prefixlint.models.ollama import OllamaError, manifest_path, resolve_ollama

    assert manifest_path("qwen3:8b", tmp_path) == tmp_path / "manifests/registry.ollama.ai/library/qwen3/8b"
    assert manifest_path("me/m", tmp_path) == tmp_path / "manifests/registry.ollama.ai/me/m/latest"
    assert manifest_path("h.io/me/m:q4", tmp_path) == tmp_path / "manifests/h.io/me/m/q4"
    with pytest.raises(OllamaError, match="not an Ollama model name"):
        manifest_path("../../etc/passwd", tmp_path)
    template = tmp_path / "t.jinja"
    template.write_text(CLOCK, encoding="utf-8")
    result = run_prefixlint(
        "check", "--tokenizer", "ollama:absent:1b", str(template), env={"OLLAMA_MODELS": str(tmp_path)}
    )
    assert result.returncode == 2
    assert (
        f"ollama:absent:1b: not in the local Ollama store ({tmp_path}); `ollama pull absent:1b` first"
        in result.stderr
    )
    # Checked, the same model is the same usage error (a path that does not exist), not a
    # PFX001 finding: a broken input is a finding, a name that names nothing is not.
    checked = run_prefixlint("check", "--no-cache", "ollama:absent:1b", env={"OLLAMA_MODELS": str(tmp_path)})
    assert checked.returncode == 2, checked.stdout
    assert "PFX001" not in checked.stdout and "not in the local Ollama store" in checked.stderr
    misspelt = run_prefixlint("check", "ollama:../x", env={"OLLAMA_MODELS": str(tmp_path)})
    assert misspelt.returncode == 2 and "not an Ollama model name" in misspelt.stderr
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OLLAMA_MODELS", str(tmp_path))
        with pytest.raises(OllamaError, match="not in the local Ollama store"):
            resolve_ollama("ollama:absent")


# --- Untrusted headers (issue 17, point 3) --------------------------------------------------------


def header(kv: bytes, kv_count: int, tensor_count: int = 0, version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, tensor_count, kv_count) + kv


def gguf_string(text: str, declared: int | None = None) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw) if declared is None else declared) + raw


def string_kv(key: str, value: str, declared: int | None = None) -> bytes:
    return gguf_string(key) + struct.pack("<I", 8) + gguf_string(value, declared)


LYING_HEADERS = {
    "string length": (header(string_kv("tokenizer.chat_template", "hi", declared=2**62), 1), "declares"),
    "array length": (
        header(gguf_string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2**40), 1),
        "declares 1,099,511,627,776 items",
    ),
    "key count": (header(b"", 2**63), "declares 9,223,372,036,854,775,808 metadata keys"),
    "tensor count": (header(b"", 0, tensor_count=2**50), "declares 1,125,899,906,842,624 tensors"),
    "value type": (header(gguf_string("k") + struct.pack("<I", 77) + b"\0" * 8, 1), "unknown value type 77"),
    "nested arrays": (
        header(
            gguf_string("k") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 3 + struct.pack("<IQ", 4, 0),
            1,
        ),
        "arrays nested more than 2 deep",
    ),
    "tensor offset": (
        header(
            gguf_string("w") + struct.pack("<I", 1) + struct.pack("<Q", 4) + struct.pack("<IQ", 0, 2**40),
            0,
            1,
        ),
        "outside the 0 bytes of tensor data",
    ),
    "version": (header(b"", 0, version=99), "GGUF version 99 is not supported"),
    "magic": (b"GGML" + b"\0" * 40, "not a GGUF file"),
    "truncated": (header(string_kv("tokenizer.chat_template", "hello"), 1)[:-3], "truncated or corrupt"),
}


@pytest.mark.parametrize("case", sorted(LYING_HEADERS))
def test_a_lying_header_is_an_error_at_once_without_allocating(tmp_path: Path, case: str) -> None:
    data, expected = LYING_HEADERS[case]
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(GGUFError) as caught:
        read_metadata(path)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert expected in str(caught.value)
    assert elapsed < 0.5  # milliseconds in fact; generous for a loaded CI machine
    assert peak < 1 << 20


def test_a_lying_header_is_pfx001_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.gguf").write_bytes(LYING_HEADERS["array length"][0])
    result = run_prefixlint("check", "--no-cache", "bad.gguf", cwd=tmp_path)
    assert result.returncode == 1
    # 24 header bytes, the key (8 + 21), its type (4), the item type (4) and the length (8): byte 69.
    assert result.stdout.splitlines()[0] == (
        "bad.gguf:1:1: PFX001 template-syntax-error: not a readable GGUF model: metadata "
        "'tokenizer.ggml.tokens': an array at byte 69 declares 1,099,511,627,776 items, more than the "
        "0 bytes left can hold (truncated or corrupt header) [error]"
    )
    assert "Traceback" not in result.stderr


def test_metadata_reads_templates_in_file_order_default_first(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "m.gguf", None, templates={"tool_use": "B", "": "A", "rag": "C"})
    metadata = read_metadata(model)
    assert [(t.name, t.source) for t in chat_templates(metadata)] == [
        ("chat_template", "A"),
        ("chat_template.tool_use", "B"),
        ("chat_template.rag", "C"),
    ]


def test_diff_gates_each_template_of_a_gguf(tmp_path: Path) -> None:
    from conftest import git

    clean = (FIXTURES / "templates" / "clean.jinja").read_text(encoding="utf-8")
    git(tmp_path, "init", "-q")
    write_gguf(tmp_path / "model.gguf", embedded_tokenizer(), pre="deepseek-v3", templates={"": clean})
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "clean template")
    write_gguf(tmp_path / "model.gguf", embedded_tokenizer(), pre="deepseek-v3", templates={"": CLOCK})
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = run_prefixlint("diff", "HEAD", "model.gguf", cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model.gguf[chat_template]: cacheable prefix ")
    assert any("new finding PFX101 clock-in-prefix at line 3" in line for line in lines)
    assert lines[-1].startswith("Compared 1 source with HEAD")


def test_explain_takes_a_gguf_as_template_and_tokenizer(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "tiny.gguf", embedded_tokenizer(), pre="deepseek-v3", templates={"": CLOCK})
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    story = run_prefixlint("explain", "tiny.gguf", cwd=tmp_path, env=env)
    assert story.returncode == 0, story.stderr
    assert story.stdout.startswith("tiny.gguf[chat_template]\n")
    assert "\nLine 3: `strftime_now(" in story.stdout
    log = tmp_path / "requests.jsonl"
    body = {"messages": [{"role": "user", "content": "Where is my order?"}]}
    log.write_text(json.dumps(body) + "\n" + json.dumps(body) + "\n", encoding="utf-8")
    result = run_prefixlint(
        "explain", "--log", str(log), "--tokenizer", str(model), "--format", "json", env=env
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["template"], data["tokenizer"]) == (f"{model}[chat_template]", str(model))


def test_a_vocabulary_past_the_limit_is_refused_before_it_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefixlint.models.gguf_tokenizer import GGUFTokenizerError

    model = write_gguf(tmp_path / "m.gguf", embedded_tokenizer(), pre="deepseek-v3")
    monkeypatch.setattr("prefixlint.models.gguf_tokenizer.MAX_VOCABULARY", 1000)
    metadata = read_metadata(model)
    monkeypatch.setattr(type(metadata), "array", lambda *_: pytest.fail("decoded"))
    with pytest.raises(
        GGUFTokenizerError, match=r"tokenizer.ggml.tokens holds 129,280 items \(at most 1,000\)"
    ):
        build_tokenizer(metadata)
