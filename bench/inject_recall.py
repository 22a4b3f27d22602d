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
   text the row says is system text (a libcst codemod; formatting kept, no line added or removed
   but the import):
   - a system or instructions argument: `system=f"Now (7): {_pfx_dt.datetime.now()}. " + STATIC + (…)`,
     or that keyword added when the call passes none;
   - a messages-only API: a leading `{"role": "system", "content": …}` message (`("system", …)` for a
     template row), in the list literal or as `[…, *(messages)]`;
   - a whole prompt or template (`prompt=`, `PromptTemplate.from_template(…)`): a leading line;
   - a decorated function whose return value is system text: each `return` so prefixed;
   with `import datetime as _pfx_dt` added to the module (AddImportsVisitor). Rows that carry no
   text a clock could head (tools only) are counted as found, not injected.
4. Run `python -m prefixlint check --format json --no-cache .` in the original and in the copy
   (prefixlint imported from `--source`, default this checkout), and count per row of the table:
   call sites found, injected, reported (a PFX101 at the clock's line, any severity) and missed,
   each miss listed as file:line; then every other change between the two runs (a finding added or
   lost, compared by path, code and line, the lines of the original mapped through the import's
   shift), attributed to the rows injected in that file.

Nothing is written into the repositories; `--keep` leaves the injected copy and prints its path.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import os
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
MARK = "Now ("  # each clock's text starts `Now (<site number>): `


@dataclass
class Site:
    number: int
    path: str  # relative to the repository
    line: int  # of the sink call (the original file)
    row: str  # the models table row
    how: str = ""  # how the clock was put in ("" = not injected)
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


def make_injector(libcst, frameworks, index, path: str, sites: list[Site], counter: list[int]):
    """A CSTTransformer putting a clock at the head of each modelled sink's system text."""
    cst = libcst
    from prefixlint.python.frameworks import SinkModel

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

    class Injector(cst.CSTTransformer):
        def __init__(self) -> None:
            super().__init__()
            self.functions: list[tuple[object, Site]] = []  # decorated functions being changed

        def _site(self, node, row) -> Site:
            counter[0] += 1
            site = Site(counter[0], path, index.pos(node)[0], row.name)
            sites.append(site)
            return site

        def leave_Call(self, original, updated):
            row = frameworks.match_call(index, original)
            if not isinstance(row, SinkModel):
                return updated  # no sink, or a client constructor (configuration only)
            site = self._site(original, row)
            parts = set(row.arguments.values())
            # Where the clock goes, in this order: the system text (passed, else added); the
            # messages passed; a prompt or user text passed; else messages, prompt or user added.
            found = {part: find_arg(updated, row, part) for part in ("system", "messages", "prompt", "user")}
            if "system" in parts:
                i, keyword = found["system"]
                if i is not None:
                    return self.prefix_arg(updated, i, site, "system", row.templates)
                if keyword is not None:
                    return self.add_text(updated, keyword, site, row.templates)
            if found["messages"][0] is not None:
                return self.lead_messages(updated, found["messages"][0], site, row.templates)
            for part in ("prompt", "user"):
                if found[part][0] is not None:
                    return self.prefix_arg(updated, found[part][0], site, part, row.templates)
            if "messages" in parts:
                key = found["messages"][1] or "messages"
                site.how = f"{key}= added"
                message = system_message(site.number, tuple_form=row.templates)
                return add_arg(updated, keyword_arg(key, cst.List([cst.Element(message)])))
            for part in ("prompt", "user", "system"):
                if part in parts and found[part][1] is not None:
                    return self.add_text(updated, found[part][1], site, row.templates)
            if parts & {"system", "prompt", "user"}:
                # positional only (`SystemMessage(text)`), left out by the call: put it first
                site.how = "text added first"
                head = cst.Arg(_head(cst, site.number, row.templates), comma=comma())
                return updated.with_changes(args=[head, *updated.args])
            return updated  # tools only: no text a clock could head

        def prefix_arg(self, call, i, site, part, newline):
            args = list(call.args)
            args[i] = args[i].with_changes(value=prefixed(site.number, args[i].value, newline))
            site.how = f"{part} prefixed"
            return call.with_changes(args=args)

        def add_text(self, call, keyword, site, newline):
            site.how = f"{keyword}= added"
            return add_arg(call, keyword_arg(keyword, _head(cst, site.number, newline)))

        def lead_messages(self, call, i, site, tuple_form):
            arg = call.args[i]
            value = arg.value
            element = cst.Element(system_message(site.number, tuple_form), comma=comma())
            if isinstance(value, (cst.List, cst.Tuple)):
                new_value = value.with_changes(elements=[element, *value.elements])
                site.how = "leading message in the list"
            else:
                new_value = cst.List([element, cst.StarredElement(parenthesized(value))])
                site.how = "leading message before *(…)"
            args = list(call.args)
            args[i] = arg.with_changes(value=new_value)
            return call.with_changes(args=args)

        def visit_FunctionDef(self, node) -> None:
            for decorator in node.decorators:
                row = frameworks.match_decorator(index, decorator)
                if row is not None:
                    self.functions.append((node, self._site(node, row)))
                    return
            self.functions.append((node, None))

        def leave_FunctionDef(self, original, updated):
            self.functions.pop()
            return updated

        def visit_Lambda(self, node) -> None:
            self.functions.append((node, None))

        def leave_Lambda(self, original, updated):
            self.functions.pop()
            return updated

        def visit_ClassDef(self, node) -> None:
            self.functions.append((node, None))

        def leave_ClassDef(self, original, updated):
            self.functions.pop()
            return updated

        def leave_Return(self, original, updated):
            if not self.functions or self.functions[-1][1] is None or updated.value is None:
                return updated
            site = self.functions[-1][1]
            site.how = "each return prefixed"
            return updated.with_changes(value=prefixed(site.number, updated.value))

    return Injector()


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
    """Old line number -> new line number, for the lines the injection kept in place."""
    out: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            out.update({i1 + k + 1: j1 + k + 1 for k in range(i2 - i1)})
    return out


def inject(copy: Path, files: list[str]) -> tuple[list[Site], dict[str, dict[int, int]]]:
    import libcst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

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
        index = index_module(module, str(path))
        before = len(sites)
        changed = module.visit(make_injector(libcst, frameworks, index, rel, sites, counter))
        if not any(s.how for s in sites[before:]):
            continue
        context = CodemodContext()
        AddImportsVisitor.add_needed_import(context, "datetime", asname=ALIAS)
        changed = AddImportsVisitor(context).transform_module(changed)
        new = changed.code
        if _compiles(text, path):  # still valid Python, or the bench is wrong
            compile(new, str(path), "exec", dont_inherit=True)
        path.write_text(new, encoding="utf-8")
        maps[rel] = line_map(text, new)
        lines = new.splitlines()
        for site in sites[before:]:
            marker = f"{MARK}{site.number}): "
            site.clocks = [
                (k + 1, line.index(ALIAS, line.index(marker)) + 1)
                for k, line in enumerate(lines)
                if marker in line
            ]
            site.clock_lines = [line for line, _ in site.clocks]
    return sites, maps


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
    old = collections.Counter()
    for d in original:
        path, line, code = key(d)
        old[(path, maps[path].get(line, -line) if path in maps else line, code)] += 1
    new = collections.Counter(key(d) for d in injected if key(d) not in expected)
    added, lost = new - old, old - new
    return {
        "repo": repo,
        "files": len(files),
        "sites": sites,
        "added": added,
        "lost": lost,
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
                print(f"    not injected: {s.path}:{s.line} ({s.row}: no system, prompt or messages text)")
        for label, diffs in (("added", r["added"]), ("lost", r["lost"])):
            for (path, line, code), n in sorted(diffs.items()):
                print(f"    {label}: {path}:{line} {code}" + (f" x{n}" if n > 1 else ""))
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
