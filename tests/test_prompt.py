"""pgmem.prompt: the three layers in one labelled block under one token budget."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from conftest import Db, Tenant

from pgmem import Memory


def prompt(conn: psycopg.Connection, budget: int = 4000, query: str = "flight to Rome") -> str:
    row = conn.execute(
        "select pgmem.prompt('alice', 's1', %s, p_token_budget => %s)", (query, budget)
    ).fetchone()
    assert row is not None
    return str(row[0])


def tokens(conn: psycopg.Connection, text: str) -> int:
    row = conn.execute("select pgmem._estimate_tokens(%s)", (text,)).fetchone()
    assert row is not None
    return int(row[0])


def remember(conn: psycopg.Connection, content: str, **kw: Any) -> int:
    row = conn.execute(
        "select memory_id from pgmem.remember('alice', %(content)s, p_kind => 'preference',"
        " p_triple_subject => %(ts)s, p_triple_predicate => %(tp)s, p_triple_object => %(to)s,"
        " p_session_id => %(session)s)",
        {"content": content, "ts": None, "tp": None, "to": None, "session": None} | kw,
    ).fetchone()
    assert row is not None
    return int(row[0])


def conversation(conn: psycopg.Connection, turns: int) -> None:
    for n in range(turns):
        conn.execute(
            "select pgmem.append_message('alice', 's1', %s, %s, p_extract => false)",
            ("user" if n % 2 == 0 else "assistant", f"turn {n} about the flight to Rome " * 3),
        )


def test_every_layer_in_its_labelled_section(new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    remember(t.conn, "Alice prefers aisle seats on a flight")
    conversation(t.conn, 4)
    t.conn.execute("select pgmem.save_summary('alice', 's1', 1, 2, 'Alice plans Rome.', 'llm')")
    task = Memory(conn=t.conn).start_task(
        "alice", "book a flight to Rome", ["search", "book"], session_id="s1"
    )
    task.record(1, observation="3 flights", variables={"pick": "AZ 101"})
    block = prompt(t.conn)
    sections = [line for line in block.splitlines() if line.startswith("## ")]
    assert sections == [
        "## Current task",
        "## Conversation summary (turns 1-2)",
        "## Long-term memory",
        "## Recent conversation",
    ]
    assert block.startswith("Memory for this conversation")
    assert "[x] 1. search → 3 flights\n[>] 2. book" in block
    assert 'Variables: {"pick": "AZ 101"}' in block
    assert "Alice plans Rome." in block
    assert "Alice prefers aisle seats on a flight" in block
    assert block.endswith("assistant: " + "turn 3 about the flight to Rome " * 3)


@pytest.mark.parametrize("budget", [0, 40, 120, 300, 800])
def test_the_whole_block_fits_the_budget(new_tenant: Callable[[], Tenant], budget: int) -> None:
    t = new_tenant()
    for n in range(30):
        remember(t.conn, f"Alice visited Rome in year {2000 + n} and liked the flight")
    conversation(t.conn, 40)
    t.conn.execute(
        "select pgmem.save_summary('alice', 's1', 1, 20, %s, 'extractive')",
        ("- a long summary line about Rome flights\n" * 100,),
    )
    Memory(conn=t.conn).start_task("alice", "plan Rome " * 50, ["step"] * 30, session_id="s1")
    block = prompt(t.conn, budget)
    assert tokens(t.conn, block) <= budget
    if budget >= 300:
        # Dialogue gets the most: what the other sections leave.
        dialogue = block.split("## Recent conversation\n")[1]
        long_term = block.split("## Long-term memory\n")[1].split("\n\n")[0]
        assert tokens(t.conn, dialogue) > tokens(t.conn, long_term)
        assert tokens(t.conn, long_term) <= budget * 0.25


def test_short_term_wins_over_a_contradicted_long_term_fact(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    t = new_tenant()
    conversation(t.conn, 2)
    old = remember(t.conn, "Alice's home airport is FCO", ts="alice", tp="home_airport", to="FCO")
    # Said in this session, extracted later with an older valid time: stored as
    # history ('outdated'), so the long-term fact stays active.
    t.conn.execute(
        "select pgmem.remember('alice', 'Alice''s home airport is CIA', p_kind => 'semantic',"
        " p_triple_subject => 'alice', p_triple_predicate => 'home_airport',"
        " p_triple_object => 'CIA', p_session_id => 's1', p_valid_from => now() - interval '1 day')"
    )
    statuses = dict(t.conn.execute("select triple_object, status from pgmem.memories").fetchall())
    assert statuses["FCO"] == "active"
    assert "home airport is FCO" not in prompt(t.conn, query="home airport")
    db.admin.execute(
        "update pgmem.settings set prompt_conflicts = 'mark' where tenant_id = %s", (t.name,)
    )
    assert "(contradicted in this conversation) Alice's home airport is FCO" in prompt(
        t.conn, query="home airport"
    )
    # Another session does not contradict it.
    other = t.conn.execute("select pgmem.prompt('alice', 's2', 'home airport')").fetchone()
    assert other is not None and "- [" in other[0] and "contradicted" not in other[0]
    assert old > 0


def test_header_is_a_setting_and_recall_is_reinforced(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    t = new_tenant()
    mid = remember(t.conn, "Alice prefers window seats on a flight")
    db.admin.execute(
        "update pgmem.settings set prompt_header = false where tenant_id = %s", (t.name,)
    )
    block = prompt(t.conn)
    assert block.startswith("## Long-term memory")
    access = t.conn.execute("select access_count from pgmem.get_memory(%s)", (mid,)).fetchone()
    assert access == (1,)
    with pytest.raises(psycopg.Error) as info:
        prompt(t.conn, -1)
    assert info.value.sqlstate == "PM073"
    assert json.dumps(block)  # plain text, no NULL sections
