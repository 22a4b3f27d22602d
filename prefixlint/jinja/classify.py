"""What a Jinja file is, decided from its text before anything renders it.

The rule, in order (the first that applies wins):

1. **Chat template** (kind `"jinja"`): the file is named `chat_template.jinja`, or its Jinja code
   reads a conversation with roles (`message['role']`, `message.role`, `messages[0]["role"]`),
   uses `add_generation_prompt`, the Hugging Face helpers `raise_exception`/`strftime_now`,
   `bos_token`/`eos_token` or the `{% generation %}` tag, or its text holds a model's turn
   markers (`<|im_start|>`, `[INST]`, `<start_of_turn>`, …). It is rendered as the serving stack
   renders it (multi-turn scenarios and all).
2. **Not a prompt** (kind `"not_prompt"`, skipped with the reason): what the file renders to is
   a document or code, not text for a model: cookiecutter/copier placeholders, reStructuredText
   (Sphinx directives), an HTML page, or a Python, TOML, YAML, shell or Dockerfile scaffold (by
   the name it renders to, `setup.py.j2`, or by its lines).
3. **App prompt template** (kind `"prompt_template"`): anything else that holds prompt text,
   a few words outside the Jinja tags (one will do in a template that includes, imports or
   extends other files, which no served chat template can). Its variables are the app's inputs:
   it is analysed as one prompt, one variable varied at a time, its includes resolved
   (prefixlint/jinja/prompt.py, prefixlint/jinja/loader.py).
4. Fewer words than that: a template with a word of its own that never reads `messages` (the
   conversation every chat template is given) is an app prompt template too (a fragment such as
   `Actions: {{ subtask.actions_to_json() }}`, rendered by code that passes `subtask`); other
   Jinja code (no text of its own) stays a chat template, as before this rule existed.

A `[tool.prefixlint] template-kinds` glob overrides the rule for the files it matches. Only
regular expressions on the text: no parsing, no rendering, no jinja2 import (`--show-files`
lists a large tree with it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

CHAT = "jinja"  # JSON kind of a chat template file (contract: unchanged)
PROMPT = "prompt_template"
NOT_PROMPT = "not_prompt"
FALLBACK_REASON = "chat template: Jinja code without prompt text"  # rule 4: no sign either way
FRAGMENT_REASON = "app prompt: a few words of text and no conversation (`messages`) read"

# Config spellings (`template-kinds` values) -> kinds.
CONFIG_KINDS = {"chat": CHAT, "prompt": PROMPT, "not-prompt": NOT_PROMPT}


@dataclass(frozen=True)
class Classification:
    kind: str  # CHAT, PROMPT or NOT_PROMPT
    reason: str  # why, in a few words (listed by `--show-files`, noted on skipped sources)


# The Jinja parts of a template: `{{ … }}` and `{% … %}` (comments are not code).
_JINJA_CODE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
_JINJA_ANY = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_WORD = re.compile(r"[^\W\d_]{2,}")
_NAMES_TEMPLATES = re.compile(r"\{%-?\+?\s*(?:include|import|from|extends)\s")
MIN_PROSE_WORDS = 3  # literal words a prompt template has at least (a payload or a pure macro has none)
_CONVERSATION = re.compile(r"\bmessages\b")  # what apply_chat_template passes every chat template
_ROLE_ACCESS = re.compile(r"""\.role\b|\[\s*['"]role['"]\s*\]""")
_CHAT_NAMES = re.compile(
    r"\b(add_generation_prompt|raise_exception|strftime_now|bos_token|eos_token)\b|\{%-?\s*generation\b"
)
# Turn markers of real chat formats, in the template's literal text or its strings.
_TURN_MARKERS = re.compile(
    r"<\|im_start\|>|<\|start_header_id\|>|<\|(?:system|user|assistant)\|>|\[INST\]|<start_of_turn>"
    r"|<｜(?:User|Assistant)｜>|<\|START_OF_TURN_TOKEN\|>"
)

_COOKIECUTTER = re.compile(r"\{\{-?\s*(cookiecutter|copier|_copier_conf)\b")
_RST_DIRECTIVE = re.compile(r"^\s*\.\. [a-z][\w:-]*::", re.M)
_HTML_DOCUMENT = re.compile(r"<!doctype\s+html|<html[\s>]|<head>|<body[\s>]", re.I)
_HTML_TAG = re.compile(
    r"<(div|span|script|style|meta|link|table|form|button|input|img|nav|footer|header|a\s+href)\b", re.I
)
_PYTHON_LINE = re.compile(r"^(?:import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|if __name__ ==)", re.M)
_DOCKERFILE_LINE = re.compile(r"^(?:FROM \S+|RUN |COPY |WORKDIR |ENTRYPOINT |CMD \[)", re.M)
_TOML_TABLE = re.compile(r"^\[\[?[\w.\-\"]+\]\]?\s*$", re.M)
_TOML_PAIR = re.compile(r"^[\w\-\"]+ = \S", re.M)
_SHEBANG = re.compile(r"\A#!\s*/")
_FENCED = re.compile(r"^\s*```.*?^\s*```", re.M | re.S)

# What a template renders to, named by the suffix before `.jinja`/`.j2` (`setup.py.j2`).
_RENDERS_TO = {
    ".rst": "reStructuredText",
    ".html": "an HTML page",
    ".htm": "an HTML page",
    ".xml": "XML",
    ".py": "Python code",
    ".toml": "TOML",
    ".yaml": "YAML",
    ".yml": "YAML",
    ".json": "JSON",
    ".cfg": "an ini file",
    ".ini": "an ini file",
    ".sh": "a shell script",
    ".css": "CSS",
    ".js": "JavaScript",
    ".ts": "TypeScript",
    ".sql": "SQL",
    ".tex": "LaTeX",
}


def _code(text: str) -> str:
    return "\n".join(m.group(0) for m in _JINJA_CODE.finditer(text))


def _renders_to(path: str) -> str | None:
    name = os.path.basename(path).lower()
    stem, _ = os.path.splitext(name)
    if stem == "dockerfile" or stem.startswith("dockerfile."):
        return "a Dockerfile"
    return _RENDERS_TO.get(os.path.splitext(stem)[1])


def chat_reason(path: str, text: str) -> str | None:
    """Why the file is a chat template, or None."""
    if os.path.basename(path) == "chat_template.jinja":
        return "named chat_template.jinja"
    code = _code(text)
    if _ROLE_ACCESS.search(code):
        return "reads message roles"
    m = _CHAT_NAMES.search(code)
    if m:
        return f"uses {m.group(1) or 'the generation tag'}"
    if _TURN_MARKERS.search(text):
        return "holds a chat format's turn markers"
    return None


def not_prompt_reason(path: str, text: str) -> str | None:
    """Why the file is not a prompt (documentation, a web page, scaffolding), or None."""
    if _COOKIECUTTER.search(text) or "{{cookiecutter" in path.replace(" ", ""):
        return "a cookiecutter/copier project template"
    target = _renders_to(path)
    if target is not None:
        return f"renders {target} (by its name)"
    text = _FENCED.sub("", text)  # code a prompt shows the model sits in fences; scaffolds have none
    if _RST_DIRECTIVE.search(text):
        return "reStructuredText with Sphinx directives"
    if _HTML_DOCUMENT.search(text) or len({m.group(1).lower() for m in _HTML_TAG.finditer(text)}) >= 3:
        return "an HTML page"
    if len(_PYTHON_LINE.findall(text)) >= 2:
        return "Python code"
    if len(_DOCKERFILE_LINE.findall(text)) >= 2:
        return "a Dockerfile"
    if _TOML_TABLE.search(text) and len(_TOML_PAIR.findall(text)) >= 2:
        return "TOML"
    if _SHEBANG.search(text):
        return "a script"
    return None


def classify_template(path: str, text: str) -> Classification:
    """The kind of a `.jinja`/`.j2`/`.jinja2` file, by the rule in this module's docstring."""
    why = chat_reason(path, text)
    if why is not None:
        return Classification(CHAT, f"chat template: {why}")
    why = not_prompt_reason(path, text)
    if why is not None:
        return Classification(NOT_PROMPT, why)
    # A template that names other template files is an app's: vLLM and transformers render chat
    # templates without a loader. Then any text of its own will do.
    least = 1 if _NAMES_TEMPLATES.search(text) else MIN_PROSE_WORDS
    words = len(_WORD.findall(_JINJA_ANY.sub(" ", text)))
    if words < least:
        if words and not _CONVERSATION.search(_code(text)):
            # Every chat template renders the conversation it is given (`messages`): a fragment
            # with a word of its own that never reads it (`Actions: {{ step.to_json() }}`) is an
            # app's, whose variables its callers pass.
            return Classification(PROMPT, FRAGMENT_REASON)
        # No text of its own: nothing says it is an app's prompt, so it is rendered as it always
        # was, as a chat template (no loader). `template-kinds` says otherwise for such files.
        return Classification(CHAT, FALLBACK_REASON)
    return Classification(PROMPT, "app prompt: text with the app's variables")


# Template placeholders in a file that should be Python: `{{ … }}`, `{% … %}`, `[[ … ]]` (copier).
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\[\[\s*\w+.*?\]\]")


def template_markers(text: str) -> str | None:
    """The first template placeholder in a text, or None (cheap: a regex)."""
    m = _PLACEHOLDER.search(text)
    return m.group(0)[:40] if m else None


# Folders that hold project scaffolding rather than code that runs.
_SCAFFOLD_PART = re.compile(
    r"^(\{\{.*\}\}.*|.*\{\{.*|templates?|scaffold(ing)?|skeletons?|boilerplate|blueprints?|"
    r"project_template|app_template|cookiecutter.*)$",
    re.I,
)


def scaffolding_path(path: str) -> bool:
    """Whether a path sits in project scaffolding (`{{cookiecutter.x}}/`, `templates/`, …)."""
    parts = os.path.normpath(path).replace(os.sep, "/").split("/")[:-1]
    return any(_SCAFFOLD_PART.match(p) for p in parts) or ".py." in os.path.basename(path)
