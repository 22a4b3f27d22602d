"""Names and bindings: what a name read at a place holds, from the bindings that may reach it.

The last binding that runs on every path to the read, with any later ones in branches as options;
`+=`, `append`, `extend`, `insert(0, ...)` add to what the name held; a loop variable is an item of
what the loop iterates; a module-level name or a constant another module defines is its binding
there. Literal arguments of the call being inlined decide the `if` arms that can run.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from prefixlint.python.cstwalk import nodes
from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.evaluate.env import (
    _COMPARE,
    _LITERALS,
    MAX_DEPTH,
    UNDECIDED,
    Env,
    _as_history,
    _default_of,
    _holds_messages,
    literal_value,
)
from prefixlint.python.scopes import Binding, Branch, Pos, Scope
from prefixlint.python.segments import (
    EMPTY,
    Break,
    Hole,
    Provenance,
    Segment,
    Value,
    choice,
    concat,
    first_volatile,
    holes,
    per_option,
    text,
    without,
)
from prefixlint.python.volatile import qualified_provenance, reads_environment


class Names(EvaluatorBase):
    """Names and their bindings."""

    def _v_Name(self, node: cst.Name, env: Env) -> Value:
        return self.lookup(node.value, node, env)

    def lookup(self, name: str, node: cst.CSTNode, env: Env) -> Value:
        if name in env.shadow:
            return env.shadow[name]
        if name == "__file__":
            return text(self.path)
        scope = self.index.scope_for(node)
        pos = self.index.pos(node)
        found = self.scoped_value(name, scope, pos, node, env, self.index.branch_of.get(node, ()))
        if (found is None or _unknown(found)) and (schema := self.defined_order(name, env)) is not None:
            return schema  # a class or function handed over as a value: the schema made from it
        if found is not None:
            return found
        qualified = self.index.qualified_names(node)
        if reads_environment(qualified):
            return self.setting_read(node)  # `environ` imported from `os`
        if (prov := qualified_provenance(qualified)) is not None:
            return self.hole(prov, node)
        imported = self.imported_value(name, node, env)
        return imported if imported is not None else self.unknown(node)

    def imported_value(self, name: str, node: cst.CSTNode, env: Env) -> Value | None:
        """A constant another module of the project defines (`from .prompts import SYSTEM`)."""
        for qualified in sorted(self.index.imported_as(name)):
            found = self.resolve(qualified)
            if found is None:
                continue
            evaluator, attr = found
            value = evaluator.module_attribute(attr, env)
            if value is not None:
                return self.anchor(value, node)
        return None

    def module_attribute(self, attr: str, env: Env) -> Value | None:
        """The value of module-level `attr` of this module, or None if it is not a constant here."""
        if env.depth > MAX_DEPTH or "." in attr:
            return None
        if (schema := self.defined_order(attr, env)) is not None:
            return schema  # an imported class or function: the schema made from it
        bindings = self.index.module_scope.bindings.get(attr)
        if bindings and bindings[-1].kind != "unknown":
            return self.binding_value(attr, self.index.module_scope, bindings[-1], env.deeper())
        if attr in self.index.imports and not bindings:  # re-exported (`from .x import y` in __init__)
            node = cst.Name(attr)
            return self.imported_value(attr, node, env.deeper())
        return None

    def scoped_value(
        self, name: str, scope: Scope, pos: Pos, node: cst.CSTNode, env: Env, branch: Branch = ()
    ) -> Value | None:
        """The value of `name` read at `pos` in `scope`: one of the bindings that may reach it (the
        last one that runs on every path to the read, and any later ones in branches), or None if
        nothing in this module binds it."""
        options: list[Value] = []
        earlier = [
            b
            for b in scope.bindings.get(name, ())
            if b.pos < pos and not self._reads_itself(b, node) and self.may_run(b.branch, env)
        ]
        for binding in reversed(earlier):
            if binding.kind == "setitem":
                continue  # an entry of a dict (prompt_files.data reads those)
            options.append(self.binding_value(name, scope, binding, env))
            always = binding.branch == branch[: len(binding.branch)]
            if binding.kind not in ("assign", "unpack", "unknown", "loop") or always:
                return choice(options)
        unbound = self.unbound_value(name, scope, node, env)
        if unbound is not None:
            options.append(unbound)
        return choice(options) if options else None

    def _reads_itself(self, binding: Binding, node: cst.CSTNode) -> bool:
        """Whether `node` is read by the binding's own value (`prompt = self.render(prompt)` reads the
        earlier `prompt`)."""
        if binding.expr is None or binding.kind == "loop":
            return False
        start, end = self.index.positions.get(binding.expr, ((0, 0), (0, 0)))
        return start <= self.index.pos(node) < (end[0], end[1] + 1)

    def unbound_value(self, name: str, scope: Scope, node: cst.CSTNode, env: Env) -> Value | None:
        """A name not bound earlier in its function: a parameter, or a module-level name."""
        if name in scope.params:
            if scope.node not in env.args:  # the function judged on its own: its caller is unknown
                return self.parameter(name, scope, node, env)
            bound = env.args[scope.node]
            if name in bound:
                return bound[name]
            # A call that does not pass it: the default (or what *args/**kwargs carried: unknown)
            default = _default_of(scope.node, name)
            if default is not None:
                return self.value(default, Env(args=env.args, depth=env.depth + 1))
            return self.hole(Provenance.UNKNOWN, node, name, by_name=True)
        outer = self.index.enclosing_function(scope.node)
        outer_scope = self.index.scopes.get(outer) if outer is not None else None
        if outer_scope is not None and (name in outer_scope.params or name in outer_scope.bindings):
            # a closure reads the names of the function it is defined in (`def _call(): return f(messages)`)
            return self.scoped_value(name, outer_scope, self.index.pos(scope.node), scope.node, env)
        if scope.parent is not None:
            module = scope.parent
            bindings = module.bindings.get(name, ())
            if bindings:  # a module name read in a function: its last binding
                # Module-level code runs at import: no caller's arguments reach it, so its value is
                # the memoized one (it was worked out again for each call of each function reading it).
                return self.binding_value(name, module, bindings[-1], Env(depth=env.depth + 1))
        return None

    def binding_value(self, name: str, scope: Scope, binding: Binding, env: Env) -> Value:
        if env.args or env.shadow:
            return self._binding_value(name, scope, binding, env)
        # Without arguments bound, a binding has one value wherever it is read: computed once.
        key = (id(binding), env.template)
        memo = self.project.memo
        if key in memo:
            return memo[key]
        cut = self.project.cut
        value = self._binding_value(name, scope, binding, env)
        if self.project.cut == cut:  # not cut short by a limit here: the same wherever it is read
            memo[key] = value
        return value

    def _binding_value(self, name: str, scope: Scope, binding: Binding, env: Env) -> Value:
        deeper = env.deeper()
        if binding.kind == "assign" and binding.expr is not None:
            return self.in_loop(binding, self.value(binding.expr, deeper), deeper)
        if binding.kind == "unpack" and binding.expr is not None:
            element = self.element_value(binding.expr, binding.element, deeper)
            if element is not None:
                return self.in_loop(binding, element, deeper)
        if binding.kind in ("aug", "append", "extend") and binding.expr is not None:
            before = self.scoped_value(name, scope, binding.pos, binding.expr, deeper, binding.branch)
            added = self.in_loop(binding, self.value(binding.expr, deeper), deeper)
            if (
                binding.kind == "extend"
                or binding.kind == "aug"
                and any(isinstance(x, Break) for x in before or ())
            ):
                added = self.as_history(added, binding.expr)  # `messages.extend(history)`, `+= history`
            elif (
                binding.kind == "append"
                and isinstance(binding.expr, cst.Subscript)
                and _holds_messages(before or EMPTY)
            ):
                # `messages.insert(k, history[i])`: an earlier turn we cannot see, replayed
                if len(added) == 1 and isinstance(added[0], Hole) and not added[0].label:
                    added = (replace(added[0], label=self.label(binding.expr.value)),)
                added = _as_history(added)
            elif binding.kind == "append" and _is_reply(added):
                # `messages.append(response)`: the model's reply, a message object, is the
                # assistant's turn of the conversation (no role is written for it)
                added = (Break("assistant"), *added)
            return concat(before or EMPTY, added)
        if binding.kind in ("prepend", "head") and binding.expr is not None:
            before = self.scoped_value(name, scope, binding.pos, binding.expr, deeper, binding.branch)
            if binding.kind == "prepend":  # `messages.insert(0, message)`
                return concat(self.value(binding.expr, deeper), before or EMPTY)
            return per_option(before or EMPTY, lambda v: self.new_head(v, binding, deeper))
        if binding.kind == "shuffle" and binding.expr is not None:
            return self.hole(Provenance.RANDOM, binding.expr)
        if binding.kind == "loop" and binding.expr is not None:
            # One element of a shuffled list or a set is not random text itself: the order only
            # matters to text accumulated across the loop (in_loop).
            iterable = without(
                without(self.value(binding.expr, deeper), Provenance.RANDOM), Provenance.UNORDERED
            )
            if holes(iterable) and all(h.by_name for h in holes(iterable)):
                # An item of an input known by its name (a turn of `chat_history`) is not that input
                return self.hole(Provenance.UNKNOWN, binding.expr, name, by_name=True)
            return self.propagate(binding.expr, [iterable])
        line, column = binding.pos
        return (Hole(Provenance.UNKNOWN, line, column, name, path=self.path),)

    def new_head(self, messages: Value, binding: Binding, env: Env) -> Value:
        """A list of messages whose first message is rewritten: `messages[0] = m`, or its content
        (`messages[0]["content"] = x + messages[0]["content"]`: the old content read in a `+` chain
        is what the list held). A list whose first message we do not see is left as it is."""
        assert binding.expr is not None and binding.key is not None
        if not messages or not isinstance(messages[0], Break):
            return messages
        rest = next((k for k in range(1, len(messages)) if _starts_message(messages[k])), len(messages))
        if isinstance(binding.key, cst.Subscript) and not isinstance(binding.key.value, cst.Subscript):
            return concat(self.value(binding.expr, env), messages[rest:])  # the whole message
        old, target = messages[1:rest], self.index.module.code_for_node(binding.key)

        def content(node: cst.BaseExpression) -> Value:
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
                return concat(content(node.left), content(node.right))
            if self.index.module.code_for_node(node) == target:
                return old
            return self.value(node, env)

        return concat((messages[0],), content(binding.expr), messages[rest:])

    def in_loop(self, binding: Binding, value: Value, env: Env) -> Value:
        """Text added once per iteration of a loop over volatile data (a set, a sample, the
        completion order of futures), however deep the loop it is added in, is volatile."""
        if not binding.loops or first_volatile(value) is not None:
            return value
        for iterable in reversed(binding.loops):
            order = first_volatile(self.value(iterable, env))
            if order is not None:
                return self.iterated((order,), iterable)  # a set's order reaches the text here
        return value

    def may_run(self, branch: Branch, env: Env) -> bool:
        """Whether code in these arms can run, given the literal arguments of the calls inlined:
        an `if` arm whose test they, or literals alone (`if False:`, `elif x and False:`), decide
        otherwise cannot."""
        for key, arm in branch:
            node = self.index.branch_nodes.get(key)
            if isinstance(node, cst.If):
                test = self.constant(node.test, env) if env.consts else self.literal_test(node)
                if test is UNDECIDED and self.index.scope_for(node).node not in env.consts:
                    test = self.pinned_test(node)  # the call being inlined, if any, passes nothing
                if test is not UNDECIDED and bool(test) != (arm == 0):
                    return False
        return True

    def pinned_test(self, node: cst.If) -> object:
        """The value of an `if` test that the literal defaults of its function's parameters decide,
        where no caller in the project passes them (`reachability.pinned_defaults`), else UNDECIDED;
        once per test and checked file."""
        tests = self.pinned_tests
        if node not in tests:
            tests[node] = UNDECIDED
            fn = self.index.scope_for(node).node
            if isinstance(fn, cst.FunctionDef) and _tests_a_default(fn, node.test):
                from prefixlint.python.reachability import pinned_defaults

                pinned = pinned_defaults(self.project, self.index, fn)
                if pinned:
                    tests[node] = self.constant(node.test, Env(consts={fn: pinned}))
        return tests[node]

    def literal_test(self, node: cst.If) -> object:
        """The value of an `if` test that literals alone decide, else UNDECIDED (once per test: every
        binding under it asks)."""
        tests = self.index.literal_tests
        if node not in tests:
            tests[node] = self.constant(node.test, Env())
        return tests[node]

    def constant(self, node: cst.BaseExpression, env: Env) -> object:
        """The value of a test made of literals and the literal arguments of the call being inlined
        (`flag`, `not flag`, `mode == "x"`, `x is None`), else UNDECIDED."""
        if isinstance(node, cst.Name):
            if node.value in _LITERALS:
                return _LITERALS[node.value]
            if not env.consts:
                return UNDECIDED
            fn = self.index.scope_for(node).node
            known = env.consts.get(fn, {})
            return known.get(node.value, UNDECIDED)
        if isinstance(node, (cst.Integer, cst.SimpleString)):
            return literal_value(node)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            inner = self.constant(node.expression, env)
            return UNDECIDED if inner is UNDECIDED else not inner
        if isinstance(node, cst.BooleanOperation):
            # `cond and False` is false whatever `cond` is, `cond or True` true: one known side
            # that decides is enough (only the truth of such a test is used).
            left, right = self.constant(node.left, env), self.constant(node.right, env)
            deciding = not isinstance(node.operator, cst.And)
            if any(side is not UNDECIDED and bool(side) == deciding for side in (left, right)):
                return deciding
            if left is UNDECIDED or right is UNDECIDED:
                return UNDECIDED
            return right
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            left, right = self.constant(node.left, env), self.constant(node.comparisons[0].comparator, env)
            if left is UNDECIDED or right is UNDECIDED:
                return UNDECIDED
            op = type(node.comparisons[0].operator)
            compare = _COMPARE.get(op)
            return compare(left, right) if compare is not None else UNDECIDED
        return UNDECIDED


def _tests_a_default(fn: cst.FunctionDef, test: cst.BaseExpression) -> bool:
    """Whether a test reads a parameter of `fn` that has a literal default (only then may the
    callers decide it: the project is searched for them)."""
    p = fn.params
    defaults = {
        a.name.value for a in (*p.posonly_params, *p.params, *p.kwonly_params) if a.default is not None
    }
    return bool(defaults) and any(n.value in defaults for n in nodes(test, cst.Name))


def _unknown(value: Value) -> bool:
    """A value that is one unknown hole (what a name bound by `class`/`def` reads as)."""
    return len(value) == 1 and isinstance(value[0], Hole) and value[0].provenance is Provenance.UNKNOWN


def _starts_message(seg: Segment) -> bool:
    """A message boundary in a list of messages: a role, or the turns spliced in (`*history`)."""
    return isinstance(seg, Break) or isinstance(seg, Hole) and seg.history


def _is_reply(value: Value) -> bool:
    """A model's reply alone, with no message boundary of its own."""
    return len(value) == 1 and isinstance(value[0], Hole) and value[0].reply
