"""The GitHub Action (action.yml): its steps' commands run as GitHub would run them (bash, the
inputs in the environment) in a temporary repository with a base branch."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, REPO, git

DIFF = FIXTURES / "ecosystem" / "diff"

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None, reason="git and bash are needed"
)


def _action() -> dict:
    return yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))


def _run_step(cwd: Path, paths: str = ".", base_ref: str = "", args: str = "") -> subprocess.CompletedProcess:
    """The action's check step, as the runner runs it: `bash -e {0}`, with its env filled in."""
    [step] = [s for s in _action()["runs"]["steps"] if s["name"] == "prefixlint check and gate"]
    assert set(step["env"]) == {"PREFIXLINT_PATHS", "PREFIXLINT_ARGS", "PREFIXLINT_BASE_REF"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        PREFIXLINT_PATHS=paths,
        PREFIXLINT_ARGS=args,
        PREFIXLINT_BASE_REF=base_ref,
        PYTHONPATH=str(REPO),  # this checkout's prefixlint, as the install step would provide
    )
    script = cwd / ".step.sh"
    script.write_text(step["run"], encoding="utf-8")
    try:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        script.unlink()


def test_the_action_is_composite_with_an_install_step_and_pull_request_defaults() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    install = action["runs"]["steps"][0]
    assert install["if"] == "inputs.install == 'true'" and "pip install" in install["run"]
    assert "github.base_ref" in action["inputs"]["base-ref"]["default"]
    assert action["inputs"]["paths"]["default"] == "."


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    shutil.copy(FIXTURES / "templates" / "clean.jinja", tmp_path / "chat.jinja")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "checkout", "-q", "-b", "feature")
    return tmp_path


def test_a_regression_fails_with_annotations_from_both_commands(repo: Path) -> None:
    shutil.copy(FIXTURES / "templates" / "clock_in_system.jinja", repo / "chat.jinja")
    git(repo, "commit", "-q", "-am", "a date at the top")
    done = _run_step(repo, base_ref="main", args="--no-cache")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(
        line.startswith("::warning file=chat.jinja,line=3,col=21,title=prefixlint (PFX101") for line in lines
    )
    assert any(
        line.startswith("::error file=chat.jinja,line=3,title=prefixlint diff::new finding PFX101")
        for line in lines
    )


def test_a_clean_change_passes_and_no_base_ref_skips_the_gate(repo: Path) -> None:
    text = (repo / "chat.jinja").read_text(encoding="utf-8") + "\n"
    (repo / "chat.jinja").write_text(text, encoding="utf-8")
    git(repo, "commit", "-q", "-am", "a newline")
    done = _run_step(repo, base_ref="main", args="--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "::error" not in done.stdout
    shutil.copy(FIXTURES / "templates" / "clock_in_system.jinja", repo / "chat.jinja")
    check_only = _run_step(repo, args="--no-cache")
    assert check_only.returncode == 1
    assert "prefixlint diff" not in check_only.stdout and "PFX101" in check_only.stdout


def test_a_bad_base_ref_is_exit_two(repo: Path) -> None:
    done = _run_step(repo, base_ref="origin/nope", args="--no-cache")
    assert done.returncode == 2
    assert "git ref 'origin/nope'" in done.stderr
