"""The plain reads as SQL functions (22_reads.sql), for apps in any language:
get, list, history, subject events, count and export, each confined to the tenant."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from conftest import Db, Tenant
from psycopg.types.json import Jsonb

NewTenant = Callable[[], Tenant]


def test_reads_from_plain_sql(new_tenant: NewTenant) -> None:
    acme, other = new_tenant(), new_tenant()
    conn = acme.conn
    rows = conn.execute(
        "select r.memory_id from pgmem.remember_many(%s, 'alice') as r order by r.item",
        (
            Jsonb(
                [
                    {
                        "content": "Alice lives in Berlin",
                        "kind": "semantic",
                        "triple_subject": "alice",
                        "triple_predicate": "lives_in",
                        "triple_object": "Berlin",
                    },
                    {"content": "Alice likes tea", "kind": "preference"},
                    {"content": "x", "rejected": "test filter"},
                ]
            ),
        ),
    ).fetchall()
    berlin, tea = rows[0][0], rows[1][0]
    (paris,) = conn.execute(
        "select memory_id from pgmem.remember('alice', 'Alice lives in Paris',"
        " p_triple_subject => 'alice', p_triple_predicate => 'lives_in',"
        " p_triple_object => 'Paris')"
    ).fetchone() or (None,)

    got = conn.execute("select content, status, embedded from pgmem.get_memory(%s)", (berlin,))
    assert got.fetchall() == [("Alice lives in Berlin", "superseded", False)]
    assert conn.execute("select * from pgmem.get_memory(-1)").fetchall() == []

    listed = conn.execute("select memory_id from pgmem.list_memories('alice')").fetchall()
    assert [r[0] for r in listed] == [paris, tea, berlin]
    active_prefs = conn.execute(
        "select memory_id from pgmem.list_memories('alice', p_statuses => '{active}',"
        " p_kinds => '{preference}')"
    ).fetchall()
    assert active_prefs == [(tea,)]
    assert conn.execute(
        "select memory_id from pgmem.list_memories(p_limit => 1, p_offset => 1)"
    ).fetchall() == [(tea,)]

    history = conn.execute("select event from pgmem.history(%s)", (berlin,)).fetchall()
    assert [r[0] for r in history] == ["insert", "supersede"]
    rejects = conn.execute(
        "select memory_id, details ->> 'rule' from pgmem.subject_events('alice', 'reject')"
    ).fetchall()
    assert rejects == [(None, "test filter")]

    assert conn.execute("select pgmem.count_memories('alice', '{active}')").fetchone() == (2,)
    exported = conn.execute(
        "select memory_id, status from pgmem.export_memories('alice')"
    ).fetchall()
    assert exported == [(berlin, "superseded"), (tea, "active"), (paris, "active")]

    # Another tenant's reads see none of it.
    for query in (
        "select * from pgmem.list_memories()",
        "select * from pgmem.export_memories()",
        "select * from pgmem.subject_events('alice')",
    ):
        assert other.conn.execute(query).fetchall() == [], query
    assert other.conn.execute("select * from pgmem.get_memory(%s)", (berlin,)).fetchall() == []


def test_reads_need_a_bound_tenant(db: Db) -> None:
    with pytest.raises(psycopg.Error) as info:
        db.admin.execute("select * from pgmem.list_memories()")
    assert info.value.sqlstate == "PM001"
