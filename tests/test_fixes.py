"""Fixes (issue 23): edits, the verifier, each kind of template relocation with its exact edit, the
words of a finding without one, and the done-when loop: on every template of fixtures/ and
../shared/corpus/templates with a fix, `check --fix --unsafe-fixes` on a copy leaves it clean,
rendering as before apart from the moved text, which still renders."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
from conftest import CORPUS, FIXTURES, needs_corpus

from prefixlint import api
from prefixlint.api import lint_paths, lint_source
from prefixlint.core.edits import EditError, apply_edits
from prefixlint.core.findings import Diagnostic, Edit, Fix
from prefixlint.fixes import verify as fixes_module
from prefixlint.fixes.autofix import fix_paths
from prefixlint.fixes.kinds import fixes_for
from prefixlint.fixes.verify import Verifier, verify
from prefixlint.jinja.inputs import USER_TURNS, conversation
from prefixlint.jinja.template import ChatTemplate
from prefixlint.plan import fix_part
from prefixlint.run.sources import Source, source_kind, templates_in_tokenizer_config
from prefixlint.settings import Options

TEMPLATES = FIXTURES / "templates"


def copy(tmp_path: Path, source: Path) -> Path:
    target = tmp_path / source.name
    shutil.copy(source, target)
    return target


def findings(path: Path) -> list[Diagnostic]:
    return lint_paths([str(path)], Options()).diagnostics


def the_fix(path: Path, code: str) -> Fix:
    (d,) = [d for d in findings(path) if d.code == code]
    assert d.fix is not None, d.hint
    return d.fix


def first_candidate(path: Path, code: str) -> Fix:
    """The first move tried for a finding, verified or not (a chat template's own value has no
    place that holds: the edit's shape is what is tested)."""
    (d,) = [d for d in findings(path) if d.code == code]
    kind = fixes_for(source_kind(path))
    assert kind is not None
    return next(iter(kind.candidates(str(path), path.read_text(encoding="utf-8"), d)))


# -- edits -----------------------------------------------------------------------------------------


def test_apply_edits_sorts_keeps_insertion_order_and_refuses_overlaps() -> None:
    text = "ab\ncd\n"
    edits = [Edit("p", 2, 1, 2, 2, "X"), Edit("p", 1, 1, 1, 1, "1"), Edit("p", 1, 1, 1, 1, "2")]
    assert apply_edits(text, edits) == "12ab\nXd\n"
    assert apply_edits(text, [Edit("p", 1, 3, 2, 1, "")]) == "abcd\n"  # a line's newline
    assert apply_edits(text, [Edit("p", 3, 1, 3, 1, "end")]) == "ab\ncd\nend"
    with pytest.raises(EditError, match="overlap"):
        apply_edits(text, [Edit("p", 1, 1, 2, 1, ""), Edit("p", 1, 2, 1, 2, "x")])
    with pytest.raises(EditError, match="overlap"):
        apply_edits(text, [Edit("p", 1, 1, 1, 3, ""), Edit("p", 1, 1, 1, 2, "")])
    with pytest.raises(EditError, match="column 9"):
        apply_edits(text, [Edit("p", 1, 9, 1, 9, "x")])
    with pytest.raises(EditError, match="line 7"):
        apply_edits(text, [Edit("p", 7, 1, 7, 1, "x")])


# -- each kind of relocation, with its exact edit --------------------------------------------------


def test_a_line_moves_into_the_generation_prompt(tmp_path: Path) -> None:
    """The first move tried: `Today is {{ today }}.` (line 6) to the end of the generation prompt,
    where nothing static follows it (it does not hold: there it costs the previous reply)."""
    path = copy(tmp_path, TEMPLATES / "clock_in_system.jinja")
    fix = first_candidate(path, "PFX101")
    assert fix.applicability == "unsafe"
    assert fix.message == (
        "Move `Today is {{ today }}.` (line 6) to the end of the generation prompt (before line 26)"
    )
    assert fix.edits == (
        Edit(str(path), 6, 1, 7, 1, ""),
        Edit(str(path), 26, 1, 26, 1, "Today is {{ today }}.\n"),
    )


def test_a_line_moves_with_the_if_that_guards_it(tmp_path: Path) -> None:
    path = copy(tmp_path, TEMPLATES / "user_name_optional.jinja")
    fix = the_fix(path, "PFX105")
    moved = (
        "{%- if user_name is defined %}\n{{- 'You are talking to ' + user_name + '.\\n' }}\n{%- endif %}\n"
    )
    assert fix.edits == (Edit(str(path), 1, 1, 4, 1, ""), Edit(str(path), 10, 1, 10, 1, moved))


def test_a_concatenation_is_split_so_the_turn_marker_stays(tmp_path: Path) -> None:
    """`'<|im_start|>system\\nToday Date: ' + date_string + '\\n'`: the header stays, the dated
    sentence moves."""
    path = copy(tmp_path, FIXTURES / "trust" / "date_read_twice.jinja")
    fix = first_candidate(path, "PFX101")
    assert fix.edits == (
        Edit(str(path), 5, 1, 5, 63, "{{- '<|im_start|>system\\n' }}"),
        Edit(str(path), 12, 1, 12, 1, "{{- 'Today Date: ' + date_string + '\\n' }}\n"),
    )


def test_a_tag_moves_alone_when_its_line_holds_more(tmp_path: Path) -> None:
    path = tmp_path / "session.jinja"
    path.write_text(
        "<|system|>\nSession {{ session_id }}{% if tools %} (tools on){% endif %}\n"
        "You are the support assistant of an online bookshop. Answer questions about orders,\n"
        "deliveries and returns, and never reveal another customer's data.\n<|end|>\n"
        "{%- for message in messages %}\n<|{{ message.role }}|>\n{{ message.content }}<|end|>\n"
        "{%- endfor %}\n{%- if add_generation_prompt %}\n<|assistant|>\n{% endif %}\n",
        encoding="utf-8",
    )
    fix = the_fix(path, "PFX102")
    assert fix.edits == (Edit(str(path), 2, 9, 2, 25, ""), Edit(str(path), 12, 1, 12, 1, "{{ session_id }}"))


def test_a_template_in_a_tokenizer_config_is_edited_in_its_json_string(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(TEMPLATES / "tokenizer_config_list", folder)
    path = folder / "tokenizer_config.json"
    fix = first_candidate(path, "PFX101")
    assert fix.message.startswith(
        "Move `Today is {{ today }}.` (template line 6) to the end of the generation"
    )
    assert fix.edits == (
        Edit(str(path), 14, 150, 14, 173, ""),
        Edit(str(path), 14, 890, 14, 890, "Today is {{ today }}.\\n"),  # escaped as JSON
    )
    before = {t.name: t.source for t in templates_in_tokenizer_config(path.read_text(encoding="utf-8"))}
    after = {
        t.name: t.source for t in templates_in_tokenizer_config(apply_edits(path.read_text(), fix.edits))
    }
    assert after["default"] == before["default"]
    assert after["dated"] == before["dated"].replace("Today is {{ today }}.\n", "", 1).replace(
        "<|assistant|>\n{% endif %}", "<|assistant|>\nToday is {{ today }}.\n{% endif %}"
    )


def test_an_app_prompt_template_moves_the_value_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "system.j2"
    path.write_text(
        "Today: {{ current_date }}\nYou are a helpful assistant for the Northwind shop. Answer politely and\n"
        "briefly, and quote prices in euros.\nFollow the return policy: 60 days, unused, with the receipt.\n",
        encoding="utf-8",
    )
    fix = the_fix(path, "PFX101")
    assert (
        fix.message == "Move `Today: {{ current_date }}` (line 1) to the end of the template (before line 5)"
    )
    assert fix.edits == (
        Edit(str(path), 1, 1, 2, 1, ""),
        Edit(str(path), 5, 1, 5, 1, "Today: {{ current_date }}\n"),
    )


def test_the_generation_prompt_string_loses_the_newline_history_lacks(tmp_path: Path) -> None:
    """PFX403: `'<|im_start|>assistant\\n\\n'` opens the reply with a blank line no history has."""
    path = copy(tmp_path, FIXTURES / "multiturn" / "generation_prompt_mismatch.jinja")
    fix = the_fix(path, "PFX403")
    assert (
        fix.message
        == "Drop the last `\\n` of the generation prompt's string (line 6), which history never has"
    )
    assert fix.edits == (Edit(str(path), 6, 29, 6, 31, ""),)


def test_the_generation_prompt_loses_the_newline_after_its_tag(tmp_path: Path) -> None:
    path = tmp_path / "chatml.jinja"
    path.write_text(
        "{% for message in messages %}\n{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
        " + '<|im_end|>\\n' }}\n{% endfor %}\n{% if add_generation_prompt %}\n"
        "{{ '<|im_start|>assistant\\n' }}\n{% endif %}\n",
        encoding="utf-8",
    )
    fix = the_fix(path, "PFX403")
    assert fix.message == "Strip the whitespace after the generation prompt (line 6), which history never has"
    assert fix.edits == (Edit(str(path), 6, 3, 6, 3, "-"),)  # `{%- endif %}`


# -- the verifier ----------------------------------------------------------------------------------


def _verify(path: Path, edits: tuple[Edit, ...]) -> str | None:
    source = Source(str(path), source_kind(path) or "jinja")
    options = Options()
    before = lint_source(source, options)
    (finding,) = [d for r in before for d in r.diagnostics if d.code == "PFX101"]
    kinds = fixes_for(source.kind)
    assert kinds is not None
    text = path.read_text(encoding="utf-8")
    candidate = next(iter(kinds.candidates(str(path), text, finding)))  # the kind's own type
    from dataclasses import replace

    candidate = replace(candidate, edits=edits)
    analysed = Verifier(source, lambda fixed: lint_source(source, options, fixed)).analysed
    return verify(kinds, candidate, source, text, before, finding, fix_part(options), analysed)


def test_the_verifier_names_what_each_rejected_move_leaves(tmp_path: Path) -> None:
    path = copy(tmp_path, TEMPLATES / "clock_in_system.jinja")
    p, line = str(path), "Today is {{ today }}.\n"
    cut = Edit(p, 6, 1, 7, 1, "")
    # The start of the generation prompt: turn N's prompt is no prefix of turn N+1's.
    assert _verify(path, (cut, Edit(p, 25, 1, 25, 1, line))) == "it adds PFX403 (warning) at line 24"
    # The end of the system prompt: still ahead of the user's turn markers.
    assert _verify(path, (cut, Edit(p, 17, 1, 17, 1, line))) == "PFX101 (info) at line 3 is still there"
    # Edits that change what else renders are no move.
    text = _verify(path, (cut, Edit(p, 26, 1, 26, 1, "Today is {{ today }}!\n")))
    assert text == "the rest of the base request renders differently"
    assert _verify(path, (Edit(p, 6, 1, 6, 1, ""),)) == "it changes nothing"


def test_the_verifier_refuses_to_move_a_turn_marker(tmp_path: Path) -> None:
    path = copy(tmp_path, FIXTURES / "trust" / "date_read_twice.jinja")
    p = str(path)
    whole = "{{- '<|im_start|>system\\nToday Date: ' + date_string + '\\n' }}\n"
    assert _verify(path, (Edit(p, 5, 1, 6, 1, ""), Edit(p, 12, 1, 12, 1, whole))) in (
        "it would move a turn marker",
        "it adds PFX403 (warning) at line 11",
    )


# -- no fix: the words, and that none was found ----------------------------------------------------


def test_a_finding_without_a_verified_fix_says_so_and_why() -> None:
    (d,) = [d for d in findings(TEMPLATES / "whitespace.jinja") if d.code == "PFX301"]
    assert d.fix is None
    assert d.hint.startswith(
        "make this whitespace the same for every request; no automatic fix was found (move "
    )
    assert d.hint.endswith(" did not hold: the rest of the base request renders differently)")
    (d,) = findings(FIXTURES / "explain" / "timestamp_head.jinja")
    assert d.fix is None and "; no automatic fix was found (move `Current time:" in d.hint
    assert d.hint.endswith("(before line 28) did not hold: it adds PFX403 (warning) at line 27)")


def test_a_multiturn_finding_keeps_its_hint_and_says_no_fix() -> None:
    (d,) = findings(FIXTURES / "multiturn" / "system_in_last_user.jinja")
    assert d.code == "PFX402" and d.fix is None
    assert d.hint.endswith("never next to the last message; no automatic fix was found")


def test_fixes_off_attaches_nothing() -> None:
    options = Options(fixes=False)
    (d,) = lint_paths([str(TEMPLATES / "clock_in_system.jinja")], options).diagnostics
    assert d.fix is None and d.hint == ""


# -- what verifying costs: a count of analyses, never a clock -------------------------------------

WRAPPERS = FIXTURES / "python" / "agent_wrappers.py"


def _analysed_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts `lint_source` analyses from now on (the source's own first, then fixed ones)."""
    texts: list[str] = []

    def counting(source: Source, options: Options, text: str | None = None) -> list:
        texts.append(text or "")
        return lint_source(source, options, text)

    monkeypatch.setattr(api, "lint_source", counting)
    return texts


def test_each_fixed_text_is_analysed_once_and_no_more_than_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = _analysed_texts(monkeypatch)
    fixed = [d for d in findings(WRAPPERS) if d.fix is not None]
    tried = texts[1:]
    assert len(fixed) >= 5 and len(tried) >= len(fixed)
    assert len(tried) == len(set(tried)) <= fixes_module.MAX_REANALYSES


def test_past_the_budget_a_candidate_is_not_tried_and_the_hint_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fixes_module, "MAX_REANALYSES", 1)
    texts = _analysed_texts(monkeypatch)
    found = [d for d in findings(WRAPPERS) if d.code[3] in "12345"]
    assert len(texts) == 2  # the check, then one fixed text
    # rounds: the first finding's first candidate is the one analysis; it holds
    assert found[0].fix is not None and all(d.fix is None for d in found[1:])
    assert all(d.hint.endswith("were spent)") and "was not tried" in d.hint for d in found[1:])


# -- the done-when loop ----------------------------------------------------------------------------


def _base_renders(
    source: str, special: dict[str, str], variables: dict[str, str], generation: bool = True
) -> list[str | None]:
    out = []
    for system in (True, False):
        template = ChatTemplate(source, "t.jinja", special_tokens=special, extra_kwargs=dict(variables))
        messages = conversation(USER_TURNS[0], system=system)
        template.supply_required_variables(messages, None)
        try:
            out.append(template.render(messages, add_generation_prompt=generation).text)
        except Exception:  # noqa: BLE001 - a scenario the template raises for is compared as such
            out.append(None)
    return out


def _templates_of(path: Path, text: str) -> dict[str, str]:
    if path.name == "tokenizer_config.json":
        return {t.name: t.source for t in templates_in_tokenizer_config(text)}
    return {"": text}


def _moved(longer: str, shorter: str) -> set[str]:
    """Brute force, independent of prefixlint's own check: every M with longer = shorter[:i] M shorter[i:]."""
    m = len(longer) - len(shorter)
    return {
        longer[i : i + m]
        for i in range(len(shorter) + 1)
        if longer == shorter[:i] + longer[i : i + m] + shorter[i:]
    }


def check_fix_loop(tmp_path: Path, original: Path) -> list[str]:
    """`check --fix --unsafe-fixes` on a copy of `original`; asserts what issue 23 asks of every
    fix written, and returns the codes fixed."""
    path = copy(tmp_path, original)
    options = Options()
    before = lint_paths([str(path)], options).diagnostics
    text = path.read_text(encoding="utf-8")
    after, applied = fix_paths([str(path)], options, unsafe=True)
    fixed_text = path.read_text(encoding="utf-8")
    fixes = {(d.code, d.span.line, d.span.column): d.fix for d in before if d.fix is not None}
    assert len(applied) == len(fixes), (applied, fixes)
    if not applied:
        assert fixed_text == text
        return []
    # Checks clean: nothing at warning or above that was not there, and no fixed finding left.
    warned = lambda ds: sorted(d.code for d in ds if d.severity.label != "info")  # noqa: E731
    left = warned(after.diagnostics)
    assert all(c in warned(before) for c in left), left
    assert not {a.code for a in applied} & set(left), left
    if source_kind(path) == "python":  # still Python, and the volatile value is still in the code
        ast.parse(fixed_text)
        for d in before:
            if d.fix is not None:
                name = re.match(r"[A-Za-z_][\w.]*", text.split("\n")[d.span.line - 1][d.span.column - 1 :])
                assert name is None or fixed_text.count(name.group()) >= text.count(name.group())
        return [a.code for a in applied]
    ((finding, fix),) = [(d, d.fix) for d in before if d.fix is not None]  # one fix a file, here
    # A variable the finding varied is passed (an optional one renders only then).
    varied = re.search(
        r"varied: template variable `(\w+)`", finding.evidence.inputs if finding.evidence else ""
    )
    variables = {varied.group(1): "Ada Lovelace"} if varied else {}
    special = {"bos_token": "<s>", "eos_token": "</s>"}
    originals, fixeds = _templates_of(path, text), _templates_of(path, fixed_text)
    changed = [name for name in originals if originals[name] != fixeds[name]]
    assert len(changed) == 1, changed
    name = changed[0]
    if len(fix.edits) == 1:  # whitespace the generation prompt ends with, dropped
        for generation in (True, False):
            o, f = (_base_renders(t[name], special, variables, generation) for t in (originals, fixeds))
            for was, now in zip(o, f, strict=True):
                if was is not None:
                    assert now is not None and was.startswith(now), (was, now)
                    assert (not was[len(now) :].strip()) and (was != now) == generation, (was, now)
        return [a.code for a in applied]
    # A move: byte-identical apart from the moved text, which still renders; the original less the
    # cut (the fix's first edit) is what both render around it.
    removeds = _templates_of(path, apply_edits(text, fix.edits[:1]))
    shown = False
    renders = (_base_renders(t[name], special, variables) for t in (originals, removeds, fixeds))
    for o, d, f in zip(*renders, strict=True):
        if o is None:
            continue
        assert d is not None and f is not None
        was = {(len(m), m.strip()) for m in _moved(o, d)}
        now = {(len(m), m.strip()) for m in _moved(f, d)}
        assert was & now, (o, f)
        shown = shown or any(m for _, m in was & now)
    assert shown, "the moved value no longer renders"
    return [a.code for a in applied]


FIXTURE_TEMPLATES = sorted(
    p
    for p in [*FIXTURES.rglob("*.jinja"), *FIXTURES.rglob("*.j2"), *FIXTURES.rglob("tokenizer_config.json")]
    if "hostile" not in p.parts
)
FIXTURE_SOURCES = sorted([*FIXTURE_TEMPLATES, *(FIXTURES / "python").glob("*.py")])
# Per source kind, the files of the done-when loop; the Python side adds "python" once its fixes land.
LOOP_KINDS = ("jinja", "tokenizer_config", "python")


@pytest.mark.parametrize("path", FIXTURE_SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fix_loop_on_every_fixture_source(tmp_path: Path, path: Path) -> None:
    if source_kind(path) not in LOOP_KINDS:
        pytest.skip(f"the loop does not cover {source_kind(path)} sources yet (their fixes are not in)")
    check_fix_loop(tmp_path, path)


@needs_corpus
def test_fix_loop_on_every_corpus_template(tmp_path: Path) -> None:
    fixed = {}
    for i, path in enumerate(sorted((CORPUS / "templates").rglob("*.jinja"))):
        folder = tmp_path / str(i)
        folder.mkdir()
        codes = check_fix_loop(folder, path)
        if codes:
            fixed[path.name] = codes
    # A value a chat template prints itself has no place that holds (at the end of the generation
    # prompt it costs the previous reply, PFX403); what is fixed is the generation prompt's
    # trailing newline, which no assistant turn of the history has.
    assert fixed == {
        "chatml.jinja": ["PFX403"],
        "falcon-instruct.jinja": ["PFX403"],
        "llama-3-instruct.jinja": ["PFX403"],
        "openchat-3.5.jinja": ["PFX403"],
        "phi-3-small.jinja": ["PFX403"],
        "phi-3.jinja": ["PFX403"],
        "solar-instruct.jinja": ["PFX403"],
        "zephyr.jinja": ["PFX403"],
    }


def test_the_known_fixture_fixes(tmp_path: Path) -> None:
    """The fixtures whose findings have a verified fix (the others: see test_a_finding_without_…)."""
    fixed = {}
    for i, path in enumerate(FIXTURE_TEMPLATES):
        folder = tmp_path / str(i)
        folder.mkdir()
        codes = check_fix_loop(folder, path)
        if codes:
            fixed[str(path.relative_to(FIXTURES))] = codes
    assert fixed == {
        "fixes/dated_system.j2": ["PFX101"],
        "multiturn/generation_prompt_mismatch.jinja": ["PFX403"],
        "templates/user_name_optional.jinja": ["PFX105"],
    }
