"""The control strings of a chat template: the turn markers and special tokens (`<|im_start|>`,
`[INST]`, `<start_of_turn>`, `<think>`) that a model's own tokenizer holds as single tokens, and
the markup they make in front of per-request text.

Two things rest on them (issue 23, point 5). The embedded stand-in tokenizer splits such strings
into pieces the model never sees, so a verdict it gives is checked again with each control
string counted as one token (`prefixlint.models.tokens.encode_isolating`). And the turn markers right
before a user's text (`<|im_end|>\\n<|im_start|>user\\n`) cost nothing shareable: a value moved
out of the way still leaves them in front of text that differs per request.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

# Shapes of control strings in templates: `<|im_start|>`, `<｜User｜>` (DeepSeek's full-width
# bars), `[INST]`/`[/INST]`/`[SYSTEM_PROMPT]`, `<start_of_turn>`, `<think>`, `</think:opensource>`,
# `<|turn>`/`<turn|>` and `<|channel>` (Gemma 4), `<s>`/`</s>`.
_CONTROL = re.compile(
    r"<\|[^<>|\s]{1,48}\|>"
    r"|<｜[^<>｜]{1,48}｜>"
    r"|\[/?[A-Z][A-Z_]{1,30}\]"
    r"|</?[a-z][a-z_]{0,30}(?::[a-z_]{1,20})?>"
    r"|<\|[a-z_]{1,30}>|<[a-z_]{1,30}\|>"
    r"|\[\|[a-z_]{1,30}\|\]"  # EXAONE's `[|user|]`, `[|endofturn|]`
)
# Role names a template prints beside its markers (`<|im_start|>user`, `<start_of_turn>model`).
_ROLE_AT_END = re.compile(r"(?:user|assistant|system|human|model|tool|ipython|developer|bot|gpt)\Z", re.I)


def control_strings(*texts: str, special: Iterable[str] = ()) -> tuple[str, ...]:
    """The control strings in `texts` (a template's source, and what it renders: `<|user|>` is
    printed by `'<|' + message.role + '|>'`) and the special tokens it is given (`bos_token`,
    `eos_token`), longest first so that a longer one wins where two start at the same place."""
    found = {c for text in texts for c in _CONTROL.findall(text)}
    found.update(s for s in special if s and not s.isspace())
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


def markup_suffix(text: str, controls: Collection[str] = ()) -> int:
    """How many characters at the end of `text` are turn markup: control strings (of `controls`,
    or shaped like one), the role names beside them and whitespace (0 unless a control string is
    among them: plain text is content)."""
    controls = control_strings(text, special=controls)
    i, seen = len(text), False
    while i > 0:
        stripped = len(text[:i].rstrip())
        if stripped < i:
            i = stripped
            continue
        control = next((c for c in controls if text.endswith(c, 0, i)), None)
        if control is not None:
            i -= len(control)
            seen = True
            continue
        role = _ROLE_AT_END.search(text, 0, i)
        if role is not None and any(text.endswith(c, 0, role.start()) for c in controls):
            i = role.start()
            continue
        break
    return len(text) - i if seen else 0
