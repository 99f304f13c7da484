"""Time expressions through the client and the worker: relative dates never reach
storage unresolved, whichever write path a turn takes; questions that name a time
recall within its window."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgmem import Memory, timeexpr
from pgmem.embed import LocalEmbedder
from pgmem.worker import Worker

Login = Callable[[str], psycopg.Connection]
TUESDAY = datetime(2026, 12, 1, 10, tzinfo=UTC)
SHANGHAI = timeexpr.time_zone("Asia/Shanghai")


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    local = LocalEmbedder()
    local.load()
    return local


@pytest.fixture
def acme_conn(tenant_login: Login) -> psycopg.Connection:
    return tenant_login("acme")


@pytest.fixture
def acme(acme_conn: psycopg.Connection, embedder: LocalEmbedder) -> Memory:
    return Memory(conn=acme_conn, embedder=embedder, llm=False)


def stored(admin: psycopg.Connection, subject: str) -> list[tuple[str, datetime, datetime | None]]:
    """Every memory of ``subject`` in tenant acme: content, valid_from, expires_at."""
    return admin.execute(
        "select content, valid_from, expires_at from pgmem.memories"
        " where tenant_id = 'acme' and subject = %s order by memory_id",
        (subject,),
    ).fetchall()


def facts(admin: psycopg.Connection, subject: str) -> list[tuple[str, datetime, datetime | None]]:
    """As :func:`stored`, the facts alone (not the stated turns they came from)."""
    return admin.execute(
        "select content, valid_from, expires_at from pgmem.memories"
        " where tenant_id = 'acme' and subject = %s and source <> 'turn' order by memory_id",
        (subject,),
    ).fetchall()


def assert_resolved(rows: list[tuple[str, datetime, datetime | None]]) -> None:
    """No relative date without its absolute one beside it: resolving again adds nothing."""
    assert rows
    for content, _, _ in rows:
        assert timeexpr.resolve(content, TUESDAY, UTC).content == content, content


def test_add_resolves_relative_dates_and_expires_appointments(
    acme: Memory, admin: psycopg.Connection
) -> None:
    acme.add("Next Friday I have a flight to Berlin", user_id="alice", occurred_at=TUESDAY)
    rows = stored(admin, "alice")
    assert_resolved(rows)
    [(content, valid_from, expires_at)] = [r for r in facts(admin, "alice") if "Berlin" in r[0]]
    assert "(2026-12-04)" in content
    assert valid_from == TUESDAY
    # The day after Friday, plus settings.appointment_grace (1 day).
    assert expires_at == datetime(2026, 12, 6, tzinfo=UTC)
    # The turn it came from is the record: it never expires.
    [turn] = [r for r in rows if r not in facts(admin, "alice")]
    assert "(2026-12-04)" in turn[0] and turn[2] is None


def test_add_as_is_in_the_subjects_time_zone(acme: Memory, admin: psycopg.Connection) -> None:
    assert acme.set_time_zone("wang", "Asia/Shanghai") == "Asia/Shanghai"
    # 20:00 UTC on Sunday 6 December is 04:00 on Monday 7 December in Shanghai.
    at = datetime(2026, 12, 6, 20, tzinfo=UTC)
    acme.add("我老婆下周过生日", user_id="wang", infer=False, occurred_at=at)
    acme.add("昨天我去黄山爬山了", user_id="wang", infer=False, kind="episodic", occurred_at=at)
    rows = stored(admin, "wang")
    assert_resolved(rows)
    by_content = {r[0]: r for r in rows}
    birthday = by_content["我老婆下周（2026-12-14/2026-12-20）过生日"]
    assert birthday[1] == at
    assert birthday[2] is None  # text kept as written is a record: it does not expire
    hike = by_content["昨天（2026-12-06）我去黄山爬山了"]
    assert hike[1] == datetime(2026, 12, 6, tzinfo=SHANGHAI)  # the day it happened
    assert hike[2] is None  # a past event does not expire for its date


def test_the_worker_resolves_queued_turns(
    acme: Memory, acme_conn: psycopg.Connection, admin: psycopg.Connection, dsn: str,
    embedder: LocalEmbedder,
) -> None:  # fmt: skip
    acme.add(
        "Tomorrow I have a dentist appointment", user_id="bob", enqueue=True, occurred_at=TUESDAY
    )
    # Without occurred_at, as of when the turn was queued.
    acme_conn.execute(
        "select pgmem.enqueue('carol', %s)",
        (Jsonb([{"role": "user", "content": "I moved to Lisbon 3 days ago"}]),),
    )
    assert Worker(dsn, embedder=embedder, llm=None).run(once=True).done == 2
    bob = stored(admin, "bob")
    assert_resolved(bob)
    [(content, _, expires_at)] = [r for r in facts(admin, "bob") if "dentist" in r[0]]
    assert "(2026-12-02)" in content
    assert expires_at == datetime(2026, 12, 4, tzinfo=UTC)
    carol = stored(admin, "carol")
    assert_resolved(carol)
    queued = admin.execute(
        "select created_at from pgmem.inbox where tenant_id = 'acme' and subject = 'carol'"
    ).fetchone()
    assert queued is not None
    day = (queued[0].astimezone(UTC) - timedelta(days=3)).date().isoformat()
    assert any(f"({day})" in content for content, _, _ in carol)
    # A triple's parts lose the words: the date is in the content and the valid time.
    objects = admin.execute(
        "select triple_object from pgmem.memories where tenant_id = 'acme' and subject = 'carol'"
        " and triple_object is not null"
    ).fetchall()
    assert objects == [("Lisbon",)]


def test_search_and_context_recall_within_the_time_a_question_names(
    acme: Memory, admin: psycopg.Connection
) -> None:
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    acme.add("Went hiking in the Alps with Sam", user_id="dan", infer=False)
    acme.add("Went hiking in Patagonia with Kim", user_id="dan", infer=False)
    # Written when they happened, before `now` (the clock of the test, not
    # the wall clock: a fact written after `now` is not known at `now`).
    for place, at in (("Alps", now - timedelta(days=8)), ("Patagonia", now - timedelta(days=90))):
        admin.execute(
            "update pgmem.memories set created_at = %s, valid_from = %s"
            " where subject = 'dan' and content like %s",
            (at, at, f"%{place}%"),
        )
    question = "Where did I go hiking last week?"
    window = acme.time_window(question, "dan", now=now)
    assert window == (
        datetime(2026, 11, 23, tzinfo=UTC) - timeexpr.WINDOW_BEFORE,
        datetime(2026, 11, 30, tzinfo=UTC) + timeexpr.WINDOW_AFTER,
    )
    hits = acme.search(question, "dan", now=now, reinforce=False)
    assert [h["content"] for h in hits] == ["Went hiking in the Alps with Sam"]
    assert {h["subject"] for h in hits} == {"dan"}
    everything = acme.search(question, "dan", now=now, reinforce=False, parse_time=False)
    assert len(everything) == 2
    block = acme.context(question, "dan", now=now, reinforce=False)
    assert "Alps" in block and "Patagonia" not in block
    # Explicit bounds win over the words.
    old = acme.search(
        question, "dan", since=now - timedelta(days=120), until=now - timedelta(days=60),
        reinforce=False,
    )  # fmt: skip
    assert [h["content"] for h in old] == ["Went hiking in Patagonia with Kim"]
    # The subject's time zone decides which day "昨天" is.
    acme.set_time_zone("dan", "Asia/Shanghai")
    since, until = acme.time_window(
        "我昨天做了什么", "dan", now=datetime(2026, 12, 1, 20, tzinfo=UTC)
    )
    assert (since + timeexpr.WINDOW_BEFORE, until - timeexpr.WINDOW_AFTER) == (
        datetime(2026, 12, 1, tzinfo=SHANGHAI),
        datetime(2026, 12, 2, tzinfo=SHANGHAI),
    )
    assert acme.time_window("what do I like?", "dan") is None
