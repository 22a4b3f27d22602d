"""Injection recall on real code: does prefixlint report a clock put at the head of every modelled
sink's system text? Prints figures; run by hand (not by the test suite):

    python bench/inject_recall.py REPO [REPO ...] [--source /path/to/prefixlint/checkout] [--keep]

e.g. `python bench/inject_recall.py /work/repos/langroid__langroid /work/repos/qodo-ai__pr-agent`.

For each repository:

1. Copy it to a temporary folder (its .git left out; a fresh `git init` and its `.git/info/exclude`
   make git ignore the same files, so the same sources are checked).
2. Find every call of a modelled sink in the .py files `check` would read (`check --show-files`):
   prefixlint's own models table and matcher (`frameworks.builtin()`, `Frameworks.match_call`,
   `match_decorator`) on a libcst parse of each file; the repository's code is never imported or run.
3. At each call, put a clock and a fixed static paragraph (STATIC, ~55 tokens) at the head of the
   text the row says is system text (a libcst codemod planned on the original tree; formatting
   kept, no line added or removed but the import):
   - a system or instructions argument: `system=f"Now (7): {_pfx_dt.datetime.now()}. " + STATIC + (…)`,
     or that keyword added when the call passes none;
   - a messages-only API: a leading `{"role": "system", "content": …}` message (`("system", …)` for a
     template row), in the list literal or as `[…, *(messages)]`;
   - a whole prompt or template (`prompt=`, `PromptTemplate.from_template(…)`): a leading line;
   - a decorated function whose return value is system text: each `return` so prefixed;
   - a call passed its text through `**mapping` (`completion(**kwargs)`): the entry of the dict
     that holds it, where the frontend reads it (`written_entries`): a display or `dict(...)`
     built in the module, the entries set on it afterwards (`kwargs["messages"] = m`, `update`),
     a dict spread inside one (`**({"system": s} if s else {})`), what a helper of the module
     returns (`params = self._base_params(x)`), for a `**kwargs` parameter what the module's
     callers pass; an entry it lacks is added to its display, never beside it (a keyword the
     dict also holds would fail the call); one built out of sight (another module's helper or
     caller) is not injected, and listed so. Two sinks sent the same dict share its clock;
   with `import datetime as _pfx_dt` inserted as one line after the docstring and `from
   __future__` imports (every later line moves down by one: the line map). Rows that carry no
   text a clock could head (tools only) are counted as found, not injected.
4. Run `python -m prefixlint check --format json --no-cache .` in the original and in the copy
   (prefixlint imported from `--source`, default this checkout), and count per row of the table:
   call sites found, injected, reported (a PFX101 at the clock's line, any severity, or a finding
   of an earlier value less than a block before it that names the clock: the requests part there,
   and it says both must move) and missed, each miss listed as file:line; then every other change
   between the two runs (a finding added or lost, compared by path, code and line, the lines of the
   original mapped through the import's line), attributed to the rows injected in that file; a
   lost one whose value the clock's finding now names (the clock precedes it) is said so.

Nothing is written into the repositories; `--keep` leaves the injected copy and prints its path.

Measured (tuned repositories of issue 28; found / injected / reported per row), 2026-12-03:

    repository  row                               before (a8b74d9)   after (injectkw)
    XAgent      OpenAI chat completions (std)     5 / 5 / 5          5 / 1 / 1 (4 out of sight)
                llama-cpp-python chat             1 / 1 / 1          1 / 1 / 1
                vLLM offline generate             1 / 1 / 1          1 / 1 / 1
    pr-agent    LiteLLM completion                2 / 2 / 2          2 / 2 / 2 (in the callers' dict)
                OpenAI chat completions (std)     1 / 1 / 1          1 / 1 / 1
                LangChain system message (std)    1 / 1 / 1          1 / 1 / 1
                LangChain human message           1 / 1 / 1          1 / 1 / 1
                LangChain chat model calls        2 / 2 / 2          2 / 2 / 2
    smolagents  smolagents agents                 104 / 104 / 102    104 / 104 / 103
                smolagents run                    75 / 75 / 75       75 / 75 / 75
                vLLM offline generate             3 / 3 / 3          3 / 2 / 2 (1 out of sight)
                OpenAI chat completions (std)     1 / 1 / 1          1 / 1 / 1
                LangChain chat model calls        1 / 1 / 1          1 / 1 / 1
    ChatDev     OpenAI chat completions (std)     2 / 2 / 2          not measured in time
                OpenAI Responses                  1 / 1 / 1
                Google GenAI generate_content     1 / 1 / 1
    griptape    every row (10 kinds, 20 calls)    20 / 20 / 20       not measured in time

"Before" is the tool as it was: its 100% on the `**kwargs` calls (XAgent's four, pr-agent's two,
ChatDev's three, griptape's twelve) came from a keyword added beside the mapping, which the dict
also holds at run time (a TypeError), so they tested no text that reaches a model. XAgent's four
take their messages from another module's caller through `**kwargs` merged into a dict another
module's helper returns: out of sight here, not injected. smolagents cli.py:248 ("missed" before)
is named in the PFX105 of the command line's tools less than a block before it; cli.py:255 (the
other arm's `ToolCallingAgent`) is not: the one finding at that value names the first request's
clock only (checked on the file alone), a frontend miss left open. The `**mapping` calls checked
file by file (the copy's injected files alone, not a whole-repository run): griptape's Anthropic,
OpenAI chat, Cohere, Ollama and Bedrock Converse drivers (10 calls, 5 dicts), ChatDev's OpenAI
provider (3), pr-agent's LiteLLM handler (2): all reported; pr-agent's only at info ("no call that
sends it"): a `**kwargs` parameter passed on to the sink is not followed to its callers.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent

STATIC = (
    "You are a careful assistant for this project. Follow the house rules: answer in plain English, "
    "cite the documents you were given, say so when you do not know, never invent names, numbers or "
    "dates, keep every answer under two hundred words, and end with one line that lists your sources."
)
ALIAS = "_pfx_dt"
IMPORT = f"import datetime as {ALIAS}"
MARK = "Now ("  # each clock's text starts `Now (<site number>): `


@dataclass
class Site:
    number: int
    path: str  # relative to the repository
    line: int  # of the sink call (the original file)
    row: str  # the models table row
    how: str = ""  # how the clock was put in ("" = not injected)
    note: str = ""  # why not
    shares: Site | None = None  # the site whose clock this one's text has (both sent the same dict)
    named_in: str = ""  # the finding of an earlier value that names this clock (less than a block before it)
    clock_lines: list[int] = field(default_factory=list)  # in the injected file
    clocks: list[tuple[int, int]] = field(default_factory=list)  # (line, column) of each clock call
    reported: bool = False


def _compiles(text: str, path) -> bool:
    """Whether this Python compiles the original (a 3.12 f-string does not compile on 3.11: its
    injected copy cannot be checked that way either)."""
    try:
        compile(text, str(path), "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def clock_text(number: int, newline: bool = False) -> str:
    """`f"Now (7): {_pfx_dt.datetime.now()}. " + "<STATIC>"`, one line; a template's ends in `\\n`."""
    end = "\\n" if newline else " "
    return f'f"{MARK}{number}): {{{ALIAS}.datetime.now()}}.{end}" + "{STATIC}{end}"'


def _head(libcst, number: int, newline: bool = False):
    return libcst.parse_expression(clock_text(number, newline))


@dataclass
class Written:
    """Where the entries of a `**mapping` passed to a sink are written in its module: each key's
    expressions (displayed, or set afterwards), and the displays that build it (where an entry it
    lacks is added)."""

    entries: dict[str, list] = field(default_factory=dict)
    displays: list = field(default_factory=list)


def written_entries(libcst, index, node, hops: int = 0) -> Written | None:
    """Where the entries of `**node` are written in this module, as prefixlint's frontend follows a
    local `**kwargs` (evaluate/prompt_files.py `mapping_entries`, request.py `_mapping`): a dict
    display or `dict(...)` (and a dict shown inside one: `**({"system": s} if s else {})`); a name,
    by every assignment of it before the call (each arm's) and the entries set on it afterwards
    (`kwargs["messages"] = m`, `kwargs.update(...)`); what a helper of this module returns
    (`params = self._base_params(x)`); for a `**kwargs` parameter, what this module's callers of
    the function pass it. None where it is built out of sight (another module's helper or caller):
    no entry of it can be given a clock here."""
    cst = libcst
    from prefixlint.python.scopes import string_value

    out = Written()

    def key_of(node) -> str | None:
        if not isinstance(node, cst.SimpleString):
            return None
        value = string_value(node)
        return value if isinstance(value, str) else None

    def entry(key: str | None, value) -> None:
        if key is not None:
            out.entries.setdefault(key, []).append(value)

    def helper(func):
        """The function of this module a call calls: `name(...)`, `self.name(...)`."""
        if isinstance(func, cst.Name):
            return index.functions.get(func.value)
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in ("self", "cls")
        ):
            cls = index.scope_for(func).cls
            return index.methods.get((cls.name.value, func.attr.value)) if cls is not None else None
        return None

    def dict_call(node) -> bool:
        return isinstance(node.func, cst.Name) and node.func.value == "dict" and "dict" not in index.functions

    def add(node, hops: int, top: bool) -> bool:
        """Record what `node` puts in the mapping; `top`: a display of the mapping itself."""
        if isinstance(node, cst.Dict):
            if top:
                out.displays.append(node)
            for el in node.elements:
                if isinstance(el, cst.DictElement):
                    entry(key_of(el.key), el.value)
                else:  # `**other` inside the display
                    add(el.value, hops, False)
            return True
        if isinstance(node, cst.IfExp):
            return add(node.body, hops, False) | add(node.orelse, hops, False)
        if isinstance(node, cst.Call) and dict_call(node):
            if top:
                out.displays.append(node)
            for arg in node.args:
                if arg.keyword is not None:
                    entry(arg.keyword.value, arg.value)
                elif arg.star == "**" or not arg.star:
                    add(arg.value, hops, False)
            return True
        if isinstance(node, cst.Call) and hops < 2 and (fn := helper(node.func)) is not None:
            returns = [r.value for r in index.bodies[fn].returns if r.value is not None]
            return any([add(value, hops + 1, top) for value in returns])
        if isinstance(node, cst.Name):
            return add_name(node, hops, top)
        return False

    def callers(fn) -> list:
        """The calls of `fn` in this module (`fn(...)`, `self.fn(...)` in its class); looked for
        only for a `**kwargs` parameter passed on to a sink (rare: the module is walked again)."""
        found: list = []

        class Calls(cst.CSTVisitor):
            def visit_Call(self, node) -> None:
                if helper(node.func) is fn:
                    found.append(node)

        index.module.visit(Calls())
        return found

    def add_name(name, hops: int, top: bool) -> bool:
        scope, here = index.scope_for(name), index.pos(name)
        bindings = [b for b in scope.bindings.get(name.value, ()) if b.pos < here]
        seen = any([add(b.expr, hops, top) for b in bindings if b.kind == "assign" and b.expr is not None])
        fn = scope.node
        star = getattr(getattr(fn, "params", None), "star_kwarg", None)
        if not seen and hops < 2 and star is not None and star.name.value == name.value:
            # `def _send(self, **kwargs): completion(**kwargs)`: what this module's callers pass
            for caller in callers(fn):
                for arg in caller.args:
                    if arg.keyword is not None:
                        entry(arg.keyword.value, arg.value)
                    elif arg.star == "**":
                        seen = add(arg.value, hops + 1, top) or seen
        for b in bindings:
            if b.kind != "setitem" or b.expr is None:
                continue
            if b.key is not None:
                entry(key_of(b.key), b.expr)
            elif isinstance(b.expr, cst.Call) and isinstance(b.expr.func, cst.Attribute):
                # `name.update({...}, k=v)`, `name.setdefault(k, v)`
                if b.expr.func.attr.value == "setdefault" and len(b.expr.args) > 1:
                    entry(key_of(b.expr.args[0].value), b.expr.args[1].value)
                    continue
                for arg in b.expr.args:
                    if arg.keyword is not None:
                        entry(arg.keyword.value, arg.value)
                    else:
                        add(arg.value, hops, False)
        return seen

    return out if add(node, hops, True) else None


def make_injector(libcst, frameworks, index, path: str, sites: list[Site], counter: list[int]):
    """A CSTTransformer putting a clock at the head of each modelled sink's system text. Where each
    clock goes is planned first (on the module `index` indexes), as edits of the original nodes:
    the text of a `**mapping`'s entry is written before the call that passes it."""
    cst = libcst
    from prefixlint.python.frameworks import SinkModel

    edits: dict = collections.defaultdict(list)  # original node -> the changes made to it, in order
    given: dict = {}  # a node given a clock (or an entry) -> the site whose clock it is

    def parenthesized(node):
        return node.with_changes(lpar=[cst.LeftParen(), *node.lpar], rpar=[*node.rpar, cst.RightParen()])

    def prefixed(number: int, value, newline: bool = False):
        return cst.BinaryOperation(
            left=_head(cst, number, newline), operator=cst.Add(), right=parenthesized(value)
        )

    def system_message(number: int, tuple_form: bool):
        head = clock_text(number)
        code = f'("system", {head})' if tuple_form else f'{{"role": "system", "content": {head}}}'
        return cst.parse_expression(code)

    def led(number: int, value, tuple_form: bool):
        """Messages with a leading system message: in the list literal, else `[…, *(messages)]`."""
        element = cst.Element(system_message(number, tuple_form), comma=comma())
        if isinstance(value, (cst.List, cst.Tuple)):
            return value.with_changes(elements=[element, *value.elements])
        return cst.List([element, cst.StarredElement(parenthesized(value))])

    def comma():
        return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))

    def keyword_arg(keyword, value):
        no_space = cst.SimpleWhitespace("")
        return cst.Arg(
            keyword=cst.Name(keyword),
            value=value,
            equal=cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space),
        )

    def add_arg(call, arg):
        """`arg` after the last positional argument (first if none), on an existing line."""
        args = list(call.args)
        at = max((i + 1 for i, a in enumerate(args) if a.keyword is None and not a.star), default=0)
        if at < len(args):
            args.insert(at, arg.with_changes(comma=comma()))
        else:
            if args and args[-1].comma == cst.MaybeSentinel.DEFAULT:
                args[-1] = args[-1].with_changes(comma=comma())
            args.append(arg)
        return call.with_changes(args=args)

    def add_entry(display, key: str, value):
        """`"key": value` last in a dict display (it wins over a `**` before it), `key=value` in `dict(…)`."""
        if isinstance(display, cst.Call):
            return add_arg(display, keyword_arg(key, value))
        elements = list(display.elements)
        if elements and elements[-1].comma == cst.MaybeSentinel.DEFAULT:
            elements[-1] = elements[-1].with_changes(comma=comma())
        return display.with_changes(
            elements=[*elements, cst.DictElement(cst.SimpleString(f'"{key}"'), value)]
        )

    def find_arg(call, row, part):
        """(index of the argument the row reads as `part`, keyword to add when absent)."""
        keys = [k for k, p in row.arguments.items() if p == part]
        position = 0
        for i, arg in enumerate(call.args):
            if arg.star:
                continue
            keyword = arg.keyword.value if arg.keyword is not None else None
            found = row.part_of(keyword, position)
            if keyword is None:
                position += 1
            if found == part and (keyword in keys or str(position - 1) in keys):
                return i, None
        # a field inside an argument (`body.system` of a JSON body) cannot be added as a keyword
        named = [k for k in keys if not k.isdigit() and k != "*" and "." not in k]
        return None, (named[0] if named else None)

    def claim(node, site: Site, how: str, change) -> None:
        """Plan `change` of `node` for `site`, unless another site's clock is there already (two
        sinks sent the same dict): then this site's clock is that one."""
        first = given.setdefault(node, site)
        if first is site:
            edits[node].append(change)
            site.how = site.how or how
        else:
            site.shares = first
            site.how = f"{how}, shared with site {first.number}"

    def put(node, site: Site, part: str, row, how: str) -> None:
        """The clock at the head of the text `node` gives as `part`."""
        n, templates = site.number, row.templates
        if part == "messages":
            claim(node, site, how, lambda v: led(n, v, templates))
        else:
            claim(node, site, how, lambda v: prefixed(n, v, templates))

    def plan_call(call, row) -> None:
        counter[0] += 1
        site = Site(counter[0], path, index.pos(call)[0], row.name)
        sites.append(site)
        parts = set(row.arguments.values())
        found = {part: find_arg(call, row, part) for part in ("system", "messages", "prompt", "user")}
        spread = [a.value for a in call.args if a.star == "**"]
        written = [written_entries(cst, index, value) for value in spread]
        unseen = any(w is None for w in written)
        seen = [w for w in written if w is not None]
        names = ", ".join(f"**{cst.Module([]).code_for_node(v)}" for v in spread)

        def in_mapping(part: str) -> list:
            keys = [k for k, p in row.arguments.items() if p == part]
            return [node for w in seen for k in keys for node in w.entries.get(k, ())]

        # Where the clock goes, in this order: the system text (passed, in the `**mapping`, else
        # added); the messages passed; a prompt or user text passed; else messages, prompt or user
        # added. Into a `**mapping` built here its entries go; one built out of sight may hold any
        # of them: nothing is added beside it (a keyword it also holds would fail the call).
        order = (
            ["system", "messages", "prompt", "user"] if "system" in parts else ["messages", "prompt", "user"]
        )
        for part in order:
            i = found[part][0]
            if i is not None:
                how = "leading message" if part == "messages" else f"{part} prefixed"
                return put(call.args[i].value, site, part, row, how)
            nodes = in_mapping(part)
            if nodes:
                for node in nodes:
                    put(node, site, part, row, f"{part} in {names}")
                return None
            if part == "system" and found["system"][1] is not None:
                if unseen:  # (a leading system message is no system text to such an API)
                    site.note = f"its system text comes through {names}, built out of sight"
                    return None
                return add(call, site, found["system"][1], row, seen, _head(cst, site.number, row.templates))
        if unseen:
            site.note = f"its text comes through {names}, built out of sight"
            return None
        if "messages" in parts:
            key = found["messages"][1] or "messages"
            message = cst.List([cst.Element(system_message(site.number, tuple_form=row.templates))])
            return add(call, site, key, row, seen, message)
        for part in ("prompt", "user", "system"):
            if part in parts and found[part][1] is not None:
                return add(call, site, found[part][1], row, seen, _head(cst, site.number, row.templates))
        if parts & {"system", "prompt", "user"}:
            # positional only (`SystemMessage(text)`), left out by the call: put it first
            head = cst.Arg(_head(cst, site.number, row.templates), comma=comma())
            return claim(call, site, "text added first", lambda c: c.with_changes(args=[head, *c.args]))
        site.note = "no system, prompt or messages text"  # tools only: no text a clock could head
        return None

    def add(call, site: Site, key: str, row, seen: list[Written], value) -> None:
        """`key` added with `value`: to each display of the `**mapping` built here, else to the call."""
        displays = [d for w in seen for d in w.displays]
        if not displays:
            return claim(call, site, f"{key}= added", lambda c: add_arg(c, keyword_arg(key, value)))
        for display in displays:
            claim(display, site, f"{key!r} added to the **mapping", lambda d: add_entry(d, key, value))
        return None

    class Planner(cst.CSTVisitor):
        def visit_Call(self, node) -> None:
            row = frameworks.match_call(index, node)
            if isinstance(row, SinkModel):  # not a client constructor (configuration only)
                plan_call(node, row)

        def visit_FunctionDef(self, node) -> None:
            for decorator in node.decorators:
                row = frameworks.match_decorator(index, decorator)
                if row is not None:
                    counter[0] += 1
                    site = Site(counter[0], path, index.pos(node)[0], row.name)
                    sites.append(site)
                    for ret in index.bodies[node].returns:  # its own, not a nested function's
                        if ret.value is not None:
                            put(ret.value, site, "system", row, "each return prefixed")
                    return

    class Injector(cst.CSTTransformer):
        def on_leave(self, original, updated):
            updated = super().on_leave(original, updated)
            for change in edits.get(original, ()):
                updated = change(updated)
            return updated

    index.module.visit(Planner())
    return Injector()


def with_import(libcst, module):
    """`import datetime as _pfx_dt` after the docstring and `from __future__` imports: one line
    added, and where (AddImportsVisitor may add blank lines too, and move them)."""
    cst = libcst
    body = list(module.body)
    at = 0

    def first_is(stmt, test) -> bool:
        return isinstance(stmt, cst.SimpleStatementLine) and test(stmt.body[0])

    if body and first_is(
        body[0],
        lambda s: isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString, cst.ConcatenatedString)),
    ):
        at = 1
    while at < len(body) and first_is(
        body[at],
        lambda s: (
            isinstance(s, cst.ImportFrom)
            and isinstance(s.module, cst.Name)
            and s.module.value == "__future__"
        ),
    ):
        at += 1
    body.insert(at, cst.parse_statement(IMPORT + "\n"))
    return module.with_changes(body=body)


_NEWLINES = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """The lines as Python counts them (not str.splitlines: a form feed ends none)."""
    return _NEWLINES.split(text)


def show_files(repo: Path, env: dict[str, str]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "prefixlint", "check", "--show-files", "."],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    files = []
    for line in out.splitlines():
        path, _, rest = line.partition(": ")
        if rest.startswith("python") and path.endswith(".py"):
            files.append(os.path.normpath(path))
    return files


def check(repo: Path, env: dict[str, str]) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "prefixlint", "check", "--format", "json", "--no-cache", "."],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"prefixlint check failed in {repo} ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)["diagnostics"]


def copy_repo(repo: Path, dest: Path) -> None:
    shutil.copytree(repo, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    if (repo / ".git").exists():
        subprocess.run(["git", "init", "-q", str(dest)], check=True)
        exclude = repo / ".git" / "info" / "exclude"
        if exclude.is_file():
            (dest / ".git" / "info").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(exclude, dest / ".git" / "info" / "exclude")


def line_map(old: str, new: str) -> dict[int, int]:
    """Old line number -> new line number: the injection changes lines in place (a clock is
    written on the line its text starts) and adds one, the import (`with_import`), so the lines
    from the import's on move down by one."""
    lines, count = source_lines(new), len(source_lines(old))
    at = lines.index(IMPORT) + 1
    if len(lines) != count + 1:
        raise AssertionError(f"the injection added {len(lines) - count} lines, not one")
    return {k: k if k < at else k + 1 for k in range(1, count + 1)}


def inject(copy: Path, files: list[str]) -> tuple[list[Site], dict[str, dict[int, int]]]:
    import libcst

    from prefixlint.python.frameworks import builtin
    from prefixlint.python.scopes import index_module

    frameworks = builtin()
    sites: list[Site] = []
    maps: dict[str, dict[int, int]] = {}
    counter = [0]
    for rel in files:
        path = copy / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not frameworks.needles.search(text):
            continue  # names no modelled API: no sink call (the same test the analysis makes)
        try:
            module = libcst.parse_module(text)
        except libcst.ParserSyntaxError:
            continue
        new = inject_module(libcst, frameworks, index_module(module, str(path)), rel, sites, counter)
        if new is None:
            continue
        if _compiles(text, path):  # still valid Python, or the bench is wrong
            compile(new, str(path), "exec", dont_inherit=True)
        path.write_text(new, encoding="utf-8")
        maps[rel] = line_map(text, new)
    return sites, maps


def inject_module(libcst, frameworks, index, rel: str, sites: list[Site], counter: list[int]) -> str | None:
    """The module's code with a clock at each modelled sink (the sites appended to `sites`, with
    their clocks' places), or None when none could be given one."""
    before = len(sites)
    changed = index.module.visit(make_injector(libcst, frameworks, index, rel, sites, counter))
    if not any(s.how for s in sites[before:]):
        return None
    new = with_import(libcst, changed).code
    lines = source_lines(new)
    for site in sites[before:]:
        marker = f"{MARK}{site.number}): "
        site.clocks = [
            (k + 1, line.index(ALIAS, line.index(marker)) + 1)
            for k, line in enumerate(lines)
            if marker in line
        ]
        site.clock_lines = [line for line, _ in site.clocks]
    return new


def key(d: dict) -> tuple[str, int, str]:
    return (os.path.normpath(d["path"]), d["line"], d["code"])


def measure(repo: Path, env: dict[str, str], keep: bool) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="prefixlint-inject-"))
    copy = tmp / repo.name
    try:
        copy_repo(repo, copy)
        files = show_files(copy, env)
        sites, maps = inject(copy, files)
        original = check(repo, env)
        injected = check(copy, env)
    finally:
        if keep:
            print(f"  injected copy kept in {copy}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    # A finding names the clock by line and column (two sinks on one line: `[SystemMessage(…),
    # HumanMessage(…)]`); by line alone where the line holds one clock.
    at = {(s.path, line, column): s for s in sites for line, column in s.clocks}
    on_line = collections.defaultdict(list)
    for s in sites:
        for line in set(s.clock_lines):
            on_line[(s.path, line)].append(s)
    expected = set()
    for d in injected:
        if d["code"] != "PFX101":
            continue
        path = os.path.normpath(d["path"])
        site = at.get((path, d["line"], d["column"]))
        if site is None and len(on_line.get((path, d["line"]), ())) == 1:
            site = on_line[(path, d["line"])][0]
        if site is not None:
            site.reported = True
            expected.add(key(d))
    # Less than a block after an earlier per-request value, a clock is named in that value's
    # finding (`x` (line 9, per request), `_pfx_dt.datetime.now()` (line 12, per second): they part
    # the requests as one): the requests part there, and the finding says both must move.
    clocked = collections.defaultdict(list)  # path -> the findings naming a clock, with its site
    for d in injected:
        path = os.path.normpath(d["path"])
        for s in sites:
            if s.path == path and any(
                f"`{ALIAS}.datetime.now()` (line {n}," in d["message"] for n in s.clock_lines
            ):
                clocked[path].append((d, s))
                if not s.reported:
                    s.reported, s.named_in = True, f"{d['code']} at line {d['line']}"
                expected.add(key(d))
    for s in sites:
        if s.shares is not None:
            s.reported, s.named_in = s.shares.reported, s.shares.named_in
    old = collections.Counter()
    for d in original:
        path, line, code = key(d)
        old[(path, maps[path][line] if path in maps else line, code)] += 1
    new = collections.Counter(key(d) for d in injected if key(d) not in expected)
    added, lost = new - old, old - new
    # a value the clock now precedes is named in the clock's finding instead of its own
    subsumed = {
        k: s
        for k in lost
        for d, s in clocked.get(k[0], ())
        if f"(line {k[1]}," in d["message"] or d["line"] == k[1]
    }
    return {
        "repo": repo,
        "files": len(files),
        "sites": sites,
        "added": added,
        "lost": lost,
        "subsumed": subsumed,
        "original": len(original),
        "injected": len(injected),
    }


# The standard call sites (issue 28): chat messages to OpenAI-style APIs, Anthropic's `system=`,
# LangChain's SystemMessage (the row names of the models table, as it names them over time).
STANDARD = {"OpenAI chat completions", "Anthropic messages", "LangChain messages", "LangChain system message"}


def report(results: list[dict]) -> None:
    total = collections.defaultdict(lambda: [0, 0, 0])
    for r in results:
        sites: list[Site] = r["sites"]
        print(
            f"\n## {r['repo'].name}: {r['files']} .py checked, {len(sites)} modelled sink calls, "
            f"{r['original']} findings before, {r['injected']} after"
        )
        rows = collections.defaultdict(list)
        for s in sites:
            rows[s.row].append(s)
        changed_files = collections.Counter(p for p, _, _ in (r["added"] + r["lost"]).elements())
        head = ("row (kind of sink)", "found", "injected", "reported", "recall")
        print("  {:<40} {:>6} {:>9} {:>9} {:>7}  other changes".format(*head))
        for name, group in sorted(rows.items()):
            injected = [s for s in group if s.how]
            reported = [s for s in injected if s.reported]
            files = {s.path for s in injected}
            others = sum(changed_files[f] for f in files)
            recall = f"{len(reported) / len(injected):.0%}" if injected else "-"
            mark = " (standard)" if name in STANDARD else ""
            counts = f"{len(group):>6} {len(injected):>9} {len(reported):>9} {recall:>7}"
            print(f"  {name + mark:<40} {counts}  {others}")
            t = total[name]
            t[0], t[1], t[2] = t[0] + len(group), t[1] + len(injected), t[2] + len(reported)
        missed = [s for s in sites if s.how and not s.reported]
        for s in missed:
            where = ",".join(map(str, s.clock_lines)) or "?"
            print(f"    missed: {s.path}:{s.line} ({s.row}; {s.how}; clock at line {where})")
        for s in sites:
            if not s.how:
                print(f"    not injected: {s.path}:{s.line} ({s.row}: {s.note})")
        for s in sites:
            if s.named_in:
                print(f"    named with an earlier value: {s.path}:{s.line} ({s.row}; in the {s.named_in})")
        for label, diffs in (("added", r["added"]), ("lost", r["lost"])):
            for k, n in sorted(diffs.items()):
                path, line, code = k
                by = r["subsumed"].get(k) if label == "lost" else None
                why = (
                    f" (named in the finding of site {by.number}'s clock, at {by.path}:{by.line})"
                    if by
                    else ""
                )
                print(f"    {label}: {path}:{line} {code}" + (f" x{n}" if n > 1 else "") + why)
        if not r["added"] and not r["lost"]:
            print("    nothing else changed")
    if len(results) > 1:
        print("\n## all repositories")
        for name, (found, injected, reported) in sorted(total.items()):
            recall = f"{reported / injected:.0%}" if injected else "-"
            print(f"  {name:<40} {found:>6} {injected:>9} {reported:>9} {recall:>7}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument(
        "--source", type=Path, default=BENCH.parent, help="the prefixlint checkout to measure"
    )
    parser.add_argument("--keep", action="store_true", help="keep the injected copies")
    args = parser.parse_args()
    source = str(args.source.resolve())
    sys.path.insert(0, source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    results = []
    for repo in args.repos:
        repo = repo.resolve()
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        print(f"{repo} at {commit or '(not a git work tree)'}", flush=True)
        results.append(measure(repo, env, args.keep))
    report(results)


if __name__ == "__main__":
    main()
