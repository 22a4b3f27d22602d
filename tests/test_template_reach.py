"""App templates and the Python code that renders them: a template no code names is at most info
(prefixlint/jinja/reach.py), and one that Python renders is judged with the values the code passes
(prefixlint/python/prompt_files.py, evaluate.py)."""

from __future__ import annotations

from pathlib import Path

from prefixlint.api import Options, lint_paths
from prefixlint.jinja.reach import NOT_RENDERED
from prefixlint.model import Severity

OPTIONS = Options(multiturn=False)
RULES = "\n".join(
    f"Rule {i}: answer politely, cite your sources and keep the reply focused on the question."
    for i in range(60)
)
CHAT = """from openai import OpenAI

client = OpenAI()


def send(system: str, question: str) -> str:
    reply = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
    )
    return reply.choices[0].message.content
"""


def _package(tmp_path: Path, modules: dict[str, str], templates: dict[str, str]) -> Path:
    package = tmp_path / "app"
    (package / "templates").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    for name, source in modules.items():
        (package / name).write_text(source, encoding="utf-8")
    for name, source in templates.items():
        (package / "templates" / name).write_text(source, encoding="utf-8")
    return package


def _found(root: Path) -> list[tuple[str, int, str, Severity, str]]:
    report = lint_paths([str(root)], OPTIONS)
    return sorted(
        (Path(d.span.path).name, d.span.line, d.code, d.severity, d.message) for d in report.diagnostics
    )


USES_SYSTEM = 'from jinja2 import Environment\n\nPROMPT = Environment().get_template("system.j2")\n'
SYSTEM = "You are a helpful assistant for {{ user_id }}.\n" + RULES + "\n"


def test_a_template_no_code_names_is_info_and_says_so(tmp_path: Path) -> None:
    root = _package(tmp_path, {"agent.py": USES_SYSTEM}, {"system.j2": SYSTEM, "unused.j2": SYSTEM})
    found = {(name, code): (severity, message) for name, _, code, severity, message in _found(root)}
    assert found[("unused.j2", "PFX102")][0] is Severity.INFO
    assert found[("unused.j2", "PFX102")][1].endswith(NOT_RENDERED)
    # The one the code names keeps its severity and says nothing of the kind.
    assert found[("system.j2", "PFX102")][0] is Severity.ERROR
    assert NOT_RENDERED not in found[("system.j2", "PFX102")][1]


def test_a_template_included_by_a_used_one_is_used(tmp_path: Path) -> None:
    templates = {"outer.j2": 'You help with loans.\n{% include "inner.j2" %}\n', "inner.j2": SYSTEM}
    uses_outer = USES_SYSTEM.replace("system.j2", "outer.j2")
    root = _package(tmp_path, {"agent.py": uses_outer}, templates)
    inner = [f for f in _found(root) if f[0] == "inner.j2" and f[2] == "PFX102"]
    assert inner and inner[0][3] is Severity.ERROR and NOT_RENDERED not in inner[0][4]


def test_a_name_built_at_run_time_may_be_any_template(tmp_path: Path) -> None:
    dynamic = (
        "from jinja2 import Environment\n\n\n"
        'def load(kind):\n    return Environment().get_template(f"{kind}.j2")\n'
    )
    root = _package(tmp_path, {"agent.py": dynamic}, {"unused.j2": SYSTEM})
    assert [(f[0], f[2], f[3]) for f in _found(root)] == [("unused.j2", "PFX102", Severity.ERROR)]


def test_a_template_outside_any_python_package_is_not_judged(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "unused.j2").write_text(SYSTEM, encoding="utf-8")
    (tmp_path / "tool.py").write_text("print('hello')\n", encoding="utf-8")
    assert [(f[0], f[2], f[3]) for f in _found(tmp_path)] == [("unused.j2", "PFX102", Severity.ERROR)]
