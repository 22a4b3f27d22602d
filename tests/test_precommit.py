"""The pre-commit hooks, run for real: `pre-commit try-repo` against this repository from a
temporary git repository. pre-commit installs the hooks' environment from the local checkout
(`language: python`: a virtualenv and `pip install .`, dependencies from the package index).

The hooks run against a snapshot of this checkout (tracked files as they are on disk, as
try-repo itself does for a checkout with uncommitted changes), so the test checks the hooks
and code being worked on, not only the last commit.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

DIFF = FIXTURES / "ecosystem" / "diff"

GIT_ID = [
    "-c",
    "user.name=prefixlint-tests",
    "-c",
    "user.email=tests@example.org",
    "-c",
    "commit.gpgsign=false",
]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def stage_two_templates(cwd: Path) -> None:
    """A chat template with a finding already (base.jinja's date) and a clean one, staged."""
    shutil.copy(DIFF / "base.jinja", cwd / "chat_template.jinja")
    shutil.copy(FIXTURES / "templates" / "clean.jinja", cwd / "chat.jinja")
    git(cwd, "add", ".")


def stage_a_clean_edit(cwd: Path) -> None:
    """The user's turn of the clean template edited (a change that loses nothing), staged."""
    path = cwd / "chat.jinja"
    path.write_text(
        path.read_text(encoding="utf-8").replace("message.content | trim", "message.content"),
        encoding="utf-8",
    )
    git(cwd, "add", "chat.jinja")


@pytest.fixture
def hooks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("precommit")
    snapshot = base / "prefixlint"
    git(base, "clone", "--quiet", str(REPO), str(snapshot))
    for rel in git(REPO, "diff", "--name-only", "HEAD").splitlines():
        source, target = REPO / rel, snapshot / rel
        if source.is_file():
            shutil.copy2(source, target)
        elif target.exists():
            target.unlink()
    git(snapshot, "add", "-A")
    git(snapshot, "commit", "--quiet", "--allow-empty", "-m", "snapshot of the working tree")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env["PRE_COMMIT_HOME"] = str(base / "pre-commit-home")
    return snapshot, env


def run(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def try_repo(hooks: tuple[Path, dict[str, str]], cwd: Path, *files: str) -> subprocess.CompletedProcess:
    """Every hook of this repository's .pre-commit-hooks.yaml on `files`."""
    snapshot, env = hooks
    return run(cwd, env, sys.executable, "-m", "pre_commit", "try-repo", str(snapshot), "--files", *files)


def test_hooks_fail_on_a_bad_change_and_pass_on_a_good_one(hooks, tmp_path: Path) -> None:
    # try-repo installs the hooks into a fresh store on every call (~40 s), so each call runs
    # both hooks (no hook id given) on a whole change: two calls prove fail and pass.
    git(tmp_path, "init", "--quiet")
    stage_two_templates(tmp_path)
    git(tmp_path, "commit", "--quiet", "-m", "templates")

    # A bad change: a new template with the date at the top, and the date moved to the top of
    # an existing one (staged, since pre-commit checks what is staged).
    shutil.copy(FIXTURES / "templates" / "clock_in_system.jinja", tmp_path / "bad.jinja")
    shutil.copy(DIFF / "timestamp_top.jinja", tmp_path / "chat_template.jinja")
    git(tmp_path, "add", ".")
    bad = try_repo(hooks, tmp_path, "bad.jinja", "chat_template.jinja")

    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "bad.jinja:3:21: PFX101 clock-in-prefix" in bad.stdout
    assert "cacheable prefix shrank" in bad.stdout
    assert bad.stdout.count("Failed") == 2

    # A good change: the user's turn of a clean template is edited; nothing else is staged.
    git(tmp_path, "rm", "--quiet", "--cached", "bad.jinja")
    shutil.copy(DIFF / "base.jinja", tmp_path / "chat_template.jinja")
    git(tmp_path, "add", "chat_template.jinja")
    stage_a_clean_edit(tmp_path)
    good = try_repo(hooks, tmp_path, "chat.jinja")
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.count("Passed") == 2


def test_a_first_commit_passes_both_hooks_and_a_lengthened_system_prompt_passes_the_gate(
    hooks, tmp_path: Path
) -> None:
    # A fresh repository: no HEAD yet. The diff hook takes every staged file as new and checks
    # its findings only; it used to die with `git rev-parse failed` (exit 2).
    git(tmp_path, "init", "--quiet")
    shutil.copy(FIXTURES / "templates" / "clean.jinja", tmp_path / "chat.jinja")
    shutil.copy(FIXTURES / "python" / "clean.py", tmp_path / "app.py")
    git(tmp_path, "add", ".")
    first = try_repo(hooks, tmp_path, "chat.jinja", "app.py")
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.count("Passed") == 2
    assert "rev-parse" not in first.stdout + first.stderr
    git(tmp_path, "commit", "--quiet", "-m", "first commit")

    # An edit that lengthens a system prompt ahead of the date: the static prefix changes (a
    # note), the cacheable prefix grows: both hooks pass.
    shutil.copy(DIFF / "base.jinja", tmp_path / "chat_template.jinja")
    git(tmp_path, "add", "chat_template.jinja")
    git(tmp_path, "commit", "--quiet", "-m", "a template", "--no-verify")
    text = (tmp_path / "chat_template.jinja").read_text(encoding="utf-8")
    longer = text.replace("travel company.", "travel company that sells flights, hotels and trains.")
    (tmp_path / "chat_template.jinja").write_text(longer, encoding="utf-8")
    git(tmp_path, "add", "chat_template.jinja")
    edit = try_repo(hooks, tmp_path, "chat_template.jinja")
    # base.jinja's date is followed by 13 static tokens (PFX101 for `check`): the lint hook fails
    # as it did before the edit; the gate passes, since nothing regressed.
    assert "prefixlint (cacheable prefix vs HEAD)" in edit.stdout
    gate_line = next(line for line in edit.stdout.splitlines() if line.startswith("prefixlint (cacheable"))
    assert gate_line.endswith("Passed"), edit.stdout + edit.stderr


def readme_snippet() -> str:
    """The `.pre-commit-config.yaml` the README shows, as a user copies it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("**pre-commit**", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def commit(cwd: Path, env: dict[str, str], message: str) -> subprocess.CompletedProcess:
    """`git commit` as a user runs it: the installed hook runs on what is staged."""
    return run(cwd, env, "git", *GIT_ID, "commit", "--quiet", "-m", message)


def test_the_readme_snippet_works_as_copied_and_autoupdate_pins_a_commit(hooks, tmp_path: Path) -> None:
    snapshot, env = hooks
    git(snapshot, "update-ref", "refs/heads/main", "HEAD")  # the branch the snippet names
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # the hook's own install, nothing else
    snippet = readme_snippet()
    assert "rev: main" in snippet and snippet.count("- id: ") == 1
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(snippet.replace("https://example.org/prefixlint.git", str(snapshot)), encoding="utf-8")
    git(tmp_path, "init", "--quiet")
    stage_two_templates(tmp_path)
    git(tmp_path, "commit", "--quiet", "--no-verify", "-m", "templates")
    installed = run(tmp_path, env, sys.executable, "-m", "pre_commit", "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr

    # The lint hook: a new template with the date at the top is refused, once, with its line.
    shutil.copy(FIXTURES / "templates" / "clock_in_system.jinja", tmp_path / "bad.jinja")
    git(tmp_path, "add", "bad.jinja")
    refused = commit(tmp_path, env, "a dated template")
    out = refused.stdout + refused.stderr
    assert refused.returncode == 1, out
    assert out.count("bad.jinja:3:21: PFX101 clock-in-prefix") == 1
    git(tmp_path, "rm", "--quiet", "--cached", "bad.jinja")
    (tmp_path / "bad.jinja").unlink()
    stage_a_clean_edit(tmp_path)
    passed = commit(tmp_path, env, "a clean edit")
    assert passed.returncode == 0, passed.stdout + passed.stderr

    # The same hook with the README's `args` line: the gate. chat_template.jinja has a finding
    # already (base.jinja's date), so the lint hook would refuse any edit of it; the gate passes
    # an edit that loses nothing and refuses one that moves the date to the top.
    config.write_text(config.read_text(encoding="utf-8").replace("# args:", "args:"), encoding="utf-8")
    git(tmp_path, "add", ".pre-commit-config.yaml")
    longer = (
        (DIFF / "base.jinja")
        .read_text(encoding="utf-8")
        .replace("travel company.", "travel company that sells trains.")
    )
    (tmp_path / "chat_template.jinja").write_text(longer, encoding="utf-8")
    git(tmp_path, "add", "chat_template.jinja")
    gated = commit(tmp_path, env, "a longer system prompt")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    shutil.copy(DIFF / "timestamp_top.jinja", tmp_path / "chat_template.jinja")
    git(tmp_path, "add", "chat_template.jinja")
    regressed = commit(tmp_path, env, "the date at the top")
    out = regressed.stdout + regressed.stderr
    assert regressed.returncode == 1, out
    assert len(re.findall(r"chat_template\.jinja: cacheable prefix \d+ -> \d+ tokens", out)) == 1, out
    assert "cacheable prefix shrank" in out

    # `pre-commit autoupdate`, as the snippet's comment says: the branch becomes its commit.
    updated = run(tmp_path, env, sys.executable, "-m", "pre_commit", "autoupdate")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    sha = git(snapshot, "rev-parse", "HEAD").strip()
    assert f"rev: {sha}" in config.read_text(encoding="utf-8")
