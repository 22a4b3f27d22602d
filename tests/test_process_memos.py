"""What the Python frontend remembers within one process to spend less CPU (issue 28 point 6): each
memo answers what the work it saves would have answered, and a caller cannot spoil it for the next.
The expansions of a value (segments.expand), a prompt file's data (evaluate/prompt_files.py), the
tree of a fix candidate's text handed to its verifying analysis (scopes/parse.py), and the read-only
libcst passes that skip node checks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from prefixlint.api import analyse_source
from prefixlint.python import segments
from prefixlint.python.evaluate import prompt_files
from prefixlint.python.scopes import keep_candidate_tree, parse, parse_module, unchecked_nodes
from prefixlint.python.segments import Choice, Hole, Provenance, Text, expand
from prefixlint.run.sources import Source
from prefixlint.settings import Options


def _counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[object]:
    calls: list[object] = []
    real = getattr(owner, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_an_option_shared_by_several_choices_is_expanded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "_EXPANDED", {})
    clock = Hole(Provenance.CLOCK, 3, 8, "datetime.now()")
    shared = (Text("s "), Choice(((Text("a"),), (clock,))))  # one value object in two choices
    value = (Choice((shared, (Text("b"),))), Text(" | "), Choice((shared, (Text("c"),))))
    expanded = _counting(monkeypatch, segments, "_expand")
    forms = expand(value)
    assert forms[:3] == [
        (Text("s a | s a"),),
        (Text("s a | s "), clock),
        (Text("s a | c"),),
    ]
    assert len(forms) == 9
    assert sum(1 for v in expanded if v is shared) == 1  # asked twice, expanded once
    again = expand(value)
    assert again == forms and again is not forms
    again.append(())  # a caller's list is its own
    assert expand(value) == forms
    assert len(expanded) == 2  # `value` and `shared`: the second expansion of `value` was remembered


def test_a_value_without_choices_is_one_form_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "_EXPANDED", {})
    assert expand((Text("a"), Text("b"))) == [(Text("ab"),)]
    assert segments._EXPANDED == {}


def test_a_prompt_file_is_loaded_once_and_each_caller_gets_its_own_containers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import yaml

    monkeypatch.setattr(prompt_files, "_PARSED", {})
    loads = _counting(monkeypatch, yaml, "safe_load")
    content = "system: You are a careful assistant.\nexamples:\n  - one\n  - two\n"
    first = prompt_files._parse(content, "prompts/agent.yaml")
    assert first == {
        "system": (Text("You are a careful assistant."),),
        "examples": [(Text("one"),), (Text("two"),)],
    }
    first["examples"].append((Text("three"),))
    first["added"] = (Text("x"),)
    second = prompt_files._parse(content, "other/agent.yml")
    assert second == {
        "system": (Text("You are a careful assistant."),),
        "examples": [(Text("one"),), (Text("two"),)],
    }
    assert len(loads) == 1
    # the same text read as JSON is another load (and here no data at all)
    assert prompt_files._parse(content, "agent.json") is None


def test_a_kept_candidate_tree_is_taken_once_by_the_parse_of_that_text() -> None:
    text = "PROMPT = 'kept'\n"
    tree = cst.parse_module(text)
    keep_candidate_tree(text, tree)
    assert parse_module(text) is tree
    fresh = parse_module(text)
    assert fresh is not tree and fresh.code == text


def test_at_most_a_few_candidate_trees_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "_CANDIDATE_TREES", {})
    for n in range(parse.MAX_CANDIDATE_TREES + 3):
        keep_candidate_tree(f"X = {n}\n", cst.parse_module(f"X = {n}\n"))
    assert len(parse._CANDIDATE_TREES) == parse.MAX_CANDIDATE_TREES
    assert "X = 0\n" not in parse._CANDIDATE_TREES  # the oldest went first


SOURCE = textwrap.dedent(
    """\
    from datetime import datetime
    from openai import OpenAI

    client = OpenAI()
    RULES = "Answer in English. Cite the manual. Be brief and exact in every answer. " * 30

    def ask(question):
        system = f"Now: {datetime.now()}. " + RULES
        return client.chat.completions.create(
            model="m",
            messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
        )
    """
)


def test_a_verified_fix_is_analysed_on_the_tree_its_candidate_check_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.py"
    path.write_text(SOURCE)
    monkeypatch.setattr(parse, "_CANDIDATE_TREES", {})
    parsed = _counting(monkeypatch, cst, "parse_module")  # the fixers' check and the frontend's parse
    (result,) = analyse_source(Source(str(path), "python"), Options(cache_dir=None))
    (finding,) = [d for d in result.diagnostics if d.code == "PFX101"]
    assert finding.span.line == 8 and finding.fix is not None and finding.fix.verified
    fixed_texts = [t for t in parsed if t != SOURCE]
    assert fixed_texts  # the candidates' texts, checked with libcst's own parse
    assert len(parsed) == 1 + len(fixed_texts)  # and none of them parsed again for its analysis


def test_unchecked_nodes_skips_node_checks_only_inside() -> None:
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with unchecked_nodes():
        assert cst.Name("not a name").value == "not a name"
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
