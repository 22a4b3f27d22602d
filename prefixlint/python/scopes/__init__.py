"""An index of one module: its functions, classes and, per scope, where each name is bound.

Flow-insensitive on purpose (no import, no execution): a name read at a position takes its last
binding before that position in the same function, else the module's last binding. The package:
index.py (what the index holds and answers), binder.py (what binds each name, and where),
parse.py (parsing, and the one traversal that builds the index), literals.py (string literals'
values, evaluated once).
"""

from prefixlint.python.scopes.binder import names_in_target
from prefixlint.python.scopes.index import Binding, Branch, FunctionBody, ModuleIndex, Pos, Scope
from prefixlint.python.scopes.literals import string_value
from prefixlint.python.scopes.parse import index_module, keep_candidate_tree, parse_module, unchecked_nodes

__all__ = [
    "Binding",
    "Branch",
    "FunctionBody",
    "ModuleIndex",
    "Pos",
    "Scope",
    "index_module",
    "keep_candidate_tree",
    "names_in_target",
    "parse_module",
    "string_value",
    "unchecked_nodes",
]
