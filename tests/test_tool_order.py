"""Tool lists built from values whose order differs between processes or machines (issue 24,
point 3): each unordered source iterated into `tools=` of a request is PFX201 at the line it is
iterated, with a verified `sorted(...)` fix (by name for items that do not compare), and the
sorted version is silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefixlint.cli import cli
from prefixlint.python.volatile import COMPLETION_ORDER, PATH_LISTINGS, SET_TYPES, UNORDERED_ITEMS

HEADER = """\
import asyncio
import concurrent.futures
import glob
import importlib.resources
import os
import pkgutil
import collections.abc
import typing
import zoneinfo
from backports import zoneinfo as backported
from collections.abc import Set
from importlib.metadata import entry_points
from pathlib import Path

from openai import OpenAI

client = OpenAI()
SYSTEM = "You are a careful research assistant. Answer with citations, keep answers short, " \\
    "prefer primary sources, and say when you are unsure about a fact or a number."


"""
SEND = (
    '    return client.chat.completions.create(model="gpt-4o", tools=tools, '
    'messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])\n'
)
TOOL = '{"type": "function", "function": {"name": NAME, "description": "A tool", "parameters": {}}}'


def agent(params: str, source: str, item: str = "n", name: str = "n") -> str:
    """A function that builds its tools from `source`, one per item, and sends them."""
    tool = TOOL.replace("NAME", name)
    return f"{HEADER}def run(question: str{params}):\n    tools = [{tool} for {item} in {source}]\n{SEND}"


ITERATED_LINE = HEADER.count("\n") + 2

# One example per unordered source of the table: (parameters, the iterated expression, the
# loop's target, the tool's name, the fix).
CALLS = {
    "os.listdir": (", d: str", "os.listdir(d)", "n", "n", "sorted(os.listdir(d))"),
    "glob.glob": (", d: str", 'glob.glob(d + "/*.json")', "n", "n", 'sorted(glob.glob(d + "/*.json"))'),
    "glob.iglob": (", d: str", "glob.iglob(d)", "n", "n", "sorted(glob.iglob(d))"),
    "zoneinfo.available_timezones": (
        "",
        "zoneinfo.available_timezones()",
        "n",
        "n",
        "sorted(zoneinfo.available_timezones())",
    ),
    "backports.zoneinfo.available_timezones": (
        "",
        "backported.available_timezones()",
        "n",
        "n",
        "sorted(backported.available_timezones())",
    ),
    "os.scandir": (
        ", d: str",
        "os.scandir(d)",
        "e",
        "e.name",
        "sorted(os.scandir(d), key=lambda t: t.name)",
    ),
    "importlib.metadata.entry_points": (
        "",
        'entry_points(group="x.tools")',
        "e",
        "e.name",
        'sorted(entry_points(group="x.tools"), key=lambda t: t.name)',
    ),
    "pkgutil.iter_modules": (
        ", d: str",
        "pkgutil.iter_modules([d])",
        "m",
        "m.name",
        "sorted(pkgutil.iter_modules([d]), key=lambda t: t.name)",
    ),
    "pkgutil.walk_packages": (
        ", d: str",
        "pkgutil.walk_packages([d])",
        "m",
        "m.name",
        "sorted(pkgutil.walk_packages([d]), key=lambda t: t.name)",
    ),
}
# One example per set annotation (builtins are written bare, the rest as imported above).
ANNOTATIONS = {
    "set": "set[str]",
    "frozenset": "frozenset[str]",
    "typing.Set": "typing.Set[str]",
    "typing.FrozenSet": "typing.FrozenSet[str]",
    "typing.AbstractSet": "typing.AbstractSet[str]",
    "typing.MutableSet": "typing.MutableSet[str]",
    "collections.abc.Set": "Set[str]",
    "collections.abc.MutableSet": "collections.abc.MutableSet[str] | None",
}


def check(path: Path, *args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--format", "json", *args, str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return json.loads(result.stdout)["diagnostics"]


def assert_fixed_and_silent(
    tmp_path: Path,
    text: str,
    shown: str,
    fixed: str,
    line: int = ITERATED_LINE,
    fixed_line: int = ITERATED_LINE,
) -> None:
    """One PFX201 warning at `line` with a safe verified fix that writes `fixed` at `fixed_line`;
    silence once it is applied."""
    path = tmp_path / "agent.py"
    path.write_text(text)
    [found] = check(path)
    assert (found["code"], found["line"], found["severity"]) == ("PFX201", line, "warning")
    fix = found["fix"]
    assert (fix["applicability"], fix["verified"]) == ("safe", True)
    assert f"`{fixed}`" in fix["message"] and f"sort `{shown}`" in fix["message"]
    check(path, "--fix")
    assert f" in {fixed}" in path.read_text().splitlines()[fixed_line - 1]
    assert check(path) == []


def test_every_source_of_the_table_has_an_example() -> None:
    assert set(CALLS) == set(UNORDERED_ITEMS)
    assert set(ANNOTATIONS) == SET_TYPES


@pytest.mark.parametrize("qualified", sorted(CALLS))
def test_an_unordered_call_iterated_into_the_tools(qualified: str, tmp_path: Path) -> None:
    params, source, item, name, fixed = CALLS[qualified]
    assert_fixed_and_silent(tmp_path, agent(params, source, item, name), source, fixed)


@pytest.mark.parametrize("qualified", sorted(ANNOTATIONS))
def test_a_parameter_annotated_as_a_set_iterated_into_the_tools(qualified: str, tmp_path: Path) -> None:
    text = agent(f", enabled: {ANNOTATIONS[qualified]}", "enabled")
    assert_fixed_and_silent(tmp_path, text, "enabled", "sorted(enabled)")


# Each listing method of a path object, on each way a path is made: (parameters, the listing).
PATH_CALLS = {
    "glob": (", d: str", 'Path(d).glob("*.json")'),
    "rglob": (", d: str", 'Path(d).resolve().rglob("*.json")'),
    "iterdir": ("", 'importlib.resources.files("tools").iterdir()'),
}


def test_every_path_listing_has_an_example() -> None:
    assert set(PATH_CALLS) == PATH_LISTINGS


@pytest.mark.parametrize("method", sorted(PATH_CALLS))
def test_a_path_listing_iterated_into_the_tools(method: str, tmp_path: Path) -> None:
    params, source = PATH_CALLS[method]
    text = agent(params, source, name="n.name")
    assert_fixed_and_silent(tmp_path, text, source, f"sorted({source})")


def test_a_path_kept_in_a_constant_lists_in_filesystem_order_too(tmp_path: Path) -> None:
    # `TOOLS / "x"` and `.parent` keep a path a path; each item read twice is one value
    text = agent("", "TOOLS.iterdir()", name="n.stem").replace(
        "def run(", 'TOOLS = Path(__file__).parent / "tools"\n\n\ndef run(', 1
    )
    text = text.replace('"description": "A tool"', '"description": n.read_text()')
    path = tmp_path / "agent.py"
    path.write_text(text)
    [found] = check(path)
    assert (found["code"], found["line"], found["severity"]) == ("PFX201", ITERATED_LINE + 3, "warning")
    assert "both must move" not in found["message"]


def test_a_listing_method_on_what_is_not_known_to_be_a_path_is_silent(tmp_path: Path) -> None:
    # `fs.glob()` of fsspec returns sorted paths: only a receiver known to be a path lists unsorted
    path = tmp_path / "agent.py"
    path.write_text(agent(", fs: object", 'fs.glob("tools/*.json")'))
    assert [f for f in check(path) if f["code"] == "PFX201"] == []


def merged(source: str) -> str:
    """Tools appended one by one in a loop nested in a loop over `source` (several MCP servers')
    `list_tools()`), then sent; the outer loop is on line ITERATED_LINE + 1."""
    tool = TOOL.replace("NAME", "t.name")
    return (
        f"{HEADER}def run(question: str, servers: list):\n"
        "    tools = []\n"
        f"    for listed in {source}:\n"
        "        for t in listed.result():\n"
        f"            tools.append({tool})\n"
        f"{SEND}"
    )


COMPLETIONS = {
    "asyncio.as_completed": "asyncio.as_completed([s.list_tools() for s in servers])",
    "concurrent.futures.as_completed": "concurrent.futures.as_completed([s.list_tools() for s in servers])",
}


def test_every_completion_order_source_has_an_example() -> None:
    assert set(COMPLETIONS) == COMPLETION_ORDER


@pytest.mark.parametrize("qualified", sorted(COMPLETIONS))
def test_tools_merged_in_completion_order_are_found_without_a_sort_of_futures(
    qualified: str, tmp_path: Path
) -> None:
    path = tmp_path / "agent.py"
    path.write_text(merged(COMPLETIONS[qualified]))
    [found] = check(path)
    assert (found["code"], found["line"], found["severity"]) == ("PFX201", ITERATED_LINE + 1, "warning")
    assert found.get("fix") is None  # `sorted()` of futures orders nothing that reaches the text


def test_tools_merged_in_the_order_given_are_silent(tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(merged("[s.list_tools() for s in servers]"))
    assert [f for f in check(path) if f["code"] == "PFX201"] == []


def test_text_added_in_a_loop_nested_in_an_unordered_one_carries_its_order(tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(merged("set(servers)"))
    [found] = check(path)
    assert (found["code"], found["line"]) == ("PFX201", ITERATED_LINE + 1)


def test_a_dict_built_from_a_directory_listing_carries_its_order(tmp_path: Path) -> None:
    tool = TOOL.replace("NAME", "n")
    text = (
        f"{HEADER}def run(question: str, d: str):\n"
        f"    registry = {{n: {tool} for n in os.listdir(d)}}\n"
        "    tools = list(registry.values())\n"
        f"{SEND}"
    )
    assert_fixed_and_silent(tmp_path, text, "os.listdir(d)", "sorted(os.listdir(d))")


@pytest.mark.parametrize(
    "params, source",
    [
        (", enabled: list[str]", "enabled"),  # a list has the caller's order
        (", enabled: dict[str, str]", "enabled"),  # so has a dict
        ("", '{"search"}'),  # a set of one element has one order
        (", d: str", "sorted(os.listdir(d))"),
    ],
)
def test_ordered_sources_are_silent(params: str, source: str, tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(agent(params, source))
    assert check(path) == []


def test_one_mcp_servers_list_tools_is_silent(tmp_path: Path) -> None:
    # A server lists its tools in one order per server version (FastMCP: registration order).
    path = tmp_path / "agent.py"
    path.write_text(
        f"{HEADER}async def run(session, question: str):\n"
        "    listed = await session.list_tools()\n"
        f"    tools = [{TOOL.replace('NAME', 't.name')} for t in listed.tools]\n"
        f"{SEND}"
    )
    assert check(path) == []


@pytest.mark.parametrize(
    "params, operation",
    [
        ("", '{"search", "fetch"} | {"summarise"}'),
        ("", '{"search", "fetch"}.union(["summarise"])'),
        (", enabled: list[str]", 'set(enabled) - {"shell"}'),
        (", enabled: list[str]", '{"search", "fetch"} & set(enabled)'),
        (", enabled: list[str]", '{"search", "fetch"}.difference(enabled)'),
    ],
)
def test_a_set_operation_is_a_new_set(params: str, operation: str, tmp_path: Path) -> None:
    # the finding and its fix are where the set is iterated into the tools (its order reaches
    # the request there, not where it is made)
    tool = TOOL.replace("NAME", "n")
    body = f"    names = {operation}\n    tools = [{tool} for n in names]\n"
    text = f"{HEADER}def run(question: str{params}):\n{body}{SEND}"
    assert_fixed_and_silent(
        tmp_path, text, "names", "sorted(names)", line=ITERATED_LINE + 1, fixed_line=ITERATED_LINE + 1
    )


def test_a_set_kept_by_a_constructor_is_found_at_its_parameter(tmp_path: Path) -> None:
    # `self.enabled` is iterated in another method: the finding names where the set comes in
    tool = TOOL.replace("NAME", "n")
    path = tmp_path / "agent.py"
    path.write_text(
        f"{HEADER}class Agent:\n"
        "    def __init__(self, enabled: set[str]):\n"
        "        self.enabled = enabled\n\n"
        "    def run(self, question: str):\n"
        f"        tools = [{tool} for n in self.enabled]\n"
        f"    {SEND}"
    )
    [found] = check(path)
    assert (found["code"], found["line"]) == ("PFX201", ITERATED_LINE + 1)
    assert "a parameter of `__init__()`" in found["message"]
    # sorted where the object iterates it, which holds
    assert (found["fix"]["applicability"], found["fix"]["verified"]) == ("safe", True)
    check(path, "--fix")
    assert " in sorted(self.enabled)]" in path.read_text().splitlines()[ITERATED_LINE + 3]
    assert check(path) == []
