"""Memory that stays true (issue 10 parts 1 and 5, expiry of part 4): confidence and
expiry on every write path, the contradiction check on close neighbours, the
confidence rule of supersession, the LLM judge applied in SQL, and a judge racing a
write on the same subject."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from conftest import Db, Tenant
from psycopg.types.json import Jsonb
from test_remember import remember, remember_many

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)


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
