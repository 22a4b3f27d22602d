"""The gate judges regressions, not edits (issue 13, points 1 and 2): an edit that lengthens the
system prompt passes, a timestamp moved to the top fails, a changed static prefix is a note,
Python sources, renamed and deleted templates, the output formats, and git's edge cases (a first
commit, a ref that does not exist, no work tree)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, git

from prefixlint.cli import cli

DIFF = FIXTURES / "ecosystem" / "diff"
CLEAN = FIXTURES / "templates" / "clean.jinja"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

LONGER = "travel company that sells flights, hotels and trains across Europe and the Middle East."


def diff(repo: Path, *args: str):
    return CliRunner().invoke(cli, ["diff", "HEAD", str(repo), "--no-cache", *args])


@pytest.fixture
def repo(diff_repo: Path) -> Path:
    return diff_repo


def test_an_edit_that_lengthens_the_system_prompt_passes(repo: Path) -> None:
    template = repo / "chat_template.jinja"
    template.write_text(
        template.read_text(encoding="utf-8").replace("travel company.", LONGER), encoding="utf-8"
    )
    result = diff(repo)
    assert result.exit_code == 0, result.output
    [headline, note, verdict] = result.stdout.splitlines()
    assert headline.startswith(f"{template}: cacheable prefix 80 -> ") and headline.endswith("  ok")
    assert "FAIL" not in result.stdout and "error:" not in result.stdout
    assert note.startswith("    note: static prefix changed at token ")
    assert "computed once more after deploy" in note
    assert verdict == "Compared 1 source with HEAD: the gate passes."
    document = json.loads(diff(repo, "--format", "json").stdout)
    [change] = document["templates"]
    assert document["failed"] is False and change["failed"] is False and change["failures"] == []
    assert change["cacheable_prefix_tokens_after"] > change["cacheable_prefix_tokens_before"]
    assert change["notes"] and change["status"] == "changed"


def test_a_timestamp_moved_to_the_top_fails(repo: Path) -> None:
    shutil.copy(DIFF / "timestamp_top.jinja", repo / "chat_template.jinja")
    result = diff(repo)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].endswith("FAIL")
    assert lines[1].startswith("    error: cacheable prefix shrank by ")
    assert "vllm now caches" in lines[1] and re.search(r"\d+ blocks? of 16 less per request", lines[1])
    assert lines[-1] == "Compared 1 source with HEAD: 1 of 1 fail the gate."
    assert diff(repo, "--exit-zero").exit_code == 0
    github = diff(repo, "--format", "github").stdout.splitlines()
    assert github[0].startswith(f"::error file={repo / 'chat_template.jinja'},line=1,title=prefixlint diff::")
    # A per-token engine fails on the same change, with its own numbers.
    sglang = diff(repo, "--engine", "SGLang")
    assert sglang.exit_code == 1 and "sglang now caches 10 of its tokens instead of 80" in sglang.stdout


def test_added_findings_fail_at_fail_on_and_only_warn_below_it(repo: Path) -> None:
    shutil.copy(FIXTURES / "templates" / "request_id.jinja", repo / "new.jinja")
    failing = diff(repo)
    assert failing.exit_code == 1 and f"{repo / 'new.jinja'}: new, " in failing.stdout
    assert "error: new finding PFX102 id-in-prefix" in failing.stdout
    (repo / "new.jinja").unlink()
    shutil.copy(FIXTURES / "templates" / "user_name_optional.jinja", repo / "info.jinja")  # a PFX105 info
    passing = diff(repo)
    assert passing.exit_code == 0, passing.output
    assert (
        "warning: new finding PFX105" in passing.stdout and "below --fail-on: does not fail" in passing.stdout
    )
    assert diff(repo, "--fail-on", "info").exit_code == 1


def test_python_sources_are_gated_too(repo: Path) -> None:
    shutil.copy(FIXTURES / "python" / "clean.py", repo / "app.py")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "app")
    shutil.copy(FIXTURES / "python" / "openai_alias_clock.py", repo / "app.py")
    result = diff(repo)
    assert result.exit_code == 1
    assert f"{repo / 'app.py'}: " in result.stdout
    assert "error: new finding PFX101 clock-in-prefix" in result.stdout


def test_renamed_templates_compare_with_their_old_path_and_deleted_ones_are_listed(repo: Path) -> None:
    shutil.copy(CLEAN, repo / "gone.jinja")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "two")
    git(repo, "mv", "chat_template.jinja", "renamed.jinja")
    git(repo, "rm", "-q", "gone.jinja")
    result = diff(repo)
    assert result.exit_code == 0, result.output
    assert (
        f"{repo / 'renamed.jinja'} (renamed from chat_template.jinja): cacheable prefix 80 -> 80"
        in result.stdout
    )
    document = json.loads(diff(repo, "--format", "json").stdout)
    by_status = {c["status"]: c for c in document["templates"]}
    assert by_status["deleted"]["path"].endswith("gone.jinja") and by_status["deleted"]["failed"] is False
    assert by_status["changed"]["old_path"] == "chat_template.jinja"


def test_sarif_holds_the_added_findings(repo: Path) -> None:
    shutil.copy(FIXTURES / "templates" / "request_id.jinja", repo / "new.jinja")
    document = json.loads(diff(repo, "--format", "sarif").stdout)
    rules = {r["ruleId"] for r in document["runs"][0]["results"]}
    assert "PFX102" in rules


def test_a_first_commit_is_everything_new_with_a_note(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    shutil.copy(CLEAN, tmp_path / "chat.jinja")
    git(tmp_path, "add", ".")
    result = CliRunner().invoke(cli, ["diff", "HEAD", str(tmp_path), "--no-cache"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "note: HEAD: the repository has no commit yet (a first commit): every source is new, "
        "so the gate checks their findings only"
    )
    assert lines[1].startswith(f"{tmp_path / 'chat.jinja'}: new, cacheable prefix ")
    document = json.loads(
        CliRunner().invoke(cli, ["diff", "main", str(tmp_path), "--no-cache", "--format", "json"]).stdout
    )
    assert document["first_commit"] is True and document["failed"] is False
    shutil.copy(FIXTURES / "templates" / "clock_in_system.jinja", tmp_path / "bad.jinja")
    bad = CliRunner().invoke(cli, ["diff", "HEAD", str(tmp_path), "--no-cache"])
    assert bad.exit_code == 1 and "error: new finding PFX101" in bad.stdout


def test_a_ref_that_does_not_exist_names_the_ref_and_git_s_message(repo: Path) -> None:
    result = CliRunner().invoke(cli, ["diff", "no-such-ref", str(repo), "--no-cache"])
    assert result.exit_code == 2
    assert result.stderr.startswith("prefixlint: error: git ref 'no-such-ref': fatal: ")
    assert "no-such-ref" in result.stderr.split("fatal: ", 1)[1]


def test_outside_a_work_tree_names_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    shutil.copy(CLEAN, folder / "t.jinja")
    result = CliRunner().invoke(cli, ["diff", "HEAD", str(folder / "t.jinja"), "--no-cache"])
    assert result.exit_code == 2
    assert (
        f"prefixlint: error: {folder}: not in a git work tree: fatal: not a git repository" in result.stderr
    )


def test_diff_says_when_nothing_was_compared_and_quiet_prints_failures_only(repo: Path) -> None:
    empty = repo / "empty"
    empty.mkdir()
    nothing = CliRunner().invoke(cli, ["diff", "HEAD", str(empty), "--no-cache"])
    assert nothing.exit_code == 0
    assert f"prefixlint: warning: no sources found under {empty}" in nothing.stderr
    shutil.copy(DIFF / "timestamp_top.jinja", repo / "chat_template.jinja")
    shutil.copy(CLEAN, repo / "clean.jinja")
    quiet = diff(repo, "-q")
    assert quiet.exit_code == 1
    assert quiet.stdout.splitlines()[0].startswith(f"{repo / 'chat_template.jinja'}: cacheable prefix 80 -> ")
    assert "clean.jinja" not in quiet.stdout and "Compared" not in quiet.stdout


def test_a_committed_file_that_has_not_changed_is_unchanged_never_new(repo: Path) -> None:
    # A template that renders nothing measurable (the sandbox refuses it) has no cacheable
    # prefix, then or now: it was called "new", though git holds it unchanged at HEAD.
    shutil.copy(FIXTURES / "hostile" / "ssti" / "attr_filter.jinja", repo / "refused.jinja")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a refused template")
    result = diff(repo)
    assert result.exit_code == 0, result.output
    assert f"{repo / 'refused.jinja'}: unchanged, no cacheable prefix measured  ok" in result.stdout
    assert f"{repo / 'chat_template.jinja'}: cacheable prefix 80 -> 80 tokens (+0)  ok" in result.stdout
    assert ": new" not in result.stdout
    document = json.loads(diff(repo, "--format", "json").stdout)
    assert {c["path"].rsplit("/", 1)[-1]: c["status"] for c in document["templates"]} == {
        "chat_template.jinja": "unchanged",
        "refused.jinja": "unchanged",
    }
    # Edited, it is "changed"; a file git does not hold at HEAD is "new".
    with (repo / "refused.jinja").open("a", encoding="utf-8") as fh:
        fh.write("{# edited #}\n")
    shutil.copy(FIXTURES / "hostile" / "ssti" / "attr_filter.jinja", repo / "added.jinja")
    document = json.loads(diff(repo, "--format", "json").stdout)
    statuses = {c["path"].rsplit("/", 1)[-1]: c["status"] for c in document["templates"]}
    assert statuses["refused.jinja"] == "changed" and statuses["added.jinja"] == "new"
    assert f"{repo / 'refused.jinja'}: changed, no cacheable prefix measured  ok" in diff(repo).stdout
