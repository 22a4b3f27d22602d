"""The CI gate on changes: a temporary git repo, a committed template, a working-tree change."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from prefixlint.api import Options
from prefixlint.cli import cli
from prefixlint.core.words import counted
from prefixlint.diffgate import DiffError, diff_gate, render_diff

DIFF = FIXTURES / "ecosystem" / "diff"


@pytest.fixture
def repo(diff_repo: Path) -> Path:
    return diff_repo


def test_moving_the_timestamp_to_the_top_fails(repo: Path) -> None:
    shutil.copy(DIFF / "timestamp_top.jinja", repo / "chat_template.jinja")
    result = diff_gate("HEAD", [str(repo)], Options())
    [change] = result.changes
    assert result.failed
    assert change.before is not None and change.after is not None and change.after < change.before - 16
    assert any("shrank" in f and re.search(r"\d+ blocks? of 16 less", f) for f in change.failures)
    text = render_diff(result)
    assert f"cacheable prefix {change.before} -> {change.after} tokens" in text and "FAIL" in text
    assert "1 of 1 fail the gate" in text


def test_editing_the_user_turn_passes(repo: Path) -> None:
    shutil.copy(DIFF / "user_turn_edit.jinja", repo / "chat_template.jinja")
    result = diff_gate("HEAD", [str(repo)], Options())
    [change] = result.changes
    assert not result.failed, render_diff(result)
    assert change.before == change.after and not change.added and change.static_changed_at is None
    assert "the gate passes" in render_diff(result)


def test_editing_the_static_prefix_is_a_note_with_the_recomputed_tokens(repo: Path) -> None:
    text = (DIFF / "base.jinja").read_text(encoding="utf-8").replace("travel company", "travel agency")
    (repo / "chat_template.jinja").write_text(text, encoding="utf-8")
    result = diff_gate("HEAD", [str(repo)], Options())
    [change] = result.changes
    assert not change.failures and not change.warnings and change.static_changed_at is not None
    assert change.recomputed > 0
    assert change.notes == [
        f"static prefix changed at token {change.static_changed_at:,}: {counted(change.recomputed, 'token')} "
        "computed once more after deploy (cold cache once, not a regression)"
    ]
    assert not result.failed  # information, never a failure
    rendered = render_diff(result)
    assert "FAIL" not in rendered and "the gate passes" in rendered and "    note: static prefix" in rendered


def test_a_threshold_tolerates_a_small_loss_and_new_templates_need_no_findings(repo: Path) -> None:
    shutil.copy(DIFF / "timestamp_top.jinja", repo / "chat_template.jinja")
    assert not diff_gate("HEAD", [str(repo)], Options(), max_prefix_loss=10_000).changes[0].failures
    shutil.copy(DIFF / "base.jinja", repo / "chat_template.jinja")
    shutil.copy(FIXTURES / "templates" / "request_id.jinja", repo / "new.jinja")
    result = diff_gate("HEAD", [str(repo)], Options())
    new = next(c for c in result.changes if c.path.endswith("new.jinja"))
    assert new.before is None and "PFX102" in [d.code for d in new.added] and result.failed


def test_cli_diff_and_check_diff(repo: Path) -> None:
    shutil.copy(DIFF / "timestamp_top.jinja", repo / "chat_template.jinja")
    runner = CliRunner()
    failed = runner.invoke(cli, ["diff", "HEAD", str(repo), "--no-cache"])
    assert failed.exit_code == 1 and "FAIL" in failed.output
    as_json = runner.invoke(cli, ["check", "--diff", "HEAD", "--format", "json", "--no-cache", str(repo)])
    assert as_json.exit_code == 1
    document = json.loads(as_json.output)
    assert document["failed"] and document["templates"][0]["cacheable_prefix_tokens_after"] < 20
    bad_ref = runner.invoke(cli, ["diff", "no-such-ref", str(repo), "--no-cache"])
    assert bad_ref.exit_code == 2


def test_outside_a_git_work_tree_is_an_error(tmp_path: Path) -> None:
    shutil.copy(DIFF / "base.jinja", tmp_path / "t.jinja")
    with pytest.raises(DiffError):
        diff_gate("HEAD", [str(tmp_path / "t.jinja")], Options())
