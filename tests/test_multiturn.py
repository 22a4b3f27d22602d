"""The multi-turn analysis (PFX401-PFX403) on the project's own fixtures, with the real embedded
tokenizer: the code, the first divergent token and the reuse fraction of each cause."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from prefixlint.core.findings import Severity
from prefixlint.engines import load_engines
from prefixlint.jinja.inputs import ASSISTANT_REPLY, FOLLOW_UP, SYSTEM_PROMPT, USER_TURNS
from prefixlint.jinja.multiturn import MultiTurnResult, analyze_multiturn
from prefixlint.jinja.template import ChatTemplate
from prefixlint.models.tokens import LoadedTokenizer, common_prefix_len, load_tokenizer

MULTITURN = FIXTURES / "multiturn"


@pytest.fixture(scope="module")
def tokenizer() -> LoadedTokenizer:
    return load_tokenizer(None)


def _template(source: str, tokenizer: LoadedTokenizer, path: str = "t.jinja") -> ChatTemplate:
    return ChatTemplate(source, path, special_tokens=dict(tokenizer.special_tokens))


def _analyze(name: str, tokenizer: LoadedTokenizer) -> tuple[ChatTemplate, MultiTurnResult]:
    path = MULTITURN / name
    template = _template(path.read_text(encoding="utf-8"), tokenizer, str(path))
    return template, analyze_multiturn(template, tokenizer, engine=load_engines()["vllm"])


def _turns(system: bool) -> tuple[list[dict], list[dict]]:
    first = [{"role": "system", "content": SYSTEM_PROMPT}] if system else []
    first.append({"role": "user", "content": USER_TURNS[0]})
    second = [
        *first,
        {"role": "assistant", "content": ASSISTANT_REPLY},
        {"role": "user", "content": FOLLOW_UP},
    ]
    return first, second


def test_clean_template_has_no_finding_and_full_reuse(tokenizer: LoadedTokenizer) -> None:
    _, result = _analyze("clean.jinja", tokenizer)
    assert result.diagnostics == []
    assert result.reuse == 1.0


@pytest.mark.parametrize(
    ("name", "code", "line", "token_index", "char_offset", "reuse", "severity", "static", "reply"),
    [
        # One prompt token (the last, recomputed anyway) and a short reply: info (issue 14).
        ("generation_prompt_mismatch.jinja", "PFX403", 6, 71, 245, 29 / 30, Severity.INFO, 1, 7),
        # The prompt is intact; only the generated reasoning is lost: a warning.
        ("reasoning_stripped.jinja", "PFX401", 4, 72, 245, 72 / 95, Severity.WARNING, 0, 23),
        ("system_in_last_user.jinja", "PFX402", 6, 3, 6, 3 / 42, Severity.ERROR, 39, 7),
    ],
)
def test_each_cause_is_reported_once_at_its_line(
    tokenizer: LoadedTokenizer,
    name: str,
    code: str,
    line: int,
    token_index: int,
    char_offset: int,
    reuse: float,
    severity: Severity,
    static: int,
    reply: int,
) -> None:
    _, result = _analyze(name, tokenizer)
    assert [d.code for d in result.diagnostics] == [code]
    diag = result.diagnostics[0]
    assert diag.span.line == line
    assert diag.severity == severity
    assert diag.evidence is not None
    assert (diag.evidence.static_tokens_lost, diag.evidence.reply_tokens_lost) == (static, reply)
    assert diag.evidence.token_index == token_index
    assert diag.evidence.char_offset == char_offset
    assert diag.evidence.cacheable_tokens == token_index
    assert "‖" in diag.evidence.context_a and "‖" in diag.evidence.context_b
    assert result.reuse == pytest.approx(reuse)


def test_token_index_is_the_first_token_turn_two_does_not_reuse(tokenizer: LoadedTokenizer) -> None:
    """Recomputed from two plain renders, independently of the analysis."""
    template, result = _analyze("generation_prompt_mismatch.jinja", tokenizer)
    first, second = _turns(system=True)
    a, b = (tokenizer.encode(template.render(m).text).ids for m in (first, second))
    assert result.diagnostics[0].evidence.token_index == common_prefix_len(a, b) == len(a) - 1


def test_message_names_the_other_side_and_the_reuse(tokenizer: LoadedTokenizer) -> None:
    template, result = _analyze("system_in_last_user.jinja", tokenizer)
    message = result.diagnostics[0].message
    assert "line 8" in message  # turn 2's side: the plain user-message branch
    assert "reuses 3 of 42 tokens" in message
    assert "1 more step breaks" in message


def test_a_switch_that_keeps_the_prefix_stable_is_named(tokenizer: LoadedTokenizer) -> None:
    source = (
        "{%- for message in messages %}"
        "{%- if message.role == 'assistant' %}{{- '<|im_start|>assistant\\n' }}"
        "{%- if preserve_thinking and message.reasoning_content %}"
        "{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' + message.content }}"
        "{%- elif preserve_thinking %}{{- message.content }}"
        "{%- else %}{{- message.content.split('</think>')[-1].lstrip() }}{%- endif %}"
        "{{- '<|im_end|>\\n' }}"
        "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
        "{%- endif %}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )
    _, result = analyze_multiturn_of(source, tokenizer)
    assert [d.code for d in result.diagnostics] == ["PFX401"]
    assert "`--var preserve_thinking=true` keeps the prefix stable" in result.diagnostics[0].message


def analyze_multiturn_of(source: str, tokenizer: LoadedTokenizer) -> tuple[ChatTemplate, MultiTurnResult]:
    template = _template(source, tokenizer)
    return template, analyze_multiturn(template, tokenizer, engine=load_engines()["vllm"])


def test_scenarios_the_template_refuses_are_skipped(tokenizer: LoadedTokenizer) -> None:
    source = (
        (MULTITURN / "clean.jinja")
        .read_text(encoding="utf-8")
        .replace(
            "{%- for message in messages %}",
            "{%- if messages[0].role == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
            "{%- for message in messages %}",
        )
    )
    _, result = analyze_multiturn_of(source, tokenizer)
    assert result.diagnostics == []
    assert result.reuse == 1.0


def test_nothing_renders_gives_no_reuse(tokenizer: LoadedTokenizer) -> None:
    _, result = analyze_multiturn_of("{{ raise_exception('never') }}", tokenizer)
    assert result == MultiTurnResult([], None)


def test_boundary_that_retokenizes_is_a_generation_prompt_mismatch(tokenizer: LoadedTokenizer) -> None:
    """The generation prompt ends in a space that history joins to the reply's first word."""
    source = (
        "{%- for message in messages %}"
        "{%- if message.role == 'assistant' %}{{- 'Assistant: ' + message.content + '\\n' }}"
        "{%- else %}{{- message.role + ': ' + message.content + '\\n' }}{%- endif %}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- 'Assistant: ' }}{%- endif %}"
    )
    template, result = analyze_multiturn_of(source, tokenizer)
    first, second = _turns(system=False)
    a = tokenizer.encode(template.render(first).text).ids
    b = tokenizer.encode(template.render(second).text).ids
    if common_prefix_len(a, b) == len(a):
        pytest.skip("this tokenizer does not merge the trailing space with the reply")
    assert [d.code for d in result.diagnostics] == ["PFX403"]
