"""Encodings remembered across runs (prefixlint/models/token_memo.py): a hook run of an edited file whose
prompt text did not change loads no tokenizer, and every run says what a cold run says."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, FIXTURES, REPO, needs_corpus

# Runs the command line as `prefixlint` does, and says on stderr whether this process forked (a
# helper loading a tokenizer), imported `tokenizers` (to build one, from its index or its file)
# and how many tokenizer files it loaded whole.
PROBE = """
import atexit, os, sys
forks, loads = [], []
os.register_at_fork(after_in_parent=lambda: forks.append(1))
atexit.register(lambda: sys.stderr.write(
    f"\\nprobe: forks={len(forks)} tokenizers={'tokenizers' in sys.modules} loads={len(loads)}\\n"))
sys.argv = ["prefixlint", *sys.argv[1:]]
from prefixlint.models import tokens
whole = tokens.load_backend
tokens.load_backend = lambda path: loads.append(path) or whole(path)
from prefixlint.launch import main
main()
"""
NOTHING_LOADED = "probe: forks=0 tokenizers=False loads=0"


def run_env(cache: Path) -> dict[str, str]:
    """This checkout's prefixlint (not whichever one is installed), its cache in `cache`."""
    env = {**os.environ, "PREFIXLINT_CACHE_DIR": str(cache)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _run(cwd: Path, cache: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=run_env(cache), capture_output=True, text=True, timeout=300
    )
    assert done.returncode in (0, 1), done.stderr
    return done


def hook(cwd: Path, *args: str) -> tuple[str, str]:
    """(stdout, the probe's line) of a run in `cwd` with the cache in `cwd/cache`."""
    done = _run(cwd, cwd / "cache", "-c", PROBE, *args)
    return done.stdout, done.stderr.strip().splitlines()[-1]


def cold(cwd: Path, *args: str) -> str:
    # Run in `cwd`, outside this checkout: without PYTHONPATH it would run the installed prefixlint.
    return _run(cwd, cwd / "cold-cache", "-m", "prefixlint", "check", "--no-cache", *args).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "python" / "openai_alias_clock.py", tmp_path / "app.py")
    shutil.copy(FIXTURES / "templates" / "clock_in_system.jinja", tmp_path / "chat.jinja")
    return tmp_path


def append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line)


@pytest.mark.parametrize(("name", "comment"), [("app.py", "# edited\n"), ("chat.jinja", "{# edited #}\n")])
def test_an_edit_outside_the_prompt_text_loads_no_tokenizer(repo: Path, name: str, comment: str) -> None:
    args = ("check", "--format", "json", "--force-exclude", name)
    first, probe = hook(repo, *args)
    assert probe != NOTHING_LOADED  # the first run loads it, here or in a helper
    append(repo / name, comment)
    second, probe = hook(repo, *args)
    assert probe == NOTHING_LOADED
    found = json.loads(second)
    assert found == json.loads(cold(repo, "--format", "json", name))
    assert found["diagnostics"][0]["code"] == "PFX101"
    assert found["sources"][0]["total_tokens"] > 0


def test_concise_and_json_runs_in_turn_both_read_the_book(repo: Path) -> None:
    # JSON counts a Python file's whole prompt; the concise output only what its findings need.
    hook(repo, "check", "--force-exclude", "--format", "json", "app.py")
    for fmt in ("concise", "json", "concise"):
        append(repo / "app.py", f"# {fmt}\n")
        out, probe = hook(repo, "check", "--force-exclude", "--format", fmt, "app.py")
        assert probe == NOTHING_LOADED, fmt
    assert out == cold(repo, "app.py")


def test_an_edit_of_the_prompt_text_counts_it_anew(repo: Path) -> None:
    hook(repo, "check", "--force-exclude", "app.py")
    app = repo / "app.py"
    app.write_text(
        app.read_text(encoding="utf-8").replace(
            "never invent order numbers.", "never invent order numbers or dates."
        ),
        encoding="utf-8",
    )
    out, probe = hook(repo, "check", "--force-exclude", "app.py")
    # A text the book never held: encoded by the tokenizer's index, written by the first run.
    assert probe == "probe: forks=0 tokenizers=True loads=0"
    assert out == cold(repo, "app.py")
    assert "ahead of 39 static tokens" in out  # two tokens more than the fixture's 37


def test_an_edit_of_a_templates_text_counts_it_anew_without_a_load(repo: Path) -> None:
    # The first run: no book, no index: a helper loads the tokenizer, and writes its index.
    first, probe = hook(repo, "check", "--force-exclude", "--format", "json", "chat.jinja")
    assert "loads=0" in probe and "forks=0" not in probe
    assert list((repo / "cache" / "tokindex-v1").glob("*.sqlite"))
    chat = repo / "chat.jinja"
    policy = "1. Quote prices in the customer's currency and say when a price is an estimate.\n"
    chat.write_text(
        chat.read_text(encoding="utf-8").replace(policy, policy + "   Quote taxes and fees separately.\n"),
        encoding="utf-8",
    )
    second, probe = hook(repo, "check", "--force-exclude", "--format", "json", "chat.jinja")
    assert probe == "probe: forks=0 tokenizers=True loads=0"
    assert json.loads(second) == json.loads(cold(repo, "--format", "json", "chat.jinja"))
    lost = [d["evidence"]["static_tokens_lost"] for d in json.loads(second)["diagnostics"]]
    before = [d["evidence"]["static_tokens_lost"] for d in json.loads(first)["diagnostics"]]
    assert lost[0] > before[0]  # the sentence added after the date: more tokens lost


@needs_corpus
def test_a_book_from_another_tokenizer_is_not_read(repo: Path) -> None:
    hook(repo, "check", "--force-exclude", "chat.jinja")
    # A tokenizer.json beside the template now analyses it: another tokenizer, another book.
    shutil.copy(CORPUS / "tokenizers" / "gpt2" / "tokenizer.json", repo / "tokenizer.json")
    append(repo / "chat.jinja", "{# edited #}\n")
    out, probe = hook(repo, "check", "--force-exclude", "chat.jinja")
    assert probe != NOTHING_LOADED
    assert out == cold(repo, "chat.jinja")


def test_a_damaged_or_hostile_book_is_a_miss_never_an_error(repo: Path) -> None:
    hook(repo, "check", "--force-exclude", "app.py", "chat.jinja")
    books = sorted((repo / "cache" / "tokens-v1").glob("*.json"))
    assert len(books) == 2
    for book in books:
        data = json.loads(book.read_text(encoding="utf-8"))
        for key in data["entries"]:
            # Wrong shapes: a string for the ids, offsets that do not pair up, a float id.
            data["entries"][key] = ["x", [1]] if key.startswith("e:") else 1.5
        book.write_text(json.dumps(data), encoding="utf-8")
    (repo / "cache" / "tokens-v1" / "junk.json").write_text("{not json", encoding="utf-8")
    append(repo / "app.py", "# edited\n")
    out, _ = hook(repo, "check", "--force-exclude", "app.py", "chat.jinja")
    assert out == cold(repo, "app.py", "chat.jinja")


def test_no_cache_writes_no_book(repo: Path) -> None:
    env = {**os.environ, "PREFIXLINT_CACHE_DIR": str(repo / "cache")}
    subprocess.run(
        [sys.executable, "-m", "prefixlint", "check", "--no-cache", "app.py"],
        cwd=repo,
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert not (repo / "cache" / "tokens-v1").exists()


def test_a_new_template_with_the_tokenizers_index_forks_no_helper_and_loads_nothing(repo: Path) -> None:
    hook(repo, "check", "--force-exclude", "chat.jinja")  # no book yet: a helper loads, writes the index
    shutil.copy(FIXTURES / "templates" / "clock_in_system.jinja", repo / "new.jinja")
    out, probe = hook(repo, "check", "--force-exclude", "new.jinja")  # no book of its own
    assert probe == "probe: forks=0 tokenizers=True loads=0"
    assert out == cold(repo, "new.jinja")
