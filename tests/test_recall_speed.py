"""What recall's speed rests on: reinforcement writes no more than it must.

Timings are benchmark output, never asserted; these tests pin down the work a
recall does instead, counted by PostgreSQL's own statistics.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import psycopg
import pytest
from conftest import Db, Tenant, add_crowd, memories_scans
from psycopg import sql


def _calls(conn: psycopg.Connection, function: str) -> int:
    """Calls of pgmem.<function> counted by this session and not yet reported
    (track_functions): differences within one transaction are its calls."""
    row = conn.execute(
        "select coalesce(sum(calls), 0) from pg_catalog.pg_stat_xact_user_functions"
        " where schemaname = 'pgmem' and funcname = %s",
        (function,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _guard_calls(conn: psycopg.Connection) -> int:
    return _calls(conn, "_memories_guard")


@pytest.fixture
def tracked(db: Db, new_tenant: Callable[[], Tenant]) -> Tenant:
    """A tenant whose sessions count function calls (a superuser-only setting)."""
    tenant = new_tenant()
    role = tenant.conn.execute("select current_user").fetchone()
    assert role is not None
    db.admin.execute(
        sql.SQL("alter role {} set track_functions = 'all'").format(sql.Identifier(role[0]))
    )
    tenant.conn.close()
    return Tenant(tenant.name, psycopg.connect(tenant.dsn, autocommit=True), tenant.dsn)


def test_reinforcement_does_not_run_the_memories_guard(tracked: Tenant) -> None:
    conn = tracked.conn
    try:
        for content in ("Alice plays the violin", "Alice lives in Lisbon", "Bob likes tea"):
            conn.execute("select pgmem.remember('alice', %s)", (content,))
        with conn.transaction():
            before = _guard_calls(conn)
            rows = conn.execute(
                "select memory_id, access_count from pgmem.recall('alice', 'violin Lisbon')"
            ).fetchall()
            assert len(rows) == 2
            # The accesses are written into the rows (the fold the accesses
            # job runs), and the guard was not called for them.
            conn.execute("select pgmem.fold_accesses()")
            counts = conn.execute(
                "select access_count from pgmem.memories where memory_id = any(%s)",
                ([r[0] for r in rows],),
            ).fetchall()
            assert sorted(c[0] for c in counts) == sorted(r[1] + 1 for r in rows)
            assert _guard_calls(conn) == before
            # A write of a column the guard inspects still runs it (so the count above is real).
            conn.execute(
                "update pgmem.memories set metadata = '{\"k\": 1}' where memory_id = %s",
                (rows[0][0],),
            )
            assert _guard_calls(conn) == before + 1
    finally:
        conn.close()


def test_the_guard_still_checks_every_column_it_inspects(tracked: Tenant) -> None:
    conn = tracked.conn
    try:
        conn.execute("select pgmem.remember('alice', 'Alice plays the violin')")
        row = conn.execute("select memory_id from pgmem.memories").fetchone()
        assert row is not None
        for column, value in (
            ("content", "'Alice plays the cello'"),
            ("session_id", "'s1'"),
            ("agent_id", "'a1'"),
            ("metadata", "'{\"k\": 2}'"),
            ("triple_subject", "triple_subject"),
            ("triple_predicate", "triple_predicate"),
            ("triple_object", "triple_object"),
            ("embedding", "embedding"),
        ):
            with conn.transaction():
                before = _guard_calls(conn)
                conn.execute(
                    sql.SQL("update pgmem.memories set {} = {} where memory_id = %s").format(
                        sql.Identifier(column), sql.SQL(value)
                    ),
                    (row[0],),
                )
                assert _guard_calls(conn) == before + 1, column
    finally:
        conn.close()


def test_reinforcement_leaves_the_text_columns_alone(tracked: Tenant, db: Db) -> None:
    """content_hash and fts follow the content only: a reinforced row recomputes
    neither (PostgreSQL 15 recomputed stored generated columns on every UPDATE)."""
    conn = tracked.conn
    try:
        conn.execute("select pgmem.remember('alice', 'Alice plays the violin in Lisbon')")
        with conn.transaction():
            tsv, hashes = _calls(conn, "_tsv"), _calls(conn, "_content_hash")
            conn.execute("select * from pgmem.recall('alice', 'violin', p_reinforce => false)")
            # recall tokenizes its query with _tsv once; the rows are not tokenized again.
            query_only = _calls(conn, "_tsv") - tsv
            tsv = _calls(conn, "_tsv")
            rows = conn.execute("select memory_id from pgmem.recall('alice', 'violin')").fetchall()
            assert len(rows) == 1
            conn.execute("select pgmem.fold_accesses()")
            assert _calls(conn, "_tsv") - tsv == query_only
            assert _calls(conn, "_content_hash") == hashes
        row = conn.execute("select memory_id, access_count from pgmem.memories").fetchone()
        assert row is not None and row[1] == 1
        # Writing the content computes both columns from it, as the generated columns did.
        conn.execute(
            "update pgmem.memories set content = 'Alice plays the cello' where memory_id = %s",
            (row[0],),
        )
        # A direct write of either column (only an owner could) gives way to the content's values.
        db.admin.execute(
            "update pgmem.memories set fts = 'zzz', content_hash = 'x' where memory_id = %s",
            (row[0],),
        )
        check = db.admin.execute(
            "select fts = pgmem._tsv(content), content_hash = pgmem._content_hash(content),"
            " fts @@ 'cello'::tsquery from pgmem.memories where memory_id = %s",
            (row[0],),
        ).fetchone()
        assert check == (True, True, True)
    finally:
        conn.close()


def test_reinforcement_leaves_the_hnsw_index_untouched(tracked: Tenant, db: Db) -> None:
    """A reinforced row is updated in place (HOT) when its accesses are folded in:
    no new index entries, HNSW's included. One row per recall and fold (k = 1): its
    page keeps room for one version; two rows on one page in one fold can still miss."""
    rng = random.Random(12)
    conn = tracked.conn
    # Pruning the previous version needs no older snapshot in the database: an
    # autovacuum ANALYZE of this small table mid-loop holds one and can send a
    # single update to a new page (a real limit of HOT, not of reinforcement).
    db.admin.execute("alter table pgmem.memories set (autovacuum_enabled = off)")
    try:
        vectors = []
        for i in range(20):
            v = [rng.gauss(0, 1) for _ in range(384)]
            vectors.append(v)
            conn.execute(
                "select pgmem.remember('alice', %s, %s::real[])",
                (f"Alice note {i} about the violin", v),
            )
        size = "select pg_relation_size('pgmem.memories_embedding')"
        before = db.admin.execute(size).fetchone()
        for i in range(300):
            rows = conn.execute(
                "select memory_id from pgmem.recall('alice', 'violin note', %s::public.vector,"
                " p_k => 1)",
                (str(vectors[i % 20]),),
            ).fetchall()
            assert len(rows) == 1
            conn.execute("select pgmem.fold_accesses()")
        total = conn.execute("select sum(access_count) from pgmem.memories").fetchone()
        assert total == (300,)
        after = db.admin.execute(size).fetchone()
        assert before is not None and after is not None
        # At fillfactor 90 the index grows by 7 pages here. A snapshot held
        # elsewhere in the cluster can still keep one old version from being
        # pruned in time (seen about once in four runs): one page of slack.
        assert after[0] - before[0] <= 8192, (before, after)
    finally:
        conn.close()
        db.admin.execute("alter table pgmem.memories reset (autovacuum_enabled)")


def test_recall_reads_a_small_subject_by_index_beside_a_huge_one(
    new_tenant: Callable[[], Tenant], db: Db
) -> None:
    """pgmem._recall keeps one plan per session for its statements.
    A plan made without the call's values cannot tell a small subject from the
    average one; where one subject is most of the table, that average says
    "read the whole table". Recall of a small subject beside a huge one must
    still read only its own rows: no sequential scan of pgmem.memories, for any
    shape of query, from the first call of a session to the tenth."""
    tenant = new_tenant()
    rng = random.Random(7)
    for i in range(3):
        tenant.conn.execute(
            "select pgmem.remember('alice', %s, %s::real[])",
            (f"Alice note {i} about the violin", [rng.gauss(0, 1) for _ in range(384)]),
        )
    add_crowd(db, tenant.name, "violin")
    query = str([rng.gauss(0, 1) for _ in range(384)])
    shapes = [
        ("violin note", query),
        ("violin note", None),
        (None, query),
        (None, None),
    ]
    with psycopg.connect(tenant.dsn, autocommit=True) as conn, conn.transaction():
        for _ in range(10):
            for text, vector in shapes:
                rows = conn.execute(
                    "select memory_id from pgmem.recall('alice', %s, %s::public.vector)",
                    (text, vector),
                ).fetchall()
                assert len(rows) == 3
        scans = memories_scans(conn)
    assert scans == (0, True)
