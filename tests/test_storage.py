"""Storage (alembic 0006): vectors in half precision rank like float32 on real
text, and the HNSW index holds large subjects only while recall finds both;
(alembic 0016) a row keeps its vector in line up to a page."""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg
import pytest
from conftest import Db, Tenant

from pgmem.lab import eval as ev

DIMS = 384
# Beside the repository, as for test_eval; PGMEM_LOCOMO names it from a worktree elsewhere.
SHARED_DEV = Path(
    os.environ.get(
        "PGMEM_LOCOMO",
        Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json",
    )
)


def literal(v: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


def remember_many(
    conn: psycopg.Connection, subject: str, vectors: Sequence[Sequence[float]], prefix: str
) -> list[tuple[str, int]]:
    items = [{"content": f"{prefix} {i}", "embedding": literal(v)} for i, v in enumerate(vectors)]
    return [
        (action, memory_id)
        for _, action, memory_id, _, _ in conn.execute(
            "select * from pgmem.remember_many(%s::jsonb, %s)", (json.dumps(items), subject)
        ).fetchall()
    ]


def unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIMS)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def hnsw_bytes(admin: psycopg.Connection) -> int:
    return admin.execute("select pg_relation_size('pgmem.memories_embedding')").fetchone()[0]


def hnsw_scans(admin: psycopg.Connection, session: psycopg.Connection) -> int:
    """Index scans of the HNSW index so far, after flushing the session's counters."""
    session.execute("select pg_stat_force_next_flush()")  # flushed before the reply
    admin.execute("select pg_stat_clear_snapshot()")
    row = admin.execute(
        "select idx_scan from pg_stat_user_indexes where indexrelname = 'memories_embedding'"
    ).fetchone()
    return int(row[0])


def flags(admin: psycopg.Connection, tenant: str, subject: str) -> tuple[bool, list[bool]]:
    subject_flag = admin.execute(
        "select ann from pgmem.subjects where tenant_id = %s and subject = %s", (tenant, subject)
    ).fetchone()[0]
    rows = admin.execute(
        "select distinct ann from pgmem.memories where tenant_id = %s and subject = %s",
        (tenant, subject),
    ).fetchall()
    return subject_flag, sorted(r[0] for r in rows)


def top(conn: psycopg.Connection, subject: str, query: Sequence[float]) -> list[int]:
    return [
        r[0]
        for r in conn.execute(
            "select memory_id from pgmem.recall(%s, null, %s::public.vector, p_k => 3,"
            " p_reinforce => false)",
            (subject, literal(query)),
        ).fetchall()
    ]


def test_only_subjects_over_the_exact_scan_limit_enter_the_hnsw_index(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    t = new_tenant()
    admin = db.admin
    admin.execute("update pgmem.settings set exact_scan_limit = 40 where tenant_id = %s", (t.name,))
    rng = random.Random(12)
    small = [unit(rng) for _ in range(30)]
    big = [unit(rng) for _ in range(41)]

    before = hnsw_bytes(admin)
    assert [a for a, _ in remember_many(t.conn, "small", small, "small note")] == ["inserted"] * 30
    # A small subject never enters the index: its writes leave it untouched.
    assert hnsw_bytes(admin) == before
    assert flags(admin, t.name, "small") == (False, [False])

    # 40 rows is the limit itself: still exact. The 41st crosses it, through
    # the one-by-one path, and takes the subject's rows into the index.
    remember_many(t.conn, "big", big[:40], "big note")
    assert flags(admin, t.name, "big") == (False, [False])
    assert hnsw_bytes(admin) == before
    action, big_last = t.conn.execute(
        "select action, memory_id from pgmem.remember('big', 'big note 40', %s::real[])",
        (big[40],),
    ).fetchone()
    assert action == "inserted"
    assert flags(admin, t.name, "big") == (True, [True])
    assert hnsw_bytes(admin) > before
    # A batch crosses it too: 39 rows and two more.
    mid = [unit(rng) for _ in range(41)]
    remember_many(t.conn, "mid", mid[:39], "mid note")
    assert flags(admin, t.name, "mid") == (False, [False])
    remember_many(t.conn, "mid", mid[39:], "mid later note")
    assert flags(admin, t.name, "mid") == (True, [True])
    # Rows written later copy the flag (set-based and one by one).
    extra = [unit(rng) for _ in range(3)]
    remember_many(t.conn, "big", extra[:2], "later note")
    t.conn.execute("select pgmem.remember('big', 'last note', %s::real[])", (extra[2],))
    assert flags(admin, t.name, "big") == (True, [True])
    assert flags(admin, t.name, "small") == (False, [False])

    # Recall finds both: the small subject exactly, the big one through HNSW
    # (at 44 rows the planner would rightly sort instead: make sorting look
    # expensive, as test_recall does).
    t.conn.execute("set enable_sort = off")
    scans = hnsw_scans(admin, t.conn)
    assert content(admin, top(t.conn, "small", small[7])[0]) == "small note 7"
    assert hnsw_scans(admin, t.conn) == scans
    assert top(t.conn, "big", big[40])[0] == big_last
    assert content(admin, top(t.conn, "big", big[3])[0]) == "big note 3"
    assert hnsw_scans(admin, t.conn) == scans + 2


def test_stated_turns_cross_the_limit_without_a_count_at_every_write(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    """A stated turn's write reads no neighbours, so nothing counted its subject for
    it: the subject's last count, and the ids drawn since, bound it instead. It is
    counted again only when that bound reaches the limit, flagged on the write that
    crosses it, and a restored row (an old id active again) clears the count."""
    t = new_tenant()
    admin = db.admin
    admin.execute("update pgmem.settings set exact_scan_limit = 40 where tenant_id = %s", (t.name,))
    rng = random.Random(21)

    def say(subject: str, n: int) -> int:
        (memory_id,) = t.conn.execute(
            "select memory_id from pgmem.remember(%s, %s, %s::real[], p_kind => 'episodic',"
            " p_source => 'turn', p_session_id => 's1')",
            (subject, f"{subject} said thing {n}", unit(rng)),
        ).fetchone()
        return int(memory_id)

    def counted(subject: str) -> tuple[int | None, int | None]:
        return admin.execute(
            "select rows_counted, rows_counted_at from pgmem.subjects"
            " where tenant_id = %s and subject = %s",
            (t.name, subject),
        ).fetchone()

    first = say("carol", 0)
    assert counted("carol") == (1, first)
    for n in range(1, 40):
        say("carol", n)
    # 40 rows: the limit itself, and the first count still bounds it (1 + 39 ids).
    assert counted("carol") == (1, first)
    assert flags(admin, t.name, "carol") == (False, [False])
    say("carol", 40)
    assert flags(admin, t.name, "carol") == (True, [True])

    kept = say("dave", 0)
    say("dave", 1)
    assert counted("dave") == (1, kept)
    admin.execute("update pgmem.memories set status = 'archived' where memory_id = %s", (kept,))
    t.conn.execute("select pgmem.restore(%s)", (kept,))
    assert counted("dave") == (None, kept)
    say("dave", 2)
    assert counted("dave")[0] == 3  # counted again: the restored row and two more


def content(admin: psycopg.Connection, memory_id: int) -> str:
    return admin.execute(
        "select content from pgmem.memories where memory_id = %s", (memory_id,)
    ).fetchone()[0]


def test_a_row_past_two_kilobytes_keeps_its_vector_in_line(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    """Past PostgreSQL's default 2,032 bytes a row had its vector moved to the TOAST
    table (the largest column the toaster may move), which every distance then read
    through the TOAST index; with toast_tuple_target at its maximum it stays."""
    t = new_tenant()
    toast = db.admin.execute(
        "select reltoastrelid::regclass::text from pg_class where oid = 'pgmem.memories'::regclass"
    ).fetchone()[0]

    def out_of_line() -> int:
        return db.admin.execute(f"select count(*) from {toast}").fetchone()[0]

    before = out_of_line()
    rng = random.Random(3)
    # Seventy made-up words: the text, its tsvector and its terms all grow, none
    # compresses, and none is as long as the vector.
    words = " ".join(
        "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(8)) for _ in range(70)
    )
    t.conn.execute(
        "select pgmem.remember('alice', %s, %s::real[])", (words, unit(random.Random(4)))
    )
    size = db.admin.execute(
        "select pg_column_size(m.*) from pgmem.memories as m where m.tenant_id = %s",
        (t.name,),
    ).fetchone()[0]
    assert size > 2032
    assert out_of_line() == before


def test_index_subjects_covers_plain_sql_rows_and_a_lowered_limit(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    t = new_tenant()
    rng = random.Random(7)
    remember_many(t.conn, "alice", [unit(rng) for _ in range(12)], "alice note")
    remember_many(t.conn, "bob", [unit(rng) for _ in range(5)], "bob note")
    assert flags(db.admin, t.name, "alice") == (False, [False])
    db.admin.execute(
        "update pgmem.settings set exact_scan_limit = 10 where tenant_id = %s", (t.name,)
    )
    assert t.conn.execute("select pgmem.index_subjects()").fetchone() == (1,)
    assert flags(db.admin, t.name, "alice") == (True, [True])
    assert flags(db.admin, t.name, "bob") == (False, [False])
    # A row inserted by plain SQL into an indexed subject is picked up too.
    db.admin.execute(
        "insert into pgmem.memories (tenant_id, subject, kind, content, embedding)"
        " values (%s, 'alice', 'semantic', 'plain row', %s::public.vector)",
        (t.name, literal(unit(rng))),
    )
    assert flags(db.admin, t.name, "alice") == (True, [False, True])
    assert t.conn.execute("select pgmem.index_subjects()").fetchone() == (0,)
    assert flags(db.admin, t.name, "alice") == (True, [True])


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_DEV.is_file(), reason="LoCoMo dev split not present")
def test_half_precision_ranks_real_text_like_float32(new_tenant: Callable[[], Tenant]) -> None:
    """recall@10 of the stored halfvec vectors against float32 exact cosine, on LoCoMo
    turns and questions embedded by all-MiniLM-L6-v2."""
    import numpy as np

    from pgmem.embed import LocalEmbedder

    [conversation] = ev.load_locomo(SHARED_DEV, limit=1)
    turns = [turn.content() for session in conversation.sessions for turn in session.turns]
    questions = [q.question for q in ev.evaluated_questions(conversation)][:60]
    embedder = LocalEmbedder()
    turn_vectors = np.asarray(embedder.embed(turns), dtype=np.float32)
    question_vectors = np.asarray(embedder.embed(questions), dtype=np.float32)

    t = new_tenant()
    items = [
        {"content": text, "embedding": literal(v)}
        for text, v in zip(turns, turn_vectors, strict=True)
    ]
    stored: dict[int, int] = {}  # memory_id -> index of its turn
    for start in range(0, len(items), 200):
        for item, action, memory_id, _, _ in t.conn.execute(
            "select * from pgmem.remember_many(%s::jsonb, 'conv')",
            (json.dumps(items[start : start + 200]),),
        ).fetchall():
            if action in ("inserted", "merge_pending"):
                stored[memory_id] = start + item - 1
    ids = np.asarray(list(stored))
    matrix = turn_vectors[[stored[i] for i in ids]]
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    overlaps = []
    for q in question_vectors:
        exact = set(ids[np.argsort(-(matrix @ (q / np.linalg.norm(q))), kind="stable")[:10]])
        half = {
            r[0]
            for r in t.conn.execute(
                "select memory_id from pgmem.memories where subject = 'conv' and status = 'active'"
                " order by embedding operator(public.<=>) %s::public.vector, memory_id limit 10",
                (literal(q),),
            ).fetchall()
        }
        overlaps.append(len(exact & half) / 10)
    recall_at_10 = sum(overlaps) / len(overlaps)
    print(f"halfvec recall@10 vs float32 exact: {recall_at_10:.4f} over {len(overlaps)} questions")
    assert len(stored) > 300 and len(overlaps) >= 50
    assert recall_at_10 >= 0.98
