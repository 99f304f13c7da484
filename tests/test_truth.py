"""Memory that stays true: confidence and expiry on every write path, the
contradiction check on close neighbours, the confidence rule of supersession, the
LLM judge applied in SQL, and a judge racing a write on the same subject."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from conftest import Db, Tenant
from psycopg.types.json import Jsonb
from test_extract_llm import FakeLLM, facts_json, fake_llm, llm  # noqa: F401 (fixtures)
from test_remember import remember, remember_many, vec

from pgmem import Memory
from pgmem.embed import LocalEmbedder
from pgmem.extract import LLMExtractor
from pgmem.worker import Worker

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)
Login = Callable[[str], psycopg.Connection]

# (old, new, rule): each contradiction pattern in English and Chinese.
CONTRADICTIONS = [
    ("User likes dark mode", "User now prefers light mode", "antonym"),
    ("我喜欢深色模式", "我现在更喜欢浅色模式", "antonym"),
    ("User prefers short answers", "User wants detailed answers now", "antonym"),
    ("我喜欢简短的回答", "我现在喜欢详细的回答", "antonym"),
    ("User lives in Hangzhou", "User moved to Shanghai", "change"),
    ("我住在杭州", "我搬到上海了", "change"),
    ("User works at Google", "User now works at Microsoft", "change"),
    ("我在阿里巴巴工作", "我跳槽到腾讯了", "change"),
    ("User likes coffee", "User no longer likes coffee", "negation"),
    ("User drinks coffee every day", "User stopped drinking coffee every day", "negation"),
    ("User loves cats", "User hates cats", "negation"),
    ("我喜欢喝咖啡", "我不喜欢喝咖啡了", "negation"),
    ("我喜欢喝咖啡", "我不再喝咖啡了", "negation"),
    ("我吃辣", "我不吃辣", "negation"),
    ("User is 30 years old", "User is 31 years old", "number"),
    ("我今年30岁", "我今年31岁了", "number"),
    ("User's monthly budget is 500 dollars", "User's monthly budget is 800 dollars", "number"),
]

# Pairs no rule may call a contradiction.
COMPATIBLE = [
    ("User likes tea", "User likes coffee"),
    ("User likes dark chocolate", "User likes light meals"),
    ("User lives in Hangzhou", "User lives in Hangzhou with his wife"),
    ("User lives in Hangzhou", "User moved to Hangzhou"),
    ("User likes hiking", "User now prefers light mode"),
    ("fact number 3", "fact number 6"),
    ("我喜欢猫", "我也喜欢狗"),
    ("User has a cat named Tom", "User has a dog"),
    ("User drinks tea every morning", "User no longer drinks coffee every morning"),
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    """The real offline model (all-MiniLM-L6-v2), loaded once."""
    model = LocalEmbedder()
    model.load()
    return model


@pytest.fixture
def acme(new_tenant: Callable[[], Tenant]) -> Tenant:
    return new_tenant()


def row(admin: psycopg.Connection, memory_id: int) -> dict[str, Any]:
    cur = admin.execute("select * from pgmem.memories where memory_id = %s", (memory_id,))
    found = cur.fetchone()
    assert found is not None and cur.description is not None
    return dict(zip([c.name for c in cur.description], found, strict=True))


def active(admin: psycopg.Connection, tenant: str, subject: str = "alice") -> list[str]:
    rows = admin.execute(
        """select content from pgmem.memories
           where tenant_id = %s and subject = %s and status = 'active' order by memory_id""",
        (tenant, subject),
    ).fetchall()
    return [r[0] for r in rows]


def facts(admin: psycopg.Connection, tenant: str, subject: str = "alice") -> list[str]:
    """The active facts: what is true now, without the stated turns (the record)."""
    rows = admin.execute(
        """select content from pgmem.memories
           where tenant_id = %s and subject = %s and status = 'active' and source <> 'turn'
           order by memory_id""",
        (tenant, subject),
    ).fetchall()
    return [r[0] for r in rows]


def turns(admin: psycopg.Connection, tenant: str, subject: str = "alice") -> list[str]:
    """The active stated turns, in the order they were said."""
    rows = admin.execute(
        """select content from pgmem.memories
           where tenant_id = %s and subject = %s and status = 'active' and source = 'turn'
           order by memory_id""",
        (tenant, subject),
    ).fetchall()
    return [r[0] for r in rows]


# ------------------------------------------------------------ confidence and expiry


@pytest.mark.parametrize(
    ("source", "expected"), [("rule", 0.85), ("llm", 0.7), ("sql", 1.0), ("import", 1.0)]
)
def test_confidence_defaults_by_source(acme: Tenant, db: Db, source: str, expected: float) -> None:
    _, memory_id, _, _ = remember(acme.conn, "alice", f"fact from {source}", source=source)
    assert row(db.admin, memory_id)["confidence"] == pytest.approx(expected)


def test_confidence_and_expiry_are_stored_as_given(acme: Tenant, db: Db) -> None:
    _, memory_id, _, _ = remember(
        acme.conn,
        "alice",
        "Dentist appointment on Friday",
        kind="episodic",
        confidence=0.4,
        expires_at=T0 + 3 * DAY,
        valid_from=T0,
        now=T0,
    )
    stored = row(db.admin, memory_id)
    assert stored["confidence"] == pytest.approx(0.4)
    assert stored["expires_at"] == T0 + 3 * DAY


def test_default_ttl_per_kind_and_none_for_preferences(acme: Tenant, db: Db) -> None:
    db.admin.execute(
        "update pgmem.settings set ttl_episodic = '7 days', ttl_semantic = '1 year'"
        " where tenant_id = %s",
        (acme.name,),
    )
    ids = {
        kind: remember(acme.conn, "alice", f"a {kind} fact", kind=kind, valid_from=T0, now=T0)[1]
        for kind in ("episodic", "semantic", "preference", "procedural")
    }
    assert row(db.admin, ids["episodic"])["expires_at"] == T0 + 7 * DAY
    assert row(db.admin, ids["semantic"])["expires_at"] == T0 + 365 * DAY
    assert row(db.admin, ids["preference"])["expires_at"] is None  # a preference never expires
    assert row(db.admin, ids["procedural"])["expires_at"] is None  # ttl_procedural is NULL


def test_expired_fact_leaves_recall_and_is_archived(acme: Tenant, db: Db) -> None:
    _, memory_id, _, _ = remember(
        acme.conn, "alice", "Flight to Berlin on Friday", expires_at=T0 + DAY, valid_from=T0, now=T0
    )
    found = acme.conn.execute(
        "select count(*) from pgmem.recall('alice', 'Berlin flight', p_now => %s)", (T0 + 2 * DAY,)
    ).fetchone()
    assert found == (0,)
    db.admin.execute("select pgmem.archive(%s)", (T0 + 2 * DAY,))
    assert row(db.admin, memory_id)["status"] == "archived"


def test_remember_many_takes_confidence_and_expiry(acme: Tenant, db: Db) -> None:
    rows = remember_many(
        acme.conn,
        [
            {"content": "rule fact", "source": "rule"},
            {"content": "sure fact", "source": "rule", "confidence": 0.95},
            {
                "content": "ends soon",
                "expires_at": (T0 + DAY).isoformat(),
                "valid_from": T0.isoformat(),
            },
        ],
        subject="alice",
    )
    assert [r[1] for r in rows] == ["inserted"] * 3
    assert row(db.admin, rows[0][2])["confidence"] == pytest.approx(0.85)
    assert row(db.admin, rows[1][2])["confidence"] == pytest.approx(0.95)
    assert row(db.admin, rows[2][2])["expires_at"] == T0 + DAY


def test_reinforcing_keeps_the_surer_confidence(acme: Tenant, db: Db) -> None:
    _, memory_id, _, _ = remember(acme.conn, "alice", "likes tea", confidence=0.5)
    action, again, _, _ = remember(acme.conn, "alice", "Likes tea.", confidence=0.9)
    assert (action, again) == ("reinforced", memory_id)
    assert row(db.admin, memory_id)["confidence"] == pytest.approx(0.9)
    rows = remember_many(acme.conn, [{"content": "likes tea", "confidence": 1}], subject="alice")
    assert rows[0][1] == "reinforced"
    assert row(db.admin, memory_id)["confidence"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kw", "code", "arg"),
    [
        ({"confidence": 1.5}, "PM026", "p_confidence"),
        ({"confidence": -0.1}, "PM026", "p_confidence"),
        ({"confidence": float("nan")}, "PM026", "p_confidence"),
        ({"expires_at": T0, "valid_from": T0}, "PM027", "p_expires_at"),
        ({"expires_at": T0 - DAY, "valid_from": T0}, "PM027", "p_expires_at"),
    ],
)
def test_remember_refuses_bad_confidence_and_expiry(
    acme: Tenant, db: Db, kw: dict[str, Any], code: str, arg: str
) -> None:
    with pytest.raises(psycopg.Error) as info:
        remember(acme.conn, "alice", "likes tea", **kw)
    assert info.value.sqlstate == code
    assert arg in (info.value.diag.message_primary or "")
    assert info.value.diag.message_hint
    assert active(db.admin, acme.name) == []


@pytest.mark.parametrize(
    ("items", "code", "arg"),
    [
        ('[{"content": "ok", "confidence": 2}]', "PM026", "p_items[1].confidence"),
        (
            '[{"content": "ok"}, {"content": "ok2", "confidence": "high"}]',
            "PM026",
            "p_items[2].confidence",
        ),
        ('[{"content": "ok", "confidence": 1e400}]', "PM026", "p_items[1].confidence"),
        ('[{"content": "ok", "expires_at": "next friday"}]', "PM027", "p_items[1].expires_at"),
        ('[{"content": "ok", "expires_at": 5}]', "PM027", "p_items[1].expires_at"),
        (
            '[{"content": "ok", "valid_from": "2025-03-01T00:00:00Z",'
            ' "expires_at": "2025-02-01T00:00:00Z"}]',
            "PM027",
            "p_items[1].expires_at",
        ),
    ],
)
def test_remember_many_refuses_bad_confidence_and_expiry(
    acme: Tenant, db: Db, items: str, code: str, arg: str
) -> None:
    with pytest.raises(psycopg.Error) as info:
        acme.conn.execute("select * from pgmem.remember_many(%s::jsonb, 'alice')", (items,))
    assert info.value.sqlstate == code
    assert arg in (info.value.diag.message_primary or "")
    assert active(db.admin, acme.name) == []


def test_enqueue_carries_confidence_and_expiry_to_every_fact(acme: Tenant, db: Db) -> None:
    inbox_id = acme.conn.execute(
        "select pgmem.enqueue('alice', %s, p_occurred_at => %s, p_confidence => 0.6,"
        " p_expires_at => %s)",
        (Jsonb("I prefer dark mode"), T0, T0 + 30 * DAY),
    ).fetchone()
    assert inbox_id is not None
    payload = db.admin.execute(
        "select payload from pgmem.inbox where inbox_id = %s", (inbox_id[0],)
    ).fetchone()
    assert payload is not None
    assert payload[0]["confidence"] == 0.6
    assert datetime.fromisoformat(payload[0]["expires_at"]) == T0 + 30 * DAY
    with pytest.raises(psycopg.Error) as info:
        acme.conn.execute("select pgmem.enqueue('alice', %s, p_confidence => 7)", (Jsonb("hi"),))
    assert info.value.sqlstate == "PM026"


# ------------------------------------------------------------------ contradictions


@pytest.mark.parametrize(("old", "new", "rule"), CONTRADICTIONS)
def test_contradiction_rules_name_each_pattern(db: Db, old: str, new: str, rule: str) -> None:
    assert db.admin.execute("select pgmem.contradiction(%s, %s)", (old, new)).fetchone() == (rule,)


@pytest.mark.parametrize(("old", "new"), COMPATIBLE)
def test_compatible_facts_are_no_contradiction(db: Db, old: str, new: str) -> None:
    assert db.admin.execute("select pgmem.contradiction(%s, %s)", (old, new)).fetchone() == (None,)


@pytest.mark.parametrize(("old", "new", "rule"), CONTRADICTIONS)
def test_remember_keeps_one_truth_with_real_vectors(
    acme: Tenant, db: Db, embedder: LocalEmbedder, old: str, new: str, rule: str
) -> None:
    old_vec, new_vec = embedder.embed([old, new])
    _, old_id, _, _ = remember(acme.conn, "alice", old, old_vec, valid_from=T0, now=T0)
    action, new_id, related, _ = remember(
        acme.conn, "alice", new, new_vec, valid_from=T0 + DAY, now=T0 + DAY
    )
    assert (action, related) == ("superseded", old_id)
    assert active(db.admin, acme.name) == [new]
    closed = row(db.admin, old_id)
    assert (closed["status"], closed["valid_to"]) == ("superseded", T0 + DAY)
    assert db.admin.execute(
        "select from_id, to_id, link_type from pgmem.memory_links where tenant_id = %s",
        (acme.name,),
    ).fetchall() == [(new_id, old_id, "supersedes")]
    assert db.admin.execute(
        """select details ->> 'rule', details ->> 'superseded_by' from pgmem.memory_events
           where tenant_id = %s and memory_id = %s and event = 'supersede'""",
        (acme.name, old_id),
    ).fetchall() == [(rule, str(new_id))]


def test_contradicting_near_duplicate_is_not_absorbed(acme: Tenant, db: Db) -> None:
    # Cosine 0.97, above duplicate_threshold (0.95): before the contradiction check
    # the new truth was absorbed as a duplicate of the old one.
    _, old_id, _, _ = remember(acme.conn, "alice", "User likes dark mode", vec(0), now=T0)
    action, new_id, related, similarity = remember(
        acme.conn, "alice", "User likes light mode", vec(0, 0.97), now=T0 + DAY
    )
    assert (action, related) == ("superseded", old_id)
    assert similarity == pytest.approx(0.97, abs=1e-3)
    assert active(db.admin, acme.name) == ["User likes light mode"]
    # A near-duplicate that agrees, and says nothing more, is still absorbed.
    again = remember(acme.conn, "alice", "The user likes light mode", vec(0, 0.97), now=T0)
    assert again[:2] == ("deduplicated", new_id)


def test_contradicting_near_duplicate_with_real_vectors(
    acme: Tenant, db: Db, embedder: LocalEmbedder
) -> None:
    old, new = "User is vegetarian", "User is not vegetarian"
    old_vec, new_vec = embedder.embed([old, new])
    similarity = sum(a * b for a, b in zip(old_vec, new_vec, strict=True))
    assert similarity >= 0.85  # MiniLM reads them as (near-)duplicates
    remember(acme.conn, "alice", old, old_vec, now=T0)
    action, *_ = remember(acme.conn, "alice", new, new_vec, now=T0 + DAY)
    assert action == "superseded"
    assert active(db.admin, acme.name) == [new]


def test_a_late_contradicting_fact_is_stored_as_history(acme: Tenant, db: Db) -> None:
    _, new_id, _, _ = remember(acme.conn, "alice", "我搬到上海了", valid_from=T0 + DAY, now=T0)
    action, old_id, related, _ = remember(
        acme.conn, "alice", "我住在杭州", valid_from=T0, now=T0 + 2 * DAY
    )
    assert (action, related) == ("outdated", new_id)
    assert active(db.admin, acme.name) == ["我搬到上海了"]
    assert (row(db.admin, old_id)["status"], row(db.admin, old_id)["valid_to"]) == (
        "superseded",
        T0 + DAY,
    )


# ------------------------------------------------------------------ confidence rule


def test_low_confidence_does_not_overturn_a_confident_fact(acme: Tenant, db: Db) -> None:
    _, sure_id, _, _ = remember(acme.conn, "alice", "User is vegetarian", confidence=0.9, now=T0)
    action, doubt_id, related, _ = remember(
        acme.conn,
        "alice",
        "User is not vegetarian",
        source="llm",
        confidence=0.4,
        valid_from=T0 + DAY,
        now=T0 + DAY,
    )
    assert (action, related) == ("disputed", sure_id)
    assert active(db.admin, acme.name) == ["User is vegetarian"]
    doubted = row(db.admin, doubt_id)
    assert (doubted["status"], doubted["confidence"]) == ("superseded", pytest.approx(0.4))
    assert db.admin.execute(
        """select event, details ->> 'reason', details ->> 'rule' from pgmem.memory_events
           where tenant_id = %s and memory_id = %s order by event_id""",
        (acme.name, doubt_id),
    ).fetchall() == [("insert", None, None), ("conflict", "low_confidence", "negation")]
    # A newer, confident statement does replace it.
    action, _, related, _ = remember(
        acme.conn,
        "alice",
        "User is no longer vegetarian",
        source="rule",
        valid_from=T0 + 2 * DAY,
        now=T0 + 2 * DAY,
    )
    assert (action, related) == ("superseded", sure_id)
    assert active(db.admin, acme.name) == ["User is no longer vegetarian"]


def test_low_confidence_replaces_a_fact_no_surer(acme: Tenant, db: Db) -> None:
    remember(acme.conn, "alice", "User likes dark mode", source="llm", confidence=0.3, now=T0)
    action, *_ = remember(
        acme.conn, "alice", "User now prefers light mode", source="llm", confidence=0.4, now=T0
    )
    assert action == "superseded"
    assert db.admin.execute(
        "select pgmem._may_supersede(s, 0.9, 0.69), pgmem._may_supersede(s, 0.9, 0.7),"
        " pgmem._may_supersede(s, 0.5, 0.5) from pgmem.settings as s where tenant_id = %s",
        (acme.name,),
    ).fetchone() == (False, True, True)


# ------------------------------------------------------------ every write path


CASES = [
    ("User likes dark mode", "User now prefers light mode"),
    ("User lives in Hangzhou", "User moved to Shanghai"),
    ("我喜欢深色模式", "我现在更喜欢浅色模式"),
    ("我住在杭州", "我搬到上海了"),
]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_remember_many_keeps_one_truth_in_one_batch_and_across(
    acme: Tenant, db: Db, embedder: LocalEmbedder, old: str, new: str
) -> None:
    old_vec, new_vec = embedder.embed([old, new])
    rows = remember_many(
        acme.conn,
        [{"content": old, "embedding": old_vec}, {"content": new, "embedding": new_vec}],
        subject="alice",
    )
    assert [r[1] for r in rows] == ["inserted", "superseded"]
    assert active(db.admin, acme.name) == [new]
    remember_many(acme.conn, [{"content": old, "embedding": old_vec}], subject="bob", now=T0)
    rows = remember_many(
        acme.conn, [{"content": new, "embedding": new_vec}], subject="bob", now=T0 + DAY
    )
    assert rows[0][1] == "superseded"
    assert active(db.admin, acme.name, "bob") == [new]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_a_batch_crowded_with_look_alikes_still_keeps_one_truth(
    acme: Tenant, db: Db, embedder: LocalEmbedder, old: str, new: str
) -> None:
    """Within a batch an item is checked against its 16 nearest candidates only
    (those sharing a term or attribute, with a marker): 40 negated items that share
    the pair's words but are about other things must not crowd the real pair out."""
    crowd = [f"{old} - not the item number {n} on the list" for n in range(40)]
    texts = [old, *crowd, new]
    items = [
        {"content": text, "embedding": vector}
        for text, vector in zip(texts, embedder.embed(texts), strict=True)
    ]
    rows = remember_many(acme.conn, items, subject="carol", now=T0)
    assert rows[0][1] == "inserted" and rows[-1][1] == "superseded"
    assert old not in active(db.admin, acme.name, "carol")
    assert new in active(db.admin, acme.name, "carol")


@pytest.mark.parametrize(("old", "new"), CASES)
@pytest.mark.parametrize("infer", [False, True])
def test_memory_add_keeps_one_truth(
    tenant_login: Login, embedder: LocalEmbedder, old: str, new: str, infer: bool
) -> None:
    memory = Memory(conn=tenant_login("acme"), embedder=embedder, llm=False)
    said = [
        old.replace("User", "I").replace("lives", "live").replace("likes", "like"),
        new.replace("User", "I"),
    ]
    first = memory.add(said[0], user_id="alice", infer=infer, occurred_at=T0)
    assert first
    memory.add(said[1], user_id="alice", infer=infer, occurred_at=T0 + DAY)
    stored = memory.get_all(user_id="alice")
    true_now = [f["content"] for f in stored if f["source"] != "turn"]
    # Facts keep one truth; infer=False derives none: its texts are records.
    assert len(true_now) == (1 if infer else 0), true_now
    # What was said stays on record, both turns, infer on or off.
    assert sorted(f["content"] for f in stored if f["source"] == "turn") == sorted(said)


@pytest.mark.parametrize(("old", "new"), CASES)
def test_worker_keeps_one_truth(
    dsn: str, tenant_login: Login, embedder: LocalEmbedder, old: str, new: str
) -> None:
    acme = tenant_login("acme")
    for text, at in ((old, T0), (new, T0 + DAY)):
        acme.execute(
            "select pgmem.enqueue('alice', %s, p_occurred_at => %s)",
            (
                Jsonb(text.replace("User", "I").replace("lives", "live").replace("likes", "like")),
                at,
            ),
        )
    Worker(dsn, embedder=embedder, llm=None).run(once=True)
    true_now = acme.execute(
        "select content from pgmem.memories"
        " where subject = 'alice' and status = 'active' and source <> 'turn'"
    ).fetchall()
    assert len(true_now) == 1, true_now
    said = acme.execute(
        "select count(*) from pgmem.memories"
        " where subject = 'alice' and status = 'active' and source = 'turn'"
    ).fetchone()
    assert said == (2,)


@pytest.mark.parametrize(("old", "new"), CASES)
def test_memory_add_with_llm_extraction_keeps_one_truth(
    acme: Tenant,
    db: Db,
    embedder: LocalEmbedder,
    llm: LLMExtractor,
    fake_llm: FakeLLM,
    old: str,
    new: str,
) -> None:
    # The LLM's facts carry no triple: only the contradiction rules can catch them.
    memory = Memory(conn=acme.conn, embedder=embedder, llm=llm, extract_mode="llm")
    for text, at in ((old, T0), (new, T0 + DAY)):
        fake_llm.answer(
            facts_json({"content": text, "kind": "preference", "importance": 6, "confidence": 0.9})
        )
        added = memory.add(f"(turn) {text}", user_id="alice", occurred_at=at)
        assert [a["content"] for a in added if not a.get("episode")] == [text]
    assert facts(db.admin, acme.name) == [new]
    assert turns(db.admin, acme.name) == [f"(turn) {old}", f"(turn) {new}"]


# ----------------------------------------------------------------------- the judge

TEA, COFFEE = "User drinks tea every morning", "User drinks coffee every morning"


def judge_ready(acme: Tenant, db: Db) -> tuple[int, int]:
    """Two close facts no rule decides, and the judge job their write queued."""
    db.admin.execute(
        "update pgmem.settings set judge_conflicts = true where tenant_id = %s", (acme.name,)
    )
    _, old_id, _, _ = remember(acme.conn, "alice", TEA, vec(0), now=T0)
    action, new_id, _, _ = remember(acme.conn, "alice", COFFEE, vec(0, 0.8), now=T0 + DAY)
    assert action == "inserted"
    jobs = db.admin.execute(
        "select payload from pgmem.inbox where tenant_id = %s and job = 'judge'", (acme.name,)
    ).fetchall()
    assert jobs == [({"memory_id": new_id, "related_ids": [old_id]},)]
    return old_id, new_id


def run_judge(
    acme: Tenant, db: Db, embedder: LocalEmbedder, llm: LLMExtractor | None
) -> dict[str, Any]:
    Worker(db.dsn, embedder=embedder, llm=llm, tenant=acme.name).run(once=True)
    done = db.admin.execute(
        "select status, payload -> 'result' from pgmem.inbox"
        " where tenant_id = %s and job = 'judge'",
        (acme.name,),
    ).fetchone()
    assert done is not None and done[0] == "done", done
    return done[1]


@pytest.mark.parametrize(
    ("answer", "survivors", "action"),
    [
        ({"decision": "replace"}, [COFFEE], "superseded"),
        ({"decision": "keep"}, [TEA], "kept"),
        (
            {"decision": "coexist", "labels": {"old": "until 2025", "new": "since 2025"}},
            [TEA, COFFEE],
            "coexisted",
        ),
        (
            {"decision": "merge", "merged": "User drinks coffee, formerly tea, every morning"},
            ["User drinks coffee, formerly tea, every morning"],
            "merged",
        ),
    ],
)
def test_llm_judge_decision_is_applied_in_sql(
    acme: Tenant,
    db: Db,
    embedder: LocalEmbedder,
    llm: LLMExtractor,
    fake_llm: FakeLLM,
    answer: dict[str, Any],
    survivors: list[str],
    action: str,
) -> None:
    old_id, new_id = judge_ready(acme, db)
    fake_llm.answer(json.dumps(answer))
    result = run_judge(acme, db, embedder, llm)
    assert [(a["action"], a["decision"]) for a in result["actions"]] == [
        (action, answer["decision"])
    ]
    assert sorted(active(db.admin, acme.name)) == sorted(survivors)
    assert "OLD" in fake_llm.prompt() and TEA in fake_llm.prompt() and COFFEE in fake_llm.prompt()
    if action == "coexisted":
        assert row(db.admin, old_id)["metadata"] == {"time_label": "until 2025"}
        assert row(db.admin, new_id)["metadata"] == {"time_label": "since 2025"}
    if action == "merged":
        assert row(db.admin, new_id)["status"] == "active"  # the newer row is kept
    if action in ("superseded", "kept"):
        loser, winner = (old_id, new_id) if action == "superseded" else (new_id, old_id)
        assert row(db.admin, loser)["status"] == "superseded"
        assert db.admin.execute(
            "select from_id from pgmem.memory_links where to_id = %s and link_type = 'supersedes'",
            (loser,),
        ).fetchall() == [(winner,)]


def test_llm_judge_replace_respects_the_confidence_rule(
    acme: Tenant, db: Db, embedder: LocalEmbedder, llm: LLMExtractor, fake_llm: FakeLLM
) -> None:
    db.admin.execute(
        "update pgmem.settings set judge_conflicts = true where tenant_id = %s", (acme.name,)
    )
    remember(acme.conn, "alice", "我每天早上喝茶", vec(0), now=T0)
    remember(
        acme.conn,
        "alice",
        "我每天早上喝咖啡",
        vec(0, 0.8),
        source="llm",
        confidence=0.3,
        now=T0 + DAY,
    )
    fake_llm.answer(json.dumps({"decision": "replace"}))
    result = run_judge(acme, db, embedder, llm)
    assert [a["action"] for a in result["actions"]] == ["disputed"]
    assert active(db.admin, acme.name) == ["我每天早上喝茶"]


def test_judge_job_without_an_llm_changes_nothing(
    acme: Tenant, db: Db, embedder: LocalEmbedder
) -> None:
    judge_ready(acme, db)
    result = run_judge(acme, db, embedder, None)
    assert result["actions"] == [] and "no LLM" in result["skipped"]
    assert active(db.admin, acme.name) == [TEA, COFFEE]


def test_resolve_conflict_checks_its_arguments(acme: Tenant) -> None:
    _, a, _, _ = remember(acme.conn, "alice", TEA)
    _, b, _, _ = remember(acme.conn, "bob", COFFEE)
    for args, code in (
        ((a, b, "overrule"), "PM061"),
        ((a, a, "replace"), "PM060"),
        ((a, b, "replace"), "PM060"),
        ((a, 10**12, "replace"), "PM022"),
    ):
        with pytest.raises(psycopg.Error) as info:
            acme.conn.execute("select * from pgmem.resolve_conflict(%s, %s, %s)", args)
        assert info.value.sqlstate == code


def test_merge_without_llm_keeps_the_fact_that_says_all(
    acme: Tenant, db: Db, embedder: LocalEmbedder
) -> None:
    # Cosine 0.9: a merge, not a duplicate; no rule calls them a contradiction.
    _, old_id, _, _ = remember(
        acme.conn, "alice", "User works at Acme in Berlin as an engineer", vec(0), now=T0
    )
    action, new_id, related, _ = remember(
        acme.conn, "alice", "User works at Acme", vec(0, 0.9), now=T0 + DAY
    )
    assert (action, related) == ("merge_pending", old_id)
    Worker(db.dsn, embedder=embedder, llm=None, tenant=acme.name).run(once=True)
    # The newer fact says less: the one that says all of both stays.
    assert active(db.admin, acme.name) == ["User works at Acme in Berlin as an engineer"]
    assert row(db.admin, old_id)["status"] == "active"
    assert row(db.admin, new_id)["status"] == "merged"
    # The newer fact says more: it stays.
    _, acme_id, _, _ = remember(acme.conn, "carol", "User works at Acme", vec(0), now=T0)
    _, more_id, _, _ = remember(
        acme.conn, "carol", "User works at Acme in Paris", vec(0, 0.9), now=T0 + DAY
    )
    Worker(db.dsn, embedder=embedder, llm=None, tenant=acme.name).run(once=True)
    assert active(db.admin, acme.name, "carol") == ["User works at Acme in Paris"]
    assert row(db.admin, acme_id)["status"] == "merged"
    assert row(db.admin, more_id)["status"] == "active"
    # Not when the newer fact is less sure than the rule allows.
    _, sure_id, _, _ = remember(acme.conn, "bob", "User has two cats", vec(5), now=T0)
    remember(
        acme.conn,
        "bob",
        "User has cats",
        vec(5, 0.9),
        source="llm",
        confidence=0.2,
        now=T0 + DAY,
    )
    Worker(db.dsn, embedder=embedder, llm=None, tenant=acme.name).run(once=True)
    assert active(db.admin, acme.name, "bob") == ["User has two cats"]
    assert row(db.admin, sure_id)["status"] == "active"


# -------------------------------------------------------------------- concurrency


def wait_until_blocked(db: Db, pid: int) -> None:
    """Until session ``pid`` waits on a lock (no timing: it polls pg_stat_activity)."""
    for _ in range(10_000):
        waiting = db.admin.execute(
            "select wait_event_type from pg_stat_activity where pid = %s", (pid,)
        ).fetchone()
        if waiting == ("Lock",):
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"session {pid} never waited for the subject's lock")


@pytest.mark.parametrize("first", ["judge", "write"])
def test_judge_and_a_write_on_one_subject_leave_one_truth(acme: Tenant, db: Db, first: str) -> None:
    old_id, new_id = judge_ready(acme, db)
    negation = "User no longer drinks coffee every morning"
    conns = {"judge": psycopg.connect(acme.dsn), "write": psycopg.connect(acme.dsn)}
    results: dict[str, Any] = {}

    def run(which: str) -> None:
        """One session's statement, in its open transaction (not committed)."""
        conn = conns[which]
        if which == "judge":
            results[which] = conn.execute(
                "select action from pgmem.resolve_conflict(%s, %s, 'replace')", (new_id, old_id)
            ).fetchone()
        else:
            results[which] = remember(conn, "alice", negation, vec(0, 0.82), now=T0 + 2 * DAY)

    second = "write" if first == "judge" else "judge"
    try:
        run(first)  # holds the subject's lock until it commits
        thread = threading.Thread(target=lambda: (run(second), conns[second].commit()))
        thread.start()
        wait_until_blocked(db, conns[second].info.backend_pid)
        conns[first].commit()
        thread.join()
    finally:
        for conn in conns.values():
            conn.close()

    # The negation always wins (it is the newest and contradicts coffee); tea is
    # superseded by coffee, or stays active beside the negation it does not contradict.
    assert results["write"][0] == "superseded"
    if first == "judge":
        assert results["judge"] == ("superseded",)
        assert active(db.admin, acme.name) == [negation]
    else:
        assert results["judge"] == ("skipped",)
        assert active(db.admin, acme.name) == [TEA, negation]
    assert db.admin.execute(
        "select pgmem.contradiction(a.content, b.content) from pgmem.memories as a"
        " join pgmem.memories as b on b.tenant_id = a.tenant_id and b.memory_id > a.memory_id"
        " where a.tenant_id = %s and a.status = 'active' and b.status = 'active'",
        (acme.name,),
    ).fetchall() in ([], [(None,)])


def test_explicit_key_value_writes_skip_the_contradiction_check(acme: Tenant, db: Db) -> None:
    remember_many(acme.conn, [{"content": "Frank drinks his coffee black"}], subject="frank")
    rows = remember_many(
        acme.conn,
        [{"content": "Frank gave up coffee", "check_conflicts": False}],
        subject="frank",
    )
    assert rows[0][1] == "inserted"
    assert active(db.admin, acme.name, "frank") == [
        "Frank drinks his coffee black",
        "Frank gave up coffee",
    ]
    with pytest.raises(psycopg.Error) as info:
        remember_many(acme.conn, [{"content": "x", "check_conflicts": "no"}], subject="frank")
    assert info.value.sqlstate == "PM021"
