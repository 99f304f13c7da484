"""Association links: same_session and same_entity links made by pgmem.remember and
remember_many (a stated turn's after its write, by pgmem.link_episodes), their
per-memory bound, ripple recall over them capped by ripple_limit, pgmem.context's
Related section, and tenant isolation. Every test works in tenants of its own, through
the tenant's login role."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import pytest
from conftest import Db, Tenant
from psycopg.types.json import Jsonb
from typer.testing import CliRunner

from pgmem.cli.app import app

DIMS = 384
NewTenant = Callable[[], Tenant]


def vec(*parts: tuple[int, float]) -> list[float]:
    """A unit vector from (axis, weight) pairs."""
    v = [0.0] * DIMS
    for axis, weight in parts:
        v[axis] += weight
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def remember(
    conn: psycopg.Connection,
    content: str,
    embedding: Sequence[float] | None = None,
    *,
    subject: str = "alice",
    session: str | None = None,
    triple: tuple[str, str, str] | None = None,
    kind: str = "semantic",
) -> int:
    t = triple or (None, None, None)
    row = conn.execute(
        "select action, memory_id"
        " from pgmem.remember(%s, %s, %s::real[], %s, null, %s, %s, %s, %s)",
        (subject, content, embedding, kind, *t, session),
    ).fetchone()
    assert row is not None and row[0] == "inserted", row
    return int(row[1])


def links(conn: psycopg.Connection) -> set[tuple[int, int, str]]:
    rows = conn.execute("select from_id, to_id, link_type from pgmem.memory_links").fetchall()
    return {(int(a), int(b), str(t)) for a, b, t in rows}


def linked(conn: psycopg.Connection, a: int, b: int) -> str | None:
    """The association link type between two memories, whichever way it points."""
    for f, t, kind in links(conn):
        if {f, t} == {a, b}:
            return kind
    return None


def association_counts(conn: psycopg.Connection) -> dict[int, int]:
    rows = conn.execute(
        "select m.memory_id, count(l.*) from pgmem.memories as m"
        " left join pgmem.memory_links as l on (l.from_id = m.memory_id or l.to_id = m.memory_id)"
        "  and l.link_type in ('same_session', 'same_entity')"
        " group by m.memory_id"
    ).fetchall()
    return {int(i): int(n) for i, n in rows}


def set_settings(db: Db, tenant: str, **values: Any) -> None:
    for column, value in values.items():
        db.admin.execute(
            psycopg.sql.SQL("update pgmem.settings set {} = %s where tenant_id = %s").format(
                psycopg.sql.Identifier(column)
            ),
            (value, tenant),
        )


def test_facts_of_one_session_are_linked_same_session(new_tenant: NewTenant) -> None:
    t = new_tenant()
    a = remember(t.conn, "Moved to a flat near the river", vec((0, 1)), session="s1")
    b = remember(t.conn, "Started a new job at the bakery", vec((1, 1)), session="s1")
    c = remember(t.conn, "Owns a grey cat", vec((2, 1)), session="s2")
    d = remember(t.conn, "Bakes bread on Sundays", vec((1, 1), (3, 1)), session="s2")
    assert links(t.conn) == {(b, a, "same_session"), (d, c, "same_session")}
    weights = t.conn.execute("select weight from pgmem.memory_links").fetchall()
    # Orthogonal facts get the floor weight; a weight never leaves (0, 1].
    assert all(0 < w <= 1 for (w,) in weights)
    assert min(w for (w,) in weights) == 0.05


def test_facts_naming_one_entity_are_linked_across_sessions(new_tenant: NewTenant) -> None:
    t = new_tenant()
    sister = remember(
        t.conn,
        "User's sister is Anna",
        vec((0, 1)),
        session="s1",
        triple=("user", "sister", "Anna"),
    )
    city = remember(
        t.conn,
        "Anna lives in Berlin",
        vec((5, 1)),
        session="s2",
        triple=("anna", "lives_in", "Berlin"),
    )
    # Both about the user, nothing else in common: 'user' is no entity.
    job = remember(
        t.conn,
        "User works as a nurse",
        vec((6, 1)),
        session="s3",
        triple=("user", "occupation", "nurse"),
    )
    # A qualified predicate names its entity (opinion_of:berlin), its object is a value.
    opinion = remember(
        t.conn,
        "User loves Berlin",
        vec((7, 1)),
        session="s4",
        triple=("user", "opinion_of:berlin", "likes"),
    )
    assert linked(t.conn, sister, city) == "same_entity"
    assert linked(t.conn, city, opinion) == "same_entity"
    assert linked(t.conn, job, sister) is None and linked(t.conn, job, opinion) is None
    # Shared entity weighs at least half, whatever the vectors say.
    weight = t.conn.execute(
        "select weight from pgmem.memory_links where from_id = %s and to_id = %s", (city, sister)
    ).fetchone()
    assert weight == (0.5,)


def test_link_counts_are_bounded_keeping_the_strongest(db: Db, new_tenant: NewTenant) -> None:
    t = new_tenant()
    # Written without a link budget: three unlinked facts of one session.
    set_settings(db, t.name, max_links_per_memory=0)
    far = remember(t.conn, "far fact", vec((0, 1)), session="s")
    near = remember(t.conn, "near fact", vec((1, 1)), session="s")
    nearest = remember(t.conn, "nearest fact", vec((2, 1)), session="s")
    assert links(t.conn) == set()
    set_settings(db, t.name, max_links_per_memory=2)
    # A new fact of the session keeps its two strongest candidates.
    new = remember(t.conn, "new fact", vec((2, 1), (1, 0.6), (0, 0.1), (7, 1)), session="s")
    assert {i for i in (far, near, nearest) if linked(t.conn, new, i)} == {near, nearest}
    # nearest has one link left; the next fact like it takes it, the one after finds it full.
    second = remember(t.conn, "second fact", vec((2, 1), (5, 1)), session="s")
    assert linked(t.conn, second, nearest) == "same_session"
    third = remember(t.conn, "third fact", vec((2, 1), (6, 1)), session="s")
    assert linked(t.conn, third, nearest) is None
    counts = association_counts(t.conn)
    assert max(counts.values()) == 2 and counts[nearest] == 2, counts
    # Without a budget nothing is linked.
    set_settings(db, t.name, max_links_per_memory=0)
    before = links(t.conn)
    remember(t.conn, "one more fact", vec((9, 1)), session="s")
    assert links(t.conn) == before


def test_a_batch_links_its_facts_in_item_order(new_tenant: NewTenant) -> None:
    t = new_tenant()
    items = [
        {
            "content": "Flew to Lisbon",
            "session_id": "turn-1",
            "kind": "episodic",
            "embedding": vec((0, 1)),
        },
        {
            "content": "Stayed at a hostel",
            "session_id": "turn-1",
            "kind": "episodic",
            "embedding": vec((1, 1)),
        },
        {
            "content": "Tried custard tarts",
            "session_id": "turn-1",
            "kind": "episodic",
            "embedding": vec((2, 1)),
        },
    ]
    rows = t.conn.execute(
        "select item, action, memory_id from pgmem.remember_many(%s, 'alice')", (Jsonb(items),)
    ).fetchall()
    ids = [int(r[2]) for r in rows]
    assert [r[1] for r in rows] == ["inserted"] * 3
    # Every pair of the turn is linked once.
    assert links(t.conn) == {
        (ids[0], ids[1], "same_session"),
        (ids[0], ids[2], "same_session"),
        (ids[1], ids[2], "same_session"),
    }


def stated(conn: psycopg.Connection, content: str, embedding: Sequence[float], session: str) -> int:
    """A stated turn, one write: an episode, linked after its write."""
    row = conn.execute(
        "select action, memory_id from pgmem.remember('alice', %s, %s::real[],"
        " p_kind => 'episodic', p_source => 'turn', p_session_id => %s)",
        (content, list(embedding), session),
    ).fetchone()
    assert row is not None and row[0] == "inserted", row
    return int(row[1])


def pending_from(conn: psycopg.Connection) -> int | None:
    row = conn.execute(
        "select links_pending_from from pgmem.subjects where subject = 'alice'"
    ).fetchone()
    assert row is not None
    return None if row[0] is None else int(row[0])


TURNS = [
    ("Flew to Lisbon", vec((0, 1))),
    ("Stayed at a hostel near the river", vec((0, 0.4), (1, 1))),
    ("Tried custard tarts", vec((2, 1), (1, 0.3))),
    ("The hostel had a rooftop bar", vec((1, 1), (3, 1))),
    ("Lisbon was sunny all week", vec((0, 1), (4, 1))),
]


def test_stated_turns_are_linked_after_their_write_as_one_batch_would_be(
    db: Db, new_tenant: NewTenant
) -> None:
    batch, turns = new_tenant(), new_tenant()
    for t in (batch, turns):
        set_settings(db, t.name, max_links_per_memory=2)
    # The reference: the same memories as facts, one batch, linked in it.
    rows = batch.conn.execute(
        "select action, memory_id from pgmem.remember_many(%s, 'alice') order by item",
        (
            Jsonb(
                [
                    {"content": c, "embedding": e, "kind": "episodic", "session_id": "s1"}
                    for c, e in TURNS
                ]
            ),
        ),
    ).fetchall()
    assert [r[0] for r in rows] == ["inserted"] * len(TURNS)
    position = {int(i): n for n, (_, i) in enumerate(rows)}
    expected = {(position[a], position[b], k) for a, b, k in links(batch.conn)}
    assert len(expected) >= 4  # the bound of two links a memory makes the order matter

    # Stated turns, one write each: no link yet, the subject says where to start.
    ids = [stated(turns.conn, c, e, "s1") for c, e in TURNS]
    assert links(turns.conn) == set()
    assert pending_from(turns.conn) == ids[0]
    counts = turns.conn.execute("select subjects, episodes, links from pgmem.link_episodes()")
    assert counts.fetchone() == (1, len(TURNS), len(expected))
    position = {i: n for n, i in enumerate(ids)}
    assert {(position[a], position[b], k) for a, b, k in links(turns.conn)} == expected
    assert pending_from(turns.conn) is None
    # Nothing left: a second run links nothing.
    again = turns.conn.execute("select subjects, episodes, links from pgmem.link_episodes()")
    assert again.fetchone() == (0, 0, 0)


def test_turns_in_a_batch_wait_for_their_links_and_facts_do_not(new_tenant: NewTenant) -> None:
    t = new_tenant()
    items = [
        {"content": c, "embedding": e, "kind": "episodic", "session_id": "s1", "source": "turn"}
        for c, e in TURNS[:3]
    ]
    rows = t.conn.execute(
        "select memory_id from pgmem.remember_many(%s, 'alice') order by item", (Jsonb(items),)
    ).fetchall()
    turn_ids = [int(i) for (i,) in rows]
    assert links(t.conn) == set() and pending_from(t.conn) == turn_ids[0]
    # A fact of the session links at once, to the turns still waiting too.
    fact = remember(t.conn, "User is travelling in Portugal", vec((0, 1), (5, 1)), session="s1")
    assert {linked(t.conn, fact, i) for i in turn_ids} == {"same_session"}
    # A later turn does not move the mark back: the first unlinked one stays.
    later = stated(t.conn, TURNS[3][0], TURNS[3][1], "s1")
    assert pending_from(t.conn) == turn_ids[0]
    t.conn.execute("select pgmem.link_episodes()")
    assert linked(t.conn, turn_ids[0], turn_ids[1]) == "same_session"
    assert linked(t.conn, later, turn_ids[2]) == "same_session"
    # A turn without a session has nothing to link: no mark.
    t.conn.execute(
        "select pgmem.remember('alice', 'A sessionless turn', p_kind => 'episodic',"
        " p_source => 'turn')"
    )
    assert pending_from(t.conn) is None


def test_linking_turns_skips_a_subject_a_writer_holds(new_tenant: NewTenant) -> None:
    t = new_tenant()
    first = stated(t.conn, TURNS[0][0], TURNS[0][1], "s1")
    with psycopg.connect(t.dsn) as writer:
        # Another session is writing to the subject and holds it until it commits.
        stated(writer, TURNS[1][0], TURNS[1][1], "s1")
        counts = t.conn.execute("select subjects, episodes, links from pgmem.link_episodes()")
        assert counts.fetchone() == (0, 0, 0)
        assert pending_from(t.conn) == first and links(t.conn) == set()
        writer.commit()
    counts = t.conn.execute("select subjects, episodes, links from pgmem.link_episodes()")
    assert counts.fetchone() == (1, 2, 1)
    assert pending_from(t.conn) is None


def test_a_tenant_links_its_own_turns_only(db: Db, new_tenant: NewTenant) -> None:
    a, b = new_tenant(), new_tenant()
    for t in (a, b):
        for c, e in TURNS[:2]:
            stated(t.conn, c, e, "s1")
    try:
        a.conn.execute("select pgmem.link_episodes(p_tenant => %s)", (b.name,))
    except psycopg.errors.InsufficientPrivilege as exc:
        assert b.name in str(exc)
    else:
        raise AssertionError("a tenant linked another tenant's turns")
    assert a.conn.execute("select episodes from pgmem.link_episodes()").fetchone() == (2,)
    assert pending_from(a.conn) is None and pending_from(b.conn) is not None
    assert links(b.conn) == set()
    # The links job links every tenant's.
    run = db.admin.execute("select status, counts from pgmem.run_job('links')").fetchone()
    assert run is not None and run[0] == "ok" and run[1]["episodes"] >= 2, run
    assert pending_from(b.conn) is None and len(links(b.conn)) == 1


def test_the_links_job_visits_only_tenants_whose_turns_wait(db: Db, new_tenant: NewTenant) -> None:
    """Where a run goes tenant by tenant (Citus: a call routed to each tenant's shard,
    every minute), links visits the tenants with a marked subject, not every tenant."""
    waiting, idle = new_tenant(), new_tenant()
    stated(waiting.conn, *TURNS[0], "s1")

    def visited(job: str) -> set[str]:
        rows = db.admin.execute("select t from pgmem._job_tenants(%s) as t", (job,)).fetchall()
        return {r[0] for r in rows}

    assert waiting.name in visited("links") and idle.name not in visited("links")
    assert {waiting.name, idle.name} <= visited("decay")
    waiting.conn.execute("select pgmem.link_episodes()")
    assert waiting.name not in visited("links")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        idle.conn.execute("select pgmem._job_tenants('links')")


def test_a_turn_archived_before_its_links_gets_them_when_restored(
    db: Db, new_tenant: NewTenant
) -> None:
    t = new_tenant()
    first = stated(t.conn, TURNS[0][0], TURNS[0][1], "s1")
    second = stated(t.conn, TURNS[1][0], TURNS[1][1], "s1")
    db.admin.execute("update pgmem.memories set status = 'archived' where memory_id = %s", (first,))
    t.conn.execute("select pgmem.link_episodes()")
    assert links(t.conn) == set() and pending_from(t.conn) is None
    t.conn.execute("select pgmem.restore(%s)", (first,))
    assert linked(t.conn, first, second) == "same_session"
    # Restored again after another archive, a linked turn gains no second link.
    db.admin.execute("update pgmem.memories set status = 'archived' where memory_id = %s", (first,))
    t.conn.execute("select pgmem.restore(%s)", (first,))
    assert len(links(t.conn)) == 1


def test_linking_takes_a_chunk_of_subjects_a_transaction(db: Db, new_tenant: NewTenant) -> None:
    t = new_tenant()

    def turns(subjects: range) -> None:
        items = [
            {
                "subject": f"user-{n:03}",
                "content": c,
                "embedding": e,
                "kind": "episodic",
                "source": "turn",
                "session_id": "s1",
            }
            for n in subjects
            for c, e in TURNS[:2]
        ]
        t.conn.execute("select pgmem.remember_many(%s)", (Jsonb(items),))

    # 101 subjects with two turns each waiting: one more than the job's chunk.
    turns(range(101))
    db.admin.execute("call pgmem.run_scheduled_job('links')")
    # The scheduled job went on, a transaction a chunk, until none waited.
    runs = db.admin.execute(
        "select counts from pgmem.job_runs where job = 'links' order by run_id desc limit 2"
    ).fetchall()
    assert [(r["subjects"], r["waiting"]) for (r,) in runs] == [(1, 0), (100, 1)], runs
    assert len(links(t.conn)) == 101
    # `pgmem maintain` goes on the same way.
    turns(range(101, 202))
    result = CliRunner().invoke(app, ["maintain", "-j", "links", "--dsn", db.dsn, "--json"])
    assert result.exit_code == 0, result.output
    counts = [(r["counts"]["subjects"], r["counts"]["waiting"]) for r in json.loads(result.output)]
    assert counts == [(100, 1), (1, 0)]
    # A caller bounds its own transaction the same way.
    turns(range(202, 205))
    first = t.conn.execute(
        "select subjects, episodes, links, waiting from pgmem.link_episodes(p_limit => 2)"
    ).fetchone()
    assert first == (2, 4, 2, 1)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        t.conn.execute("select pgmem.link_episodes(p_limit => 0)")


def recall_ids(
    conn: psycopg.Connection, query: str, embedding: Sequence[float] | None, **params: Any
) -> list[tuple[int, int]]:
    args = ", ".join(f"p_{k} => %({k})s" for k in params)
    rows = conn.execute(
        f"select memory_id, hops from pgmem.recall('alice', %(q)s, %(e)s::real[]::public.vector,"
        f" p_reinforce => false{', ' + args if args else ''})",
        {"q": query, "e": None if embedding is None else list(embedding), **params},
    ).fetchall()
    return [(int(i), int(h)) for i, h in rows]


def test_ripple_finds_a_same_entity_fact_that_direct_recall_misses(
    new_tenant: NewTenant,
) -> None:
    t = new_tenant()
    sister = remember(
        t.conn,
        "User's sister is Anna",
        vec((0, 1)),
        session="s1",
        triple=("user", "sister", "Anna"),
    )
    city = remember(
        t.conn,
        "Anna lives in Berlin",
        vec((5, 1)),
        session="s2",
        triple=("anna", "lives_in", "Berlin"),
    )
    for i in range(6):
        remember(t.conn, f"Unrelated note {i} about gardening", vec((10 + i, 1)), session=f"g{i}")
    question = vec((0, 1), (20, 0.2))
    direct = recall_ids(t.conn, "where does my sister live", question, k=1)
    assert direct == [(sister, 0)]
    rippled = recall_ids(t.conn, "where does my sister live", question, k=1, hops=1)
    assert (city, 1) in rippled
    via = t.conn.execute(
        "select via_memory_id, via_link from pgmem.recall('alice', 'where does my sister live',"
        " %s::real[]::public.vector, p_k => 1, p_hops => 1, p_reinforce => false)"
        " where memory_id = %s",
        (question, city),
    ).fetchone()
    assert via == (sister, "same_entity")


def test_ripple_rows_are_capped_by_ripple_limit(db: Db, new_tenant: NewTenant) -> None:
    t = new_tenant()
    hit = remember(t.conn, "The quarterly report is due Friday", vec((0, 1)), session="work")
    for i in range(6):
        remember(t.conn, f"Work note {i}", vec((10 + i, 1)), session="work")
    # Text only: the report is the one candidate, so k leaves room for every ripple row.
    rows = recall_ids(t.conn, "quarterly report", None, k=10, hops=1)
    assert rows[0] == (hit, 0)
    assert len([r for r in rows if r[1] > 0]) == 3  # the default ripple_limit
    set_settings(db, t.name, ripple_limit=1)
    rows = recall_ids(t.conn, "quarterly report", None, k=10, hops=1)
    assert len([r for r in rows if r[1] > 0]) == 1
    # ... and never more than k.
    set_settings(db, t.name, ripple_limit=5)
    rows = recall_ids(t.conn, "quarterly report", None, k=2, hops=1)
    assert len([r for r in rows if r[1] > 0]) == 2
    set_settings(db, t.name, ripple_limit=0)
    assert recall_ids(t.conn, "quarterly report", None, k=10, hops=1) == [(hit, 0)]


def test_context_shows_ripple_rows_in_their_own_section(new_tenant: NewTenant) -> None:
    t = new_tenant()
    remember(
        t.conn,
        "User's sister is Anna",
        vec((0, 1)),
        session="s1",
        triple=("user", "sister", "Anna"),
    )
    remember(
        t.conn,
        "Anna lives in Berlin",
        vec((5, 1)),
        session="s2",
        triple=("anna", "lives_in", "Berlin"),
    )
    remember(t.conn, "Went hiking in the Alps", vec((9, 1)), session="s3", kind="episodic")
    question = vec((0, 1))

    def context(hops: int) -> str:
        row = t.conn.execute(
            "select pgmem.context('alice', 'who is my sister', %s::real[]::public.vector,"
            " p_k => 1, p_hops => %s, p_reinforce => false)",
            (question, hops),
        ).fetchone()
        assert row is not None
        return str(row[0])

    plain = context(0)
    assert "User's sister is Anna" in plain and "Berlin" not in plain and "Related" not in plain
    block = context(1)
    facts, related = block.split("\n\n## Related (linked to the memories above)\n")
    assert facts.startswith("## Facts\n") and "User's sister is Anna" in facts
    assert "Anna lives in Berlin" in related and "Anna lives in Berlin" not in facts


def test_links_and_ripple_stay_within_a_tenant(new_tenant: NewTenant) -> None:
    a, b = new_tenant(), new_tenant()
    a1 = remember(
        a.conn,
        "Anna lives in Berlin",
        vec((0, 1)),
        session="shared",
        triple=("anna", "lives_in", "Berlin"),
    )
    a2 = remember(
        a.conn, "Anna plays cello", vec((1, 1)), session="shared", triple=("anna", "plays", "cello")
    )
    b1 = remember(
        b.conn,
        "Anna is the new manager",
        vec((0, 1)),
        session="shared",
        triple=("anna", "role", "manager"),
    )
    assert linked(a.conn, a1, a2) == "same_entity"
    # b's fact has the same session id and entity as a's, and links to neither.
    assert links(b.conn) == set()
    assert all(b1 not in (f, t) for f, t, _ in links(a.conn))
    # b's ripple cannot walk into a's memories.
    rows = recall_ids(b.conn, "Anna", vec((0, 1)), k=5, hops=3)
    assert rows == [(b1, 0)]
