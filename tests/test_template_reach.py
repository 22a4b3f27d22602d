"""App templates and the Python code that renders them: a template no code names is at most info
(prefixlint/jinja/reach.py), and one that Python renders is judged with the values the code passes
(prefixlint/python/evaluate/prompt_files.py)."""

from __future__ import annotations

import os
from pathlib import Path

from prefixlint.api import Options, lint_paths
from prefixlint.core.findings import Severity
from prefixlint.jinja.reach import NOT_RENDERED

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


NOW = "You are a helpful assistant.\nToday is {{ now }}.\n" + RULES + "\n"
DIRECT = (
    "from datetime import datetime\n"
    "from jinja2 import Environment, FileSystemLoader\n\n"
    "from app.chat import send\n\n"
    'env = Environment(loader=FileSystemLoader("templates"))\n\n\n'
    "def answer(question: str) -> str:\n"
    '    system = env.get_template("now.j2").render(now=datetime.now())\n'
    "    return send(system, question)\n"
)
# A class of the project that takes a template's path and renders it (griptape's `J2`), in a module
# of its own and re-exported by its package.
WRAPPER = """from attrs import define, field
from jinja2 import Environment, FileSystemLoader


@define(frozen=True)
class Prompt:
    template_name: str | None = field(default=None)
    templates_dir: str = field(default="templates", kw_only=True)

    def render(self, **kwargs) -> str:
        env = Environment(loader=FileSystemLoader(self.templates_dir))
        return env.get_template(self.template_name).render(kwargs).rstrip()
"""
USES_WRAPPER = (
    "from datetime import datetime\n\n"
    "from app.chat import send\n"
    "from app.util import Prompt\n\n\n"
    "def answer(question: str) -> str:\n"
    '    system = Prompt("now.j2").render(now=datetime.now())\n'
    "    return send(system, question)\n"
)


def _python_findings(root: Path, module: str) -> list[tuple[int, str, Severity]]:
    return [(line, code, sev) for name, line, code, sev, _ in _found(root) if name == module]


def test_a_clock_passed_to_a_rendered_template_is_reported_at_the_python_line(tmp_path: Path) -> None:
    root = _package(tmp_path, {"chat.py": CHAT, "agent.py": DIRECT}, {"now.j2": NOW})
    assert _python_findings(tmp_path, "agent.py") == [(10, "PFX101", Severity.ERROR)]
    # The same value passed as a constant: nothing from Python.
    (root / "agent.py").write_text(DIRECT.replace("datetime.now()", '"today"'), encoding="utf-8")
    assert _python_findings(tmp_path, "agent.py") == []


def test_a_wrapper_class_around_get_template_is_followed(tmp_path: Path) -> None:
    util = tmp_path / "app" / "util"
    _package(tmp_path, {"chat.py": CHAT, "agent.py": USES_WRAPPER}, {"now.j2": NOW})
    util.mkdir()
    (util / "__init__.py").write_text("from .prompt import Prompt\n", encoding="utf-8")
    (util / "prompt.py").write_text(WRAPPER, encoding="utf-8")
    assert _python_findings(tmp_path, "agent.py") == [(8, "PFX101", Severity.ERROR)]
    # A wrapper whose `__init__` stores the name works the same.
    init = WRAPPER.replace(
        "    template_name: str | None = field(default=None)\n",
        "    def __init__(self, name: str) -> None:\n        self.template_name = name\n\n",
    ).replace(
        '    templates_dir: str = field(default="templates", kw_only=True)\n',
        "    templates_dir = 'templates'\n",
    )
    (util / "prompt.py").write_text(init, encoding="utf-8")
    assert _python_findings(tmp_path, "agent.py") == [(8, "PFX101", Severity.ERROR)]


DISPATCHED = 'from datetime import datetime\n\nSYSTEM = f"Now: {datetime.now()}\\n" + """' + RULES + '"""\n'
DISPATCHER = (
    "import importlib\n\n\n"
    "def chat(kind: str, **kwargs):\n"
    '    module = importlib.import_module(f".{kind}", "app.request")\n'
    "    return module.chat(**kwargs)\n"
)


def test_a_project_that_picks_its_request_code_at_run_time_says_so(tmp_path: Path) -> None:
    plain, dispatching = tmp_path / "plain", tmp_path / "dispatching"
    # Importing any module by a variable (a plugin loader) does not pick the project's own code.
    loader = "from importlib import import_module\n\n\ndef load(name):\n    return import_module(name)\n"
    _package(plain, {"prompts.py": DISPATCHED, "plugins.py": loader}, {})
    (message,) = [m for name, _, _, _, m in _found(plain) if name == "prompts.py"]
    assert "no call that sends it to a model was found" in message
    _package(dispatching, {"prompts.py": DISPATCHED, "dispatch.py": DISPATCHER}, {})
    ((severity, message),) = [(s, m) for name, _, _, s, m in _found(dispatching) if name == "prompts.py"]
    assert "no call that sends it to a model was found" not in message
    assert "could not be resolved statically" in message and "app/dispatch.py:5" in message
    assert severity is Severity.INFO


CHAT_TEMPLATE = (
    "{{ bos_token }}<|im_start|>system\nToday is {{ strftime_now('%H:%M:%S') }}.\n" + RULES + "<|im_end|>\n"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_model_chat_template_is_never_judged_by_what_names_it(tmp_path: Path) -> None:
    root = _package(tmp_path, {"agent.py": USES_SYSTEM}, {"model.jinja": CHAT_TEMPLATE})
    found = [(f[2], f[3], f[4]) for f in _found(root) if f[0] == "model.jinja" and f[2] == "PFX101"]
    assert found and all(sev > Severity.INFO and NOT_RENDERED not in message for _, sev, message in found)


def test_jinja_code_without_prose_that_nothing_names_is_info(tmp_path: Path) -> None:
    # No words of its own, so it is rendered as a chat template for want of a sign; nothing in the
    # package renders it either. (With a word of its own and no `messages` read, it would be an
    # app prompt instead: tests/test_prompt_templates.py.)
    template = "{{ subtask.thought }}\n{{ subtask.actions_to_json() }}\n"
    root = _package(tmp_path, {"agent.py": USES_SYSTEM}, {"system.j2": SYSTEM, "subtask.j2": template})
    found = [(f[2], f[3], f[4]) for f in _found(root) if f[0] == "subtask.j2"]
    assert found and all(sev is Severity.INFO and message.endswith(NOT_RENDERED) for _, sev, message in found)


PER_TURN = """from datetime import datetime

from jinja2 import Environment, FileSystemLoader
from openai import OpenAI

client = OpenAI()
env = Environment(loader=FileSystemLoader("templates"))


class Chat:
    def __init__(self) -> None:
        self.history: list[dict] = []

    def turn(self, question: str) -> str:
        system = env.get_template("short.j2").render(now=datetime.now())
        reply = client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {"role": "system", "content": system},
                *self.history,
                {"role": "user", "content": question},
            ],
        )
        self.history.append({"role": "user", "content": question})
        return reply.choices[0].message.content
"""


def test_a_template_rendered_each_turn_ahead_of_the_history_costs_the_history(tmp_path: Path) -> None:
    # The template alone has a few words after the clock (info); rendered into the system message
    # that is rebuilt on every turn ahead of the conversation, it costs the whole history.
    short = "You are a helpful assistant.\nToday is {{ now }}.\nAnswer briefly.\n"
    _package(tmp_path, {"chat.py": PER_TURN}, {"short.j2": short})
    found = {(name, line, code): (sev, message) for name, line, code, sev, message in _found(tmp_path)}
    severity, message = found[("chat.py", 15, "PFX101")]
    assert severity is Severity.ERROR and "every turn recomputes the whole conversation" in message
    assert found[("short.j2", 2, "PFX101")][0] is Severity.INFO


def test_a_template_belongs_to_its_own_work_tree_when_the_run_spans_unrelated_ones(tmp_path: Path) -> None:
    """Paths in unrelated trees give the run their common folder (`/` for /tmp and a checkout): a
    template's project is its own work tree below it, so names written in another tree do not
    count, and the whole disk is never read for them."""
    from prefixlint.jinja.loader import project_root

    repo = tmp_path / "repo"
    package = _package(repo, {"agent.py": USES_SYSTEM}, {"unused.j2": SYSTEM})
    (repo / ".git").mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "tool.py").write_text(USES_SYSTEM.replace("system.j2", "unused.j2"), encoding="utf-8")
    template = package / "templates" / "unused.j2"
    assert project_root(str(template), os.path.abspath(os.sep)) == str(repo)
    assert project_root(str(template), str(repo)) == str(repo)
    report = lint_paths([str(repo), str(other)], OPTIONS)
    found = [(d.code, d.severity, d.message) for d in report.diagnostics if d.span.path == str(template)]
    assert found and all(severity is Severity.INFO for _, severity, _ in found)
    assert any(message.endswith(NOT_RENDERED) for code, _, message in found if code == "PFX102")
