"""A recorded `check` run is replayed only while nothing it read or listed has changed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, run_prefixlint

from prefixlint.run import runmemo

CLOCK = FIXTURES / "templates" / "clock_in_system.jinja"
CLEAN = FIXTURES / "templates" / "clean.jinja"
OLD = 1_600_000_000  # 2020: far from "now", so no input is racy


def _age(*paths: Path, offset: int = 0) -> None:
    """Give paths an old modification time (distinct per `offset`), as files of a checkout have."""
    for path in paths:
        os.utime(path, (OLD + offset, OLD + offset))


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "project"
    (root / "prompts").mkdir(parents=True)
    shutil.copy(CLEAN, root / "prompts" / "chat.jinja")
    _age(root / "prompts" / "chat.jinja", root / "prompts", root)
    return root, {"PREFIXLINT_CACHE_DIR": str(tmp_path / "cache")}


def _check(root: Path, env: dict[str, str], *extra: str) -> tuple[int, str, str, bool]:
    """(exit code, stdout, stderr without import lines, whether the click command line was loaded)."""
    done = run_prefixlint("check", *extra, "prompts", cwd=root, env={**env, "PYTHONPROFILEIMPORTTIME": "1"})
    imports = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    stderr = "".join(line + "\n" for line in done.stderr.splitlines() if not line.startswith("import time:"))
    loaded_cli = any(line.rstrip().endswith(" prefixlint.cli") for line in imports)
    return done.returncode, done.stdout, stderr, loaded_cli


def test_an_unchanged_run_is_replayed_byte_for_byte_without_loading_the_linter(project) -> None:
    root, env = project
    shutil.copy(CLOCK, root / "prompts" / "clock.jinja")
    _age(root / "prompts" / "clock.jinja", root / "prompts", offset=1)
    first = _check(root, env)
    second = _check(root, env)
    assert first[0] == 1 and "PFX101" in first[1] and first[3]
    assert second[:3] == first[:3]
    assert not second[3], "a replay must not import the click command line"


def test_an_edited_source_is_analysed_again(project) -> None:
    root, env = project
    assert _check(root, env)[0] == 0
    (root / "prompts" / "chat.jinja").write_text(CLOCK.read_text(encoding="utf-8"), encoding="utf-8")
    code, out, _, loaded_cli = _check(root, env)
    assert loaded_cli and code == 1 and "chat.jinja:3:" in out and "PFX101" in out


def test_a_new_file_in_a_walked_folder_is_found(project) -> None:
    root, env = project
    assert _check(root, env)[0] == 0
    shutil.copy(CLOCK, root / "prompts" / "new.jinja")
    _age(root / "prompts" / "new.jinja", offset=2)  # only the folder's time says something changed
    code, out, _, loaded_cli = _check(root, env)
    assert loaded_cli and code == 1 and "new.jinja:3:" in out


def test_a_new_config_file_changes_the_answer(project) -> None:
    root, env = project
    shutil.copy(CLOCK, root / "prompts" / "clock.jinja")
    _age(root / "prompts" / "clock.jinja", root / "prompts", offset=1)
    assert _check(root, env)[0] == 1
    (root / "prefixlint.toml").write_text('ignore = ["PFX101", "PFX105"]\n', encoding="utf-8")
    _age(root / "prefixlint.toml", offset=3)
    code, out, _, loaded_cli = _check(root, env)
    assert loaded_cli and "PFX101" not in out


def test_runs_that_must_not_be_replayed_record_nothing(project) -> None:
    root, env = project
    cache = Path(env["PREFIXLINT_CACHE_DIR"])
    _check(root, env, "--no-cache")
    _check(root, env, "--output-file", str(cache.parent / "report.txt"))
    assert not (cache / "runs").exists() or not list((cache / "runs").iterdir())
    _check(root, env)
    assert len(list((cache / "runs").iterdir())) == 1


def test_an_input_changed_just_now_is_not_trusted(tmp_path: Path) -> None:
    fresh = tmp_path / "chat.jinja"
    fresh.write_text("hello", encoding="utf-8")  # modified "now", by the file system's clock
    runmemo.record(str(tmp_path / "cache"), ["check", "x"], [str(fresh)], "out", "", 0)
    assert not list((tmp_path / "cache" / "runs").iterdir())
    _age(fresh)
    runmemo.record(str(tmp_path / "cache"), ["check", "x"], [str(fresh)], "out", "", 0)
    assert len(list((tmp_path / "cache" / "runs").iterdir())) == 1


def test_a_broken_entry_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("PREFIXLINT_CACHE_DIR", str(tmp_path))
    (tmp_path / "runs").mkdir()
    name = runmemo.entry_name(runmemo.run_identity(["check", "a"]))
    (tmp_path / "runs" / name).write_text("{not json", encoding="utf-8")
    assert runmemo.replay(["check", "a"]) is None
    assert capsys.readouterr() == ("", "")


def test_another_command_line_in_the_same_slot_is_not_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("PREFIXLINT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(runmemo, "entry_name", lambda identity: "slot.json")  # a checksum clash
    source = tmp_path / "chat.jinja"
    source.write_text("hello", encoding="utf-8")
    _age(source)
    runmemo.record(str(tmp_path), ["check", "chat.jinja"], [str(source)], "report A\n", "", 1)
    assert runmemo.replay(["check", "--select", "PFX1", "chat.jinja"]) is None
    assert runmemo.replay(["check", "chat.jinja"]) == 1
    assert capsys.readouterr().out == "report A\n"


def test_a_reader_that_leaves_early_gets_no_second_run(project) -> None:
    """`prefixlint check … | head -1` on a replayed run: the output stops, nothing runs again."""
    import subprocess
    import sys

    root, env = project
    shutil.copy(CLOCK, root / "prompts" / "clock.jinja")
    _age(root / "prompts" / "clock.jinja", root / "prompts", offset=1)
    assert _check(root, env, "--format", "full")[3]  # recorded by a full run
    script = f"{sys.executable} -m prefixlint check --format full prompts | head -c 1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script],
        cwd=root,
        # This checkout's prefixlint, as run_prefixlint runs it: not whichever one is installed.
        env={**os.environ, **env, "PYTHONPROFILEIMPORTTIME": "1", "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert len(done.stdout) == 1
    assert "prefixlint.cli" not in done.stderr and "Traceback" not in done.stderr


def test_a_closed_pipe_while_replaying_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFIXLINT_CACHE_DIR", str(tmp_path))
    source = tmp_path / "chat.jinja"
    source.write_text("hello", encoding="utf-8")
    _age(source)
    runmemo.record(str(tmp_path), ["check", "chat.jinja"], [str(source)], "x" * 200_000, "", 1)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before a byte is written
    with os.fdopen(write_end, "w") as closed:
        monkeypatch.setattr("sys.stdout", closed)
        assert runmemo.replay(["check", "chat.jinja"]) == 1
