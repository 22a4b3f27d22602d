"""Symbolic evaluation of string-building expressions into segments (never runs the code).

Literals stay text; volatile library calls, volatile-named inputs and unordered iteration become
holes; same-module names and helpers are followed; anything else is an unknown hole.

`Evaluator` is composed of one part per kind of expression it evaluates, each a module of this
package: `base` (one node's value, the holes it makes, the project's other modules), `strings`
(literals, f-strings, `%`, `.format` and string methods), `containers` (lists, dicts, sets,
comprehensions and operators), `names` (names and their bindings), `parameters` (parameters, what
callers pass, loops over items), `calls` (calls and the functions they run), `objects`
(attributes, classes and the state of objects), `prompt_files` (files and data read by a path),
`config_reads` (config values whose literal default is a prompt file), `settings` (settings
objects loaded from config files, `[[settings]]` rows), `rendering` (Jinja
templates rendered from Python), `appended` (text a library adds to a template) and `schemas`
(the choices of generated schemas). `env` holds the environment and the
helpers they share.
"""

from __future__ import annotations

from prefixlint.python.evaluate.appended import Appended
from prefixlint.python.evaluate.calls import Calls, calls_in
from prefixlint.python.evaluate.callsites import CallSites
from prefixlint.python.evaluate.config_reads import ConfigReads
from prefixlint.python.evaluate.containers import Containers
from prefixlint.python.evaluate.env import (
    MAX_CALLERS,
    Env,
    _default_of,
    _message_role,
    _role_of,
    func_name,
)
from prefixlint.python.evaluate.names import Names
from prefixlint.python.evaluate.objects import Objects
from prefixlint.python.evaluate.parameters import Parameters
from prefixlint.python.evaluate.prompt_files import PromptFiles
from prefixlint.python.evaluate.rendering import Rendering
from prefixlint.python.evaluate.schemas import Schemas
from prefixlint.python.evaluate.settings import SettingsReads
from prefixlint.python.evaluate.strings import Strings

__all__ = [
    "MAX_CALLERS",
    "Env",
    "Evaluator",
    "_default_of",
    "_message_role",
    "_role_of",
    "calls_in",
    "func_name",
]


class Evaluator(
    Strings,
    Containers,
    Names,
    Parameters,
    Calls,
    CallSites,
    Objects,
    PromptFiles,
    ConfigReads,
    SettingsReads,
    Rendering,
    Appended,
    Schemas,
):
    """Evaluates the expressions of one module; calls and names that lead into other modules of the
    project are evaluated by those modules' evaluators (`project`), and what comes back is placed at
    the call in this module."""
