"""Severity in the engine's units (issue 23, point 5): a value costs the aligned cache blocks of
static text that would be shared without it; turn markers in front of per-request text cost
nothing shareable; the embedded stand-in tokenizer never raises a verdict, and says so when the
verdict depends on the tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from prefixlint.api import Options, lint_paths
from prefixlint.core.controls import control_strings, markup_suffix
from prefixlint.core.findings import Severity
from prefixlint.engines import load_engines
from prefixlint.engines.loss import aligned_loss
from prefixlint.engines.severity import loss_severity
from prefixlint.models.tokens import encode_isolating, load_tokenizer

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


@pytest.fixture(scope="module")
def engines():
    return load_engines()


@pytest.mark.parametrize(
    ("engine", "before", "lost", "prompt", "expected"),
    [
        ("vllm", 15, 1, 100, 16),  # the 16th token completes the first block
        ("vllm", 16, 15, 100, 0),  # 16..30: the second block never completes
        ("vllm", 16, 16, 100, 16),  # 16..31: it does
        ("vllm", 31, 2, 100, 16),  # crossing 32 by one token costs the whole block
        ("vllm", 0, 16, 16, 0),  # the request's last token is recomputed, never served
        ("vllm", 0, 16, 17, 16),
        ("vllm", 0, 16, None, 16),  # None: the prompt goes on after the loss
        ("sglang", 15, 1, 100, 1),  # per-token cache
        ("openai", 1000, 100, 5000, 1024),  # nothing below 1,024 tokens, then the minimum at once
        ("openai", 1100, 100, 5000, 128),  # 1,024 + 128-token steps
        ("openai", 1100, 20, 5000, 0),
    ],
)
def test_aligned_blocks_at_block_boundaries(engines, engine: str, before, lost, prompt, expected) -> None:
    assert aligned_loss(before, lost, engines[engine], prompt) == expected


@pytest.mark.parametrize(
    ("before", "static", "reply", "last_only", "expected"),
    [
        (15, 1, 0, False, E),  # one token that completes a block is a block
        (16, 15, 0, False, INFO),  # fifteen that complete none are nothing
        (16, 15, 1, False, W),  # the reply completes it: generated tokens only, a warning
        (16, 15, 40, False, W),
        (15, 1, 40, True, W),  # turn N's last token alone is recomputed anyway
        (0, 17, 0, False, E),
    ],
)
def test_loss_severity(engines, before, static, reply, last_only, expected: Severity) -> None:
    found = loss_severity(E, before, static, engines["vllm"], reply_lost=reply, last_token_only=last_only)
    assert found == expected
    assert loss_severity(
        W, before, static, engines["vllm"], reply_lost=reply, last_token_only=last_only
    ) == min(expected, W)


def test_a_loss_under_a_block_holds_at_no_alignment_and_a_block_at_every_one(engines) -> None:
    vllm = engines["vllm"]
    assert loss_severity(E, 15, 1, vllm) == E and loss_severity(E, 15, 1, vllm, any_alignment=True) == INFO
    assert loss_severity(E, 15, 15, vllm, any_alignment=True) == INFO
    assert all(loss_severity(E, b, 16, vllm, any_alignment=True) == E for b in range(40))
    assert loss_severity(E, 15, 1, vllm, reply_lost=14, any_alignment=True) == INFO
    assert loss_severity(E, 15, 1, vllm, reply_lost=15, any_alignment=True) == W  # 16 in a row: a block


@pytest.mark.parametrize(
    ("text", "markup"),
    [
        ("Be brief.<|im_end|>\n<|im_start|>user\n", "<|im_end|>\n<|im_start|>user\n"),
        (
            "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n",
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n",
        ),
        ("Be brief.\n<|end|>\n<|user|>\n", "\n<|end|>\n<|user|>\n"),
        ("Be brief.[/INST]", "[/INST]"),
        ("Be brief.\n\nUser: ", ""),  # plain text: content, not markup
        ("Ask the superuser<|im_end|>", "<|im_end|>"),  # a role word is markup only beside a marker
    ],
)
def test_the_turn_markup_in_front_of_user_text(text: str, markup: str) -> None:
    assert markup_suffix(text) == len(markup)


def test_control_strings_are_single_tokens_once_isolated() -> None:
    tokenizer = load_tokenizer(None)
    text = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
    controls = control_strings(text)
    assert controls == ("<|im_start|>", "<|im_end|>")
    [isolated] = encode_isolating(tokenizer, [text], controls)
    pieces = [text[s:e] for s, e in isolated.offsets]
    assert pieces.count("<|im_start|>") == 2 and pieces.count("<|im_end|>") == 1
    assert (
        isolated.ids[0] == isolated.ids[pieces.index("<|im_start|>", 1)] < 0
    )  # one id each, not the vocabulary's
    assert len(isolated.ids) < len(tokenizer.encode(text).ids)
    assert "".join(pieces) == text


CLOCK = FIXTURES / "templates" / "clock_in_system.jinja"


def _clock_at_end_of_system(folder: Path) -> Path:
    """clock_in_system.jinja with the date moved by hand to the end of the system prompt."""
    source = CLOCK.read_text(encoding="utf-8")
    moved = source.replace("Today is {{ today }}.\n", "").replace(
        "<|end|>\n{%- for message in messages %}",
        "\nToday is {{ today }}.\n<|end|>\n{%- for message in messages %}",
        1,
    )
    assert moved.count("{{ today }}") == 1 and moved != source
    folder.mkdir()
    path = folder / "clock_in_system.jinja"
    path.write_text(moved, encoding="utf-8")
    return path


def _clock(path: Path, tokenizer: str | None = None):
    [diag] = [
        d
        for d in lint_paths([str(path)], Options(tokenizer=tokenizer)).diagnostics
        if d.code.startswith("PFX1")
    ]
    return diag


def test_the_clock_at_the_end_of_the_system_prompt_is_info(tmp_path: Path) -> None:
    """Only turn markers follow it before the user's text: nothing shareable. Info with a tokenizer
    that holds the template's markers as single tokens (the model's, built as Phi-3's is: its
    vocabulary plus added tokens) and with the embedded stand-in, which splits them."""
    from tokenizers import Tokenizer

    path = _clock_at_end_of_system(tmp_path / "template")
    own = Tokenizer.from_file(load_tokenizer(None).path)
    own.add_special_tokens(["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"])
    (tmp_path / "model").mkdir()
    own.save(str(tmp_path / "model" / "tokenizer.json"))

    model = _clock(path, str(tmp_path / "model" / "tokenizer.json"))
    stand_in = _clock(path)
    for diag in (model, stand_in):
        assert (diag.code, diag.span.line, diag.severity) == ("PFX101", 3, INFO)
        # " 2025." is all that follows; `\n<|end|>\n<|user|>\n` is turn markup and costs nothing.
        assert diag.evidence.static_tokens_lost == 3
        assert "and the turn markers in front of the user's text" in diag.message
    assert stand_in.evidence.token_index > model.evidence.token_index  # the stand-in splits `<|system|>`
    # At the head of the system prompt it costs a block or more: the rule's severity, a warning for
    # a date (the cache is split once a day, a kind lower than per request).
    assert _clock(CLOCK).severity == Severity.WARNING


def test_chatml_markers_after_the_clock_are_no_error_with_the_stand_in(tmp_path: Path) -> None:
    """The issue's case: with the embedded tokenizer `<|im_end|>\\n<|im_start|>user\\n` is 14
    tokens after the date; they were counted as 17 static tokens lost, an error."""
    path = tmp_path / "chat_template.jinja"
    path.write_text(
        "{%- set today = strftime_now('%d %B %Y') %}{{- '<|im_start|>system\\n' }}"
        "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n' }}{%- endif %}"
        "{{- 'Today is ' + today + '.<|im_end|>\\n' }}"
        "{%- for message in messages if message.role != 'system' %}"
        "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
        encoding="utf-8",
    )
    diag = _clock(path)
    assert (diag.code, diag.severity, diag.evidence.static_tokens_lost) == ("PFX101", INFO, 3)


def test_a_verdict_that_depends_on_the_stand_ins_block_boundaries_says_so() -> None:
    """The forced generation prompt costs 6 prompt and 7 generated tokens: with the stand-in's
    counts they complete a vLLM block (a warning), at other boundaries they need not."""
    [diag] = lint_paths(
        [str(FIXTURES / "multiturn" / "forced_generation_prompt.jinja")], Options()
    ).diagnostics
    assert (diag.code, diag.severity) == ("PFX403", INFO)
    assert diag.evidence.engines_lost["vllm"] == 16  # as measured, a block
    assert max(diag.evidence.static_tokens_lost, diag.evidence.reply_tokens_lost) < 16
    assert "embedded stand-in tokenizer this would be a finding at warning" in diag.message
    assert "pass `--tokenizer`" in diag.message
