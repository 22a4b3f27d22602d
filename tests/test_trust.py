"""Findings a user can trust (issue 14): a cost on every finding, severity from that cost under one
rule, one finding per cause, scenario errors as findings, one cacheable prefix for every command.
Each case is a fixture under fixtures/trust/ with the code, line, severity and cost it must give."""

from __future__ import annotations

import json
import re

import pytest
from conftest import CORPUS, FIXTURES, run_prefixlint

from prefixlint.api import Options, lint_paths
from prefixlint.core.findings import Severity
from prefixlint.engines import load_engines
from prefixlint.engines.loss import cost_unit
from prefixlint.engines.severity import loss_severity

TRUST = FIXTURES / "trust"


def _diagnostics(name: str, engine: str = "vllm") -> list:
    report = lint_paths([str(TRUST / name)], Options(engine=engine))
    return [d for d in report.diagnostics if d.code != "PFX502"]


# --- point 2: severity from cost, one rule for every code ---------------------------------------


def test_cost_unit_is_one_block_or_one_caching_step() -> None:
    engines = load_engines()
    assert cost_unit(engines["vllm"]) == 16
    assert cost_unit(engines["sglang"]) == 1
    assert cost_unit(engines["openai"]) == 128
    assert cost_unit(None) == 1


@pytest.mark.parametrize(
    ("before", "static", "reply", "last_only", "expected"),
    [
        (0, 15, 0, False, Severity.INFO),  # under a vLLM block
        (100, 1, 0, True, Severity.INFO),  # only the recomputed last token
        (100, 3, 40, False, Severity.WARNING),  # no prompt block, generated blocks: a warning
        (0, 16, 0, False, Severity.ERROR),  # a block of prompt prefix: the rule's severity
    ],
)
def test_one_rule_for_every_code(
    before: int, static: int, reply: int, last_only: bool, expected: Severity
) -> None:
    vllm = load_engines()["vllm"]
    found = loss_severity(Severity.ERROR, before, static, vllm, reply_lost=reply, last_token_only=last_only)
    assert found == expected


def test_a_one_token_generation_prompt_mismatch_is_info() -> None:
    [diag] = _diagnostics("../multiturn/generation_prompt_mismatch.jinja")
    assert (diag.code, diag.span.line, diag.severity) == ("PFX403", 6, Severity.INFO)
    assert diag.evidence.static_tokens_lost == 1
    assert diag.evidence.reply_tokens_lost < 16


def test_the_last_token_alone_is_info_even_per_token_engines() -> None:
    """SGLang caches per token, but the last prompt token is recomputed anyway; the reply's tokens
    are still lost there, so the finding is a warning about generated tokens, not an error."""
    [diag] = _diagnostics("../multiturn/generation_prompt_mismatch.jinja", engine="sglang")
    assert diag.severity == Severity.WARNING
    assert diag.evidence.static_tokens_lost == 1 and diag.evidence.reply_tokens_lost > 1


def test_a_generation_prompt_of_a_block_or_more_keeps_the_rules_severity() -> None:
    [diag] = _diagnostics("long_generation_prompt.jinja")
    assert (diag.code, diag.span.line, diag.severity) == ("PFX403", 6, Severity.WARNING)
    assert diag.evidence.static_tokens_lost == 21
    assert "recomputes 21 tokens of the prompt" in diag.message
    # Per engine: vLLM loses whole 16-token blocks; OpenAI caches nothing under 1,024 tokens anyway.
    assert diag.evidence.engines_lost["vllm"] % 16 == 0 and diag.evidence.engines_lost["vllm"] >= 16
    assert diag.evidence.engines_lost["openai"] == 0
    assert diag.evidence.engines_lost["sglang"] == 28  # 21 prompt + 7 generated, per token


def test_short_static_tail_after_a_variable_is_info(tmp_path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(
        "{{- '<|im_start|>system\\nRequest ' + request_id + '.<|im_end|>\\n' }}"
        "{%- for m in messages if m.role != 'system' %}"
        "{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
        "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
        encoding="utf-8",
    )
    [diag] = [d for d in lint_paths([str(path)], Options()).diagnostics if d.code == "PFX102"]
    assert diag.evidence.static_tokens_lost < 16
    assert diag.severity == Severity.INFO


# --- point 1: the cost fields ---------------------------------------------------------------------


def test_dropped_reasoning_costs_generated_tokens_not_static_ones() -> None:
    """The prompt prefix is intact: what is lost is the reply the model generated."""
    [diag] = _diagnostics("../multiturn/reasoning_stripped.jinja")
    assert (diag.code, diag.span.line, diag.severity) == ("PFX401", 4, Severity.WARNING)
    assert diag.evidence.static_tokens_lost == 0
    assert diag.evidence.reply_tokens_lost == 23


def test_every_finding_in_json_carries_both_costs() -> None:
    result = run_prefixlint(
        "check", "--no-cache", "--format", "json", str(TRUST), str(FIXTURES / "templates")
    )
    assert result.returncode == 1, result.stderr
    diagnostics = json.loads(result.stdout)["diagnostics"]
    with_evidence = [d for d in diagnostics if "evidence" in d]
    assert with_evidence
    for d in with_evidence:
        assert isinstance(d["evidence"]["static_tokens_lost"], int)
        assert isinstance(d["evidence"]["reply_tokens_lost"], int)
        assert set(d["evidence"]["engines_lost"]) == set(d["evidence"]["engines"])
        # Done-when of issue 14: no warning or error of PFX3xx-5xx costs less than a vLLM block.
        if d["code"][3] in "345" and d["severity"] != "info":
            assert max(d["evidence"]["static_tokens_lost"], d["evidence"]["reply_tokens_lost"]) >= 16, d


# --- point 3: one cause, one finding --------------------------------------------------------------


def test_one_date_read_two_ways_is_one_finding() -> None:
    [diag] = _diagnostics("date_read_twice.jinja")
    assert (diag.code, diag.span.line, diag.severity) == ("PFX101", 3, Severity.WARNING)  # a date
    assert "also: PFX105 request-input-in-prefix (line 5)" in diag.message
    assert diag.evidence.token_index == 12
    # 94 static tokens follow the date; the last 14 (`<|im_end|>\n<|im_start|>user\n`) are the turn
    # markers in front of the user's text, which cost nothing shareable (issue 23, point 5).
    assert diag.evidence.static_tokens_lost == 80


def test_a_think_generation_prompt_and_dropped_reasoning_are_one_finding() -> None:
    [diag] = _diagnostics("think_prompt_stripped.jinja")
    assert (diag.code, diag.span.line, diag.severity) == ("PFX401", 10, Severity.WARNING)
    assert "also: PFX403 generation-prompt-mismatch (line 10)" in diag.message
    assert diag.evidence.token_index == 72
    assert (diag.evidence.static_tokens_lost, diag.evidence.reply_tokens_lost) == (2, 22)


# --- point 6: a scenario that makes the template raise is a finding --------------------------------


def test_a_tool_call_turn_that_raises_is_pfx002_naming_the_scenario() -> None:
    [diag] = _diagnostics("tool_call_raises.jinja")
    assert (diag.code, diag.span.line, diag.severity) == ("PFX002", 10, Severity.WARNING)
    assert "SecurityError" in diag.message
    assert "«agent loop with tool calls» at turn 2" in diag.message


def test_a_multi_turn_failure_the_variants_saw_too_is_one_pfx002(tmp_path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(
        (FIXTURES / "multiturn" / "clean.jinja")
        .read_text(encoding="utf-8")
        .replace(
            "{%- for message in messages %}",
            "{%- if messages[0].role == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
            "{%- for message in messages %}",
        ),
        encoding="utf-8",
    )
    [diag] = lint_paths([str(path)], Options()).diagnostics
    assert (diag.code, diag.severity) == ("PFX002", Severity.INFO)  # raise_exception: deliberate
    assert "with a system message" in diag.message
    assert "«plain chat with a system message» at turn 1" in diag.message


# --- point 7: one cacheable prefix for check, diff and explain TEMPLATE ----------------------------

AGREEMENT_FIXTURES = sorted(
    p for folder in ("templates", "multiturn", "trust") for p in (FIXTURES / folder).glob("*.jinja")
)


@pytest.fixture(scope="module")
def three_numbers(tmp_path_factory) -> dict[str, tuple]:
    """Per fixture: check's JSON number, diff's (the template new since REF) and explain's."""
    import os
    import shutil
    import subprocess

    from click.testing import CliRunner

    from prefixlint.cli import cli

    repo = tmp_path_factory.mktemp("agree")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "empty"], cwd=repo, check=True)
    names = []
    for path in AGREEMENT_FIXTURES:
        name = f"{path.parent.name}__{path.name}"
        shutil.copy(path, repo / name)
        names.append(name)
    runner = CliRunner()
    here = os.getcwd()
    os.chdir(repo)
    try:
        check = json.loads(runner.invoke(cli, ["check", "--no-cache", "--format", "json", *names]).output)
        diff = json.loads(runner.invoke(cli, ["diff", "HEAD", *names, "--format", "json"]).output)
        explained = {}
        for name in names:
            out = runner.invoke(cli, ["explain", name, "--format", "json"]).output
            explained[name] = json.loads(out)["sources"][0]["cacheable_prefix_tokens"]
    finally:
        os.chdir(here)
    by_check = {s["path"]: s["cacheable_prefix_tokens"] for s in check["sources"]}
    by_diff = {t["path"]: t["cacheable_prefix_tokens_after"] for t in diff["templates"]}
    findings = {name: [d for d in check["diagnostics"] if d["path"] == name] for name in names}
    return {n: (by_check.get(n), by_diff.get(n), explained[n], findings[n]) for n in names}


def test_check_diff_and_explain_agree_on_every_fixture(three_numbers) -> None:
    assert len(three_numbers) == len(AGREEMENT_FIXTURES) >= 15
    for name, (check, diff, explain, _) in three_numbers.items():
        assert check == diff == explain, name


def test_no_first_scenario_finding_diverges_past_the_cacheable_prefix(three_numbers) -> None:
    for name, (cacheable, *_, findings) in three_numbers.items():
        for d in findings:
            ev = d.get("evidence")
            if ev and ev["inputs"].startswith("with a system message;") and "optional" not in d["message"]:
                assert ev["token_index"] >= cacheable, (name, d["code"])


def test_a_required_request_id_ends_the_cacheable_prefix(three_numbers) -> None:
    """The example of issue 14: explain said 94 cacheable tokens, then a request id at token 5."""
    check, diff, explain, findings = three_numbers["templates__request_id.jinja"]
    [pfx102] = [d for d in findings if d["code"] == "PFX102"]
    assert check == diff == explain == pfx102["evidence"]["token_index"] == 5


# --- point 8: token-boundary findings measured with the stand-in tokenizer say so -----------------


def test_a_boundary_finding_from_the_stand_in_tokenizer_says_so() -> None:
    [diag] = lint_paths([str(FIXTURES / "templates" / "space_before_user.jinja")], Options()).diagnostics
    assert (diag.code, diag.span.line, diag.severity) == ("PFX302", 5, Severity.INFO)
    assert "embedded stand-in tokenizer" in diag.message and "--tokenizer" in diag.message


def test_with_the_models_own_tokenizer_the_boundary_finding_is_plain() -> None:
    """A model's own tokenizer (the corpus's DeepSeek-V3 one: the same splits) is authoritative."""
    own = CORPUS / "tokenizers" / "deepseek-v3" / "tokenizer.json"
    if not own.is_file():
        pytest.skip("needs ../shared/corpus/tokenizers/deepseek-v3")
    path = str(FIXTURES / "templates" / "space_before_user.jinja")
    [diag] = lint_paths([path], Options(tokenizer=str(own))).diagnostics
    assert (diag.code, diag.span.line, diag.severity) == ("PFX302", 5, Severity.INFO)
    assert "stand-in" not in diag.message


def test_a_multi_turn_break_where_only_tokens_differ_says_so(tmp_path) -> None:
    """Turn N's last token merges with the reply's first word: same text, other tokens."""
    path = tmp_path / "t.jinja"
    path.write_text(
        (FIXTURES / "multiturn" / "clean.jinja")
        .read_text(encoding="utf-8")
        .replace("'<|im_start|>assistant\\n'", "'<|im_start|>assistant\\nAnswer:'")
        .replace(
            "'<|im_start|>' + message.role + '\\n' + message.content",
            "'<|im_start|>' + message.role + '\\n' + ('Answer:' if message.role == 'assistant' else '')"
            " + message.content",
        ),
        encoding="utf-8",
    )
    found = [d for d in lint_paths([str(path)], Options()).diagnostics if d.code.startswith("PFX4")]
    assert found and all("embedded stand-in tokenizer" in d.message for d in found), found


# --- points 4 and 5: settings offered are the template's own inputs, and verified ------------------


def _analyse(source: str, path: str, **kwargs) -> list:
    from prefixlint.jinja.analyze import analyze_template
    from prefixlint.jinja.template import ChatTemplate
    from prefixlint.models.tokens import load_tokenizer

    tokenizer = load_tokenizer(None)
    template = ChatTemplate(source, path, special_tokens=dict(tokenizer.special_tokens))
    template.extra_kwargs.update(kwargs)
    return analyze_template(template, tokenizer, Options()).diagnostics


def _offered(message: str) -> list[list[str]]:
    """Each setting a message offers, as the `--var` arguments it prints (`NAME=VALUE` each)."""
    m = re.search(r"; ((?:`--var [^`]+`(?: or )?)+) keeps the prefix stable", message)
    if not m:
        return []
    return [re.findall(r"--var (\S+)", option) for option in re.findall(r"`([^`]+)`", m.group(1))]


def _check_with_vars(path, setting: list[str]) -> list[dict]:
    """`prefixlint check PATH --var NAME=VALUE ...`, the `--var`s copied from the hint as printed."""
    import json as _json

    from click.testing import CliRunner

    from prefixlint.cli import cli

    args = ["check", str(path), "--format", "json", "--no-cache", "--exit-zero"]
    for assignment in setting:
        args += ["--var", assignment]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return _json.loads(result.stdout)["diagnostics"]


def _assert_hints_hold(path) -> int:
    source = path.read_text(encoding="utf-8")
    checked = 0
    for diag in _analyse(source, str(path)):
        for setting in _offered(diag.message):
            after = _check_with_vars(path, setting)
            assert not [d for d in after if d["code"] == diag.code], (path.name, setting)
            assert not [d for d in after if d["code"] == "PFX002"], (path.name, setting)  # it renders
            checked += 1
    return checked


def test_a_verified_setting_is_offered_and_raising_or_own_ones_never() -> None:
    [diag] = _diagnostics("switch_hints.jinja")
    assert (diag.code, diag.span.line, diag.severity) == ("PFX401", 17, Severity.WARNING)
    assert "`--var preserve_thinking=true` keeps the prefix stable (verified" in diag.message
    assert "reasoning_effort" not in diag.message  # True and False both make it raise
    assert "keep_reasoning" not in diag.message  # set by the template itself, no caller passes it


def test_the_offered_setting_makes_the_finding_go_away() -> None:
    assert _assert_hints_hold(TRUST / "switch_hints.jinja") == 1


def test_every_hint_printed_on_the_corpus_holds() -> None:
    templates = sorted((CORPUS / "templates").rglob("*.jinja"))
    if not templates:
        pytest.skip("needs ../shared/corpus/templates")
    hinted = [p for p in templates if "think" in p.read_text(encoding="utf-8")]
    assert sum(_assert_hints_hold(p) for p in hinted) >= 1


# --- point 4: reasoning modelled per mode, in the field the template reads ------------------------


def test_reasoning_runs_in_the_mode_that_produces_it() -> None:
    """Thinking is off by default (the prompt closes the think block): reasoning replies are tried
    with `enable_thinking=true`, where the prompt opens `<think>` and the reply continues it."""
    by_code = {d.code: d for d in _diagnostics("thinking_off_by_default.jinja")}
    assert set(by_code) == {"PFX401", "PFX403"}
    reasoning = by_code["PFX401"]
    assert (reasoning.span.line, reasoning.severity) == (12, Severity.WARNING)
    assert "in the content, enable_thinking=true)" in reasoning.message
    assert (reasoning.evidence.static_tokens_lost, reasoning.evidence.reply_tokens_lost) == (2, 22)
    empty_think = by_code["PFX403"]  # thinking off: an empty think block history drops
    assert (empty_think.span.line, empty_think.severity) == (14, Severity.INFO)
    assert empty_think.evidence.static_tokens_lost == 4


def test_reasoning_in_a_reasoning_field_is_kept() -> None:
    assert _diagnostics("reasoning_field.jinja") == []


def test_a_template_without_a_thinking_switch_gets_no_reasoning_it_could_not_produce(tmp_path) -> None:
    path = tmp_path / "t.jinja"
    source = (TRUST / "thinking_off_by_default.jinja").read_text(encoding="utf-8")
    path.write_text(source.replace("enable_thinking is defined and enable_thinking", "false"), "utf-8")
    found = lint_paths([str(path)], Options()).diagnostics
    assert [d.code for d in found] == ["PFX403"]
    assert "reasoning" not in found[0].message


def test_done_when_on_the_corpus_no_small_cost_warning() -> None:
    """Issue 14's Done-when: on the corpus templates, no warning or error of PFX3xx-5xx loses less
    than a vLLM block on both counts; the plain ChatML templates pass the default run."""
    folder = CORPUS / "templates"
    if not folder.is_dir():
        pytest.skip("needs ../shared/corpus/templates")
    report = lint_paths([str(folder)], Options())
    for d in report.diagnostics:
        if d.code[3] in "345" and d.severity >= Severity.WARNING:
            assert max(d.evidence.static_tokens_lost, d.evidence.reply_tokens_lost) >= 16, d
    chatml = [str(p) for p in folder.rglob("*chatml*.jinja")]
    assert chatml
    assert not [d for d in lint_paths(chatml, Options()).diagnostics if d.severity >= Severity.WARNING]


def test_one_cause_one_finding_inside_a_tokenizer_config(tmp_path) -> None:
    """Every finding of a tokenizer_config.json is reported at its JSON line: causes are still told
    apart by the template line."""
    config = tmp_path / "tokenizer_config.json"
    source = (TRUST / "date_read_twice.jinja").read_text(encoding="utf-8")
    config.write_text(json.dumps({"chat_template": source}, indent=1), encoding="utf-8")
    [diag] = [d for d in lint_paths([str(config)], Options()).diagnostics if d.code != "PFX502"]
    assert diag.code == "PFX101" and "also: PFX105 request-input-in-prefix" in diag.message
