"""The memory change stream: pgmem.changes (positions that miss nothing), the
tenant's notification channel, Memory.watch, `pgmem watch`, and the publication for
logical replication; no tenant sees another's events on any of them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import Db, Tenant, raises_sqlstate
from psycopg import sql

from pgmem import Memory

PGMEM = str(Path(sys.executable).parent / "pgmem")


def memory_of(tenant: Tenant) -> Memory:
    return Memory(conn=tenant.conn, embedder=False, llm=False)


def test_a_tenant_pages_through_its_own_changes_only(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    a, b = new_tenant(), new_tenant()
    mem_a, mem_b = memory_of(a), memory_of(b)
    for i in range(5):
        mem_a.add(f"Alice note number {i}", "alice", infer=False)
    mem_b.add("Bob's secret plan", "bob", infer=False)
    first = mem_a.changes(limit=3)
    rest = mem_a.changes(first[-1]["stream_position"], limit=100)
    events = [*first, *rest]
    assert [e["event"] for e in events] == ["insert"] * 5
    assert [e["new_content"] for e in events] == [f"Alice note number {i}" for i in range(5)]
    assert len({e["event_id"] for e in events}) == 5
    assert mem_a.changes(events[-1]["stream_position"]) == []
    assert [e["new_content"] for e in mem_b.changes()] == ["Bob's secret plan"]
    assert mem_a.changes(user_id="bob") == []
    # One subject only, and what a forget records.
    mem_a.add("Carol likes jazz", "carol", infer=False)
    (carol,) = mem_a.changes(user_id="carol")
    mem_a.delete(carol["memory_id"])
    assert [e["event"] for e in mem_a.changes(carol["stream_position"], "carol")] == ["delete"]
    with raises_sqlstate("PM021"):
        mem_a.changes("yesterday")
    with raises_sqlstate("PM021"):
        mem_a.changes(limit=0)


def test_an_event_that_commits_late_is_not_missed(db: Db, new_tenant: Callable[[], Tenant]) -> None:
    """Event ids are drawn at insert: a transaction that wrote first and commits last
    holds the smaller id. A reader that followed ids alone would skip it."""
    tenant = new_tenant()
    reader = memory_of(tenant)
    slow = psycopg.connect(tenant.dsn)  # its own transaction, held open
    fast = psycopg.connect(tenant.dsn, autocommit=True)
    try:
        slow.execute("select 1")  # a transaction is open: the add below is a savepoint in it
        Memory(conn=slow, embedder=False, llm=False).add("written first", "u1", infer=False)
        Memory(conn=fast, embedder=False, llm=False).add("written second", "u2", infer=False)
        seen = reader.changes()
        # The slow transaction is still open: nothing after it is final yet.
        assert seen == []
        slow.commit()
        seen = reader.changes()
        assert [e["new_content"] for e in seen] == ["written first", "written second"]
        assert seen[0]["event_id"] < seen[1]["event_id"]
        assert reader.changes(seen[-1]["stream_position"]) == []
    finally:
        slow.close()
        fast.close()


def test_a_tenants_channel_is_its_own(db: Db, new_tenant: Callable[[], Tenant]) -> None:
    a, b = new_tenant(), new_tenant()
    channel_a = a.conn.execute("select pgmem.change_channel()").fetchone()[0]  # type: ignore[index]
    channel_b = b.conn.execute("select pgmem.change_channel()").fetchone()[0]  # type: ignore[index]
    assert (
        channel_a != channel_b
        and channel_a == a.conn.execute("select pgmem.change_channel()").fetchone()[0]
    )  # type: ignore[index]
    assert a.name not in channel_a and len(channel_a) == len("pgmem_changes_") + 32
    with raises_sqlstate("42501"):
        b.conn.execute("select channel from pgmem._change_channels")
    listener = psycopg.connect(a.dsn, autocommit=True)
    try:
        listener.execute(sql.SQL("listen {}").format(sql.Identifier(channel_a)))
        memory_of(b).add("b writes", "bob", infer=False)
        assert list(listener.notifies(timeout=1.0)) == []
        memory_of(a).add("a writes", "alice", infer=False)
        (note,) = list(listener.notifies(timeout=5.0, stop_after=1))
        (last,) = memory_of(a).changes()
        assert note.channel == channel_a and int(note.payload) == last["event_id"]
    finally:
        listener.close()


def test_watch_follows_new_events_as_they_are_recorded(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    tenant = new_tenant()
    memory_of(tenant).add("before the watch", "alice", infer=False)
    watcher = Memory(tenant.dsn, embedder=False, llm=False)
    seen: list[str] = []
    done = threading.Event()

    def follow() -> None:
        for event in watcher.watch("alice", poll=30.0):
            seen.append(event["new_content"])
            if len(seen) == 3:
                done.set()
                return

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    writer = memory_of(tenant)
    writer.add("during the watch", "alice", infer=False)
    writer.add("another user", "bob", infer=False)
    writer.add("and again", "alice", infer=False)
    # Woken by the notifications, long before the 30 s poll.
    assert done.wait(10.0), seen
    assert seen == ["before the watch", "during the watch", "and again"]
    watcher.close()


def test_pgmem_watch_prints_json_lines(db: Db, new_tenant: Callable[[], Tenant]) -> None:
    tenant = new_tenant()
    memory_of(tenant).add("Alice drinks oolong", "alice", infer=False)
    memory_of(tenant).add("Bob drinks coffee", "bob", infer=False)
    out = subprocess.run(
        [PGMEM, "watch", "--once", "--jsonl", "--user", "alice",
         "--dsn", tenant.dsn],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    (line,) = out.splitlines()
    event = json.loads(line)
    assert event["new_content"] == "Alice drinks oolong" and event["subject"] == "alice"
    resumed = subprocess.run(
        [PGMEM, "watch", "--once", "--after",
         event["stream_position"], "--dsn", tenant.dsn],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert "Bob drinks coffee" in resumed and "Alice drinks oolong" not in resumed


def test_the_publication_carries_events_and_a_tenants_filter_only_its_own(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    admin = psycopg.connect(db.dsn, autocommit=True)
    try:
        tables = admin.execute(
            "select schemaname, tablename from pg_publication_tables"
            " where pubname = 'pgmem_changes'"
        ).fetchall()
        assert tables == [("pgmem", "memory_events")]
        if admin.execute("show wal_level").fetchone() != ("logical",):
            pytest.fail("the server runs without wal_level = logical (pgmem db start sets it)")
        a, b = new_tenant(), new_tenant()
        publication = f"pgmem_changes_{a.name}"
        admin.execute(
            sql.SQL(
                "create publication {} for table pgmem.memory_events where (tenant_id = {})"
                " with (publish = 'insert')"
            ).format(sql.Identifier(publication), sql.Literal(a.name))
        )
        slot = f"test_{a.name}"
        admin.execute("select pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        try:
            memory_of(a).add("tenant a's published fact", "alice", infer=False)
            memory_of(b).add("tenant b's private fact", "bob", infer=False)
            changes = b"".join(
                row[0]
                for row in admin.execute(
                    "select data from pg_logical_slot_peek_binary_changes(%s, null, null,"
                    " 'proto_version', '1', 'publication_names', %s)",
                    (slot, publication),
                )
            )
            assert b"tenant a's published fact" in changes
            assert b"tenant b's private fact" not in changes
        finally:
            admin.execute("select pg_drop_replication_slot(%s)", (slot,))
            admin.execute(sql.SQL("drop publication {}").format(sql.Identifier(publication)))
    finally:
        admin.close()
