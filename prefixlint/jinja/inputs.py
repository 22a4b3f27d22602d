"""The inputs prefixlint renders templates with: one app's static parts (system prompt, tools) and
per-request parts that vary (user turns of different lengths and scripts, the clock, ids).

Everything is fixed data so that findings are the same on any machine on any day.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

SYSTEM_PROMPT = (
    "You are a concise geography assistant. Answer in one sentence, name the country and the city, "
    "and say so plainly when you are not sure."
)

# Same structure, different text: lengths and scripts vary, as real users' do.
USER_TURNS = (
    "What is the capital of France?",
    "Quelle est la capitale de l'Allemagne ? Réponds en une phrase, s'il te plaît.",
    "日本の首都はどこですか？",
    "List three rivers that cross more than two countries, and for each one name the sea it flows into.\n",
)

ASSISTANT_REPLY = "The capital of France is Paris."
FOLLOW_UP = "And what about Germany?"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name."},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "The unit."},
                },
                "required": ["city"],
            },
        },
    }
]

# The clock the linter injects: a base instant, then one a fraction of a second later, the next
# second, the next day (also a month boundary) and a far one. The names say what a difference means.
BASE_TIME = datetime(2025, 3, 31, 23, 59, 58, 250_000, tzinfo=UTC)
CLOCK_VARIANTS: tuple[tuple[str, datetime], ...] = (
    ("within the same second", BASE_TIME + timedelta(milliseconds=500)),
    ("every second", BASE_TIME + timedelta(seconds=1)),
    ("after midnight", BASE_TIME + timedelta(seconds=3)),
    ("every month", datetime(2025, 11, 27, 12, 0, 0, tzinfo=UTC)),
)


def user_turn(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def conversation(user_text: str, *, system: bool) -> list[dict[str, Any]]:
    """A one-request conversation: an optional system message, then the user's turn."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT}] if system else []
    return [*messages, user_turn(user_text)]
