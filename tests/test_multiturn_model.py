"""The multi-turn scenario model (issue 23, point 6): each cause of a wrong verdict on held-out
templates, reproduced on a template of the project's own (fixtures/multiturn/), the truth checked
with transformers' own rendering, the verdict with the real embedded tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from prefixlint.core.findings import Severity
from prefixlint.engines import load_engines
from prefixlint.jinja.inputs import SYSTEM_PROMPT, TOOLS
from prefixlint.jinja.multiturn import MultiTurnResult, analyze_multiturn, render_multiturn
from prefixlint.jinja.multiturn.scenarios import REASONING, REPLIES, USERS, tool_call_message
from prefixlint.jinja.reasoning import tag_pair
from prefixlint.jinja.switches import caller_switches, own_variables, spelled, switch_values
from prefixlint.jinja.template import ChatTemplate
from prefixlint.models.tokens import LoadedTokenizer, common_prefix_len, load_tokenizer, load_tokenizer_file

ctu = pytest.importorskip("transformers.utils.chat_template_utils")
MULTITURN = FIXTURES / "multiturn"


@pytest.fixture(scope="module")
def tokenizer() -> LoadedTokenizer:
    return load_tokenizer(None)


def _template(name: str, tokenizer: LoadedTokenizer) -> ChatTemplate:
    path = MULTITURN / name
    return ChatTemplate(
        path.read_text(encoding="utf-8"), str(path), special_tokens=dict(tokenizer.special_tokens)
    )


def _analyze(template: ChatTemplate, tokenizer: LoadedTokenizer) -> MultiTurnResult:
    return analyze_multiturn(template, tokenizer, engine=load_engines()["vllm"])


def _hf(name: str, messages: list[dict], gen: bool = True, **kwargs) -> str:
    """transformers' own rendering of a fixture."""
    source = (MULTITURN / name).read_text(encoding="utf-8")
    rendered, _ = ctu.render_jinja_template(
        conversations=[messages], chat_template=source, add_generation_prompt=gen, **kwargs
    )
    return rendered[0]


def _user(i: int) -> dict:
    return {"role": "user", "content": USERS[i]}


def test_reasoning_goes_back_in_the_field_the_template_reads(tokenizer: LoadedTokenizer) -> None:
    """The template reads `reasoning` and strips a <think> block from the content: a server with a
    reasoning parser returns the reasoning in the field, and fed back there the prefix holds. Fed
    back inline in the content (what the old model replayed) it would be dropped."""
    name = "reasoning_field_read.jinja"
    written = f"<think>\n{REASONING[0]}\n</think>\n\n{REPLIES[0]}<|im_end|>\n"
    turn1 = _hf(name, [_user(0)])
    in_field = {"role": "assistant", "content": REPLIES[0], "reasoning": REASONING[0]}
    inline = {"role": "assistant", "content": written.removesuffix("<|im_end|>\n")}
    assert _hf(name, [_user(0), in_field, _user(1)]).startswith(turn1 + written)
    assert not _hf(name, [_user(0), inline, _user(1)]).startswith(turn1 + written)

    template = _template(name, tokenizer)
    rendered = render_multiturn(template)
    names = [s.name for s in rendered.scenarios]
    assert "reasoning-field+sys" in names and "reasoning-inline+sys" not in names
    assert rendered.reasoning is not None and rendered.reasoning.field == "reasoning"
    assert _analyze(template, tokenizer).diagnostics == []


def test_a_reasoning_reply_is_written_as_the_template_writes_it(tokenizer: LoadedTokenizer) -> None:
    """`<think>…</think>` with no newlines, not Qwen's: the template's own rendering of a reply with
    reasoning is how its model writes one."""
    name = "reasoning_without_newlines.jinja"
    turn1 = _hf(name, [_user(0)])
    reply = {"role": "assistant", "content": REPLIES[0], "reasoning_content": REASONING[0]}
    assert _hf(name, [_user(0), reply, _user(1)]).startswith(
        f"{turn1}<think>{REASONING[0]}</think>{REPLIES[0]}"
    )

    template = _template(name, tokenizer)
    fmt = render_multiturn(template).reasoning
    assert fmt is not None
    assert (fmt.opening, fmt.closing, fmt.field) == ("<|assistant|><think>", "</think>", "reasoning_content")
    assert _analyze(template, tokenizer).diagnostics == []


def test_a_token_boundary_of_the_stand_in_alone_is_no_break(
    tokenizer: LoadedTokenizer, tmp_path: Path
) -> None:
    """The stand-in joins the generation prompt's `>` with the reply's first letters (`>The`); a
    tokenizer holding the template's tags as single tokens, as the model's does, never does."""
    name = "angle_tag_turns.jinja"
    turn1 = _hf(name, [_user(0)])
    turn2 = _hf(name, [_user(0), {"role": "assistant", "content": REPLIES[0]}, _user(1)])
    assert turn2.startswith(turn1 + REPLIES[0] + "</assistant>")  # the text holds
    stand_in = [tokenizer.encode(t).ids for t in (turn1, turn2)]
    assert common_prefix_len(*stand_in) == len(stand_in[0]) - 1  # its last token merges: `>The`
    assert _analyze(_template(name, tokenizer), tokenizer).diagnostics == []

    from tokenizers import Tokenizer

    own = Tokenizer.from_file(tokenizer.path)
    own.add_special_tokens(["<user>", "</user>", "<assistant>", "</assistant>", "<system>", "</system>"])
    own.save(str(tmp_path / "tokenizer.json"))
    model = load_tokenizer_file(str(tmp_path / "tokenizer.json"))
    ids = [model.encode(t).ids for t in (turn1, turn2)]
    assert common_prefix_len(*ids) == len(ids[0])  # with the tags as single tokens the prefix holds
    assert _analyze(_template(name, model), model).diagnostics == []


def test_a_generation_prompt_printed_without_being_asked_is_a_generation_prompt_mismatch(
    tokenizer: LoadedTokenizer,
) -> None:
    """The reasoning header the template forces after the last user message reappears at the end
    of every request: not a block that moves (PFX402), the generation prompt history drops."""
    name = "forced_generation_prompt.jinja"
    header = "<|begin_assistant|>\nHere are my reasoning steps:\n"
    system = {"role": "system", "content": SYSTEM_PROMPT}  # the first scenario's
    assert _hf(name, [system, _user(0)], gen=False).endswith(header)  # printed with or without asking
    turn1 = _hf(name, [system, _user(0)])
    turn2 = _hf(name, [system, _user(0), {"role": "assistant", "content": REPLIES[0]}, _user(1)])
    at = common_prefix_len(turn1, turn2)
    assert turn1[:at].endswith("<|begin_assistant|>\n") and turn2[at:].startswith(REPLIES[0])

    [diag] = _analyze(_template(name, tokenizer), tokenizer).diagnostics
    assert (diag.code, diag.span.line) == ("PFX403", 10)
    assert diag.evidence.char_offset == at
    assert "its generation prompt" in diag.message


def test_own_reasoning_tags_and_the_mode_that_opens_them(tokenizer: LoadedTokenizer) -> None:
    """`<think:opensource>` tags and a string-valued effort switch: `no_think` (the default)
    closes the block, `low` and `high` open it; reasoning replies run with `low` and are kept."""
    name = "own_think_tags.jinja"
    assert _hf(name, [_user(0)]).endswith("<think:opensource></think:opensource>")
    opened = _hf(name, [_user(0)], reasoning_effort="high")
    assert opened.endswith("<think:opensource>")
    reply = {"role": "assistant", "content": REPLIES[0], "reasoning_content": REASONING[0]}
    turn2 = _hf(name, [_user(0), reply, _user(1)], reasoning_effort="high")
    assert turn2.startswith(f"{opened}{REASONING[0]}</think:opensource>{REPLIES[0]}")

    template = _template(name, tokenizer)
    assert tag_pair(template.traced.source) == ("<think:opensource>", "</think:opensource>")
    assert switch_values(template, "reasoning_effort") == ["no_think", "low", "high", True, False]
    rendered = render_multiturn(template)
    [reasoning] = [s for s in rendered.scenarios if s.name == "reasoning-field+sys"]
    assert dict(reasoning.kwargs) == {"reasoning_effort": "low"}
    assert "reasoning_effort=low" in reasoning.label
    assert _analyze(template, tokenizer).diagnostics == []


def test_a_thought_channel_is_thinking_too(tokenizer: LoadedTokenizer) -> None:
    """Gemma 4's shape: `<|channel>thought`…`<channel|>`, closed in the generation prompt unless
    `enable_thinking`. The reasoning runs with thinking on and is dropped from history (PFX401);
    with thinking off the empty channel the prompt opens is dropped too (PFX403)."""
    name = "channel_thought.jinja"
    assert _hf(name, [_user(0)]).endswith("<|channel>thought\n<channel|>")
    assert _hf(name, [_user(0)], enable_thinking=True).endswith("<|turn>model\n")

    by_code = {d.code: d for d in _analyze(_template(name, tokenizer), tokenizer).diagnostics}
    assert set(by_code) == {"PFX401", "PFX403"}
    reasoning = by_code["PFX401"]
    assert "dropped from turn 2's prompt (replies with <|channel>thought reasoning" in reasoning.message
    assert "enable_thinking=true)" in reasoning.message
    assert "`--var enable_thinking=false` keeps the prefix stable" in reasoning.message
    assert by_code["PFX403"].span.line == 13


def test_a_switch_the_template_defaults_itself_is_the_callers(tokenizer: LoadedTokenizer) -> None:
    """`set keep_thinking = keep_thinking | default(false)` and `if show_reasoning is not defined`
    give the caller's variables defaults: both are tried, and both hints are offered."""
    template = _template("defaulted_switch.jinja", tokenizer)
    assert caller_switches(template) == ["keep_thinking", "show_reasoning"]
    [diag] = _analyze(template, tokenizer).diagnostics
    assert diag.code == "PFX401"
    assert "`--var keep_thinking=true` or `--var show_reasoning=true` keeps the prefix stable" in diag.message


@pytest.mark.parametrize(
    ("source", "own"),
    [
        ("{% set keep = flag %}{{ keep }}{{ flag }}", {"keep"}),  # set before any read: the template's
        ("{% set x = x | default(true) %}{{ x }}", set()),  # defaulted from itself: the caller's
        ("{% if x is not defined %}{% set x = true %}{% endif %}{{ x }}", set()),  # read first
        ("{# keep is set below #}{% if a %}{% set keep = a %}{% endif %}{{ keep }}", {"keep"}),
        ("{% set a, b = b, 1 %}{{ a }}{{ b }}", {"a"}),  # `b` reads itself
    ],
)
def test_own_variables(source: str, own: set[str]) -> None:
    assert own_variables(ChatTemplate(source, "t.jinja")) == own


@pytest.mark.parametrize(
    ("value", "text"), [(True, "true"), (False, "false"), ("high", "high"), ("true", '"true"')]
)
def test_values_are_spelled_as_var_reads_them(value, text: str) -> None:
    """`--var NAME=VALUE` reads VALUE as JSON, else as a string (prefixlint/cli/options.py)."""
    from prefixlint.cli.options import parse_var

    assert spelled(value) == text
    assert parse_var(f"x={text}") == ("x", value)


def test_one_finding_per_code_is_as_costly_as_its_costliest_break(tokenizer: LoadedTokenizer) -> None:
    """Dropped reasoning loses generated tokens (a warning); the tool list left out after a tool
    result recomputes the agent loop from its system prompt (an error). The one PFX401 shows the
    error, not the first scenario's warning."""
    name = "costliest_break.jinja"
    system = {"role": "system", "content": SYSTEM_PROMPT}
    turn1 = _hf(name, [system, _user(0)], tools=TOOLS)
    call = tool_call_message("dict", "", "")
    result = {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": "18 degrees"}
    turn2 = _hf(name, [system, _user(0), call, result], tools=TOOLS)
    assert turn1.startswith("<|im_start|>system\nYou can call these tools")
    assert not turn2.startswith("<|im_start|>system\nYou can call these tools")

    [diag] = _analyze(_template(name, tokenizer), tokenizer).diagnostics
    assert (diag.code, diag.span.line, diag.severity) == ("PFX401", 5, Severity.ERROR)
    assert "(agent loop with tool calls)" in diag.message
    assert diag.evidence.token_index == 9
    assert "more steps break the same way" in diag.message  # the reasoning steps, counted
