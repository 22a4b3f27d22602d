"""The work prefixlint does on a set of paths, written down so the floor and the naive baseline can
do the same amount: every chat template it renders (source, special tokens, tokenizer file) and how
many renders it makes of each. Collected once, untimed, by running prefixlint with a counting hook.

    python bench/workload.py OUT.json PATH...
"""

from __future__ import annotations

import json
import sys
from typing import Any


def collect(paths: list[str]) -> list[dict[str, Any]]:
    """One entry per ChatTemplate prefixlint analyses under `paths`, with its render count."""
    from prefixlint.api import Options, lint_paths, tokenizer_for
    from prefixlint.jinja.template import ChatTemplate

    seen: dict[int, dict[str, Any]] = {}
    keep: list[ChatTemplate] = []  # keeps ids unique while collecting
    original = ChatTemplate.render

    def counting(self: ChatTemplate, *args: Any, **kwargs: Any) -> Any:
        entry = seen.get(id(self))
        if entry is None:
            keep.append(self)
            tokenizer = tokenizer_for(self.path, Options())
            entry = seen[id(self)] = {
                "path": self.path,
                "source": self.source,
                "special_tokens": dict(self.special_tokens),
                "tokenizer": tokenizer.path,
                "renders": 0,
            }
        entry["renders"] += 1
        return original(self, *args, **kwargs)

    ChatTemplate.render = counting  # type: ignore[method-assign]
    try:
        lint_paths(paths, Options(), workers=1)  # in this process, where the hook counts
    finally:
        ChatTemplate.render = original  # type: ignore[method-assign]
    return list(seen.values())


if __name__ == "__main__":
    out, *paths = sys.argv[1:]
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(collect(paths), fh)
