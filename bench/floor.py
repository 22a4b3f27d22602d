"""The floor: the least work that gives the same answer's raw material. Load each tokenizer once,
compile each template once with plain jinja2 (HF's settings), render it as many times as prefixlint
does, and encode every render in one `encode_batch` per tokenizer. Nothing else.

    python bench/floor.py WORKLOAD.json
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def variant_messages(i: int) -> list[dict[str, Any]]:
    """A different conversation per render, so no render can be skipped as a repeat."""
    return [
        {"role": "system", "content": "You are a concise geography assistant."},
        {"role": "user", "content": f"What is the capital of country number {i}?"},
    ]


def main(workload_path: str) -> None:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from tokenizers import Tokenizer

    with open(workload_path, encoding="utf-8") as fh:
        workload = json.load(fh)

    class Generation(jinja2.ext.Extension):  # transformers' `{% generation %}` tag, body only
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.Scope(body).set_lineno(lineno)

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    texts: dict[str, list[str]] = {}
    for entry in workload:
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols]
        )
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime(2025, 1, 1, tzinfo=UTC).strftime(fmt)
        out = texts.setdefault(entry["tokenizer"], [])
        try:
            template = env.from_string(entry["source"])
        except Exception:
            continue
        for i in range(entry["renders"]):
            try:
                text = template.render(
                    messages=variant_messages(i), add_generation_prompt=True, **entry["special_tokens"]
                )
            except Exception:
                continue
            out.append(text)
    for path, batch in texts.items():
        if path.endswith(".gz"):
            import gzip

            tokenizer = Tokenizer.from_str(gzip.decompress(Path(path).read_bytes()).decode("utf-8"))
        else:
            tokenizer = Tokenizer.from_file(path)
        tokenizer.encode_batch(batch, add_special_tokens=False)


if __name__ == "__main__":
    main(sys.argv[1])
