"""The naive baseline: what a user would write. For each render prefixlint makes, call
transformers' `render_jinja_template` and encode the text alone, one string at a time.

    python bench/naive.py WORKLOAD.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from floor import variant_messages


def main(workload_path: str) -> None:
    from tokenizers import Tokenizer
    from transformers.utils.chat_template_utils import render_jinja_template

    with open(workload_path, encoding="utf-8") as fh:
        workload = json.load(fh)
    tokenizers: dict[str, Tokenizer] = {}
    for entry in workload:
        path = entry["tokenizer"]
        if path not in tokenizers:
            if path.endswith(".gz"):
                import gzip

                tokenizers[path] = Tokenizer.from_str(
                    gzip.decompress(Path(path).read_bytes()).decode("utf-8")
                )
            else:
                tokenizers[path] = Tokenizer.from_file(path)
        for i in range(entry["renders"]):
            try:
                rendered, _ = render_jinja_template(
                    conversations=[variant_messages(i)],
                    chat_template=entry["source"],
                    add_generation_prompt=True,
                    **entry["special_tokens"],
                )
            except Exception:
                continue
            tokenizers[path].encode(rendered[0], add_special_tokens=False)


if __name__ == "__main__":
    main(sys.argv[1])
