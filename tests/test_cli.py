"""The command line end to end: exit codes, the JSON contract, the full view, render, tokenizers."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CORPUS, FIXTURES

from prefixlint.cli import cli
from prefixlint.models.tokens import EMBEDDED_NAME, _embedded_dir

TEMPLATES = FIXTURES / "templates"
CLOCK = str(TEMPLATES / "clock_in_system.jinja")
CLEAN = str(TEMPLATES / "clean.jinja")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_exit_codes_zero_clean_one_findings_two_usage() -> None:
    assert run("check", CLEAN, "--no-multiturn")[0] == 0
    assert run("check", CLOCK, "--no-multiturn")[0] == 1
    assert run("check", CLOCK, "--select", "PFX9")[0] == 2
    assert run("check", CLOCK, "--engine", "nope")[0] == 2
    assert run("check", CLOCK, "--tokenizer", "/no/such/tokenizer.json")[0] == 2


def test_fail_on_error_ignores_infos_and_warnings() -> None:
    path = str(TEMPLATES / "user_name_optional.jinja")  # one PFX105 info
    assert run("check", path, "--no-multiturn", "--fail-on", "info")[0] == 1
    assert run("check", path, "--no-multiturn", "--fail-on", "error")[0] == 0


def test_concise_line_format() -> None:
    _, out = run("check", CLOCK, "--no-multiturn")
    first = out.splitlines()[0]
    assert first.startswith(
        f'{CLOCK}:3:21: PFX101 clock-in-prefix: `strftime_now("%d %B %Y")` renders the current date'
    )
    assert "the cache is split once a day" in first and first.endswith("[warning]")


def test_json_output_follows_the_contract() -> None:
    code, out = run("check", CLOCK, CLEAN, "--format", "json", "--no-multiturn")
    report = json.loads(out)
    assert code == 1
    assert set(report) >= {"version", "tokenizer", "engine", "diagnostics", "sources"}
    assert report["version"] == 1 and report["engine"] == "vllm"
    (d,) = report["diagnostics"]
    assert {"path", "line", "column", "code", "name", "severity", "message"} <= set(d)
    assert (d["code"], d["line"], d["severity"]) == ("PFX101", 3, "warning")  # a date: split per day
    ev = d["evidence"]
    assert {"token_index", "char_offset", "cacheable_tokens", "context_a", "context_b"} <= set(ev)
    assert ev["token_index"] == ev["cacheable_tokens"] == 9
    assert ev["engines"]["vllm"] == 0 and ev["engines"]["sglang"] == 9
    for source in report["sources"]:
        assert {"path", "kind", "cacheable_prefix_tokens", "total_tokens", "multiturn_reuse"} <= set(source)
        assert source["tokenizer"] == EMBEDDED_NAME


def test_full_view_shows_the_line_a_caret_and_both_contexts() -> None:
    _, out = run("check", CLOCK, "--format", "full", "--no-multiturn")
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if "PFX101" in line)
    assert lines[i + 1] == '    3 |     {%- set today = strftime_now("%d %B %Y") %}'
    assert lines[i + 2].index("^") == lines[i + 1].index("strftime_now")
    assert "31 March 2025" in lines[i + 4] and "01 April 2025" in lines[i + 5]


def test_output_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    code, out = run("check", CLOCK, "--format", "json", "--no-multiturn", "--output-file", str(target))
    assert code == 1 and out == ""
    assert json.loads(target.read_text())["diagnostics"][0]["code"] == "PFX101"


def test_render_prints_exactly_the_prompt_with_the_injected_clock() -> None:
    code, out = run("render", CLOCK, "--now", "2030-01-02T03:04:05", "--tokens")
    assert code == 0
    assert "Today is 02 January 2030." in out
    assert "--- " in out and " tokens (deepseek (embedded default))" in out


def test_render_with_messages_and_vars(tmp_path: Path) -> None:
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps({"messages": [{"role": "user", "content": "Hi!"}]}))
    code, out = run(
        "render",
        str(TEMPLATES / "request_id.jinja"),
        "--messages",
        str(messages),
        "--var",
        "request_id=r-42",
        "--no-generation-prompt",
    )
    assert code == 0
    assert out.startswith("<｜begin▁of▁sentence｜>[request r-42]\n\n<|system|>")
    assert out.rstrip().endswith("<|user|>\nHi!<|end|>")


def test_render_error_is_one_line_with_the_template_line() -> None:
    result = CliRunner().invoke(cli, ["render", str(TEMPLATES / "raises_always.jinja")])
    assert result.exit_code == 2
    assert "raises_always.jinja:2: UndefinedError" in result.output
    assert "Traceback" not in result.output


def test_tokenizer_from_file_folder_gz_and_local_hf_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _embedded_dir() / "tokenizer.json"
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(source, folder / "tokenizer.json")
    gz = tmp_path / "tok.json.gz"
    gz.write_bytes(gzip.compress(source.read_bytes()))
    snapshot = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    shutil.copy(source, snapshot / "tokenizer.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    expected = {
        "tokenizer.json": str(folder / "tokenizer.json"),
        "dir": str(folder / "tokenizer.json"),
        "gz": str(gz),
        "hub": str(snapshot / "tokenizer.json"),
    }
    for kind, spec in [
        ("tokenizer.json", str(folder / "tokenizer.json")),
        ("dir", str(folder)),
        ("gz", str(gz)),
        ("hub", "acme/tiny"),
    ]:
        code, out = run("check", CLOCK, "--tokenizer", spec, "--format", "json", "--no-multiturn")
        report = json.loads(out)
        assert code == 1, kind
        assert report["tokenizer"] == expected[kind]
        # These copies have no tokenizer_config.json: no bos_token, so the date is one token earlier.
        assert report["diagnostics"][0]["evidence"]["token_index"] == 8
    assert run("check", CLOCK, "--tokenizer", "acme/missing")[0] == 2


def test_a_tokenizer_json_beside_the_template_is_used(tmp_path: Path) -> None:
    if not (CORPUS / "tokenizers" / "gpt2").is_dir():
        pytest.skip("../shared/corpus is not beside this checkout")
    shutil.copy(CLOCK, tmp_path / "chat_template.jinja")
    shutil.copy(CORPUS / "tokenizers" / "gpt2" / "tokenizer.json", tmp_path / "tokenizer.json")
    _, out = run("check", str(tmp_path), "--format", "json", "--no-multiturn")
    report = json.loads(out)
    assert report["sources"][0]["tokenizer"] == str(tmp_path / "tokenizer.json")
    assert report["diagnostics"][0]["code"] == "PFX101"


def test_unreadable_and_broken_inputs_are_findings_not_crashes(tmp_path: Path) -> None:
    (tmp_path / "binary.jinja").write_bytes(b"\x00\x01\x02")
    (tmp_path / "latin1.j2").write_bytes("caf\xe9".encode("latin-1"))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "tokenizer_config.json").write_text('{"chat_template": 42}')
    code, out = run("check", str(tmp_path), "--format", "json", "--no-multiturn")
    report = json.loads(out)
    got = sorted((Path(d["path"]).name, d["code"]) for d in report["diagnostics"])
    assert got == [("binary.jinja", "PFX001"), ("latin1.j2", "PFX001"), ("tokenizer_config.json", "PFX001")]
    assert code == 1


def test_rules_listing_and_rule_page() -> None:
    code, out = run("rule", "pfx101")
    assert code == 0 and out.startswith("# PFX101 clock-in-prefix")
    assert run("rule", "PFX999")[0] == 2


def test_a_broken_tokenizer_beside_the_template_is_named_and_the_default_used(tmp_path: Path) -> None:
    shutil.copy(CLOCK, tmp_path / "chat_template.jinja")
    (tmp_path / "tokenizer.json").write_text('{"model": "not a tokenizer"}')
    result = CliRunner().invoke(
        cli, ["check", str(tmp_path), "--format", "json", "--no-multiturn", "--no-cache"]
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    (source,) = report["sources"]
    assert source["tokenizer"] == EMBEDDED_NAME
    assert source["notes"] and str(tmp_path / "tokenizer.json") in source["notes"][0]
    assert (
        f"prefixlint: warning: {tmp_path / 'tokenizer.json'}: not a loadable tokenizer.json" in result.stderr
    )
    assert report["diagnostics"][0]["code"] == "PFX101"
