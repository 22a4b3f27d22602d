"""What `assert_prefix_stable` costs on top of the user's own build: the five builds (base, the same
world again, a second, a day, a month later) with the profile hook recording calls, rendering and
tokenizing, against the same five builds run bare.

    python bench/testing_overhead.py [--repeat 5]

Two builds: the deskapp example (a clock three calls deep; a few dozen Python calls) and a heavy
one that renders a 200-message Jinja conversation in the build (tens of thousands of Python calls,
the worst case for the hook). Prints the median of `--repeat` runs: the bare builds, the builds
in their worlds, and the whole check. Not run by the tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "fixtures" / "testing")]
sys.dont_write_bytecode = True

HEAVY_TEMPLATE = """{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content | trim }}{% if m.sent %} (sent {{ m.sent }}){% endif %}<|im_end|>
{% endfor %}"""


def heavy_build() -> str:
    import jinja2

    history = [
        {
            "role": "user" if k % 2 else "assistant",
            "content": f"Message {k} about order {1000 + k}.",
            "sent": None,
        }
        for k in range(200)
    ]
    return jinja2.Template(HEAVY_TEMPLATE).render(messages=history)


def median_seconds(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from deskapp.prompts import build_messages

    from prefixlint.testing import check_prefix_stable
    from prefixlint.testing.building import build_in as _build_in
    from prefixlint.testing.worlds import BASE_WORLD, KINDS, REPLAY_WORLD, VARIED_WORLDS

    worlds = (BASE_WORLD, REPLAY_WORLD, *VARIED_WORLDS)

    def desk() -> Any:
        return build_messages("Where is my order?")

    check_prefix_stable(desk)  # load the tokenizer once, as a test session does after its first test
    for name, build in (
        ("deskapp (clock 3 calls deep)", desk),
        ("heavy (200-message Jinja render)", heavy_build),
    ):
        bare = median_seconds(lambda b=build: [b() for _ in range(5)], args.repeat)
        hooked = median_seconds(lambda b=build: [_build_in(b, w, KINDS) for w in worlds], args.repeat)
        checked = median_seconds(lambda b=build: check_prefix_stable(b), args.repeat)
        print(
            f"{name}: 5 bare builds {bare * 1000:.1f} ms; 5 builds in worlds (patched, recorded) "
            f"{hooked * 1000:.1f} ms; check_prefix_stable (also rendering, tokenizing) "
            f"{checked * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
