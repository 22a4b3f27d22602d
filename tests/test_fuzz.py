"""Fuzzing: whatever the template or Python source, linting it never raises (no traceback, no
internal error); a broken input is a finding on that file.

Three hypothesis strategies: Jinja templates built from a small grammar, mutated real templates
(the fixtures, and the shared corpus when it is beside the checkout), and mutated Python sources.
The default test run tries a dozen of each; the long run (`-m fuzz_long`, 3 x 3,400 = 10,200 cases,
PREFIXLINT_FUZZ_EXAMPLES sets the number per strategy) is deselected by default:

    python -m pytest -m fuzz_long tests/test_fuzz.py -s
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FIXTURES, corpus_templates
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefixlint.api import Options, lint_paths
from prefixlint.jinja.environment import Limits

OPTIONS = Options(limits=Limits(seconds=0.5, template_seconds=1.0))
SHORT = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
LONG_EXAMPLES = int(os.environ.get("PREFIXLINT_FUZZ_EXAMPLES", "3400"))  # x3 strategies: > 10,000
LONG = settings(
    max_examples=LONG_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
CASES: dict[str, int] = {}

# --- Jinja: a small grammar ---------------------------------------------------------------------

NAMES = st.sampled_from(
    [
        "messages",
        "m",
        "message",
        "tools",
        "add_generation_prompt",
        "bos_token",
        "loop",
        "ns",
        "x",
        "current_date",
        "request_id",
        "user_name",
        "hostname",
        "strftime_now",
        "raise_exception",
        "namespace",
        "range",
        "dict",
        "cycler",
        "lipsum",
        "self",
        "__class__",
        "none",
        "true",
    ]
)
LITERALS = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.text(max_size=8).map(repr),
    st.sampled_from(["[]", "{}", "none", "[1, 2]", "{'a': 1}", "'%Y-%m-%d'", "10**9", "(1, 'b')"]),
)
FILTERS = st.sampled_from(
    [
        "trim",
        "length",
        "tojson",
        "string",
        "list",
        "first",
        "last",
        "join",
        "upper",
        "safe",
        "int",
        "default('x')",
        "replace('a', 'bb')",
        "center(10)",
        "indent(2)",
        "selectattr('role', 'equalto', 'user')",
        "map(attribute='role')",
        "items",
        "dictsort",
        "reverse",
        "sort",
        "unique",
        "batch(2)",
        "format(1)",
        "attr('role')",
        "wordcount",
    ]
)
OPS = st.sampled_from(
    ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", "and", "or", "in", "is", "not in"]
)


def _expr_level(sub: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Expressions one level deeper than `sub`: attribute, filter, operator, call, conditional."""
    leaf = st.one_of(NAMES, LITERALS)
    attrs = st.sampled_from([".content", ".role", "[0]", "[-1]", "['content']", ".items()", "[1:]"])
    return st.one_of(
        leaf,
        st.tuples(sub, attrs).map("".join),
        st.tuples(sub, FILTERS).map(lambda t: f"{t[0]}|{t[1]}"),
        st.tuples(sub, OPS, sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(NAMES, st.lists(sub, max_size=2)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(sub, sub, sub).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
    )


EXPR = _expr_level(_expr_level(st.one_of(NAMES, LITERALS)))
TEXT = st.one_of(st.text(max_size=12), st.sampled_from(["\n", "  ", "<|im_start|>", "system\n", "{#c#}"]))
OUTPUT = st.one_of(TEXT, EXPR.map(lambda e: "{{ " + e + " }}"), EXPR.map(lambda e: "{{- " + e + " -}}"))


def _block_level(sub: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Statements one level deeper than `sub`: if, for, set, macro, generation, stray tags."""
    body = st.lists(sub, max_size=4).map("".join)
    return st.one_of(
        OUTPUT,
        st.tuples(EXPR, body, body).map(lambda t: f"{{% if {t[0]} %}}{t[1]}{{% else %}}{t[2]}{{% endif %}}"),
        st.tuples(NAMES, EXPR, body).map(lambda t: f"{{% for {t[0]} in {t[1]} %}}{t[2]}{{% endfor %}}"),
        st.tuples(NAMES, EXPR).map(lambda t: f"{{% set {t[0]} = {t[1]} %}}"),
        body.map(lambda b: f"{{% macro mac(a, b=1) %}}{b}{{% endmacro %}}{{{{ mac(1) }}}}"),
        body.map(lambda b: f"{{% generation %}}{b}{{% endgeneration %}}"),
        st.sampled_from(
            ["{% break %}", "{% continue %}", "{% endif %}", "{% for %}", "{{", "}}", "{%", "%}"]
        ),
    )


GRAMMAR_TEMPLATES = st.lists(_block_level(_block_level(OUTPUT)), min_size=1, max_size=6).map("".join)

# --- mutations of real sources ------------------------------------------------------------------

JINJA_TOKENS = [
    "{%",
    "%}",
    "{{",
    "}}",
    "{#",
    "#}",
    "endif",
    "endfor",
    "(",
    ")",
    "|",
    "'",
    '"',
    "-",
    "\x00",
    "\r",
    "\ufeff",
    "é",
    "🙂",
    "\\",
    "messages",
    " %}",
    "{%- ",
    " -%}",
    "\n",
]
PY_TOKENS = [
    "(",
    ")",
    ":",
    "'",
    '"',
    'f"{',
    "}",
    "\t",
    "    ",
    "\n",
    "def ",
    "print ",
    "lambda",
    "datetime.now()",
    "uuid4()",
    "=",
    "\\",
    "\x00",
    "async ",
    "yield",
    "#",
    "é",
    '"""',
]


def _sources(paths: list[Path]) -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in paths if p.stat().st_size < 200_000]


JINJA_SEEDS = _sources(corpus_templates() + sorted((FIXTURES / "templates").rglob("*.jinja")))
PY_SEEDS = _sources(sorted((FIXTURES / "python").glob("*.py")))


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str], tokens: list[str]) -> str:
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            text = text[:i] + text[j:]  # delete
        elif kind == 1:
            text = text[:i] + draw(st.sampled_from(tokens)) + text[i:]  # insert a token
        elif kind == 2:
            text = text[:i] + text[i:j] * 2 + text[j:]  # duplicate
        else:
            text = text[:i] + draw(st.text(max_size=6)) + text[j:]  # replace with noise
    return text


# --- the property -------------------------------------------------------------------------------


def _check(tmp_dir: Path, name: str, source: str, kind: str) -> None:
    """Linting the source through the public API returns results and raises nothing."""
    CASES[kind] = CASES.get(kind, 0) + 1
    path = tmp_dir / name
    path.write_text(source, encoding="utf-8", errors="surrogatepass")
    report = lint_paths([str(path)], OPTIONS)
    assert report.sources, "no result for the source"
    for diag in report.diagnostics:
        diag.to_json()  # every finding serialises


def _fuzz(strategy: st.SearchStrategy[str], name: str, kind: str, conf: settings) -> Callable[[Path], None]:
    @conf
    @given(source=strategy)
    def run(tmp_path: Path, source: str) -> None:
        _check(tmp_path, name, source, kind)

    return run


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


STRATEGIES = {
    "grammar": (GRAMMAR_TEMPLATES, "t.jinja"),
    "mutated_jinja": (mutated(JINJA_SEEDS, JINJA_TOKENS), "t.jinja"),
    "mutated_python": (mutated(PY_SEEDS, PY_TOKENS), "prompts.py"),
}


@pytest.mark.parametrize("kind", sorted(STRATEGIES))
def test_fuzz_short(fuzz_dir: Path, kind: str) -> None:
    strategy, name = STRATEGIES[kind]
    _fuzz(strategy, name, kind, SHORT)(fuzz_dir)


@pytest.mark.fuzz_long
@pytest.mark.parametrize("kind", sorted(STRATEGIES))
def test_fuzz_long(fuzz_dir: Path, kind: str) -> None:
    strategy, name = STRATEGIES[kind]
    before = CASES.get(kind, 0)
    _fuzz(strategy, name, kind, LONG)(fuzz_dir)
    print(f"\nfuzz {kind}: {CASES[kind] - before} cases, 0 tracebacks")
