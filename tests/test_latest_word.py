"""The conversation's latest word wins at once: a long-term fact a user turn still in
the window contradicts is omitted or marked in the prompt before any worker has run
(English and Chinese, a real session, no worker), and a wish scoped to now ("today",
"this time", 今天, 这次, 暂时) expires with the day and never retires the standing fact."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from conftest import Db, Tenant
from psycopg.rows import dict_row

from pgmem import Memory

MARK = "(contradicted in this conversation)"

# (what long-term memory holds, the turn of this conversation that contradicts it, the query)
CONTRADICTED = [
    ("I prefer the dark theme.", "Use the light theme today, please.", "which theme?"),
    (
        "I like short answers.",
        "This time give me a detailed answer about Rome.",
        "how long an answer?",
    ),
    ("I live in Hangzhou.", "I moved to Shanghai last week.", "where do I live?"),
    ("I like coffee.", "I don't like coffee anymore.", "what do I drink?"),
    ("我喜欢深色主题。", "今天改用浅色主题吧", "用什么主题？"),
    ("我喜欢简短的回答。", "这次回答详细一点", "回答要多长？"),
    ("我住在杭州。", "我上个月搬到上海了", "我住在哪里？"),
    ("我喜欢喝咖啡。", "我不喜欢喝咖啡了", "我喝什么？"),
]


def _memory(t: Tenant) -> Memory:
    return Memory(conn=t.conn, llm=False)


def _standing(t: Tenant, text: str) -> list[str]:
    """The facts (not the turn) extracted from what long-term memory was told."""
    rows = t.conn.execute(
        "select content from pgmem.memories where subject = 'alice' and status = 'active'"
        " and source <> 'turn' and created_at < now()"
    ).fetchall()
    assert rows, f"nothing extracted from {text!r}"
    return [r[0] for r in rows]


def _set(db: Db, t: Tenant, **values: object) -> None:
    for column, value in values.items():
        db.admin.execute(
            f"update pgmem.settings set {column} = %s where tenant_id = %s", (value, t.name)
        )


@pytest.mark.parametrize(("told", "turn", "query"), CONTRADICTED)
def test_a_window_turn_marks_the_fact_it_contradicts_before_the_worker(
    db: Db, new_tenant: Callable[[], Tenant], told: str, turn: str, query: str
) -> None:
    t = new_tenant()
    memory = _memory(t)
    memory.add(told, "alice", occurred_at=datetime.now(UTC) - timedelta(days=3))
    facts = _standing(t, told)
    chat = memory.session("chat-1", "alice")
    chat.append("user", turn)  # queued for the worker, which does not run here

    _set(db, t, prompt_conflicts="mark")
    marked = chat.prompt(query, reinforce=False)
    # A fact and the turn it came from show once, the better ranked: whichever shows
    # is marked, and neither shows unmarked.
    said = [*facts, told]
    lines = [
        line
        for line in marked.splitlines()
        if line.startswith("- [") and line.endswith(tuple(said))
    ]
    assert lines and all(MARK in line for line in lines), marked
    assert f"user: {turn}" in marked  # the turn itself is the latest word

    _set(db, t, prompt_conflicts="omit")
    omitted = chat.prompt(query, reinforce=False)
    assert not [
        line
        for line in omitted.splitlines()
        if line.startswith("- [") and line.endswith(tuple(said))
    ]


def test_a_turn_on_something_else_marks_nothing(db: Db, new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    memory = _memory(t)
    memory.add(["I prefer the dark theme.", "我喜欢喝咖啡。"], "alice")
    chat = memory.session("chat-1", "alice")
    for turn in (
        "The light in Lisbon is lovely today.",
        "Can you book a table for two?",
        "今天天气很好",
    ):
        chat.append("user", turn)
    _set(db, t, prompt_conflicts="mark")
    for query in ("which theme?", "我喝什么？"):
        assert MARK not in chat.prompt(query, reinforce=False)


def test_the_profile_gives_way_to_the_window_too(db: Db, new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    memory = _memory(t)
    memory.add_to_profile("User prefers short answers", "alice")
    chat = memory.session("chat-1", "alice")
    chat.append("user", "This time give me a detailed answer.")
    _set(db, t, prompt_conflicts="mark")
    profile = chat.prompt("tell me about Rome", reinforce=False).split("## Core profile", 1)[1]
    assert f"{MARK} User prefers short answers" in profile.split("\n\n", 1)[0]
    _set(db, t, prompt_conflicts="omit")
    assert "User prefers short answers" not in chat.prompt("tell me about Rome", reinforce=False)


@pytest.mark.parametrize(
    ("standing", "wish"),
    [
        ("I prefer the dark theme.", "Use the light theme today, please."),
        ("I prefer the dark theme.", "For now, switch to the light theme."),
        ("我喜欢深色主题。", "今天改用浅色主题吧"),
        ("我喜欢深色主题。", "暂时换成浅色主题"),
    ],
)
def test_a_wish_for_now_expires_with_the_day_and_keeps_the_standing_fact(
    new_tenant: Callable[[], Tenant], standing: str, wish: str
) -> None:
    t = new_tenant()
    memory = _memory(t)
    memory.add(standing, "alice")
    (kept,) = _standing(t, standing)
    results = memory.add(wish, "alice")
    assert not any(r["action"] == "superseded" for r in results), results
    with t.conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            "select content, status, expires_at from pgmem.memories"
            " where subject = 'alice' and source <> 'turn' order by memory_id"
        ).fetchall()
    assert rows[0]["content"] == kept and rows[0]["status"] == "active"
    assert rows[0]["expires_at"] is None
    wishes = rows[1:]
    assert wishes and all(w["status"] == "active" for w in wishes), rows
    tomorrow = datetime.now(UTC) + timedelta(days=1, minutes=1)
    assert all(w["expires_at"] is not None and w["expires_at"] <= tomorrow for w in wishes)


def test_a_standing_change_still_supersedes(new_tenant: Callable[[], Tenant]) -> None:
    """The control: without a word scoping it to now, the newer preference replaces the
    older one, as before."""
    t = new_tenant()
    memory = _memory(t)
    memory.add("I prefer the dark theme.", "alice")
    results = memory.add("I switched to the light theme.", "alice")
    assert any(r["action"] == "superseded" for r in results), results
