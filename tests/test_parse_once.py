"""One libcst parse per module per run: the parse cache (prefixlint/python/project.py), the worker
split and the parse ahead of the pool's fork (prefixlint/run/schedule.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from prefixlint import api
from prefixlint.plan import resolve, source_tokenizer_file
from prefixlint.python import project
from prefixlint.python.scopes import ModuleIndex, index_module, parse_module
from prefixlint.report import render_report
from prefixlint.run import schedule
from prefixlint.run.sources import Source
from prefixlint.settings import Options

WRAPPER = textwrap.dedent(
    """\
    import datetime
    from openai import OpenAI

    client = OpenAI()

    def ask(question):
        system = f"Today is {datetime.datetime.now()}. " + "You answer questions about the shop. " * 40
        return client.chat.completions.create(
            model="m", messages=[{"role": "system", "content": system}, {"role": "user", "content": question}]
        )
    """
)
CALLER = "from pkg.helpers import ask\n\n\ndef run_{n}(q):\n    return ask(q)\n"
PLAIN = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(project, "_PARSED", type(project._PARSED)())
    monkeypatch.setattr(project, "_PARSED_BYTES", 0)


def _tree(root: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return [str(root / name) for name in files]


def test_the_parse_cache_holds_more_than_200_small_modules(fresh_cache: None) -> None:
    index = index_module(parse_module(PLAIN))
    for n in range(300):
        project.remember(f"/m/mod{n}.py", PLAIN, index)
    assert all(project.parsed_module(f"/m/mod{n}.py", PLAIN) is index for n in range(300))


def test_the_parse_cache_drops_the_least_recently_used_by_source_size(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project, "MAX_PARSED_BYTES", 100)
    index = index_module(parse_module(PLAIN))
    old, new = "x = 1\n" * 10, "y = 2\n" * 10  # 60 characters each: both do not fit
    project.remember("/m/old.py", old, index)
    project.remember("/m/new.py", new, index)
    assert project.parsed_module("/m/old.py", old) is None
    assert project.parsed_module("/m/new.py", new) is index
    project.remember("/m/new.py", new, index)  # parsed again: counted once
    assert len(new) == project._PARSED_BYTES


def test_a_module_imported_by_many_checked_files_is_parsed_once(
    tmp_path: Path, fresh_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": WRAPPER}
    files |= {f"app/run_{n}.py": CALLER.format(n=n) for n in range(4)}
    _tree(tmp_path, files)
    parsed: list[tuple[str, str]] = []

    def counting(module: cst.Module, path: str = "") -> ModuleIndex:
        parsed.append((path, module.code))  # a verified fix's candidate is another text
        return index_module(module, path)

    monkeypatch.setattr(project, "index_module", counting)
    monkeypatch.setattr("prefixlint.python.analyze.index_module", counting)
    api.lint_paths([str(tmp_path)], Options(project_root=str(tmp_path)), workers=1)
    assert parsed.count((str(tmp_path / "pkg" / "helpers.py"), WRAPPER)) == 1


def test_each_worker_gets_one_contiguous_run_of_the_tree(tmp_path: Path) -> None:
    names = [f"{pkg}/m{n}.py" for n in range(3) for pkg in ("a", "b")]  # interleaved
    paths = _tree(tmp_path, {name: PLAIN for name in names})
    sources = [Source(p, "python") for p in paths]
    files = [source_tokenizer_file(s.path, s.kind, None) for s in sources]
    batches = schedule._batches(sources, files, workers=2)
    runs = sorted(sorted(Path(sources[i].path).relative_to(tmp_path).as_posix() for i in b) for b in batches)
    assert runs == [["a/m0.py", "a/m1.py", "a/m2.py"], ["b/m0.py", "b/m1.py", "b/m2.py"]]


def test_the_modules_with_prompt_text_are_parsed_before_the_fork(tmp_path: Path, fresh_cache: None) -> None:
    wrapper, plain = _tree(tmp_path, {"helpers.py": WRAPPER, "plain.py": PLAIN})
    contents = [Path(wrapper).read_bytes(), Path(plain).read_bytes()]
    schedule._parse_ahead([Source(wrapper, "python"), Source(plain, "python")], contents, resolve(Options()))
    assert project.parsed_module(wrapper, WRAPPER) is not None
    assert project.parsed_module(plain, PLAIN) is None  # no prompt text: never parsed


@pytest.mark.parametrize(("files", "read"), [({"helpers.py": WRAPPER}, True), ({"plain.py": PLAIN}, False)])
def test_the_projects_words_are_read_before_the_fork_when_a_module_has_prompt_text(
    tmp_path: Path, fresh_cache: None, files: dict[str, str], read: bool
) -> None:
    from prefixlint.python import reachability

    paths = _tree(tmp_path, {"pyproject.toml": "", **files})[1:]
    reachability.forget()  # as a new run does
    run = resolve(Options(project_root=str(tmp_path)))
    schedule._parse_ahead([Source(p, "python") for p in paths], [Path(p).read_bytes() for p in paths], run)
    # every worker that checks a module with prompts reads them, else none does
    assert (str(tmp_path) in reachability._WORDS) is read


def test_two_workers_report_what_one_does(tmp_path: Path, fresh_cache: None) -> None:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": WRAPPER}
    files |= {f"app/run_{n}.py": CALLER.format(n=n) for n in range(12)}
    _tree(tmp_path, files)
    options = Options(project_root=str(tmp_path))
    one = render_report(api.lint_paths([str(tmp_path)], options, workers=1), "json")
    project._PARSED.clear()
    two = render_report(api.lint_paths([str(tmp_path)], options, workers=2), "json")
    assert '"PFX101"' in one
    assert one == two


def _node_classes() -> list[type]:
    found, todo = [], [cst.CSTNode]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def test_libcst_nodes_hash_compare_and_isinstance_in_c() -> None:
    # object's own slots and type's instance check (C) in place of libcst's Python `__hash__`,
    # `__eq__` and ABCMeta's `__instancecheck__`, with the same meaning
    assert len(_node_classes()) > 100
    for cls in _node_classes():
        assert cls.__hash__ is object.__hash__, cls
        assert cls.__eq__ is object.__eq__, cls
        assert type(cls).__instancecheck__ is type.__instancecheck__, cls
    one, same_text = cst.Name("x"), cst.Name("x")
    assert one == one and one != same_text and len({one, same_text}) == 2
    assert [same_text].count(one) == 0 and one in [same_text, one]
    assert isinstance(one, cst.BaseExpression) and isinstance(one, (cst.Attribute, cst.Name))
    assert not isinstance(one, cst.Attribute) and not isinstance("x", cst.CSTNode)
    assert issubclass(cst.Name, cst.BaseAssignTargetExpression)
    assert not issubclass(cst.Name, cst.BaseStatement)

    class Later(cst.Name):  # a node class made afterwards copies CSTNode's, which are these
        pass

    assert Later.__dict__["__hash__"] is object.__hash__ and Later.__dict__["__eq__"] is object.__eq__
    assert isinstance(Later("y"), cst.Name) and type(Later) is type(cst.Name)
    module = parse_module("x = 1\n")
    index = index_module(module)
    assign = module.body[0].body[0]
    assert index.positions[assign] == ((1, 0), (1, 5))
