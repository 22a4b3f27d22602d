"""Rows a database query returns with no ORDER BY (issue 28, langflow review B-M14): they come
back in storage order, which changes when a row is written, so a tool list or prompt text built
from them is PFX201 where the query runs, a per-edit loss (info unless it costs a block of the
prompt). The statement is followed through the names it is assigned to and its method chain; an
`order_by` anywhere in it, or ORDER BY in SQL text, is silent. The `[[source]]` rows' own examples
run in tests/test_frameworks.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefixlint.cli import cli

HEAD = '''\
import sqlite3

from openai import OpenAI
from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

client = OpenAI()
SessionLocal = sessionmaker()
RULES = """You are the support assistant of Acme Cloud. Answer from the documents you are given, quote the
passage you rely on, answer in at most three sentences, never invent order numbers, and hand refunds to a
human. Keep a friendly tone and prefer short lists to long paragraphs."""


def answer(question: str, history: list, only_enabled: bool, db: sqlite3.Connection) -> str:
    with SessionLocal() as session:
'''
QUERY_LINE = HEAD.count("\n") + 1
SEND = """\
    tools = [{"type": "function", "function": {"name": r.name, "description": r.description}} for r in rows]
    messages = [{"role": "system", "content": RULES}, *history, {"role": "user", "content": question}]
    return client.chat.completions.create(model="gpt-4o", tools=tools, messages=messages)
"""
# How the statement is written, the line the query runs at (from QUERY_LINE), and whether it orders.
QUERIES = {
    "select in the call": ("        rows = session.scalars(select(Tool)).all()\n", 0, False),
    "a chain after the select": (
        "        rows = session.execute(select(Tool).where(Tool.enabled).limit(50)).scalars().all()\n",
        0,
        False,
    ),
    "a name assigned in each arm": (
        "        query = select(Tool)\n"
        "        if only_enabled:\n"
        "            query = query.where(Tool.enabled)\n"
        "        rows = session.scalars(query).all()\n",
        3,
        False,
    ),
    "sql text": ('        rows = db.execute("SELECT name, description FROM tools").fetchall()\n', 0, False),
    "ordered in the chain": (
        "        rows = session.scalars(select(Tool).order_by(Tool.name).limit(50)).all()\n",
        0,
        True,
    ),
    "ordered in one arm": (
        "        query = select(Tool)\n"
        "        if only_enabled:\n"
        "            query = query.order_by(Tool.name)\n"
        "        rows = session.scalars(query).all()\n",
        3,
        True,
    ),
    "sql text ordered": (
        '        rows = db.execute("SELECT name, description FROM tools ORDER BY name").fetchall()\n',
        0,
        True,
    ),
}


def check(path: Path) -> list[dict]:
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--format", "json", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return json.loads(result.stdout)["diagnostics"]


@pytest.mark.parametrize("shape", sorted(QUERIES))
def test_an_unordered_query_is_found_where_it_runs(shape: str, tmp_path: Path) -> None:
    query, offset, ordered = QUERIES[shape]
    path = tmp_path / "agent.py"
    path.write_text(HEAD + query + SEND)
    found = [(d["code"], d["line"], d["severity"]) for d in check(path) if d["code"] == "PFX201"]
    assert found == ([] if ordered else [("PFX201", QUERY_LINE + offset, "info")])


def test_a_query_that_is_not_a_select_is_no_source(tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(HEAD + '        rows = db.execute("PRAGMA table_info(tools)").fetchall()\n' + SEND)
    assert [d for d in check(path) if d["code"] == "PFX201"] == []


def test_the_message_says_the_loss_is_per_edit(tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(HEAD + QUERIES["select in the call"][0] + SEND)
    [found] = [d for d in check(path) if d["code"] == "PFX201"]
    assert "changes when a row is written" in found["message"] and "ORDER BY" in found["message"]
