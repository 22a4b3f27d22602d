"""`prefixlint explain`: logs generated here from the fixture templates, simulated, and checked
against figures computed by hand from the engines' rules and the real tokenizer's token counts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefixlint.cli import cli
from prefixlint.engines import load_engines
from prefixlint.explain.log import explain_log
from prefixlint.explain.requests import Renderer, parse_request
from prefixlint.explain.whatif import move_span
from prefixlint.jinja.environment import RenderLimitError
from prefixlint.jinja.template import ChatTemplate
from prefixlint.models.tokens import load_tokenizer

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "explain"
HEAD = FIX / "timestamp_head.jinja"
TAIL = FIX / "timestamp_tail.jinja"
WORDS = [
    "Hello",
    "Please",
    "Tomorrow",
    "Could",
    "Why",
    "Which",
    "Yesterday",
    "Maybe",
    "Honestly",
    "Quick",
    "Sorry",
    "Thanks",
]
# A static system message long enough for OpenAI's 1,024-token minimum.
CATALOGUE = "\n".join(
    f"- The {a} {b} comes in {c} and ships from our {d} warehouse within two working days."
    for a in ("light", "sturdy", "compact", "waterproof", "insulated", "foldable")
    for b in ("tent", "stove", "backpack", "sleeping bag", "headlamp", "jacket")
    for c in ("green", "grey")
    for d in ("northern", "southern")
)
ENGINES = [load_engines()[n] for n in ("vllm", "sglang", "openai")]


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(None)


def n_tokens(tok, text: str) -> int:
    return len(tok.encode(text).ids)


def bodies(n: int, *, system=lambda i: CATALOGUE, user=lambda i: f"{WORDS[i]} can I return boots I wore?"):
    return [
        {
            "timestamp": f"2025-03-31T23:59:{10 + i:02d}Z",
            "body": {
                "messages": [{"role": "system", "content": system(i)}, {"role": "user", "content": user(i)}]
            },
        }
        for i in range(n)
    ]


def write_log(path: Path, lines: list) -> str:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


def template(path: Path) -> ChatTemplate:
    return ChatTemplate(path.read_text(encoding="utf-8"), str(path))


def rendered_texts(tpl: ChatTemplate, lines: list) -> list[str]:
    renderer = Renderer(tpl)
    return [renderer.render(parse_request(x, i)).text for i, x in enumerate(lines)]


def prefix_tokens(tok, text: str, marker: str) -> int:
    """Tokens of `text` up to and including `marker`, checked to be a token prefix of the whole."""
    head = text[: text.index(marker) + len(marker)]
    ids = tok.encode(head).ids
    assert tok.encode(text).ids[: len(ids)] == ids
    return len(ids)


def openai(shared: int) -> int:
    return 0 if shared < 1024 else 1024 + (shared - 1024) // 128 * 128


def test_timestamp_at_the_head_busts_the_cache_and_names_the_line(tmp_path, tok):
    n = 12
    lines = bodies(n)
    texts = rendered_texts(template(HEAD), lines)
    total = sum(n_tokens(tok, t) for t in texts)
    # Every request shares "<|system|>\nCurrent time: 2025-03-31 23:59:" and then differs (the seconds).
    head = prefix_tokens(tok, texts[0], "23:59:")
    assert head == 20
    report = explain_log(write_log(tmp_path / "log.jsonl", lines), Renderer(template(HEAD)), tok, ENGINES)
    assert (report.requests, report.tokens) == (n, total)
    assert report.engines["vllm"]["hit_tokens"] == (n - 1) * 16  # one whole block, then the seconds
    assert report.engines["sglang"]["hit_tokens"] == (n - 1) * head
    assert report.engines["openai"]["hit_tokens"] == 0
    assert report.engines["vllm"]["hit_rate"] == round((n - 1) * 16 / total, 6) < 0.01

    top = report.causes[0]
    assert (top.template_line, top.section, top.kind, top.count) == (3, "system", "timestamp", n - 1)
    assert top.token_index == head and top.anchor == "Current time"
    # Lost: everything after the one seconds token that the requests share again (policy, catalogue,
    # up to the user's first word).
    through_user = prefix_tokens(tok, texts[0], "<|user|>\n")
    assert top.tokens_lost == (n - 1) * (through_user - head - 1)

    # The span is the whole timestamp, not the rest of its line.
    assert (top.span.text, top.span.start) == ("2025-03-31 23:59:11", len("<|system|>\nCurrent time: "))
    # What-if: the timestamp moved to the end of the system message; every request then shares the
    # policy and the catalogue, and the timestamp up to its seconds.
    renderer = Renderer(template(HEAD))
    moved = [move_span(renderer.render(parse_request(x, i)), top.span.pattern()) for i, x in enumerate(lines)]
    assert moved[0] == texts[0].replace("2025-03-31 23:59:10", "").replace(
        "two working days.<|end|>", "two working days.\n2025-03-31 23:59:10<|end|>"
    )
    shared = prefix_tokens(tok, moved[0], "days.\n2025-03-31 23:59:")
    moved_total = sum(n_tokens(tok, t) for t in moved)
    assert top.what_if["vllm"] == round((n - 1) * (shared // 16 * 16) / moved_total, 6) > 0.8
    assert top.what_if["openai"] == round((n - 1) * openai(shared) / moved_total, 6)


def test_fixed_template_reaches_the_theoretical_hit_rate(tmp_path, tok):
    n = 12
    lines = bodies(n)
    texts = rendered_texts(template(TAIL), lines)
    total = sum(n_tokens(tok, t) for t in texts)
    shared = prefix_tokens(tok, texts[0], "<|user|>\n")  # users' first words all differ
    assert shared > 1024
    report = explain_log(write_log(tmp_path / "log.jsonl", lines), Renderer(template(TAIL)), tok, ENGINES)
    assert report.engines["vllm"]["hit_tokens"] == (n - 1) * (shared // 16 * 16)
    assert report.engines["sglang"]["hit_tokens"] == (n - 1) * shared
    assert report.engines["openai"]["hit_tokens"] == (n - 1) * openai(shared)
    assert report.engines["vllm"]["hit_rate"] == round((n - 1) * (shared // 16 * 16) / total, 6) > 0.85
    assert all(c.tokens_lost == 0 for c in report.causes)  # only the users' own text differs


def test_identical_requests_hit_all_but_the_last_block(tmp_path, tok):
    n = 10
    lines = [bodies(1)[0]] * n
    text = rendered_texts(template(HEAD), lines[:1])[0]
    length = n_tokens(tok, text)
    report = explain_log(write_log(tmp_path / "log.jsonl", lines), Renderer(template(HEAD)), tok, ENGINES)
    assert report.tokens == n * length
    assert report.engines["vllm"]["hit_tokens"] == (n - 1) * ((length - 1) // 16 * 16)
    assert report.engines["sglang"]["hit_tokens"] == (n - 1) * (length - 1)
    assert report.engines["openai"]["hit_tokens"] == (n - 1) * openai(length)
    assert report.causes == []


ALPHA = "Alpha desk: you answer questions about orders that have not shipped yet, in English."
BRAVO = "Bravo team handles warranty claims; ask for photographs first and reply in German."


def test_two_system_prompts_mixed_and_an_lru_that_holds_one(tmp_path, tok):
    n = 12
    lines = bodies(n, system=lambda i: ALPHA if i % 2 == 0 else BRAVO)
    texts = rendered_texts(template(TAIL), lines)
    lengths = [n_tokens(tok, t) for t in texts]
    header = prefix_tokens(tok, texts[0], "colleague.\n")  # the template's policy, before the system text
    assert header == prefix_tokens(tok, texts[1], "colleague.\n")
    alpha = prefix_tokens(tok, texts[0], "<|user|>\n")
    bravo = prefix_tokens(tok, texts[1], "<|user|>\n")
    # Room for one prompt: each request evicts the other system prompt (vLLM's pool also needs its
    # null block and the prompt's last, partial block: a pool of one prompt's tokens refuses it).
    capacity = max(lengths) + 32
    log = write_log(tmp_path / "log.jsonl", lines)
    report = explain_log(log, Renderer(template(TAIL)), tok, ENGINES, capacity=capacity)
    half = (n - 2) // 2
    assert report.engines["sglang"]["hit_tokens"] == header + half * alpha + half * bravo
    assert report.engines["vllm"]["hit_tokens"] == (
        header // 16 * 16 + half * (alpha // 16 * 16) + half * (bravo // 16 * 16)
    )
    assert report.engines["sglang"]["lru"]["hit_tokens"] == (n - 1) * header
    assert report.engines["vllm"]["lru"]["hit_tokens"] == (n - 1) * (header // 16 * 16)
    # The system prompts differ throughout: nothing static follows, so no tokens are blamed on it.
    first = next(c for c in report.causes if c.section == "system")
    assert (first.token_index, first.count, first.tokens_lost) == (header, 1, 0)


def test_gzip_log_of_plain_prompts_with_a_request_id(tmp_path, tok):
    ids = ["9f2c41d07ab34e55", "03be77a1c9d24f60", "7d1e0c55f2a94b13", "c4a8e2f1907b4d3e"]
    prompts = [f"Request id: {x}\n{CATALOGUE}\nQuestion {i}: where is my parcel?" for i, x in enumerate(ids)]
    path = tmp_path / "log.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
        fh.write("not json\n")
    report = explain_log(str(path), Renderer(None), tok, ENGINES)
    assert (report.requests, report.skipped) == (4, 1)
    top = report.causes[0]
    assert (top.section, top.template_line, top.kind, top.anchor, top.count) == (
        "prompt",
        None,
        "identifier",
        "Request id",
        3,
    )
    assert top.what_if["sglang"] > 0.7


def test_cli_pair_of_openai_and_anthropic_bodies(tok):
    result = CliRunner().invoke(
        cli,
        [
            "explain",
            str(FIX / "request_a.json"),
            str(FIX / "request_b.json"),
            "--template",
            str(HEAD),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    texts = rendered_texts(
        template(HEAD), [json.loads((FIX / f).read_text()) for f in ("request_a.json", "request_b.json")]
    )
    head = prefix_tokens(tok, texts[0], "23:59:")
    length = n_tokens(tok, texts[1])
    assert data["token_index"] == head
    assert (data["section"], data["template_line"]) == ("system", 3)
    assert data["a"]["tokens"][0] == "10" and data["b"]["tokens"][0] == "11"
    assert data["engines"]["vllm"]["cacheable_tokens"] == 16
    assert data["engines"]["sglang"]["cacheable_tokens"] == head
    assert data["tokens_lost"] == length - head - 1  # the rest is the same: the same question


def test_cli_log_json_schema_and_no_progress_off_a_terminal(tmp_path):
    log = write_log(tmp_path / "log.jsonl", bodies(6))
    result = CliRunner().invoke(
        cli, ["explain", "--log", log, "--template", str(HEAD), "--format", "json", "--cache-tokens", "4000"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert result.stderr == ""
    assert set(data) >= {"requests", "tokens", "engines", "causes"}
    assert set(data["engines"]["vllm"]) >= {"hit_rate", "hit_tokens", "lru"}
    cause = data["causes"][0]
    assert set(cause) >= {
        "section",
        "token_index",
        "char_offset",
        "share",
        "tokens_lost",
        "example",
        "template_line",
        "what_if_hit_rate",
    }
    assert (cause["section"], cause["template_line"], cause["share"]) == ("system", 3, round(5 / 6, 6))
    assert set(cause["example"]) >= {"a", "b"}
    text = CliRunner().invoke(cli, ["explain", "--log", log, "--template", str(HEAD)]).output
    assert "template line 3" in text
    assert "what if '2025-03-31 23:59:11' (after `Current time`) moved to the end of its message" in text
    assert f"log format: openai; template: {HEAD}; tokenizer: " in text


def test_cli_explain_template_narrates_the_findings():
    path = Path(__file__).resolve().parent.parent / "fixtures" / "templates" / "clock_in_system.jinja"
    result = CliRunner().invoke(cli, ["explain", str(path)])
    assert result.exit_code == 0, result.output
    assert "Line 3:" in result.output and "PFX101" in result.output
    data = json.loads(CliRunner().invoke(cli, ["explain", str(path), "--format", "json"]).output)
    assert "PFX101" in [d["code"] for d in data["sources"][0]["diagnostics"]]


def test_usage_errors_exit_2(tmp_path):
    result = CliRunner().invoke(cli, ["explain", str(FIX / "request_a.json")])
    assert result.exit_code == 2
    result = CliRunner().invoke(cli, ["explain", "--log", str(FIX / "request_a.json"), "--engine", "nope"])
    assert result.exit_code == 2 and "unknown engine" in result.output


def test_a_long_stream_of_requests_is_neither_cut_off_by_the_template_budget_nor_memoized() -> None:
    """`check`'s per-template budget (all renders together) must not apply to a request log:
    each logged request is its own render, and none is kept in memory."""
    template = ChatTemplate("{{ messages[0].content }}", "t.jinja")
    renderer = Renderer(template)
    for i in range(50):
        template.budget.spent = template.limits.template_seconds  # as if the log had used it all
        assert renderer.template.render([{"role": "user", "content": f"q{i}"}]).text == f"q{i}"
    assert template._renders == {}
    # The same exhausted budget stops an analysis (`check`), where all renders share it.
    analysed = ChatTemplate("{{ messages[0].content }}", "t.jinja")
    analysed.budget.spent = analysed.limits.template_seconds
    with pytest.raises(RenderLimitError):
        analysed.render([{"role": "user", "content": "q"}])


def test_var_is_passed_to_every_render_as_chat_template_kwargs(tmp_path, tok):
    # The clock is rendered only when the app passes show_time=true (as vLLM's chat_template_kwargs):
    # without --var the two requests share everything up to their questions.
    head = HEAD.read_text(encoding="utf-8").replace(
        'Current time: {{ strftime_now("%Y-%m-%d %H:%M:%S") }}',
        '{%- if show_time %}Current time: {{ strftime_now("%Y-%m-%d %H:%M:%S") }}{% endif %}',
    )
    (tmp_path / "maybe_clock.jinja").write_text(head, encoding="utf-8")
    args = ["explain", str(FIX / "request_a.json"), str(FIX / "request_b.json")]
    args += ["--template", str(tmp_path / "maybe_clock.jinja"), "--format", "json"]
    without = json.loads(CliRunner().invoke(cli, args).output)
    with_clock = json.loads(CliRunner().invoke(cli, [*args, "--var", "show_time=true"]).output)
    assert without["template_variables"] == {} and with_clock["template_variables"] == {"show_time": True}
    assert without["identical"] and without["tokens_lost"] == 0  # the same question twice
    assert (with_clock["section"], with_clock["template_line"]) == ("system", 3)
    assert with_clock["token_index"] < without["token_index"] and with_clock["tokens_lost"] > 100
