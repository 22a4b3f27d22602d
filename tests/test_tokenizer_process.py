"""A tokenizer loaded in a forked helper (prefixlint/models/tokenizer_process.py) answers exactly as one
loaded in this process, reports the same load errors, and leaves no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CORPUS, FIXTURES, REPO, needs_corpus, run_prefixlint

from prefixlint.api import Options, lint_paths
from prefixlint.models import tokenizer_process, tokens
from prefixlint.models.tokenizer_process import TokenizerProcess
from prefixlint.models.tokens import LoadedTokenizer, TokenizerError, load_backend, resolve_tokenizer_path
from prefixlint.report import render_report

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="helpers need fork")

DEFAULT = str(resolve_tokenizer_path(None))
TEXTS = [
    "",
    "Hello, world! The quick brown fox.",
    "  leading spaces\n\n\ttabs\r\nand CRLF  ",
    "中文分词测试：你好，世界。日本語のテキストも。한국어",
    "emoji 👍🏽 👨‍👩‍👧‍👦 🇫🇷 and combining e\u0301",
    "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>hello<｜end▁of▁sentence｜>",
    "<|im_start|>user\n<think>\n</think>\n<|im_end|>",
    "\x00\x01 control \ufeff bom",
    "Hello, world! The quick brown fox.",  # a repeat: encoded once, answered twice
    "long " + "lorem ipsum dolor sit amet, 12345 ünïcödé 中文 🎉 " * 4000,
]


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[TokenizerProcess]]:
    """Empty tokenizer registries, helpers allowed (this process may have imported `tokenizers`
    already), and the list of every helper started, all stopped afterwards."""
    monkeypatch.setattr(tokens, "_LOADED", {})
    monkeypatch.setattr(tokens, "_LOADING", {})
    monkeypatch.setattr(tokenizer_process, "fork_available", lambda: True)
    started: list[TokenizerProcess] = []
    real_init = TokenizerProcess.__init__

    def spy(self: TokenizerProcess, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        started.append(self)

    monkeypatch.setattr(TokenizerProcess, "__init__", spy)
    yield started
    tokens.stop_all_loading()


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True  # not our child any more: waited for already
    return False


def _as_lists(encodings: list[object]) -> list[tuple[list[int], list[tuple[int, int]]]]:
    return [(list(e.ids), [tuple(o) for o in e.offsets]) for e in encodings]  # type: ignore[attr-defined]


def test_helper_encodes_exactly_as_in_process() -> None:
    here = load_backend(DEFAULT)
    helper = TokenizerProcess(DEFAULT)
    try:
        state, added = helper.status()
        assert state == "ok"
        assert added == frozenset(t.content for t in here.get_added_tokens_decoder().values() if t.content)
        remote = helper.encode_batch(TEXTS)
        local = here.encode_batch(TEXTS, add_special_tokens=False)
        assert _as_lists(remote) == _as_lists(local)
        assert remote[0].ids == [] and len(remote[-1].ids) > 10_000
        for token in ("<｜end▁of▁sentence｜>", "<｜User｜>", "hello", "not-a-token-at-all"):
            assert helper.token_to_id(token) == here.token_to_id(token)
        assert helper.token_to_id("not-a-token-at-all") is None
    finally:
        helper.close()
    assert helper.pid is None


def test_loaded_tokenizer_backed_by_a_helper_matches(fresh_registry: list[TokenizerProcess]) -> None:
    here = LoadedTokenizer("here", DEFAULT, load_backend(DEFAULT))
    tokens.start_loading(DEFAULT)
    remote = tokens.load_tokenizer_file(DEFAULT, wait=False)
    assert remote._remote is not None and remote._tokenizer is None
    assert remote.name == tokens.EMBEDDED_NAME
    assert _as_lists(remote.encode_many(TEXTS)) == _as_lists(here.encode_many(TEXTS))
    assert remote.added_texts == here.added_texts
    assert remote.token_to_id("<｜end▁of▁sentence｜>") == here.token_to_id("<｜end▁of▁sentence｜>")
    assert [remote.count(t) for t in TEXTS[:8]] == [here.count(t) for t in TEXTS[:8]]
    assert remote._tokenizer is None  # all of that was answered by the helper
    pid = fresh_registry[0].pid
    assert pid is not None
    tokens.stop_loading(DEFAULT)
    assert _reaped(pid)
    # Stopped after it loaded: still known, and loaded here if asked again.
    assert tokens.load_tokenizer_file(DEFAULT) is remote
    assert remote.encode(TEXTS[3]).ids == here.encode(TEXTS[3]).ids


def test_a_broken_file_gives_the_same_error(tmp_path: Path, fresh_registry: list[TokenizerProcess]) -> None:
    broken = tmp_path / "tokenizer.json"
    broken.write_text('{"hello": "not a tokenizer"}', encoding="utf-8")
    missing = str(tmp_path / "gone" / "tokenizer.json")
    for path in (str(broken), missing):
        with pytest.raises(TokenizerError) as here:
            load_backend(path)
        tokens.start_loading(path)
        loaded = tokens.load_tokenizer_file(path, wait=False)  # returns at once, unchecked
        with pytest.raises(TokenizerError) as remote:
            loaded.encode_many(["hi"])
        assert str(remote.value) == str(here.value)
        with pytest.raises(TokenizerError) as again:
            tokens.load_tokenizer_file(path)
        assert str(again.value) == str(here.value)
    assert len(fresh_registry) == 2
    pids = [h.pid for h in fresh_registry]
    tokens.stop_all_loading()
    assert all(h.pid is None for h in fresh_registry) and all(_reaped(p) for p in pids if p)


def test_a_dead_helper_falls_back_to_loading_here(fresh_registry: list[TokenizerProcess]) -> None:
    tokens.start_loading(DEFAULT)
    loaded = tokens.load_tokenizer_file(DEFAULT, wait=False)
    helper = fresh_registry[0]
    assert helper.pid is not None
    os.kill(helper.pid, 9)
    expected = load_backend(DEFAULT).encode("中文 👍 text", add_special_tokens=False).ids
    assert loaded.encode_many(["中文 👍 text"])[0].ids == expected
    assert loaded._remote is None and loaded._tokenizer is not None


def _json(paths: list[str], workers: int | None) -> str:
    report = lint_paths(paths, Options(), workers=workers)
    return render_report(report, "json")


def test_lint_with_helpers_is_byte_identical_and_reaps(fresh_registry: list[TokenizerProcess]) -> None:
    paths = [str(FIXTURES / "templates"), str(FIXTURES / "multiturn")]
    with_helpers = _json(paths, workers=1)
    assert fresh_registry, "no helper was started"
    assert all(h.pid is None for h in fresh_registry)  # stopped and reaped at the end of the run
    assert not tokens._LOADING
    tokens._LOADED.clear()
    without = _json(paths, workers=2)  # the process pool: tokenizers loaded in each worker
    assert with_helpers == without


def test_without_fork_nothing_is_forked(
    monkeypatch: pytest.MonkeyPatch, fresh_registry: list[TokenizerProcess]
) -> None:
    monkeypatch.setattr(tokenizer_process, "fork_available", lambda: False)

    def no_fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(os, "fork", no_fork)
    out = _json([str(FIXTURES / "templates" / "clock_in_system.jinja")], workers=1)
    assert "PFX101" in out and not fresh_registry
    assert tokens._LOADED[DEFAULT]._tokenizer is not None  # loaded here, as before helpers


def test_python_only_and_cached_runs_start_no_helper(
    tmp_path: Path, fresh_registry: list[TokenizerProcess]
) -> None:
    plain = tmp_path / "geometry.py"
    plain.write_text("import math\n\n\ndef area(r):\n    return math.pi * r * r\n", encoding="utf-8")
    lint_paths([str(plain)], Options(), workers=1)
    assert not fresh_registry  # no prompt text: no tokenizer needed, no helper
    lint_paths([str(FIXTURES / "python" / "clean.py")], Options(), workers=1)
    assert len(fresh_registry) == 1  # a prompt's numbers are counted in tokens: loaded beside the parse
    fresh_registry.clear()
    tokens._LOADED.clear()
    template = tmp_path / "t.jinja"
    template.write_text((FIXTURES / "templates" / "clock_in_system.jinja").read_text(encoding="utf-8"))
    options = Options(cache_dir=str(tmp_path / "cache"))
    first = render_report(lint_paths([str(template)], options, workers=1), "json")
    assert len(fresh_registry) == 1
    tokens._LOADED.clear()
    second = render_report(lint_paths([str(template)], options, workers=1), "json")
    assert second == first and len(fresh_registry) == 1  # all cached: no helper


def test_a_broken_neighbour_still_falls_back_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: list[TokenizerProcess]
) -> None:
    template = tmp_path / "t.jinja"
    template.write_text((FIXTURES / "templates" / "clock_in_system.jinja").read_text(encoding="utf-8"))
    (tmp_path / "tokenizer.json").write_text('{"hello": "not a tokenizer"}', encoding="utf-8")
    report = lint_paths([str(template)], Options(), workers=1)
    assert [h.path for h in fresh_registry] == [str(tmp_path / "tokenizer.json")]
    (result,) = report.sources
    (note,) = result.notes
    assert note.startswith(f"{tmp_path / 'tokenizer.json'}: not a loadable tokenizer.json (")
    assert note.endswith("; analysed with the embedded default tokenizer instead")
    assert result.tokenizer == tokens.EMBEDDED_NAME
    with_helper = render_report(report, "json")
    tokens._LOADED.clear()
    monkeypatch.setattr(tokenizer_process, "fork_available", lambda: False)
    assert render_report(lint_paths([str(template)], Options(), workers=1), "json") == with_helper


def test_the_helper_exits_when_its_parent_dies(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "from prefixlint.models import tokenizer_process, tokens\n"
        "h = tokenizer_process.TokenizerProcess(str(tokens.resolve_tokenizer_path(None)))\n"
        "print(h.pid, flush=True)\n"
        "if sys.argv[1] == 'loaded':\n"
        "    h.status()\n"
        "os._exit(0)  # no close, no atexit: the helper must notice on its own\n"
    )
    for when in ("loading", "loaded"):
        proc = subprocess.run(
            [sys.executable, "-c", script, when], capture_output=True, text=True, cwd=REPO, timeout=60
        )
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        pid = int(proc.stdout)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        assert not _alive(pid), f"helper {pid} outlived its parent ({when})"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def test_cli_with_a_helper_prints_only_the_report(tmp_path: Path) -> None:
    """A fresh process forks a helper (nothing has imported `tokenizers` yet): the report, and
    nothing on stderr."""
    template = tmp_path / "t.jinja"
    template.write_text((FIXTURES / "templates" / "clock_in_system.jinja").read_text(encoding="utf-8"))
    proc = run_prefixlint("check", "--no-cache", "--format", "json", "t.jinja", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr == ""
    assert '"PFX101"' in proc.stdout


@needs_corpus
def test_corpus_json_is_byte_identical_with_helpers(fresh_registry: list[TokenizerProcess]) -> None:
    """Every corpus template and tokenizer folder (several tokenizers, one gzipped, one beside a
    template): one process with helpers, against the process pool without them."""
    paths = [str(CORPUS / "templates"), str(CORPUS / "tokenizers")]
    with_helpers = _json(paths, workers=1)
    assert len({h.path for h in fresh_registry}) >= 2
    assert all(h.pid is None for h in fresh_registry)
    tokens._LOADED.clear()
    assert with_helpers == _json(paths, workers=None)


def test_render_limits_still_stop_bombs_with_a_helper(
    tmp_path: Path, fresh_registry: list[TokenizerProcess]
) -> None:
    """The render time limit (SIGALRM in this process) and the memory limit work as without helpers
    while a helper loads, and the template beside the bombs is analysed as usual."""
    from prefixlint.core.limits import Limits

    (tmp_path / "a_loop.jinja").write_text(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    )
    (tmp_path / "b_string.jinja").write_text("{{ 'a' * 10**12 }}")
    (tmp_path / "c_clock.jinja").write_text(
        (FIXTURES / "templates" / "clock_in_system.jinja").read_text(encoding="utf-8")
    )
    options = Options(limits=Limits(seconds=1.0, template_seconds=3.0), multiturn=False)
    start = time.monotonic()
    report = lint_paths([str(tmp_path)], options, workers=1)
    assert time.monotonic() - start < 3.0 + 3.0 + 10.0
    assert len(fresh_registry) == 1 and fresh_registry[0].pid is None
    loop, string, clock = report.sources
    assert any("took longer than 1 s" in d.message for d in loop.diagnostics), loop.diagnostics
    assert any(d.code in ("PFX001", "PFX002") for d in string.diagnostics), string.diagnostics
    assert "PFX101" in {d.code for d in clock.diagnostics}


def test_a_few_named_templates_start_their_tokenizer_before_the_command_line_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefixlint import launch

    started: list[str] = []
    monkeypatch.setattr(tokens, "start_loading", started.append)
    # An empty cache: one with the tokenizer's index (any run from this checkout writes one there)
    # rightly starts no helper.
    monkeypatch.setenv("PREFIXLINT_CACHE_DIR", str(tmp_path / "cache"))
    beside = tmp_path / "model"
    beside.mkdir()
    (beside / "chat.jinja").write_text("{{ messages }}", encoding="utf-8")
    (tmp_path / "a.jinja").write_text("{{ messages }}", encoding="utf-8")
    (tmp_path / "m.py").write_text("x = 1\n", encoding="utf-8")
    named = tmp_path / "named.json"
    named.write_bytes(b"{}")  # a guess only resolves paths: the run itself loads (and reports) it
    launch._start_tokenizer_early([str(tmp_path / "a.jinja")])
    assert started == [DEFAULT]
    (beside / "tokenizer.json").write_bytes(b"{}")
    launch._start_tokenizer_early(["--format", "json", str(beside / "chat.jinja")])
    assert started[-1] == str(beside / "tokenizer.json")
    launch._start_tokenizer_early([f"--tokenizer={named}", str(tmp_path / "a.jinja")])
    assert started[-1] == str(named)
    count = len(started)
    for args in (
        [str(tmp_path)],  # a folder: maybe many files, for a pool
        [str(tmp_path / "m.py")],  # Python only: tokens only if a finding needs them
        ["--diff", "HEAD", str(tmp_path / "a.jinja")],
        [str(tmp_path / "a.jinja")] * 12,
    ):
        launch._start_tokenizer_early(args)
    assert len(started) == count


def test_a_helper_started_on_a_wrong_guess_is_stopped_when_the_run_starts(
    tmp_path: Path, fresh_registry: list[TokenizerProcess]
) -> None:
    (tmp_path / "only.py").write_text("x = 1\n", encoding="utf-8")
    tokens.start_loading(DEFAULT)
    [guess] = fresh_registry
    lint_paths([str(tmp_path / "only.py")], Options(), workers=1)
    assert guess.pid is None and DEFAULT not in tokens._LOADING
