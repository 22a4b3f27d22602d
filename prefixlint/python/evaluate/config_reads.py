"""Config values: settings of the deployment read from the environment, and config reads with a
literal default that names a prompt file of the project.

`os.getenv("REGION")`, `os.environ["REGION"]`, `os.environ.get("REGION")` and a project getter
over them (`self._get_str("role_name", "ProgramApe")`, a `[[getter]]` row's shape) read a setting
of the deployment: the same on every request of one deployment, a value of its own kind (it splits
the cache between deployments, never within one), named by the setting it reads.


`self._get_path("prompt_file_path", os.path.join(HERE, "planner.yaml"))`, `os.getenv("PROMPT",
"prompts/system.txt")`, `getattr(cfg, "template", "agent.j2")`: the shape of the call (the models
table's `[[getter]]` rows: a key literal, then a default) and what the default is (a path to a file
that exists in the project) decide it, not the getter's name. The value is that file's path: the file
holds the prompt on every machine where the config does not override it, and a finding on text read
from it says so. A default that names no file, or a call of another shape, is left to the rest of
the evaluator.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Any

import libcst as cst

from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.evaluate.env import Env, func_name
from prefixlint.python.project import PROMPT_FILE_SUFFIXES
from prefixlint.python.scopes import string_value
from prefixlint.python.segments import Hole, Provenance, Text, Value, map_holes, text

# A config key as written (`prompt_file_path`, `PLANNER_PROMPT`, `planner.prompt`): not a sentence.
_KEY = re.compile(r"^[A-Za-z_][\w.\-]*$")


class ConfigReads(EvaluatorBase):
    """Settings read from the environment, config reads whose literal default is a prompt file, and
    the text read from such a file."""

    def setting_read(self, node: cst.CSTNode, key: str | None = None) -> Value:
        """What reading the environment at `node` gives (`os.getenv("X")`, `os.environ`): a setting
        of the deployment, named by `key` or by the call's literal first argument."""
        if key is None and isinstance(node, cst.Call) and node.args and node.args[0].keyword is None:
            written = node.args[0].value
            found = string_value(written) if isinstance(written, cst.SimpleString) else None
            key = found if isinstance(found, str) else None
        (hole,) = self.hole(Provenance.ENVIRONMENT, node)
        return (replace(hole, deployment=True, setting=key or ""),)

    def named_setting(self, call: cst.Call, value: Value) -> Value:
        """`value` of a project getter call (`self._get_str("role_name", "ProgramApe")`) with the
        settings it reads from the environment under a computed name named by the call's key."""
        found = self._getter_key(call)
        if found is None:
            return value

        def name(h: Hole) -> Hole:
            return replace(h, setting=found[0]) if h.deployment and not h.setting else h

        return map_holes(value, name)

    def config_default(self, call: cst.Call, env: Env) -> Value | None:
        """The prompt file a config read falls back to (its path as static text), or None."""
        found = self._getter_key(call, with_default=True)
        if found is None:
            return None
        written, default = found
        assert default is not None
        prompt_file = self._prompt_file(default, env)
        if prompt_file is None:
            return None
        self.project.config_files.setdefault(prompt_file, written)
        return text(prompt_file)

    def _getter_key(
        self, call: cst.Call, with_default: bool = False
    ) -> tuple[str, cst.BaseExpression | None] | None:
        """The config key a call of a `[[getter]]` row's shape reads (a literal that looks like a key,
        then a default), with the default argument; None for a call of another shape (with
        `with_default`, also for one without a default)."""
        if len(call.args) < 2:
            return None
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        name = func_name(call.func)
        for row in self.project.frameworks.getters:
            if row.functions and name not in row.functions or row.key >= len(positional):
                continue
            key = positional[row.key]
            written = string_value(key) if isinstance(key, cst.SimpleString) else None
            default = row.default_argument(positional, keywords)
            if isinstance(written, str) and _KEY.match(written) and (default is not None or not with_default):
                return written, default
        return None

    def _prompt_file(self, node: cst.BaseExpression, env: Env) -> str | None:
        written = self._path_text(node, env, 0)  # type: ignore[attr-defined]  # PromptFiles
        if written is None or not written.lower().endswith(PROMPT_FILE_SUFFIXES):
            return None  # checked before the file is looked for: most defaults are no path
        return self._find(written)  # type: ignore[attr-defined]

    def note_config_file(self, path: str | None, read: Any) -> None:
        """Remember the texts read from a file that a config default named (a template in it, each
        text of a YAML or JSON file), so a value filled into one says where the template comes from."""
        key = self.project.config_files.get(path) if path is not None else None
        if key is None:
            return
        where = os.path.relpath(path, self.project.root)
        note = f"{where} (the default of config `{key}`; a configured override replaces that text)"
        for leaf in _texts(read):
            self.project.config_texts.setdefault(leaf, note)

    def filled_from_config(self, template: str, placeholder: str, value: Value) -> Value:
        """`value` filled into `placeholder` (`{field}`, `{{ field }}`) of a template read from a
        config file (a config default's, a settings object's): its volatile holes say so (the
        static text after it is that file's)."""
        note = self.project.config_texts.get(template)
        if note is None:
            return value
        said = f"filled into `{placeholder}` of {note}"
        return map_holes(
            value,
            lambda h: replace(h, via=f"{h.via}; {said}" if h.via else said) if h.provenance.volatile else h,
        )


def _texts(read: Any) -> list[str]:
    """The static texts of what a file read gives (a text, or data of dicts and lists)."""
    if isinstance(read, dict):
        return [t for v in read.values() for t in _texts(v)]
    if isinstance(read, list):
        return [t for v in read for t in _texts(v)]
    if isinstance(read, tuple) and len(read) == 1 and isinstance(read[0], Text):
        return [read[0].text]
    return []
