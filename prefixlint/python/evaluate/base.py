"""The evaluator's base: one node's value, the holes it makes, and the project's other modules.

`value` works a node out once per context (the memo and the step budget live on the project) and
hands it to the `_v_<node type>` method of the part of the evaluator that knows that kind of node.
A hole is placed at a node of this module with its provenance, label and timing (import,
construction or call); a value computed in another module is anchored where it enters this one.
The evaluators of the other modules are made here, of this evaluator's own class, so that no
module below the evaluator needs to know it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Self

import libcst as cst
from libcst._nodes.internal import CodegenState

from prefixlint.python.evaluate.env import MAX_DEPTH, STEP_BUDGET, Env
from prefixlint.python.frameworks import RequestModel, SinkModel, SourceModel
from prefixlint.python.project import Project
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import Hole, Provenance, Value, holes, map_holes

# Methods that run once per object: what they compute is made at construction (`timing`).
_CONSTRUCTORS = {"__init__", "__post_init__", "model_post_init", "__attrs_post_init__"}
# How a finding names what a source row's kind gives.
_SOURCE_WHAT = {
    "context": "content retrieved for each request",
    "memory": "memories recalled for each request",
    "tools": "tools retrieved for each request",
    "search": "web results fetched for each request",
    "input": "what each run of the agent is given or has done so far",
    "rows": "rows of a database query with no ORDER BY",
    "model_output": "what a model wrote in reply, different on every run of the chain",
    "read": "text read anew on each call",
}
_UNSEEN = object()  # a name not looked up yet (resolve)
# The label of a set as it is made (`set(...)`, `{a, b}`, `a | b`): a collection, not text, until
# its order reaches text (Evaluator.iterated); membership and size never do.
SET = "a set"
# Nodes whose value costs less to work out again than to look up (Evaluator.value).
_LITERAL_NODES = frozenset({cst.SimpleString, cst.Integer, cst.Float})


class EvaluatorBase:
    """What every part of the evaluator stands on: the module, the project around it, one node's
    value (dispatched to the `_v_<node type>` method of the part that evaluates that node), the holes
    it makes, and the evaluators of the project's other modules."""

    def __init__(self, index: ModuleIndex, project: Project | None = None) -> None:
        self.index = index
        self.path = index.path
        if project is None:
            project = Project(os.path.dirname(os.path.abspath(index.path or ".")))
        self.project = project
        self.active = project.active
        self._calls: dict[str, list[cst.Call]] | None = None  # calls by callee name (calls_named)
        self.pinned_tests: dict[cst.If, object] = {}  # Names.pinned_test's memo

    # --- the project's other modules -----------------------------------------------------------
    @classmethod
    def of(cls, project: Project, path: str) -> Self | None:
        """The evaluator of the project module at `path`, made once per checked file (None if it
        cannot be read or parsed)."""
        path = os.path.abspath(path)
        if path not in project.evaluators:
            index = project.module(path)
            if index is None:
                return None
            project.evaluators[path] = cls(index, project)
        return project.evaluators[path]

    def evaluator(self, path: str) -> Self | None:
        """The evaluator of another module of the project (`of`)."""
        return self.of(self.project, path)

    def resolve(self, qualified: str) -> tuple[Self, str] | None:
        """The module that defines `qualified` as this module imports it (`pkg.mod.name`,
        `..mod.name`) and the name in it: the longest importable module prefix wins. Looked up once
        per checked file: what a module on disk holds, and whether it could be read, is decided by
        the first look-up and never changes after (the evaluator asks again for every call it meets)."""
        key = (qualified, self.path)
        resolved = self.project.resolved
        found = resolved.get(key, _UNSEEN)
        if found is _UNSEEN:
            found = resolved[key] = self._resolve(qualified)
        return found  # type: ignore[return-value]

    def _resolve(self, qualified: str) -> tuple[Self, str] | None:
        project = self.project
        rest = qualified.lstrip(".")
        dots = qualified[: len(qualified) - len(rest)]
        parts = rest.split(".") if rest else []
        for cut in range(len(parts) - 1, -1, -1):
            if cut == 0 and not dots:
                break
            path = project.module_path(dots + ".".join(parts[:cut]), self.path)
            if path is None or os.path.abspath(path) == os.path.abspath(self.path):
                continue
            if not project.may_define(path, parts[cut]):
                # Every caller looks the name up in the module found, and gives up there when it
                # is not bound: the same as finding no module, without parsing it.
                return None
            evaluator = self.evaluator(path)
            if evaluator is not None:
                return evaluator, ".".join(parts[cut:])
        return None

    # --- holes and values ----------------------------------------------------------------------

    def label(self, node: cst.CSTNode) -> str:
        """The first line of the node's code, at most 60 characters."""
        module = self.index.module
        state = _FirstLine(default_indent=module.default_indent, default_newline=module.default_newline)
        try:  # only the first line is shown: a big node (a class, a long dict) is not generated whole
            node._codegen(state)
            code = "".join(state.tokens).strip()
        except _Enough:
            code = "".join(state.tokens).lstrip()
        code = code.splitlines()[0] if code else ""
        return code if len(code) <= 60 else code[:57] + "..."

    def hole(
        self,
        provenance: Provenance,
        node: cst.CSTNode,
        label: str | None = None,
        by_name: bool = False,
        weak: bool = False,
    ) -> Value:
        line, column = self.index.pos(node)
        if label is None:  # generating a node's code is costly: only volatile holes are ever shown
            label = self.label(node) if provenance.volatile else ""
        timing = self.timing(node) if provenance.volatile else "call"
        return (Hole(provenance, line, column, label, by_name, self.path, weak=weak, timing=timing),)

    def source_hole(
        self, source: SourceModel, node: cst.CSTNode, label: str | None = None, sink: SinkModel | None = None
    ) -> Value:
        """What a source row's call (or a placeholder its framework fills) gives: content made for
        each request, named by the row in the message; a model's reply names the call that asked
        for it (`sink`'s row, at its path and line), wherever the reply is used."""
        (hole,) = self.hole(Provenance[source.provenance.upper()], node, label)
        via = f"{_SOURCE_WHAT[source.kind]}: {source.name}"
        if sink is not None:
            where = f"{os.path.relpath(self.path, self.project.root)}:{hole.line}"
            via = f"{_SOURCE_WHAT[source.kind]}: the reply of the model call at {where} ({sink.name})"
        # unknown text read on each call (a command's output): no finding, but the requests differ there
        per_call = not hole.provenance.volatile
        timing = source.timing or hole.timing
        reply = sink is not None
        return (replace(hole, via=via, turns=source.turns, timing=timing, per_call=per_call, reply=reply),)

    def request_hole(self, request: RequestModel, node: cst.CSTNode) -> Value:
        """What a `[[request]]` row's call or read gives: the request's own input, seen at its source."""
        (hole,) = self.hole(Provenance.REQUEST, node)
        # read at import in a script it is still each run's own: never "once per process"
        return (replace(hole, via=request.name, timing="call"),)

    def timing(self, node: cst.CSTNode) -> str:
        """When the expression at `node` runs: "import" (module or class level), "construction"
        (in `__init__` and the like: once per object), else "call"."""
        if id(node) in self.index.in_lambda:
            return "call"  # `instructions=lambda ctx: f"... {datetime.now()}"`: each time it is called
        owner = self.index.scope_for(node).node
        if isinstance(owner, (cst.Module, cst.ClassDef)):
            return "import"
        if isinstance(owner, cst.FunctionDef) and owner.name.value in _CONSTRUCTORS:
            return "construction"
        return "call"

    def anchor(self, value: Value, node: cst.CSTNode) -> Value:
        """A value computed in another module, placed at `node` of this one (where it enters the
        code being checked); the message keeps where it really comes from. Placeholders written in
        a prompt file keep their place in that file."""
        line, column = self.index.pos(node)

        def move(h: Hole) -> Hole:
            if h.path == self.path or not h.path.endswith(".py") or not h.provenance.volatile:
                return h
            where = f"{os.path.relpath(h.path, self.project.root)}:{h.line}"
            via = h.via or f"`{h.label}` in {where}"
            origin = h.origin or (h.path, h.line, h.column, h.label, h.via)
            label = self.label(node)
            return replace(h, line=line, column=column, path=self.path, label=label, via=via, origin=origin)

        return map_holes(value, move)

    def unknown(self, node: cst.CSTNode) -> Value:
        return self.hole(Provenance.UNKNOWN, node)

    def propagate(self, node: cst.CSTNode, parts: list[Value]) -> Value:
        """An opaque result that still depends on its inputs: volatile if any input is. A set passed
        whole is not: no iteration of it into text is seen (`os.path.commonpath(list(paths))`,
        `len(tools)`), so its order is not what the result says."""
        for part in parts:
            found = next((h for h in holes(part) if h.provenance.volatile and not bare_set(h)), None)
            if found is not None:
                return (found,)
        return self.unknown(node)

    def iterated(self, value: Value, node: cst.BaseExpression) -> Value:
        """`value` iterated at `node` in an order that reaches text (a join, a loop adding text,
        `str()`, an f-string field, `json.dumps`): a set in it is reported there, as the iteration
        it is, named by what is iterated (where a fix sorts it); its timing stays its own."""
        if not any(bare_set(h) for h in holes(value)):
            return value
        while isinstance(
            node, (cst.ListComp, cst.GeneratorExp, cst.DictComp)
        ):  # a set display is its own order
            node = node.for_in.iter  # `", ".join(f"- {t}" for t in tools)`: `tools` is iterated
        line, column = self.index.pos(node)
        # a set display iterated where it is written: its code may span lines, its first is no name
        label = (
            "a set built and iterated here" if isinstance(node, (cst.Set, cst.SetComp)) else self.label(node)
        )

        def at_iteration(h: Hole) -> Hole:
            if not bare_set(h):
                return h
            return replace(h, line=line, column=column, path=self.path, label=label, via="", origin=None)

        return map_holes(value, at_iteration)

    def value(self, node: cst.BaseExpression, env: Env) -> Value:
        """The value of `node` in `env`. Worked out once per checked file for each node and context:
        the same expression is met again and again (a helper's body for every read of its result,
        a subscript's base for its data and for its value). The context is everything the result
        can depend on (the environment, the nesting, the functions being inlined, the parameters
        and attributes being followed), so a value remembered is the one working it out again
        gives; the steps it took are counted again, and one cut short by the step budget, which
        depends on what came before, is not remembered."""
        project = self.project
        if type(node) in _LITERAL_NODES:
            return self._value(node, env)
        key = (
            id(node),  # alive while the project holds its module
            id(env.args),
            id(env.shadow),
            id(env.consts),
            env.summary,
            env.depth,
            env.template,
            tuple(map(id, project.active)),
            frozenset(project.following),
            frozenset(project.reading),
        )
        memo = project.values
        found = memo.get(key)
        if found is not None and project.steps + found[1] <= STEP_BUDGET:
            project.steps += found[1]
            project.cut += found[2]
            return found[0]
        steps, cut, over = project.steps, project.cut, project.over_budget
        value = self._value(node, env)
        if project.over_budget == over:
            memo[key] = (value, project.steps - steps, project.cut - cut, env)  # env: its ids stay taken
        return value

    def _value(self, node: cst.BaseExpression, env: Env) -> Value:
        project = self.project
        project.steps += 1
        if env.depth > MAX_DEPTH or project.steps > STEP_BUDGET:
            project.cut += 1
            if project.steps > STEP_BUDGET:
                project.over_budget += 1
            return self.unknown(node)
        method = getattr(self, "_v_" + type(node).__name__, None)
        return method(node, env) if method else self.unknown(node)


class _Enough(Exception):
    """Raised by _FirstLine once the label's text is there."""


class _FirstLine(CodegenState):
    """libcst's code generation, stopped once the first line (or more than a label's 60
    characters of it) is generated."""

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        shown = "".join(self.tokens).lstrip()
        if "\n" in shown or "\r" in shown or len(shown) > 60:
            raise _Enough


def bare_set(hole: Hole) -> bool:
    """A set as it was made, its order not yet in any text (`SET`), here or in another module."""
    if hole.provenance is not Provenance.UNORDERED:
        return False
    return hole.label == SET or (hole.origin is not None and hole.origin[3] == SET)
