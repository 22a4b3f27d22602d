"""Bombs stop within the limits (Options.limits), become an error finding on their own file, and the
run goes on with the templates beside them.

The limits here are small (1 s a render, 3 s a template) so the suite stays fast; each bomb must be
stopped within its template budget plus a margin for the rest of the analysis.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from prefixlint.api import Options, lint_paths
from prefixlint.jinja.environment import Limits, RenderLimitError, time_limit
from prefixlint.jinja.template import ChatTemplate
from prefixlint.models.tokens import load_tokenizer

LIMITS = Limits(seconds=1.0, template_seconds=3.0)
OPTIONS = Options(limits=LIMITS, multiturn=False)
MARGIN = 3.0  # seconds beyond the template budget: compile, tokenize, report
CLEAN = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"

BOMBS = {
    "nested_loops": "{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}",
    "huge_range": "{% for i in range(10**9) %}{{ i }}{% endfor %}",
    "recursive_macro": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "mutual_recursion": "{% macro a(n) %}{{ b(n) }}{% endmacro %}"
    "{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(1) }}",
    "doubling_concat": "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s }}",
    "doubling_plus": "{% set ns = namespace(s=['x']) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
    "{% endfor %}{{ ns.s|length }}",
    "doubling_macro": "{% macro f(n) %}{% if n %}{% set s = f(n - 1) %}{{ s }}{{ s }}{% else %}x{% endif %}"
    "{% endmacro %}{{ f(60) }}",
    "doubling_set_block": "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
    "{% set t %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = t %}{% endfor %}{{ ns.s }}",
    "string_times": "{{ 'a' * 10**12 }}",
    "list_times": "{{ ([1] * 10**10)|length }}",
    "int_tower": "{{ ((2 ** 4096) ** 4096) ** 4096 }}",
    "int_squaring": "{% set ns = namespace(n=3) %}{% for i in range(64) %}"
    "{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n > 0 }}",
    "center_filter": "{{ 'a'|center(10**10) }}",
    "center_method": "{{ 'a'.center(10**10) }}",
    "replace_empty": "{% set s = 'a' * 100000 %}{{ s.replace('', s) }}",
    "replace_filter": "{% set s = 'a' * 100000 %}{{ s|replace('a', s) }}",
    "join_method": "{% set s = 'a' * 100000 %}{{ s.join(range(20000)|map('string')|list) }}",
    "percent_width": "{{ '%0999999999d' % 1 }}",
    "format_width": "{{ '{:>999999999}'.format('a') }}",
    "format_filter": "{{ '%-999999999s'|format('a') }}",
    "indent_filter": "{{ ('a\n' * 100)|indent(10**8) }}",
    "tojson_indent": "{{ {'a': [1, [2, [3]]]}|tojson(indent=10**8) }}",
    "expandtabs": "{{ ('\t' * 1000).expandtabs(10**8) }}",
    "output_flood": "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}",
    "deep_parens": "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}",
    "deep_lists": "{{ " + "[" * 3000 + "1" + "]" * 3000 + " }}",
    "deep_ifs": "{% if true %}" * 1500 + "x" + "{% endif %}" * 1500,
    "deep_filters": "{{ 1" + "|string" * 5000 + " }}",
    "flat_outputs": "{{ m }}x" * 40000,  # 320 KB: slow to compile, not deep
}


# What stops each bomb. Another layer (the time limit) would stop most of them too, later and less
# precisely: naming the one expected makes each case fail if its own protection is removed.
STOPPED_BY = {
    "nested_loops": "output longer than",
    "huge_range": "Range too big",
    "recursive_macro": "RecursionError",
    "mutual_recursion": "RecursionError",
    "doubling_concat": "a value longer than",
    "doubling_plus": "a value longer than",
    "doubling_macro": "a value longer than",
    "doubling_set_block": "a value longer than",
    "string_times": "a value longer than",
    "list_times": "a value longer than",
    "int_tower": "an exponent beyond",
    "int_squaring": "an integer larger than",
    "center_filter": "a value longer than",
    "center_method": "a value longer than",
    "replace_empty": "a value longer than",
    "replace_filter": "a value longer than",
    "join_method": "a value longer than",
    "percent_width": "a format width",
    "format_width": "a format width",
    "format_filter": "a format width",
    "indent_filter": "a value longer than",
    "tojson_indent": "a value longer than",
    "expandtabs": "a value longer than",
    "output_flood": "output longer than",
    "deep_parens": "RecursionError",
    "deep_lists": "RecursionError",
    "deep_ifs": "RecursionError",
    "deep_filters": "RecursionError",
    "flat_outputs": "compiling took longer than",
}


def _lint_timed(path: Path, options: Options = OPTIONS) -> tuple[float, list]:
    start = time.monotonic()
    report = lint_paths([str(path)], options)
    return time.monotonic() - start, report.sources


@pytest.fixture(scope="module")
def bomb_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[float, list]]:
    root = tmp_path_factory.mktemp("bombs")
    load_tokenizer(None)  # once per process; not part of any bomb's time
    out = {}
    for name, source in BOMBS.items():
        path = root / f"{name}.jinja"
        path.write_text(source, encoding="utf-8")
        out[name] = _lint_timed(path)
    return out


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bomb_is_stopped_and_reported(bomb_results: dict, name: str) -> None:
    elapsed, sources = bomb_results[name]
    [result] = sources
    errors = [d for d in result.diagnostics if d.code in ("PFX001", "PFX002") and d.severity.label == "error"]
    assert errors, f"{name}: not reported as an error: {result.diagnostics}"
    assert STOPPED_BY[name] in errors[0].message, errors[0].message
    assert elapsed < LIMITS.template_seconds + MARGIN, f"{name} took {elapsed:.1f} s"


def test_every_bomb_names_its_stop() -> None:
    assert set(STOPPED_BY) == set(BOMBS)


def test_slowest_bomb(bomb_results: dict) -> None:
    slowest = max(bomb_results, key=lambda n: bomb_results[n][0])
    print(f"\n{len(bomb_results)} bombs stopped; slowest: {slowest} in {bomb_results[slowest][0]:.2f} s")
    assert bomb_results[slowest][0] < LIMITS.template_seconds + MARGIN


def test_run_goes_on_after_bombs(tmp_path: Path) -> None:
    for name in ("nested_loops", "doubling_concat", "deep_parens"):
        (tmp_path / f"{name}.jinja").write_text(BOMBS[name], encoding="utf-8")
    (tmp_path / "zz_clean.jinja").write_text(CLEAN, encoding="utf-8")
    report = lint_paths([str(tmp_path)], OPTIONS)
    by_name = {Path(s.path).name: s for s in report.sources}
    assert len(by_name) == 4
    assert by_name["zz_clean.jinja"].total_tokens and not by_name["zz_clean.jinja"].diagnostics


def test_a_bomb_costs_one_time_limit_not_one_per_render(tmp_path: Path) -> None:
    # Each render takes ~0.5 s, under the 1 s render limit; the 3 s template budget stops the
    # dozens of renders the analysis would make (without it: 20 s and more).
    slow = "{% for i in range(100000) %}{% for j in range(range(3)|length) %}{% endfor %}{% endfor %}"
    slow += "{{ messages[0].content }}"  # read: so renders of different requests are not reused
    start = time.monotonic()
    template = ChatTemplate(slow, "slow.jinja", limits=LIMITS)
    with pytest.raises(RenderLimitError):
        for i in range(40):
            template.render([{"role": "user", "content": f"hi {i}"}])
    assert time.monotonic() - start < LIMITS.template_seconds + 1.5
    with pytest.raises(RenderLimitError):  # tripped: fails at once from now on
        template.render([{"role": "user", "content": "hi"}])


def test_after_one_render_over_a_limit_the_next_fail_at_once() -> None:
    template = ChatTemplate(BOMBS["nested_loops"].replace("{{ i }}", ""), "loops.jinja", limits=LIMITS)
    with pytest.raises(RenderLimitError, match="longer than 1 s"):
        template.render([])
    start = time.monotonic()
    with pytest.raises(RenderLimitError, match="longer than 1 s"):
        template.render([])
    assert time.monotonic() - start < 0.2


def test_a_swallowed_alarm_fires_again() -> None:
    # Python swallows an exception raised in a gc callback or a `__del__`; the limit must hold.
    swallowed = 0
    deadline = time.monotonic() + 3
    with pytest.raises(RenderLimitError), time_limit(0.2):
        while time.monotonic() < deadline:
            try:
                while time.monotonic() < deadline:
                    pass
            except RenderLimitError:
                if swallowed:
                    raise
                swallowed += 1
    assert swallowed == 1


def test_no_alarm_after_the_block() -> None:
    with time_limit(0.05):
        pass
    time.sleep(0.2)  # an armed timer would raise here
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.default_int_handler, None)


def test_huge_template_file_is_a_finding_without_loading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.jinja"
    with big.open("wb") as fh:  # 50 MB of real content, generated here (never committed)
        fh.write(b"{{ messages[0].content }} static text\n" * (50 * 2**20 // 38))
    start = time.monotonic()
    [result] = lint_paths([str(big)], OPTIONS).sources
    assert time.monotonic() - start < 2
    [diag] = result.diagnostics
    assert diag.code == "PFX001" and "too large: 50.0 MB" in diag.message


def test_tokenizer_config_of_1gb_declared_size(tmp_path: Path) -> None:
    (tmp_path / "chat.jinja").write_text(CLEAN, encoding="utf-8")
    config = tmp_path / "tokenizer_config.json"
    config.write_bytes(b'{"chat_template": "')
    os.truncate(config, 1 << 30)  # sparse: 1 GB declared, nothing on disk
    start = time.monotonic()
    report = lint_paths([str(tmp_path)], OPTIONS)
    assert time.monotonic() - start < 10
    by_name = {Path(s.path).name: s for s in report.sources}
    [diag] = by_name["tokenizer_config.json"].diagnostics
    assert diag.code == "PFX001" and "too large: 1,024.0 MB" in diag.message
    assert by_name["chat.jinja"].total_tokens  # its special tokens were not read from the 1 GB file


def test_limits_are_configurable(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text("{{ 'x' * 500 }}" + CLEAN, encoding="utf-8")
    [ok] = lint_paths([str(path)], OPTIONS).sources
    assert ok.total_tokens
    small = Options(limits=replace(LIMITS, output_chars=300), multiturn=False)
    [stopped] = lint_paths([str(path)], small).sources
    assert any(d.code == "PFX002" and "300" in d.message for d in stopped.diagnostics)
    tiny_file = Options(limits=replace(LIMITS, file_bytes=10), multiturn=False)
    [refused] = lint_paths([str(path)], tiny_file).sources
    assert "too large" in refused.diagnostics[0].message


def test_memory_limit_stops_a_single_huge_allocation() -> None:
    # With the value cap off, only the memory limit stands between `center(3e9)` and 3 GB.
    limits = replace(LIMITS, output_chars=0, memory_bytes=256 << 20)
    template = ChatTemplate("{{ ('a'|center(3 * 10**9))|length }}", "t.jinja", limits=limits)
    with pytest.raises(RenderLimitError, match="memory"):
        template.render([])


def test_recursion_is_stopped_even_under_a_raised_interpreter_limit() -> None:
    # Some libraries raise sys.setrecursionlimit; a recursive macro must still stop with
    # RecursionError, well before the C stack overflows (a crash, not a finding). In a subprocess,
    # so that a crash fails this test instead of the whole run.
    code = (
        "import sys; sys.setrecursionlimit(10**6)\n"
        "from prefixlint.jinja.template import ChatTemplate\n"
        "t = ChatTemplate('{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}', 't.jinja')\n"
        "try:\n    t.render([])\nexcept RecursionError:\n    print('stopped')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout.strip()) == (0, "stopped"), proc.stderr[-500:]


def test_recursion_limit_is_relative_to_the_caller() -> None:
    # 100 nested macro calls fit in 600 frames; 10,000 do not, and stop without a crash.
    nest = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}.{% endmacro %}{{ f(N) }}"
    assert len(ChatTemplate(nest.replace("N", "40"), "t.jinja").render([]).text) == 41
    with pytest.raises(RecursionError):
        ChatTemplate(nest.replace("N", "10000"), "t.jinja").render([])
