"""The read path: pgmem.recall and pgmem.context against a real database.

Memories are inserted directly (not through pgmem.remember) with fake,
deterministic 384-d vectors, and every call passes p_now so ages are exact.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import pytest
from conftest import half_cosine
from psycopg.rows import dict_row

DIMS = 384
HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)
KIND_HALF_LIFE = {
    "episodic": "half_life_episodic",
    "semantic": "half_life_semantic",
    "preference": "half_life_preference",
    "procedural": "half_life_procedural",
}
CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")

Vector = list[float]


# ---------------------------------------------------------------------- helpers


def vec(*parts: tuple[int, float]) -> Vector:
    """A unit vector from (axis, weight) pairs: deterministic, easy to reason about."""
    v = [0.0] * DIMS
    for axis, weight in parts:
        v[axis] += weight
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def literal(v: Sequence[float] | None) -> str | None:
    return None if v is None else "[" + ",".join(f"{x:.8f}" for x in v) + "]"


class Store:
    """Inserts memories for one tenant connection and calls recall/context."""

    def __init__(self, conn: psycopg.Connection, now: dt.datetime) -> None:
        self.conn = conn
        self.now = now
        self.subjects: set[str] = set()

    def add(
        self,
        content: str,
        *,
        subject: str = "alice",
        kind: str = "semantic",
        embedding: Sequence[float] | None = None,
        importance: float = 0.5,
        last_accessed_at: dt.datetime | None = None,
        valid_from: dt.datetime | None = None,
        created_at: dt.datetime | None = None,
        **columns: Any,
    ) -> int:
        if subject not in self.subjects:
            self.conn.execute(
                "insert into pgmem.subjects (subject) values (%s) on conflict do nothing",
                (subject,),
            )
            self.subjects.add(subject)
        values: dict[str, Any] = {
            "subject": subject,
            "kind": kind,
            "content": content,
            "embedding": literal(embedding),
            "importance": importance,
            "last_accessed_at": last_accessed_at or self.now,
            "valid_from": valid_from or self.now - DAY,
            "created_at": created_at or self.now - DAY,
            **columns,
        }
        names = ", ".join(values)
        marks = ", ".join("%s::public.vector" if k == "embedding" else "%s" for k in values)
        row = self.conn.execute(
            f"insert into pgmem.memories ({names}) values ({marks}) returning memory_id",
            [psycopg.types.json.Jsonb(v) if k == "metadata" else v for k, v in values.items()],
        ).fetchone()
        assert row is not None
        return int(row[0])

    def link(self, from_id: int, to_id: int, link_type: str, weight: float = 1.0) -> None:
        self.conn.execute(
            "insert into pgmem.memory_links (from_id, to_id, link_type, weight)"
            " values (%s, %s, %s, %s)",
            (from_id, to_id, link_type, weight),
        )

    def recall(
        self,
        query: str | None = None,
        embedding: Sequence[float] | None = None,
        *,
        subject: str = "alice",
        reinforce: bool = False,
        **params: Any,
    ) -> list[dict[str, Any]]:
        args = {"p_reinforce": reinforce, "p_now": self.now}
        args.update({f"p_{k}": v for k, v in params.items()})
        if "p_metadata" in args:
            args["p_metadata"] = psycopg.types.json.Jsonb(args["p_metadata"])
        named = "".join(f", {k} => %({k})s" for k in args)
        sql = f"select * from pgmem.recall(%(s)s, %(q)s, %(e)s::public.vector{named})"
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(
                sql, {"s": subject, "q": query, "e": literal(embedding), **args}
            ).fetchall()

    def ids(self, *args: Any, **kwargs: Any) -> list[int]:
        return [r["memory_id"] for r in self.recall(*args, **kwargs)]

    def context(
        self, query: str | None, embedding: Sequence[float] | None = None, **params: Any
    ) -> str:
        args = {"p_now": self.now, **{f"p_{k}": v for k, v in params.items()}}
        named = "".join(f", {k} => %({k})s" for k in args)
        sql = f"select pgmem.context(%(s)s, %(q)s, %(e)s::public.vector{named})"
        row = self.conn.execute(
            sql, {"s": params.get("subject", "alice"), "q": query, "e": literal(embedding), **args}
        ).fetchone()
        assert row is not None
        return str(row[0])

    def access(self, memory_id: int) -> tuple[int, dt.datetime]:
        """The memory's accesses as the API reads them: folded and recorded since."""
        row = self.conn.execute(
            "select access_count, last_accessed_at from pgmem.get_memory(%s)", (memory_id,)
        ).fetchone()
        assert row is not None
        return int(row[0]), row[1]


@pytest.fixture
def now(admin: psycopg.Connection) -> dt.datetime:
    row = admin.execute("select date_trunc('second', now())").fetchone()
    assert row is not None
    return row[0]


@pytest.fixture
def acme(tenant_login: Callable[[str], psycopg.Connection], now: dt.datetime) -> Store:
    return Store(tenant_login("acme"), now)


def settings(admin: psycopg.Connection, tenant: str) -> dict[str, Any]:
    with admin.cursor(row_factory=dict_row) as cur:
        row = cur.execute("select * from pgmem.settings where tenant_id = %s", (tenant,)).fetchone()
    assert row is not None
    return row


def set_settings(admin: psycopg.Connection, tenant: str, **values: Any) -> None:
    assignments = ", ".join(f"{k} = %s" for k in values)
    admin.execute(
        f"update pgmem.settings set {assignments} where tenant_id = %s", [*values.values(), tenant]
    )


def expected_parts(
    row: dict[str, Any], s: dict[str, Any], now: dt.datetime
) -> tuple[float, float, float]:
    """recency, access boost and score from the returned parts and the settings."""
    if row["pinned"]:
        recency = 1.0
    else:
        half_life_hours = s[KIND_HALF_LIFE[row["kind"]]].total_seconds() / 3600
        hours = max(0.0, (now - row["last_accessed_at"]).total_seconds() / 3600)
        recency = math.exp(-(math.log(2) / half_life_hours) * hours)
    boost = min(1.0, math.log(1 + row["access_count"]) / math.log(101))
    score = (
        s["w_relevance"] * row["relevance"]
        + s["w_importance"] * row["importance"]
        + s["w_recency"] * recency
        + s["w_access"] * boost
    ) * s["ripple_damping"] ** row["hops"]
    return recency, boost, score


def estimate_tokens(text: str) -> int:
    cjk = len(CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


# ---------------------------------------------------------------------- scoring


def test_score_parts_follow_the_formula_and_the_tenant_settings(
    acme: Store, admin: psycopg.Connection, now: dt.datetime
) -> None:
    set_settings(
        admin,
        "acme",
        w_relevance=0.5,
        w_importance=0.3,
        w_recency=0.15,
        w_access=0.1,
        half_life_semantic="10 days",
        half_life_episodic="2 days",
    )
    query = vec((0, 1.0))
    rows_in = [
        (
            "I grind coffee beans every morning",
            "semantic",
            vec((0, 1.0), (1, 0.3)),
            0.9,
            3 * DAY,
            7,
        ),
        ("Coffee shop visit with Bob", "episodic", vec((0, 0.5), (2, 1.0)), 0.4, 10 * HOUR, 0),
        ("Tea is fine too", "preference", vec((0, 0.2), (3, 1.0)), 0.7, 40 * DAY, 150),
        ("Weekly plan: buy beans", "procedural", vec((4, 1.0)), 0.2, 400 * DAY, 1),
        ("Pinned coffee note", "semantic", vec((0, 1.0), (5, 1.0)), 0.6, 900 * DAY, 2),
    ]
    embeddings = {}
    for content, kind, emb, importance, age, count in rows_in:
        memory_id = acme.add(
            content,
            kind=kind,
            embedding=emb,
            importance=importance,
            last_accessed_at=now - age,
            access_count=count,
            pinned=content.startswith("Pinned"),
        )
        embeddings[memory_id] = emb
    s = settings(admin, "acme")
    rows = acme.recall("coffee beans", query)
    assert len(rows) == len(rows_in)
    # Query lexemes: coffe (in 3 of the 5 memories) and bean (in 2); each
    # weighs its idf, ln(1 + (N + 1) / (df + 1)), in the share of terms matched.
    idf = {"coffe": math.log(1 + 6 / 4), "bean": math.log(1 + 6 / 3)}
    held = {
        "I grind coffee beans every morning": ("coffe", "bean"),
        "Coffee shop visit with Bob": ("coffe",),
        "Tea is fine too": (),
        "Weekly plan: buy beans": ("bean",),
        "Pinned coffee note": ("coffe",),
    }
    coverage = {c: sum(idf[t] for t in terms) / sum(idf.values()) for c, terms in held.items()}
    for row in rows:
        # Stored and compared in half precision (halfvec).
        similarity = max(0.0, half_cosine(embeddings[row["memory_id"]], query))
        assert row["similarity"] == pytest.approx(similarity, abs=1e-5)
        assert row["text_match"] == pytest.approx(coverage[row["content"]], abs=1e-6)
        w = s["w_vector"]
        assert row["relevance"] == pytest.approx(
            w * similarity + (1 - w) * coverage[row["content"]], abs=1e-5
        )
        recency, boost, score = expected_parts(row, s, now)
        assert row["recency"] == pytest.approx(recency, rel=1e-5, abs=1e-7)
        assert row["access_boost"] == pytest.approx(boost, abs=1e-6)
        assert row["score"] == pytest.approx(score, abs=1e-5)
        assert 0 <= row["relevance"] <= 1 and 0 <= row["recency"] <= 1
        assert row["hops"] == 0 and row["via_memory_id"] is None
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    assert {r["content"]: r["access_boost"] for r in rows}["Tea is fine too"] == 1.0
    # Only the text or only the vector: relevance is that part alone.
    for row in acme.recall("coffee beans"):
        assert row["relevance"] == pytest.approx(row["text_match"]) and row["similarity"] is None
    for row in acme.recall(None, query):
        assert row["relevance"] == pytest.approx(row["similarity"]) and row["text_match"] is None


def test_pinned_memories_keep_full_recency(acme: Store, now: dt.datetime) -> None:
    pinned = acme.add("pinned fact about rust", pinned=True, last_accessed_at=now - 3650 * DAY)
    plain = acme.add("plain fact about rust", last_accessed_at=now - 3650 * DAY)
    rows = {r["memory_id"]: r for r in acme.recall("rust")}
    assert rows[pinned]["recency"] == 1.0
    assert rows[plain]["recency"] < 1e-6
    assert rows[pinned]["score"] > rows[plain]["score"]


# ---------------------------------------------------------------------- text only


def test_text_only_recall_in_english_ranks_by_matched_terms(
    acme: Store, admin: psycopg.Connection
) -> None:
    best = acme.add("Alice's favourite coffee beans come from Ethiopia")
    some = acme.add("Alice drinks coffee every morning")
    acme.add("The weather in Paris is mild")
    # One term of three is short of the text floor raised towards the full match.
    assert acme.ids("favourite coffee beans") == [best]
    set_settings(admin, "acme", relative_floor=0)
    assert acme.ids("favourite coffee beans") == [best, some]
    rows = acme.recall("Which coffee beans are her favourite?")
    assert rows[0]["memory_id"] == best and rows[0]["text_match"] == 1.0
    assert acme.recall("the and of") == []  # stop words only: nothing to match, nothing ranked high


def test_a_compound_word_matches_as_a_whole_term(acme: Store, admin: psycopg.Connection) -> None:
    # "self-driving" is the lexemes self-driv, self and drive: each term is
    # matched whole, not parsed again ('self-driv' <-> 'self' <-> 'driv', which
    # no memory holds), so a memory holding the phrase holds every term.
    whole = acme.add("Caroline bought a self-driving car")
    parts = acme.add("Caroline drives herself to work")
    set_settings(admin, "acme", relative_floor=0)  # the partial match stays to be measured
    rows = {r["memory_id"]: r for r in acme.recall("self-driving")}
    assert rows[whole]["text_match"] == 1.0
    assert rows[parts]["text_match"] < 1.0


def test_text_only_recall_in_chinese(acme: Store) -> None:
    coffee = acme.add("我每天早上都喜欢喝咖啡", kind="preference")
    beijing = acme.add("北京的天气很好")
    tea = acme.add("他下午喝茶")
    assert acme.ids("咖啡") == [coffee]
    assert acme.ids("北京天气怎么样")[0] == beijing
    assert acme.ids("喜欢喝什么")[0] == coffee
    assert tea in acme.ids("喝茶")
    mixed = acme.add("Alice 喜欢 espresso 咖啡")
    assert acme.ids("espresso 咖啡")[0] == mixed


def test_recall_with_neither_text_nor_embedding_ranks_by_importance_and_recency(
    acme: Store,
) -> None:
    low = acme.add("low", importance=0.1)
    high = acme.add("high", importance=0.9)
    rows = acme.recall(None)
    assert [r["memory_id"] for r in rows] == [high, low]
    assert all(r["relevance"] == 0 for r in rows)


# ---------------------------------------------------------------------- filters


def test_filters_kinds_session_time_metadata_and_min_score(acme: Store, now: dt.datetime) -> None:
    e = vec((0, 1.0))
    old = acme.add(
        "project alpha kickoff",
        kind="episodic",
        session_id="s1",
        created_at=now - 30 * DAY,
        valid_from=now - 30 * DAY,  # the event time, which since/until read
        metadata={"project": "alpha", "tags": ["work"]},
        embedding=e,
        importance=0.2,
    )
    recent = acme.add(
        "project alpha review",
        kind="episodic",
        session_id="s2",
        created_at=now - 2 * DAY,
        valid_from=now - 2 * DAY,  # the event time, which since/until read
        metadata={"project": "alpha"},
        embedding=e,
    )
    fact = acme.add(
        "project alpha uses postgres",
        kind="semantic",
        session_id="s2",
        created_at=now - 10 * DAY,
        valid_from=now - 10 * DAY,  # the event time, which since/until read
        metadata={"project": "beta"},
        embedding=e,
        importance=0.8,
    )
    everything = {old, recent, fact}
    assert set(acme.ids("project alpha", e)) == everything
    assert set(acme.ids("project alpha", e, kinds=["episodic"])) == {old, recent}
    assert set(acme.ids("project alpha", e, kinds=["semantic", "procedural"])) == {fact}
    assert set(acme.ids("project alpha", e, session_id="s2")) == {recent, fact}
    assert set(acme.ids("project alpha", e, since=now - 15 * DAY)) == {recent, fact}
    assert set(acme.ids("project alpha", e, until=now - 10 * DAY)) == {old}
    assert set(acme.ids("project alpha", e, since=now - 40 * DAY, until=now - 5 * DAY)) == {
        old,
        fact,
    }
    assert set(acme.ids("project alpha", e, metadata={"project": "alpha"})) == {old, recent}
    assert set(acme.ids("project alpha", e, metadata={"tags": ["work"]})) == {old}
    # The same filters hold on the text-only path.
    assert set(acme.ids("project alpha", kinds=["episodic"], session_id="s1")) == {old}
    scores = sorted(r["score"] for r in acme.recall("project alpha", e))
    threshold = (scores[0] + scores[1]) / 2
    kept = acme.recall("project alpha", e, min_score=threshold)
    assert len(kept) == 2 and all(r["score"] >= threshold for r in kept)
    # The threshold compares in the score's own precision (real): a score
    # read back from recall passes a min_score equal to it.
    assert len(acme.recall("project alpha", e, min_score=scores[1])) == 2
    assert acme.recall("project alpha", e, min_score=5.0) == []
    assert len(acme.recall("project alpha", e, k=1)) == 1


def test_as_of_returns_the_fact_valid_then(acme: Store, now: dt.datetime) -> None:
    e = vec((7, 1.0))
    old = acme.add(
        "Alice lives in Paris",
        embedding=e,
        valid_from=now - 300 * DAY,
        valid_to=now - 30 * DAY,
        status="superseded",
        created_at=now - 300 * DAY,
    )
    new = acme.add(
        "Alice lives in Berlin", embedding=e, valid_from=now - 30 * DAY, created_at=now - 30 * DAY
    )
    acme.link(new, old, "supersedes")
    future = acme.add("Alice will live in Rome", embedding=e, valid_from=now + 10 * DAY)
    assert acme.ids("where does Alice live", e) == [new]
    then = acme.recall("where does Alice live", e, as_of=now - 100 * DAY)
    assert [r["memory_id"] for r in then] == [old]
    assert then[0]["status"] == "superseded"
    assert acme.ids("Paris") == []  # superseded facts are history, not the present
    assert acme.ids("Paris", as_of=now - 100 * DAY) == [old]
    # At the switch-over instant the new fact holds (valid_to is exclusive).
    assert acme.ids("Alice", e, as_of=now - 30 * DAY) == [new]
    assert acme.ids("Alice", e, as_of=now + 20 * DAY) == [future, new] or set(
        acme.ids("Alice", e, as_of=now + 20 * DAY)
    ) == {future, new}


def test_expired_memories_are_hidden(acme: Store, now: dt.datetime) -> None:
    # (Not door codes: those are redacted, and two of them would be one text.)
    gone = acme.add("parking spot is B12", expires_at=now - HOUR)
    kept = acme.add("parking spot is C34", expires_at=now + HOUR)
    forever = acme.add("parking spot story")
    assert set(acme.ids("parking spot")) == {kept, forever}
    assert gone not in acme.ids("parking spot", as_of=now - DAY)
    for status in ("archived", "deleted", "merged"):
        acme.add(f"parking spot {status}", status=status)
    assert set(acme.ids("parking spot")) == {kept, forever}


# ---------------------------------------------------------------------- ripple and MMR


def test_ripple_recall_follows_links_both_ways_with_damping(
    acme: Store, admin: psycopg.Connection, now: dt.datetime
) -> None:
    set_settings(admin, "acme", ripple_damping=0.4)
    s = settings(admin, "acme")
    hit = acme.add("Alice adopted a cat named Miso")
    first = acme.add("The vet appointment is on Friday", kind="episodic")
    second = acme.add("Bring the blue carrier box", kind="procedural")
    third = acme.add("The carrier is in the garage")
    outsider = acme.add("Unrelated note about taxes")
    other_subject = acme.add("Bob's vet is Dr. Kim", subject="bob")
    acme.link(hit, first, "same_session", weight=0.8)
    acme.link(second, first, "derived_from")  # reached backwards from `first`
    acme.link(third, second, "same_entity")
    acme.link(first, other_subject, "same_entity")  # other subjects are never returned
    assert acme.ids("cat Miso") == [hit]
    rows = {r["memory_id"]: r for r in acme.recall("cat Miso", hops=2)}
    assert set(rows) == {hit, first, second}
    assert (rows[first]["hops"], rows[first]["via_memory_id"], rows[first]["via_link"]) == (
        1,
        hit,
        "same_session",
    )
    assert (rows[second]["hops"], rows[second]["via_memory_id"]) == (2, first)
    assert rows[first]["relevance"] == pytest.approx(rows[hit]["relevance"] * 0.8)
    assert rows[second]["relevance"] == pytest.approx(rows[first]["relevance"])
    for row in rows.values():
        assert row["score"] == pytest.approx(expected_parts(row, s, now)[2], abs=1e-5)
    assert rows[second]["score"] < rows[first]["score"] < rows[hit]["score"]
    assert {r["memory_id"] for r in acme.recall("cat Miso", hops=3)} == {hit, first, second, third}
    assert outsider not in rows and other_subject not in rows
    # Filters apply to ripple rows; walking passes through filtered-out kinds.
    assert {r["memory_id"] for r in acme.recall("cat Miso", hops=2, kinds=["semantic"])} == {hit}
    assert {
        r["memory_id"] for r in acme.recall("cat Miso", hops=2, kinds=["semantic", "procedural"])
    } == {hit, second}


def test_mmr_picks_a_diverse_set_among_near_duplicates(acme: Store) -> None:
    query = vec((0, 1.0))
    a1 = acme.add("espresso order one", embedding=vec((0, 1.0), (1, 0.05)), importance=0.9)
    a2 = acme.add("espresso order two", embedding=vec((0, 1.0), (1, 0.06)), importance=0.9)
    a3 = acme.add("espresso order three", embedding=vec((0, 1.0), (1, 0.07)), importance=0.9)
    b = acme.add("cappuccino habit", embedding=vec((0, 0.7), (2, 0.7)), importance=0.5)
    plain = acme.ids(None, query, k=2)
    assert set(plain) <= {a1, a2, a3} and len(plain) == 2
    diverse = acme.ids(None, query, k=2, mmr_lambda=0.5)
    assert diverse[0] in {a1, a2, a3} and b in diverse
    assert acme.ids(None, query, k=2, mmr_lambda=1.0) == plain
    assert set(acme.ids(None, query, k=4, mmr_lambda=0.3)) == {a1, a2, a3, b}


# ---------------------------------------------------------------------- reinforcement


def test_reinforcement_counts_each_returned_memory_once(acme: Store, now: dt.datetime) -> None:
    e = vec((3, 1.0))
    before = now - 20 * DAY
    hit_a = acme.add("garden tomatoes", embedding=e, last_accessed_at=before, access_count=4)
    hit_b = acme.add("garden roses", embedding=e, last_accessed_at=before)
    linked = acme.add("compost bin location", last_accessed_at=before)
    missed = acme.add("tax return deadline", embedding=vec((9, 1.0)), last_accessed_at=before)
    acme.link(hit_a, linked, "same_entity")
    rows = acme.recall("garden", reinforce=True, hops=1)
    assert {r["memory_id"] for r in rows} == {hit_a, hit_b, linked}
    # Returned values are the ones the ranking used (before this access).
    assert {r["memory_id"]: r["access_count"] for r in rows}[hit_a] == 4
    assert acme.access(hit_a) == (5, now)
    assert acme.access(hit_b) == (1, now)
    assert acme.access(linked) == (1, now)
    assert acme.access(missed) == (0, before)
    acme.recall("garden", reinforce=False)
    assert acme.access(hit_a) == (5, now)
    # Default is to reinforce.
    acme.conn.execute("select count(*) from pgmem.recall('alice', 'garden', p_now => %s)", (now,))
    assert acme.access(hit_b) == (2, now)


def test_recall_without_reinforcement_runs_in_a_read_only_transaction(acme: Store) -> None:
    acme.add("read only works")
    with acme.conn.transaction():
        acme.conn.execute("set transaction read only")
        assert len(acme.recall("read only")) == 1
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            acme.recall("read only", reinforce=True)


def test_recorded_accesses_rank_as_if_written_into_the_memories(
    tenant_login: Callable[[str], psycopg.Connection], now: dt.datetime
) -> None:
    """Recall records its accesses and a job folds them in later: every answer
    in between is the one an update in place gave. Two tenants hold the same
    memories and are asked the same questions; one folds after every recall,
    the other never until the end."""
    recorded, folded = Store(tenant_login("recorded"), now), Store(tenant_login("folded"), now)
    rng = random.Random(30)
    # Memories of a topic tie on relevance and importance: recency and access
    # counts decide, at every stage of the ranking (k = 1 keeps two candidates).
    spec = [
        (f"note {i} about topic {i % 4}, word{i}", vec((i % 4, 1.0)), 0.5,
         now - rng.uniform(0, 300) * DAY, rng.choice([0, 0, 1, 5]))
        for i in range(16)
    ]  # fmt: skip
    for store in (recorded, folded):
        for content, e, importance, accessed, count in spec:
            store.add(content, embedding=e, importance=importance, last_accessed_at=accessed,
                      access_count=count)  # fmt: skip
    columns = ("content", "score", "recency", "access_boost", "access_count", "last_accessed_at")
    for step in range(40):
        # A memory asked for by its own word, or a topic: the memories of the
        # topic reached last rank first from then on.
        word, topic, k = rng.randrange(16), rng.randrange(4), rng.choice([1, 1, 2, 3])
        query = (
            (f"word{word}", None, 1)
            if rng.random() < 0.4
            else (f"topic {topic}", vec((topic, 1.0)), k)
        )
        recorded.now = folded.now = now + step * rng.uniform(1, 30) * HOUR
        answers = []
        for store in (recorded, folded):
            rows = store.recall(query[0], query[1], reinforce=True, k=query[2])
            answers.append([tuple(r[c] for c in columns) for r in rows])
        folded.conn.execute("select pgmem.fold_accesses()")
        assert answers[0] == answers[1], step
    reads = "select content, access_count, last_accessed_at from pgmem.list_memories() order by 1"
    assert recorded.conn.execute(reads).fetchall() == folded.conn.execute(reads).fetchall()
    profile = "select content, access_count from pgmem.profile('alice', %s)"
    assert (
        recorded.conn.execute(profile, (recorded.now,)).fetchall()
        == folded.conn.execute(profile, (folded.now,)).fetchall()
    )
    # The memories themselves were not written: the accesses wait in their table.
    table = "select content, access_count, last_accessed_at from pgmem.memories order by 1"
    assert recorded.conn.execute(table).fetchall() != folded.conn.execute(table).fetchall()
    waiting = recorded.conn.execute("select count(*) from pgmem.memory_accesses").fetchone()
    assert waiting == (40,)
    assert recorded.conn.execute("select pgmem.fold_accesses()").fetchone()[0] > 0  # type: ignore[index]
    assert recorded.conn.execute(table).fetchall() == folded.conn.execute(table).fetchall()
    assert recorded.conn.execute("select count(*) from pgmem.memory_accesses").fetchone() == (0,)


def test_a_recall_neither_waits_for_nor_loses_a_row_a_writer_holds(
    acme: Store, admin: psycopg.Connection, now: dt.datetime
) -> None:
    mid = acme.add("locked note about the garden", embedding=vec((3, 1.0)))
    with admin.transaction():
        admin.execute("select from pgmem.memories where memory_id = %s for update", (mid,))
        acme.conn.execute("set lock_timeout = '2s'")
        rows = acme.recall("garden", reinforce=True)
        assert [r["memory_id"] for r in rows] == [mid]
        assert acme.access(mid) == (1, now)
        # The fold passes over the held row and keeps its access for the next one.
        assert acme.conn.execute("select pgmem.fold_accesses()").fetchone() == (0,)
        assert acme.access(mid) == (1, now)
    assert acme.conn.execute("select pgmem.fold_accesses()").fetchone() == (1,)
    stored = acme.conn.execute(
        "select access_count, last_accessed_at from pgmem.memories where memory_id = %s", (mid,)
    ).fetchone()
    assert stored == (1, now)
    assert acme.conn.execute("select count(*) from pgmem.memory_accesses").fetchone() == (0,)


def test_archive_and_merge_count_accesses_not_folded_yet(acme: Store, now: dt.datetime) -> None:
    old = now - 400 * DAY
    recalled = acme.add("weak note about the garden", embedding=vec((3, 1.0)), importance=0.1,
                        last_accessed_at=old, kind="episodic")  # fmt: skip
    forgotten = acme.add("weak note about taxes", embedding=vec((9, 1.0)), importance=0.1,
                         last_accessed_at=old, kind="episodic")  # fmt: skip
    rows = acme.recall("garden", vec((3, 1.0)), reinforce=True, k=1)
    assert [r["memory_id"] for r in rows] == [recalled]
    archived = acme.conn.execute("select weak from pgmem.archive(%s)", (now,)).fetchone()
    assert archived == (1,)
    statuses = dict(
        acme.conn.execute(
            "select memory_id, status from pgmem.memories where memory_id = any(%s)",
            ([recalled, forgotten],),
        ).fetchall()
    )
    assert statuses == {recalled: "active", forgotten: "archived"}
    # Archive folded the access in before it scored.
    assert acme.conn.execute(
        "select access_count from pgmem.memories where memory_id = %s", (recalled,)
    ).fetchone() == (1,)

    keep = acme.add("Alice grows tomatoes", embedding=vec((5, 1.0)), access_count=2)
    other = acme.add("Alice grows tomatoes in pots", embedding=vec((5, 1.0), (6, 0.1)))
    acme.recall("tomatoes pots", vec((5, 1.0), (6, 0.1)), reinforce=True, k=1)
    acme.conn.execute("select pgmem.merge(%s, %s, p_now => %s)", (keep, other, now))
    assert acme.access(keep) == (3, now)


def test_accesses_stay_in_their_tenant_and_go_with_their_subject(
    acme: Store, tenant_login: Callable[[str], psycopg.Connection], admin: psycopg.Connection
) -> None:
    alice = acme.add("alice likes the garden", embedding=vec((3, 1.0)))
    bob = acme.add("bob likes the garden", embedding=vec((3, 1.0)), subject="bob")
    acme.recall("garden", reinforce=True)
    acme.recall("garden", subject="bob", reinforce=True)
    other = tenant_login("other")
    assert other.execute("select count(*) from pgmem.memory_accesses").fetchone() == (0,)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        other.execute(
            "insert into pgmem.memory_accesses (tenant_id, subject, memory_ids, accessed_at)"
            " values ('acme', 'alice', %s, now())",
            ([alice],),
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        other.execute("delete from pgmem.memory_accesses")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        other.execute("select pgmem.fold_accesses('acme')")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        acme.conn.execute("delete from pgmem.memory_accesses")
    # Another tenant's fold touched nothing of acme's.
    assert acme.access(alice)[0] == acme.access(bob)[0] == 1
    acme.conn.execute("select pgmem.erase_subject('alice')")
    subjects = "select subject from pgmem.memory_accesses where tenant_id = 'acme'"
    assert admin.execute(subjects).fetchall() == [("bob",)]
    admin.execute("select pgmem.drop_tenant('acme')")
    assert admin.execute(subjects).fetchall() == []


# ---------------------------------------------------------------------- tenancy


def test_tenants_never_see_each_others_memories(
    tenant_login: Callable[[str], psycopg.Connection], now: dt.datetime
) -> None:
    a = Store(tenant_login("acme"), now)
    b = Store(tenant_login("globex"), now)
    e = vec((5, 1.0))
    mine = a.add("secret launch date is March", embedding=e)
    theirs = b.add("secret launch date is April", embedding=e)
    b.link(theirs, b.add("globex launch party", embedding=e), "same_session")
    assert a.ids("secret launch date", e, hops=3) == [mine]
    assert b.ids("secret launch date", e, k=5)[0] == theirs and mine not in b.ids("secret", e)
    assert a.ids(None, e) == [mine]
    assert "April" not in a.context("launch date")
    # Reinforcement cannot touch the other tenant's rows either.
    a.conn.execute("select pgmem._reinforce(array[%s, %s]::bigint[])", (mine, theirs))
    assert b.access(theirs)[0] == 0


def test_recall_needs_a_tenant(admin: psycopg.Connection) -> None:
    with pytest.raises(psycopg.Error) as exc:
        admin.execute("select * from pgmem.recall('alice', 'anything')")
    assert exc.value.sqlstate == "PM001"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("p_k => 0", "k must be"),
        ("p_hops => 4", "hops must be"),
        ("p_kinds => array['dream']", "unknown memory kind"),
        ("p_mmr_lambda => 1.5", "MMR lambda"),
    ],
)
def test_invalid_arguments_are_rejected(acme: Store, params: str, message: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        acme.conn.execute(f"select * from pgmem.recall('alice', 'x', {params})")


# ---------------------------------------------------------------------- exact and HNSW


def hnsw_scans(admin: psycopg.Connection, session: psycopg.Connection) -> int:
    """Index scans of the HNSW index so far, after flushing the session's counters."""
    session.execute("select pg_stat_force_next_flush()")  # flushed before the reply
    admin.execute("select pg_stat_clear_snapshot()")
    row = admin.execute(
        "select idx_scan from pg_stat_user_indexes where indexrelname = 'memories_embedding'"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_hnsw_path_for_big_subjects_agrees_with_the_exact_scan(
    acme: Store, admin: psycopg.Connection
) -> None:
    # 300 memories in 6 clusters; the other subject fills the index around
    # them. Seeded noise makes every vector distinct and axis 300 is shared,
    # as real embeddings share a mean direction: exact twins and perfectly
    # orthogonal clusters are the cases where an HNSW graph loses its way.
    rng = random.Random(20261129)
    for subject, count in (("alice", 300), ("bob", 300)):
        for i in range(count):
            cluster = i % 6 + (0 if subject == "alice" else 6)
            center = vec((cluster, 1.0), (300, 0.6))
            acme.add(
                f"{subject} note {i}",
                subject=subject,
                embedding=[x + rng.gauss(0, 0.02) for x in center],
            )
    query = [x + rng.gauss(0, 0.02) for x in vec((2, 1.0), (300, 0.6))]
    exact = acme.recall(None, query)
    set_settings(admin, "acme", exact_scan_limit=0)  # every subject may take the index
    # The rows were inserted by plain SQL and the limit lowered: index them.
    assert admin.execute("select pgmem.index_subjects('acme')").fetchone() == (2,)
    # At 300 rows the planner rightly prefers sorting the subject's rows;
    # make sorting look expensive so this test exercises the HNSW scan.
    acme.conn.execute("set enable_sort = off")
    scans_before = hnsw_scans(admin, acme.conn)
    approximate = acme.recall(None, query)
    assert hnsw_scans(admin, acme.conn) > scans_before
    assert len(approximate) == 10
    overlap = {r["memory_id"] for r in exact} & {r["memory_id"] for r in approximate}
    assert len(overlap) >= 9, (
        [(r["memory_id"], r["similarity"], r["content"]) for r in exact],
        [(r["memory_id"], r["similarity"], r["content"]) for r in approximate],
    )
    assert all(r["content"].startswith("alice") for r in approximate)
    # The filter holds on the index path too.
    filtered = acme.recall(None, query, kinds=["episodic"])
    assert filtered == []
    # Hybrid on the index path: text candidates join the vector ones. The
    # subject is counted by the text scan itself, and found over the limit.
    scans_before = hnsw_scans(admin, acme.conn)
    hybrid = acme.recall("alice note 7", query)
    assert hnsw_scans(admin, acme.conn) > scans_before
    assert all(r["text_match"] is not None for r in hybrid)
    acme.conn.execute("reset enable_sort")
    set_settings(admin, "acme", exact_scan_limit=20000)
    exact_hybrid = {r["memory_id"] for r in acme.recall("alice note 7", query)}
    assert len(exact_hybrid & {r["memory_id"] for r in hybrid}) >= 9, (exact_hybrid, hybrid)


def test_the_k_best_are_those_of_ranking_every_candidate(
    acme: Store, admin: psycopg.Connection, now: dt.datetime
) -> None:
    # An exact scan keeps only the k best candidates, by the parts it read,
    # before reading whole rows: the answer must be the first k of ranking
    # every candidate. Every part varies (pinned rows, kinds with other
    # half-lives, access counts, ages, importance, rows with no vector), and
    # the pool covers the subject, so k = 1000 ranks every candidate.
    rng = random.Random(20261201)
    words = ["tea", "coffee", "hiking", "piano", "paris"]
    words += ["budget", "dog", "garden", "chess", "salsa"]
    kinds = list(KIND_HALF_LIFE)
    for i in range(160):
        acme.add(
            f"note {i} about {' and '.join(rng.sample(words, rng.randint(1, 3)))}",
            kind=rng.choice(kinds),
            embedding=None if i % 9 == 0 else [rng.gauss(0, 1) for _ in range(DIMS)],
            importance=round(rng.random(), 2),
            last_accessed_at=now - dt.timedelta(hours=rng.uniform(0, 2000)),
            access_count=rng.choice([0, 0, 1, 3, 20, 150]),
            pinned=rng.random() < 0.1,
        )
    set_settings(admin, "acme", candidate_pool=1000)
    query = [rng.gauss(0, 1) for _ in range(DIMS)]
    fortieth = acme.recall("coffee salsa", query, k=40)[-1]["score"]
    cases: list[tuple[str | None, Vector | None, dict[str, Any]]] = [
        ("tea and hiking in paris", query, {}),
        ("budget", query, {}),
        (None, query, {}),
        ("piano chess", None, {}),
        ("garden dog", query, {"kinds": ["semantic", "episodic"]}),
        # a minimum score that keeps about forty rows
        ("coffee salsa", query, {"min_score": fortieth}),
        ("coffee salsa", query, {"hops": 1}),
    ]
    for text, embedding, params in cases:
        everything = acme.recall(text, embedding, k=1000, **params)
        assert len(everything) > 30, (text, params)
        for k in (1, 7, 10, 30):
            best = acme.recall(text, embedding, k=k, **params)
            assert [(r["memory_id"], r["score"]) for r in best] == [
                (r["memory_id"], r["score"]) for r in everything[:k]
            ], (text, params, k)


# ---------------------------------------------------------------------- context


def test_context_groups_by_kind_within_the_budget(
    acme: Store, admin: psycopg.Connection, now: dt.datetime
) -> None:
    # The recalled sections alone: no core profile ahead of them.
    set_settings(admin, "acme", profile_limit=0)
    pref = acme.add("Alice prefers green tea", kind="preference", importance=0.9)
    acme.add("Alice prefers tea without sugar", kind="preference", importance=0.3)
    fact = acme.add("Alice's tea shop is on Rue Cler", kind="semantic", valid_from=now - 5 * DAY)
    episode = acme.add("Alice tasted oolong tea in Taipei", kind="episodic", importance=0.8)
    how = acme.add("To brew tea: 80°C water, 3 minutes", kind="procedural")
    acme.add("Unrelated: the car needs new tyres", kind="semantic")
    block = acme.context("tea", token_budget=500, reinforce=False)
    headings = [line for line in block.splitlines() if line.startswith("## ")]
    assert headings == ["## Preferences", "## Facts", "## Episodes", "## Procedures"]
    assert "tyres" not in block
    assert f"- [{(now - 5 * DAY).date().isoformat()}] Alice's tea shop is on Rue Cler" in block
    prefs = block.split("## Facts")[0]
    assert prefs.index("green tea") < prefs.index("without sugar")  # most relevant first
    assert estimate_tokens(block) <= 500
    assert acme.access(pref)[0] == 0  # reinforce => false
    # A tight budget keeps the best-scoring lines, in score order, within it.
    ranked = [r["content"] for r in acme.recall("tea")]
    assert ranked[0] == "Alice prefers green tea"
    for budget in (0, 10, 20, 35, 50, 80):
        small = acme.context("tea", token_budget=budget, reinforce=False)
        assert estimate_tokens(small) <= budget
        kept = [line.split("] ", 1)[1] for line in small.splitlines() if line.startswith("- ")]
        assert set(kept) == set(ranked[: len(kept)])
    small = acme.context("tea", token_budget=20)
    assert (
        small
        == "## Preferences\n- [" + (now - DAY).date().isoformat() + "] Alice prefers green tea"
    )
    # Only memories that made it into the block are reinforced.
    assert acme.access(pref)[0] == 1
    assert acme.access(how)[0] == acme.access(episode)[0] == acme.access(fact)[0] == 0


def test_context_counts_cjk_characters_as_tokens(acme: Store, admin: psycopg.Connection) -> None:
    set_settings(admin, "acme", profile_limit=0)  # the recalled lines alone
    for i in range(8):
        # CJK punctuation (here U+FF0C) counts as an ordinary character.
        content = f"我喜欢喝咖啡\uff0c第{i}杯在上午十点左右喝完"
        acme.add(content, kind="preference", importance=0.1 * i)
    block = acme.context("咖啡", token_budget=60, reinforce=False)
    lines = [line for line in block.splitlines() if line.startswith("- ")]
    assert 1 <= len(lines) < 8
    assert estimate_tokens(block) <= 60
    everything = acme.context("咖啡", token_budget=1000, reinforce=False)
    assert len([line for line in everything.splitlines() if line.startswith("- ")]) == 8
    assert acme.context("nothing matches this", reinforce=False) == ""
