"""Every command the README shows runs as written (issue 27): each line of its ```sh blocks and of
its plain CI steps, and each `$ ` session, whose output must start with the lines shown.

The commands run in bash, in a scratch folder that holds a copy of fixtures/ and, under the names
the README uses for the user's own files, real ones: `model.gguf` (a metadata-only GGUF with the
embedded tokenizer and a `tool_use` template), `ollama:qwen3:8b` (an Ollama store naming it),
`models/my-model/`, `templates/`, `chat_template.jinja`, `requests.jsonl`; the folder is a git
repository with one commit, for `diff HEAD`. `prefixlint` and `python3` are this interpreter's;
`pip install` is a no-op (this test runs after the install), and a bare `python3 -m pytest` (the
suite itself, which is running this) is skipped. `PATH...` stands for `fixtures/`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, git
from gguf_files import write_gguf
from test_gguf import embedded_tokenizer, ollama_store

README = (REPO / "README.md").read_text(encoding="utf-8")

PRELUDE = """
prefixlint() { "$PY" -m prefixlint "$@"; }
python3() { if [ "$*" = "-m pytest" ]; then return 0; fi; "$PY" "$@"; }
pip() { return 0; }
set -o pipefail
"""


def _lines_of(block: str) -> list[str]:
    """The commands of a block: continuation lines joined, blank lines and comments dropped."""
    out = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def readme_commands() -> list[tuple[int, str]]:
    """(README line, command) of every ```sh line and plain CI `- run:` step."""
    found = []
    for block in re.finditer(r"```(sh|yaml)\n(.*?)```", README, re.S):
        line = README[: block.start()].count("\n") + 2
        lang, body = block.groups()
        for command in _lines_of(body):
            if lang == "yaml":
                if not command.startswith("- run: ") or "${{" in command:
                    continue  # GitHub's own expressions: test_action.py runs the action's steps
                command = command.removeprefix("- run: ")
            found.append((line, command.replace("PATH...", "fixtures/")))
    return found


def readme_sessions() -> list[tuple[int, list[tuple[str, list[str]]]]]:
    """(README line, [(command, output lines shown)]) of every block of `$ ` commands."""
    found = []
    for block in re.finditer(r"```\n(\$ .*?)```", README, re.S):
        steps = []
        for step in block.group(1).split("$ ")[1:]:
            command, *shown = step.rstrip("\n").split("\n")
            steps.append((command, shown))
        found.append((README[: block.start()].count("\n") + 2, steps))
    return found


# `--dask` needs the dask extra (.ci/run installs it): without it those commands are skipped.
NO_DASK = importlib.util.find_spec("distributed") is None


def _needs_absent_dask(command: str) -> bool:
    return NO_DASK and "--dask" in command


def expected_exit(command: str) -> set[int]:
    """The exit code the README's comment promises (`exits 1`, `(exit 0`), else a report's 0 or 1."""
    comment = command.split(" # ", 1)[1] if " # " in command else ""
    found = re.search(r"\bexits? (\d)\b(?! if)", comment)
    return {int(found.group(1))} if found else {0, 1}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(
        FIXTURES, root / "fixtures", ignore=shutil.ignore_patterns("__pycache__", ".prefixlint_cache")
    )
    shutil.copytree(FIXTURES / "templates", root / "templates")
    shutil.copytree(FIXTURES / "templates" / "tokenizer_config_list", root / "models" / "my-model")
    shutil.copy(FIXTURES / "explain" / "openai_gateway.jsonl", root / "requests.jsonl")
    shutil.copy(FIXTURES / "explain" / "timestamp_tail.jinja", root / "chat_template.jinja")
    clean = (FIXTURES / "templates" / "clean.jinja").read_text(encoding="utf-8")
    model = write_gguf(
        root / "model.gguf", embedded_tokenizer(), pre="deepseek-v3", templates={"": clean, "tool_use": clean}
    )
    store = ollama_store(root / "ollama-store", model, name="library/qwen3", tag="8b")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "the README's files")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        PY=sys.executable,
        OLLAMA_MODELS=str(store),
        XDG_CACHE_HOME=str(root / ".xdg"),
        PREFIXLINT_CACHE_DIR=str(root / ".prefixlint-cache"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    return root, env


def bash(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", PRELUDE + command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


def test_the_readme_has_commands_to_run() -> None:
    commands = [c for _, c in readme_commands()]
    assert len(commands) > 30
    assert any(c.startswith("prefixlint check ollama:") for c in commands)
    assert len(readme_sessions()) >= 3


@pytest.mark.parametrize(("line", "command"), readme_commands(), ids=lambda v: str(v)[:60])
def test_each_readme_command_runs_as_written(scratch, line: int, command: str) -> None:
    root, env = scratch
    if _needs_absent_dask(command):
        pytest.skip("dask[distributed] is not installed (pip install 'prefixlint[dask]')")
    done = bash(command, root, env)
    output = done.stdout + done.stderr
    assert done.returncode in expected_exit(command), f"README line {line}: {command}\n{output}"
    assert "Traceback" not in output and "internal error" not in output, output


@pytest.mark.parametrize(("line", "steps"), readme_sessions(), ids=lambda v: str(v)[:40])
def test_each_readme_session_prints_what_it_shows(scratch, line: int, steps) -> None:
    root, env = scratch
    if any(_needs_absent_dask(command) for command, _ in steps):
        pytest.skip("dask[distributed] is not installed (pip install 'prefixlint[dask]')")
    for command, shown in steps:
        # /tmp/ in a session is the reader's scratch space: here, the scratch folder.
        command = command.replace("/tmp/", f"{root}/")
        done = bash(command, root, env)
        got = done.stdout.replace(f"{root}/", "/tmp/").splitlines()
        assert done.returncode in (0, 1), f"README line {line}: {command}\n{done.stderr}"
        assert len(got) >= len(shown), f"README line {line}: {command}\n{done.stdout}"
        for have, want in zip(got, shown, strict=False):
            if "…" in want:
                head, tail = want.split("…")[0], want.split("…")[-1]
                assert have.startswith(head) and have.endswith(tail), (line, have, want)
            else:
                assert have == want, f"README line {line}: {command}"
