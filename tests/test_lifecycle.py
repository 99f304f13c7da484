"""Lifecycle: decay, archive, capacity, purge and restore with a moved clock
(p_now), and tenant isolation of all of them."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import errors

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def add_memory(
    conn: psycopg.Connection,
    tenant: str,
    content: str,
    *,
    subject: str = "alice",
    kind: str = "episodic",
    importance: float = 0.5,
    last_accessed_at: datetime = T0,
    pinned: bool = False,
    expires_at: datetime | None = None,
    access_count: int = 0,
    status: str = "active",
    status_changed_at: datetime = T0,
) -> int:
    """Inserts one memory directly (explicit tenant_id: works as admin or as the tenant)."""
    conn.execute(
        "insert into pgmem.subjects (tenant_id, subject) values (%s, %s) on conflict do nothing",
        (tenant, subject),
    )
    row = conn.execute(
        """insert into pgmem.memories (tenant_id, subject, kind, content, importance,
               last_accessed_at, pinned, expires_at, access_count, status, status_changed_at,
               created_at)
           values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
           returning memory_id""",
        (
            tenant,
            subject,
            kind,
            content,
            importance,
            last_accessed_at,
            pinned,
            expires_at,
            access_count,
            status,
            status_changed_at,
            last_accessed_at,
        ),
    ).fetchone()
    assert row is not None
    return row[0]


def memory(conn: psycopg.Connection, memory_id: int) -> dict:
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute(
        "select m.*, d.effective_importance from pgmem.memories as m"
        " left join pgmem.memory_decay as d using (tenant_id, memory_id) where m.memory_id = %s",
        (memory_id,),
    ).fetchone()
    assert row is not None, f"memory {memory_id} is gone"
    return row


def status_of(conn: psycopg.Connection, *ids: int) -> list[str | None]:
    rows = dict(
        conn.execute(
            "select memory_id, status from pgmem.memories where memory_id = any(%s)", (list(ids),)
        ).fetchall()
    )
    return [rows.get(i) for i in ids]


def events(conn: psycopg.Connection, event: str) -> dict[int, dict]:
    return dict(
        conn.execute(
            "select memory_id, details from pgmem.memory_events where event = %s", (event,)
        ).fetchall()
    )


@pytest.fixture(autouse=True)
def week_long_episodes(admin: psycopg.Connection) -> None:
    """The day counts below assume a 7-day episodic half-life; the default
    (30 days) may change, so every tenant these tests create starts from it."""
    admin.execute(
        "update pgmem.settings set half_life_episodic = '7 days' where tenant_id = '_default'"
    )


@pytest.fixture
def tenant(admin: psycopg.Connection) -> str:
    admin.execute("select pgmem.create_tenant('acme')")
    return "acme"


# -- decay --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "half_life_days"),
    [("episodic", 7), ("semantic", 90), ("preference", 180), ("procedural", 365)],
)
def test_decay_halves_effective_importance_at_the_kinds_half_life(
    admin: psycopg.Connection, tenant: str, kind: str, half_life_days: int
) -> None:
    mid = add_memory(admin, tenant, "fact", kind=kind, importance=0.8)
    assert admin.execute("select pgmem.decay(%s)", (T0 + half_life_days * DAY,)).fetchone() == (1,)
    assert memory(admin, mid)["effective_importance"] == pytest.approx(0.4, abs=1e-5)
    # Two half-lives: a quarter.
    admin.execute("select pgmem.decay(%s)", (T0 + 2 * half_life_days * DAY,))
    assert memory(admin, mid)["effective_importance"] == pytest.approx(0.2, abs=1e-5)
    assert memory(admin, mid)["importance"] == pytest.approx(0.8)


def test_decay_follows_exp_of_time_since_last_access(
    admin: psycopg.Connection, tenant: str
) -> None:
    accessed = T0 + 3 * DAY
    mid = add_memory(
        admin, tenant, "fact", kind="semantic", importance=0.9, last_accessed_at=accessed
    )
    now = accessed + timedelta(days=20, hours=5)
    admin.execute("select pgmem.decay(%s)", (now,))
    hours = (now - accessed).total_seconds() / 3600
    expected = 0.9 * math.exp(-math.log(2) / (90 * 24) * hours)
    assert memory(admin, mid)["effective_importance"] == pytest.approx(expected, abs=1e-5)


def test_decay_uses_each_tenants_half_life(admin: psycopg.Connection) -> None:
    admin.execute("select pgmem.create_tenant('fast'), pgmem.create_tenant('slow')")
    admin.execute("update pgmem.settings set half_life_episodic = '1 day' where tenant_id = 'fast'")
    fast = add_memory(admin, "fast", "x", importance=0.8)
    slow = add_memory(admin, "slow", "x", importance=0.8)
    admin.execute("select pgmem.decay(%s)", (T0 + DAY,))
    assert memory(admin, fast)["effective_importance"] == pytest.approx(0.4, abs=1e-5)
    assert memory(admin, slow)["effective_importance"] == pytest.approx(
        0.8 * 2 ** (-1 / 7), abs=1e-5
    )


def test_pinned_memories_never_decay(admin: psycopg.Connection, tenant: str) -> None:
    pinned = add_memory(admin, tenant, "my name is Alice", importance=0.7, pinned=True)
    later = add_memory(admin, tenant, "pinned after it decayed", importance=0.6)
    admin.execute("select pgmem.decay(%s)", (T0 + 365 * DAY,))
    assert memory(admin, pinned)["effective_importance"] in (None, pytest.approx(0.7))
    assert memory(admin, later)["effective_importance"] < 0.01
    # Pinned after decaying: the next run gives it its full importance back.
    admin.execute("update pgmem.memories set pinned = true where memory_id = %s", (later,))
    admin.execute("select pgmem.decay(%s)", (T0 + 366 * DAY,))
    assert memory(admin, later)["effective_importance"] == pytest.approx(0.6)
    assert memory(admin, pinned)["effective_importance"] in (None, pytest.approx(0.7))


def test_decay_writes_only_rows_that_change_meaningfully(
    admin: psycopg.Connection, tenant: str
) -> None:
    old = add_memory(admin, tenant, "old episode", importance=0.8)
    fresh = add_memory(admin, tenant, "fresh", importance=0.8, last_accessed_at=T0 + 7 * DAY)
    assert admin.execute("select pgmem.decay(%s)", (T0 + 7 * DAY,)).fetchone() == (1,)
    # Never decayed yet: NULL stands for the undecayed importance, not rewritten.
    assert memory(admin, fresh)["effective_importance"] is None
    # An hour later nothing moved by a step (0.01): no row is rewritten.
    version = admin.execute(
        "select xmin::text from pgmem.memories where memory_id = %s", (old,)
    ).fetchone()
    assert admin.execute(
        "select pgmem.decay(%s)", (T0 + 7 * DAY + timedelta(hours=1),)
    ).fetchone() == (0,)
    assert (
        admin.execute(
            "select xmin::text from pgmem.memories where memory_id = %s", (old,)
        ).fetchone()
        == version
    )
    # A day later it did.
    assert admin.execute("select pgmem.decay(%s)", (T0 + 8 * DAY,)).fetchone() == (2,)


def test_decay_leaves_non_active_memories_alone(admin: psycopg.Connection, tenant: str) -> None:
    archived = add_memory(admin, tenant, "gone", status="archived")
    superseded = add_memory(admin, tenant, "old truth", status="superseded")
    assert admin.execute("select pgmem.decay(%s)", (T0 + 30 * DAY,)).fetchone() == (0,)
    assert memory(admin, archived)["effective_importance"] is None
    assert memory(admin, superseded)["effective_importance"] is None


# -- archive ------------------------------------------------------------------


def test_archive_takes_weak_and_expired_memories_out_of_recall(
    admin: psycopg.Connection, tenant: str
) -> None:
    # Episodic 0.5 falls below the default threshold 0.05 after 7·log2(10) ≈ 23.3 days.
    weak = add_memory(admin, tenant, "weak episode", importance=0.5)
    strong = add_memory(admin, tenant, "strong fact", kind="semantic", importance=0.5)
    expired = add_memory(admin, tenant, "expires", kind="semantic", expires_at=T0 + 2 * DAY)
    pinned_weak = add_memory(admin, tenant, "pinned weak", importance=0.1, pinned=True)
    pinned_expired = add_memory(admin, tenant, "pinned expired", pinned=True, expires_at=T0 + DAY)

    now = T0 + 22 * DAY
    assert admin.execute("select * from pgmem.archive(%s)", (now,)).fetchone() == (0, 1)
    assert status_of(admin, weak, expired) == ["active", "archived"]

    now = T0 + 24 * DAY
    assert admin.execute("select * from pgmem.archive(%s)", (now,)).fetchone() == (1, 0)
    assert status_of(admin, weak, strong, expired, pinned_weak, pinned_expired) == [
        "archived",
        "active",
        "archived",
        "active",
        "active",
    ]
    row = memory(admin, weak)
    assert row["status_changed_at"] == now
    assert row["effective_importance"] == pytest.approx(0.5 * 2 ** (-24 / 7), abs=1e-5)
    logged = events(admin, "archive")
    assert set(logged) == {weak, expired}
    assert logged[weak]["reason"] == "below_threshold"
    assert logged[weak]["threshold"] == pytest.approx(0.05)
    assert logged[expired]["reason"] == "expired"
    # Idempotent: a second run at the same time archives nothing more.
    assert admin.execute("select * from pgmem.archive(%s)", (now,)).fetchone() == (0, 0)


def test_archive_threshold_comes_from_the_tenants_settings(admin: psycopg.Connection) -> None:
    admin.execute("select pgmem.create_tenant('strict'), pgmem.create_tenant('lax')")
    admin.execute("update pgmem.settings set archive_threshold = 0.3 where tenant_id = 'strict'")
    strict = add_memory(admin, "strict", "x", importance=0.5)
    lax = add_memory(admin, "lax", "x", importance=0.5)
    # After one half-life: 0.25, below 0.3 but far above 0.05.
    assert admin.execute("select * from pgmem.archive(%s)", (T0 + 7 * DAY,)).fetchone() == (1, 0)
    assert status_of(admin, strict, lax) == ["archived", "active"]


def test_archive_does_not_need_decay_to_have_run(admin: psycopg.Connection, tenant: str) -> None:
    mid = add_memory(admin, tenant, "never decayed", importance=0.5)
    assert memory(admin, mid)["effective_importance"] is None
    admin.execute("select pgmem.archive(%s)", (T0 + 60 * DAY,))
    assert status_of(admin, mid) == ["archived"]


# -- restore ------------------------------------------------------------------


def test_restore_brings_an_archived_memory_back(admin: psycopg.Connection, tenant: str) -> None:
    mid = add_memory(admin, tenant, "old episode", importance=0.5)
    now = T0 + 60 * DAY
    admin.execute("select pgmem.archive(%s)", (now,))
    assert status_of(admin, mid) == ["archived"]

    later = now + DAY
    row = admin.execute(
        "select memory_id, status, last_accessed_at from pgmem.restore(%s, %s)",
        (mid, later),
    ).fetchone()
    assert row == (mid, "active", later)
    assert memory(admin, mid)["effective_importance"] == pytest.approx(0.5)
    assert events(admin, "restore")[mid] == {"from": "archived", "expiry_cleared": False}
    # Restored as if just used: the next archive run leaves it alone.
    assert admin.execute("select * from pgmem.archive(%s)", (later,)).fetchone() == (0, 0)
    # Restoring an active memory is a no-op, not an error.
    assert admin.execute("select status from pgmem.restore(%s)", (mid,)).fetchone() == ("active",)


def test_restore_clears_a_passed_expiry(admin: psycopg.Connection, tenant: str) -> None:
    mid = add_memory(admin, tenant, "offer ends", kind="semantic", expires_at=T0 + DAY)
    admin.execute("select pgmem.archive(%s)", (T0 + 2 * DAY,))
    admin.execute("select pgmem.restore(%s, %s)", (mid, T0 + 3 * DAY))
    assert memory(admin, mid)["expires_at"] is None
    assert admin.execute("select * from pgmem.archive(%s)", (T0 + 3 * DAY,)).fetchone() == (0, 0)


def test_restore_of_an_unknown_id_is_error_pm030(admin: psycopg.Connection, tenant: str) -> None:
    with pytest.raises(psycopg.Error) as info:
        admin.execute("select pgmem.restore(424242)")
    assert info.value.sqlstate == "PM030"
    assert "p_memory_id = 424242" in info.value.diag.message_primary
    assert info.value.diag.message_hint


def test_restore_refuses_deleted_and_duplicates(admin: psycopg.Connection, tenant: str) -> None:
    deleted = add_memory(admin, tenant, "forgotten", status="deleted")
    with pytest.raises(psycopg.Error) as info:
        admin.execute("select pgmem.restore(%s)", (deleted,))
    assert info.value.sqlstate == "PM031"
    assert "p_memory_id" in info.value.diag.message_primary

    archived = add_memory(admin, tenant, "same words", status="archived")
    active = add_memory(admin, tenant, "same words")
    with pytest.raises(psycopg.Error) as info:
        admin.execute("select pgmem.restore(%s)", (archived,))
    assert info.value.sqlstate == "PM032"
    assert str(active) in info.value.diag.message_primary


# -- capacity -----------------------------------------------------------------


def test_capacity_evicts_archived_first_then_unaccessed_low_importance(
    admin: psycopg.Connection, tenant: str
) -> None:
    admin.execute(
        "update pgmem.settings set capacity_per_subject = 4 where tenant_id = %s", (tenant,)
    )
    ids = {
        "archived_old": add_memory(
            admin, tenant, "a1", status="archived", status_changed_at=T0 - 9 * DAY
        ),
        "archived_new": add_memory(
            admin, tenant, "a2", status="archived", status_changed_at=T0 - DAY
        ),
        "pinned_low": add_memory(admin, tenant, "p", importance=0.01, pinned=True),
        "unaccessed_low_old": add_memory(
            admin, tenant, "u1", importance=0.2, last_accessed_at=T0 - 30 * DAY
        ),
        "unaccessed_low_new": add_memory(admin, tenant, "u2", importance=0.2),
        "unaccessed_high": add_memory(admin, tenant, "u3", importance=0.9),
        "accessed_low": add_memory(
            admin, tenant, "r1", importance=0.05, access_count=3, last_accessed_at=T0 - 30 * DAY
        ),
        "superseded": add_memory(admin, tenant, "s", status="superseded"),
    }
    other_subject = add_memory(admin, tenant, "b", subject="bob", importance=0.01)
    # alice holds 7 (active + archived; superseded does not count): 3 over.
    row = admin.execute("select * from pgmem.enforce_capacity(%s)", (T0,)).fetchone()
    assert row == (1, 2, 1)  # one subject; two archived, then one active
    evicted = {k for k, v in ids.items() if status_of(admin, v) == ["deleted"]}
    assert evicted == {"archived_old", "archived_new", "unaccessed_low_old"}
    assert status_of(admin, other_subject) == ["active"]
    assert {e["from"] for e in events(admin, "evict").values()} == {"archived", "active"}

    # Down to the cap of 2: the next unaccessed, lowest one goes before any
    # recalled one, and the pinned one (lowest of all) stays.
    admin.execute(
        "update pgmem.settings set capacity_per_subject = 2 where tenant_id = %s", (tenant,)
    )
    assert admin.execute("select * from pgmem.enforce_capacity(%s)", (T0,)).fetchone() == (1, 0, 2)
    assert status_of(
        admin,
        ids["pinned_low"],
        ids["unaccessed_low_new"],
        ids["unaccessed_high"],
        ids["accessed_low"],
    ) == ["active", "deleted", "deleted", "active"]
    # At the cap: nothing more to do.
    assert admin.execute("select * from pgmem.enforce_capacity(%s)", (T0,)).fetchone() == (0, 0, 0)


def test_capacity_never_evicts_pinned(admin: psycopg.Connection, tenant: str) -> None:
    admin.execute(
        "update pgmem.settings set capacity_per_subject = 1 where tenant_id = %s", (tenant,)
    )
    pinned = [add_memory(admin, tenant, f"pin {i}", importance=0.01, pinned=True) for i in range(3)]
    assert admin.execute("select * from pgmem.enforce_capacity(%s)", (T0,)).fetchone() == (0, 0, 0)
    assert status_of(admin, *pinned) == ["active"] * 3


def test_kept_memories_are_application_state_maintenance_leaves_alone(
    admin: psycopg.Connection, tenant: str
) -> None:
    """pgmem.keep: never decayed, archived, expired or evicted, and outside the cap, so
    that kept state cannot push the subject's other memories out either."""
    admin.execute(
        "update pgmem.settings set capacity_per_subject = 2 where tenant_id = %s", (tenant,)
    )
    kept = [add_memory(admin, tenant, f"state {i}", importance=0.01) for i in range(3)]
    kept.append(add_memory(admin, tenant, "expiring state", kind="semantic", expires_at=T0 + DAY))
    plain = [
        add_memory(admin, tenant, f"fact {i}", kind="semantic", importance=0.9) for i in (1, 2)
    ]
    admin.execute("select pgmem.set_tenant(%s, false)", (tenant,))  # pgmem.keep acts for it
    for memory_id in kept:
        assert admin.execute("select pgmem.keep(%s)", (memory_id,)).fetchone() == (True,)
    assert admin.execute("select pgmem.keep(%s)", (kept[0],)).fetchone() == (False,)
    later = T0 + 400 * DAY
    admin.execute("select pgmem.decay(%s)", (later,))
    assert memory(admin, kept[0])["effective_importance"] in (None, pytest.approx(0.01))
    assert admin.execute("select * from pgmem.archive(%s)", (later,)).fetchone() == (2, 0)
    assert status_of(admin, *kept) == ["active"] * 4
    assert status_of(admin, *plain) == ["archived"] * 2
    # Two archived facts at a cap of two: nothing over it, the kept rows do not count.
    assert admin.execute("select * from pgmem.enforce_capacity(%s)", (later,)).fetchone() == (
        0,
        0,
        0,
    )
    assert status_of(admin, *kept) == ["active"] * 4
    # Let go, it is a memory like any other again.
    assert admin.execute("select pgmem.keep(%s, false)", (kept[0],)).fetchone() == (True,)
    assert admin.execute("select * from pgmem.archive(%s)", (later,)).fetchone() == (1, 0)
    events = admin.execute(
        "select event from pgmem.memory_events where memory_id = %s order by event_id", (kept[0],)
    ).fetchall()
    assert [e for (e,) in events] == ["keep", "unkeep", "archive"]
    with pytest.raises(psycopg.Error) as info:
        admin.execute("select pgmem.keep(%s)", (-1,))
    assert info.value.sqlstate == "PM022"


# -- purge --------------------------------------------------------------------


def test_purge_hard_deletes_after_the_grace_period(admin: psycopg.Connection, tenant: str) -> None:
    archived = add_memory(admin, tenant, "archived", status="archived")
    deleted = add_memory(admin, tenant, "forgotten", status="deleted")
    recent = add_memory(
        admin, tenant, "archived later", status="archived", status_changed_at=T0 + 5 * DAY
    )
    active = add_memory(admin, tenant, "active", last_accessed_at=T0 - 400 * DAY)
    superseded = add_memory(admin, tenant, "history", status="superseded")
    admin.execute(
        "insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type)"
        " values (%s, %s, %s, 'same_session')",
        (tenant, active, archived),
    )
    admin.execute(
        """insert into pgmem.inbox (tenant_id, job, status, created_at, finished_at) values
           (%(t)s, 'turn', 'done', %(old)s, %(old)s),
           (%(t)s, 'turn', 'done', %(new)s, %(new)s),
           (%(t)s, 'turn', 'failed', %(old)s, %(old)s),
           (%(t)s, 'turn', 'pending', %(old)s, null)""",
        {"t": tenant, "old": T0, "new": T0 + 6 * DAY},
    )

    # Default grace: 7 days from status_changed_at.
    assert admin.execute("select * from pgmem.purge(%s)", (T0 + 6 * DAY,)).fetchone() == (0, 0)
    assert admin.execute("select * from pgmem.purge(%s)", (T0 + 8 * DAY,)).fetchone() == (2, 1)
    assert status_of(admin, archived, deleted, recent, active, superseded) == [
        None,
        None,
        "archived",
        "active",
        "superseded",
    ]
    assert admin.execute("select count(*) from pgmem.memory_links").fetchone() == (0,)
    assert admin.execute("select status from pgmem.inbox order by inbox_id").fetchall() == [
        ("done",),
        ("failed",),
        ("pending",),
    ]
    purged = events(admin, "purge")
    assert set(purged) == {archived, deleted}
    assert purged[deleted]["from"] == "deleted"
    # A purge event keeps no content.
    assert admin.execute(
        "select count(*) from pgmem.memory_events where event = 'purge'"
        " and (old_content is not null or new_content is not null)"
    ).fetchone() == (0,)

    assert admin.execute("select * from pgmem.purge(%s)", (T0 + 14 * DAY,)).fetchone() == (1, 1)


def test_purge_grace_comes_from_the_tenants_settings(admin: psycopg.Connection) -> None:
    admin.execute("select pgmem.create_tenant('quick'), pgmem.create_tenant('patient')")
    admin.execute("update pgmem.settings set purge_grace = '1 day' where tenant_id = 'quick'")
    quick = add_memory(admin, "quick", "x", status="archived")
    patient = add_memory(admin, "patient", "x", status="archived")
    assert admin.execute("select * from pgmem.purge(%s)", (T0 + 2 * DAY,)).fetchone() == (1, 0)
    assert status_of(admin, quick, patient) == [None, "archived"]


# -- tenants ------------------------------------------------------------------


@pytest.fixture
def two_tenants(
    admin: psycopg.Connection, tenant_login: Callable[[str], psycopg.Connection]
) -> tuple[psycopg.Connection, psycopg.Connection]:
    return tenant_login("ta"), tenant_login("tb")


def test_tenant_maintenance_touches_only_its_own_memories(
    admin: psycopg.Connection, two_tenants: tuple[psycopg.Connection, psycopg.Connection]
) -> None:
    a, b = two_tenants
    a_weak = add_memory(a, "ta", "weak a", importance=0.5)
    b_weak = add_memory(b, "tb", "weak b", importance=0.5)
    a_old = add_memory(a, "ta", "old a", status="archived")
    b_old = add_memory(b, "tb", "old b", status="archived")

    now = T0 + 60 * DAY
    assert a.execute("select pgmem.decay(%s)", (now,)).fetchone() == (1,)
    assert memory(admin, b_weak)["effective_importance"] is None
    assert a.execute("select * from pgmem.archive(%s)", (now,)).fetchone() == (1, 0)
    assert status_of(admin, a_weak, b_weak) == ["archived", "active"]
    assert a.execute("select * from pgmem.purge(%s)", (now,)).fetchone() == (1, 0)
    assert status_of(admin, a_old, b_old) == [None, "archived"]
    with pytest.raises(errors.InsufficientPrivilege):  # thresholds are not the tenant's to move
        a.execute("update pgmem.settings set capacity_per_subject = 1")
    assert a.execute("select * from pgmem.enforce_capacity(%s)", (now,)).fetchone() == (0, 0, 0)
    assert b.execute("select * from pgmem.archive(%s)", (now,)).fetchone() == (1, 0)


def test_tenant_cannot_aim_maintenance_at_another_tenant(
    two_tenants: tuple[psycopg.Connection, psycopg.Connection],
) -> None:
    a, b = two_tenants
    add_memory(b, "tb", "weak b", importance=0.5)
    for call in (
        "select pgmem.decay(now(), 'tb')",
        "select pgmem.archive(now() + interval '60 days', 'tb')",
        "select pgmem.enforce_capacity(now(), 'tb')",
        "select pgmem.purge(now(), 'tb')",
    ):
        with pytest.raises(errors.InsufficientPrivilege, match="p_tenant = tb"):
            a.execute(call)
    assert b.execute("select status from pgmem.memories").fetchall() == [("active",)]


def test_tenant_cannot_restore_another_tenants_memory(
    admin: psycopg.Connection, two_tenants: tuple[psycopg.Connection, psycopg.Connection]
) -> None:
    a, b = two_tenants
    theirs = add_memory(b, "tb", "b's secret", status="archived")
    with pytest.raises(psycopg.Error) as info:
        a.execute("select pgmem.restore(%s)", (theirs,))
    assert info.value.sqlstate == "PM030"  # indistinguishable from a missing id
    assert status_of(admin, theirs) == ["archived"]
    assert b.execute("select status from pgmem.restore(%s)", (theirs,)).fetchone() == ("active",)


def test_tenant_sees_only_its_own_job_effects(
    admin: psycopg.Connection, two_tenants: tuple[psycopg.Connection, psycopg.Connection]
) -> None:
    a, b = two_tenants
    add_memory(a, "ta", "weak a", importance=0.5)
    add_memory(b, "tb", "weak b1", importance=0.5)
    add_memory(b, "tb", "weak b2", importance=0.5, subject="bob")
    run = admin.execute(
        "select status, counts from pgmem.run_job('archive', %s)", (T0 + 60 * DAY,)
    ).fetchone()
    assert run == ("ok", {"weak": 3, "expired": 0})

    assert a.execute(
        "select tenant_id, count(*) from pgmem.memory_events where event = 'archive' group by 1"
    ).fetchall() == [("ta", 1)]
    assert a.execute(
        "select tenant_id, subject, status, memories from pgmem.memory_stats"
    ).fetchall() == [("ta", "alice", "archived", 1)]
    assert a.execute("select tenant_id, archived from pgmem.archive_backlog").fetchall() == [
        ("ta", 1)
    ]
    assert a.execute("select tenant_id, held from pgmem.capacity_usage").fetchall() == [("ta", 1)]
    assert b.execute("select tenant_id, archived from pgmem.archive_backlog").fetchall() == [
        ("tb", 2)
    ]
    # The run history is cluster-wide: tenant roles cannot read it at all.
    for query in ("select * from pgmem.job_runs", "select * from pgmem.last_job_runs"):
        with pytest.raises(errors.InsufficientPrivilege):
            a.execute(query)


def test_tenant_cannot_run_or_schedule_jobs(
    two_tenants: tuple[psycopg.Connection, psycopg.Connection],
) -> None:
    a, _ = two_tenants
    for call in (
        "select pgmem.run_job('archive')",
        "select pgmem.run_job('archive', now(), 'tb')",
        "select * from pgmem.maintain()",
        "select * from pgmem.schedule()",
        "select pgmem.unschedule()",
        "insert into pgmem.job_runs (job, status, started_at, finished_at)"
        " values ('x', 'ok', now(), now())",
    ):
        with pytest.raises(errors.InsufficientPrivilege):
            a.execute(call)


def test_service_role_maintains_the_tenant_it_binds(
    admin: psycopg.Connection, tenant: str, login_role: Callable[[str], psycopg.Connection]
) -> None:
    weak = add_memory(admin, tenant, "weak", importance=0.5)
    svc = login_role("pgmem_service")
    with pytest.raises(psycopg.Error) as info:
        svc.execute("select pgmem.archive(%s)", (T0 + 60 * DAY,))
    assert info.value.sqlstate == "PM001"  # no tenant bound: told why, not a silent 0
    with svc.transaction():
        svc.execute("select pgmem.set_tenant(%s)", (tenant,))
        assert svc.execute("select * from pgmem.archive(%s)", (T0 + 60 * DAY,)).fetchone() == (1, 0)
    assert status_of(admin, weak) == ["archived"]


def test_readonly_role_sees_every_tenant_in_the_views(
    admin: psycopg.Connection, login_role: Callable[[str], psycopg.Connection]
) -> None:
    admin.execute("select pgmem.create_tenant('r1'), pgmem.create_tenant('r2')")
    add_memory(admin, "r1", "x")
    add_memory(admin, "r2", "y", status="archived")
    admin.execute("select pgmem.run_job('decay')")
    ro = login_role("pgmem_readonly")
    assert ro.execute("select tenant_id, status from pgmem.memory_stats order by 1").fetchall() == [
        ("r1", "active"),
        ("r2", "archived"),
    ]
    assert ro.execute("select count(*) from pgmem.archive_backlog").fetchone() == (2,)
    assert ro.execute("select job, status from pgmem.last_job_runs").fetchall() == [("decay", "ok")]
    with pytest.raises(errors.InsufficientPrivilege):
        ro.execute("select pgmem.decay()")


LIFECYCLE_FUNCTIONS = [
    "decay", "archive", "enforce_capacity", "purge", "restore", "_decayed", "_decay_step",
    "_maintenance_scope", "run_job", "maintain", "cron_plan", "schedule", "unschedule",
    "scheduled_jobs", "_job_names", "_job_lock_holder", "_require_cron", "_decay_rate",
    "_job_counts",
]  # fmt: skip
LIFECYCLE_VIEWS = [
    "_decay_policy",
    "memory_stats",
    "archive_backlog",
    "capacity_usage",
    "last_job_runs",
]


def test_decay_rate_covers_every_kind_as_the_half_lives_say(admin: psycopg.Connection) -> None:
    """pgmem._decay_rate picks the half-life by a CASE (Citus-safe); it must agree with
    pgmem._half_lives, which reads the column pgmem.kinds() names, for every kind."""
    # Four different half-lives, so a CASE that picks the wrong column fails.
    rows = admin.execute(
        """select h.kind, pgmem._decay_rate(h.kind, s.half_life_preference, s.half_life_semantic,
                                            s.half_life_episodic, s.half_life_procedural),
                  ln(2) / date_part('epoch', h.half_life)
           from pgmem.settings as d
           cross join lateral jsonb_populate_record(d, '{"half_life_preference": "3 days",
               "half_life_semantic": "5 days", "half_life_episodic": "7 days",
               "half_life_procedural": "11 days"}') as s
           cross join lateral pgmem._half_lives(s) as h
           where d.tenant_id = '_default'"""
    ).fetchall()
    assert sorted(kind for kind, *_ in rows) == sorted(
        k for (k,) in admin.execute("select kind from pgmem.kinds()").fetchall()
    )
    assert [(kind, rate) for kind, rate, expected in rows if rate != pytest.approx(expected)] == []


def test_every_lifecycle_object_is_documented_and_pinned(admin: psycopg.Connection) -> None:
    functions = admin.execute(
        """select p.proname, obj_description(p.oid, 'pg_proc') is not null, p.prosecdef,
                  coalesce(array_to_string(p.proconfig, ','), '')
           from pg_proc p
           where p.pronamespace = 'pgmem'::regnamespace and p.proname = any(%s)""",
        (LIFECYCLE_FUNCTIONS,),
    ).fetchall()
    assert sorted(name for name, *_ in functions) == sorted(LIFECYCLE_FUNCTIONS)
    assert [name for name, documented, *_ in functions if not documented] == []
    # Pinned search_path everywhere except the helpers that must be inlined;
    # decay also sizes the hash of its pass (work_mem, reset on return).
    inlined = {"_decayed", "_decay_step", "_decay_rate"}
    expected = {"decay": "search_path=pg_catalog, pg_temp,work_mem=64MB"}
    assert [
        name
        for name, _, _, config in functions
        if name not in inlined and config != expected.get(name, "search_path=pg_catalog, pg_temp")
    ] == []
    assert [name for name, _, definer, _ in functions if definer] == ["run_job"]

    views = admin.execute(
        """select c.relname, obj_description(c.oid, 'pg_class') is not null,
                  coalesce('security_invoker=true' = any(c.reloptions), false)
           from pg_class c
           where c.relnamespace = 'pgmem'::regnamespace and c.relkind = 'v'
             and c.relname = any(%s)""",
        (LIFECYCLE_VIEWS,),
    ).fetchall()
    assert sorted(name for name, *_ in views) == sorted(LIFECYCLE_VIEWS)
    # Documented, and security_invoker so RLS applies to whoever reads them.
    assert [name for name, documented, invoker in views if not (documented and invoker)] == []


# -- scale --------------------------------------------------------------------


@pytest.mark.slow
def test_lifecycle_pass_at_scale_is_set_based_and_writes_little_when_steady(
    admin: psycopg.Connection,
) -> None:
    """A pass over synthetic memories (PGMEM_BENCH_ROWS, default 20k; the
    numbers in the report used 100k and 1M): the first pass writes the stale
    rows once, an hour later decay rewrites almost nothing."""
    rows = int(os.environ.get("PGMEM_BENCH_ROWS", "20000"))
    admin.execute("select pgmem.create_tenant('t' || t) from generate_series(1, 10) t")
    admin.execute(
        "insert into pgmem.subjects (tenant_id, subject)"
        " select 't' || t, 'user' || s from generate_series(1, 10) t, generate_series(1, 100) s"
    )
    # Deterministic spread: importance 0..1, last access up to 60 days ago,
    # 1% pinned, 2% with an expiry around now.
    admin.execute(
        """insert into pgmem.memories (tenant_id, subject, kind, content, importance,
               last_accessed_at, pinned, expires_at, access_count)
           select 't' || (1 + i %% 10), 'user' || (1 + (i / 10) %% 100),
                  (array['episodic', 'semantic', 'preference', 'procedural'])[1 + i %% 4],
                  'synthetic memory ' || i || ' about topic ' || i %% 997,
                  (i * 7919 %% 1000) / 1000.0,
                  %(now)s - make_interval(secs => i * 104729 %% (60 * 86400)),
                  i %% 100 = 0,
                  case when i %% 50 = 1
                       then %(now)s + make_interval(hours => (i %% 240 - 24)::int) end,
                  (i %% 3 = 0)::int * (i %% 7)
           from generate_series(1::bigint, %(rows)s) i""",
        {"now": T0, "rows": rows},
    )
    admin.execute("analyze pgmem.memories")

    started = time.perf_counter()
    archive = admin.execute("select counts from pgmem.run_job('archive', %s)", (T0,)).fetchone()
    decay = admin.execute("select counts from pgmem.run_job('decay', %s)", (T0,)).fetchone()
    first_pass = time.perf_counter() - started
    assert archive is not None and decay is not None
    archived = archive[0]["weak"] + archive[0]["expired"]
    assert 0.1 * rows < archived < 0.3 * rows
    assert decay[0]["decayed"] < rows - archived

    hour = admin.execute(
        "select (counts->>'decayed')::int, duration_ms from pgmem.run_job('decay', %s)",
        (T0 + timedelta(hours=1),),
    ).fetchone()
    assert hour is not None
    assert hour[0] < rows // 100  # an hourly run rewrites under 1% of the rows
    print(  # visible with pytest -s
        f"\n{rows} memories: first pass archive+decay {first_pass:.2f} s "
        f"({archived} archived, {decay[0]['decayed']} decayed); "
        f"decay an hour later {hour[1] / 1000:.2f} s ({hour[0]} rows)"
    )
    # Loose guard against row-by-row regressions; ~1 s per 20k on an idle 2-CPU box.
    assert first_pass < rows / 1000


HALF_LIFE_DAYS = {"episodic": 7, "semantic": 90, "preference": 180, "procedural": 365}


def test_decay_writes_what_the_formula_says_on_a_seeded_set(
    admin: psycopg.Connection, tenant: str
) -> None:
    """Every row's value and the count, over two passes (first, then an hour later), are
    those of the definition: importance·exp(−ln 2·t/half-life), pinned = importance,
    written only when it moves by ≥ 0.01 from the stored value (NULL = importance)."""
    import random

    rng = random.Random(30)
    rows: dict[int, dict] = {}
    for i in range(300):
        kind = rng.choice(list(HALF_LIFE_DAYS))
        importance = round(rng.uniform(0, 1), 3)
        pinned = rng.random() < 0.1
        mid = add_memory(
            admin,
            tenant,
            f"fact {i}",
            kind=kind,
            importance=importance,
            pinned=pinned,
            last_accessed_at=T0 - timedelta(hours=rng.uniform(0, 24 * 400)),
            status="archived" if rng.random() < 0.1 else "active",
        )
        if rng.random() < 0.3:  # decayed before, maybe long ago
            admin.execute(
                "insert into pgmem.memory_decay (tenant_id, memory_id, effective_importance,"
                " decayed_at) values (%s, %s, %s, %s)",
                (tenant, mid, round(rng.uniform(0, importance), 3), T0 - timedelta(days=30)),
            )
        rows[mid] = memory(admin, mid)

    for now in (T0, T0 + timedelta(hours=1)):
        expected_written = 0
        for row in rows.values():
            if row["status"] != "active":
                continue
            if row["pinned"]:
                value = row["importance"]
            else:
                hours = max(0.0, (now - row["last_accessed_at"]).total_seconds() / 3600)
                rate = math.log(2) / (HALF_LIFE_DAYS[row["kind"]] * 24)
                value = row["importance"] * math.exp(-min(rate * hours, 27))
            stored = row["effective_importance"]
            current = row["importance"] if stored is None else stored
            pinned_moved = row["pinned"] and stored is not None and stored != row["importance"]
            if abs(current - value) >= 0.01 or pinned_moved:
                row["effective_importance"] = value
                expected_written += 1
        written = admin.execute("select pgmem.decay(%s)", (now,)).fetchone()[0]
        assert written == expected_written
        for mid, row in rows.items():
            got = memory(admin, mid)["effective_importance"]
            if row["effective_importance"] is None:
                assert got is None, mid
            else:
                assert got == pytest.approx(row["effective_importance"], abs=2e-6), mid


# -- memory_decay: the stored value lives apart from the memory -----------------


def test_decay_never_writes_a_memory_row(admin: psycopg.Connection, tenant: str) -> None:
    """A first pass over old memories stores every value in pgmem.memory_decay and
    leaves every memory row as it was: same version (ctid, xmin), no update counted."""
    ids = [
        add_memory(admin, tenant, f"old episode {i}", last_accessed_at=T0 - i * DAY)
        for i in range(1, 41)
    ]
    before = admin.execute(
        "select memory_id, ctid::text, xmin::text from pgmem.memories"
        " where tenant_id = %s order by memory_id",
        (tenant,),
    ).fetchall()
    admin.execute("select pg_stat_force_next_flush()")
    updates = "select n_tup_upd from pg_stat_user_tables where relid = 'pgmem.memories'::regclass"
    updated_before = admin.execute(updates).fetchone()

    assert admin.execute("select pgmem.decay(%s)", (T0,)).fetchone() == (len(ids),)
    admin.execute("select pg_stat_force_next_flush()")
    assert admin.execute(updates).fetchone() == updated_before
    assert (
        admin.execute(
            "select memory_id, ctid::text, xmin::text from pgmem.memories"
            " where tenant_id = %s order by memory_id",
            (tenant,),
        ).fetchall()
        == before
    )
    stored = dict(
        admin.execute(
            "select memory_id, effective_importance from pgmem.memory_decay"
            " where tenant_id = %s and decayed_at = %s",
            (tenant, T0),
        ).fetchall()
    )
    assert stored.keys() == set(ids)
    for days, mid in enumerate(ids, start=1):
        assert stored[mid] == pytest.approx(0.5 * 2 ** (-days / 7), abs=1e-5)


def test_decay_rows_go_with_their_memories(admin: psycopg.Connection) -> None:
    """memory_decay has no foreign key: purge, erase_subject and drop_tenant remove the
    rows of the memories they delete, and purge sweeps rows whose memory is gone."""
    admin.execute("select pgmem.create_tenant('decay_a'), pgmem.create_tenant('decay_b')")
    kept = add_memory(admin, "decay_a", "kept", subject="alice")
    purged = add_memory(
        admin, "decay_a", "purged", subject="alice", status="archived", status_changed_at=T0
    )
    erased = add_memory(admin, "decay_a", "erased", subject="bob")
    dropped = add_memory(admin, "decay_b", "dropped")
    for mid, tenant in (
        (kept, "decay_a"),
        (purged, "decay_a"),
        (erased, "decay_a"),
        (dropped, "decay_b"),
    ):
        admin.execute("insert into pgmem.memory_decay values (%s, %s, 0.25, %s)", (tenant, mid, T0))
    # An orphan, as a decay racing an erasure can leave one.
    admin.execute("insert into pgmem.memory_decay values ('decay_a', 999999999, 0.25, %s)", (T0,))

    def stored(tenant: str) -> set[int]:
        return {
            r[0]
            for r in admin.execute(
                "select memory_id from pgmem.memory_decay where tenant_id = %s", (tenant,)
            )
        }

    admin.execute("select pgmem.set_tenant('decay_a', false)")
    admin.execute("select pgmem.erase_subject('bob')")
    assert stored("decay_a") == {kept, purged, 999999999}
    admin.execute("select * from pgmem.purge(%s, 'decay_a')", (T0 + 365 * DAY,))
    assert status_of(admin, purged) == [None]
    assert stored("decay_a") == {kept}
    assert stored("decay_b") == {dropped}
    admin.execute("select pgmem.drop_tenant('decay_b')")
    assert stored("decay_b") == set()
    assert stored("decay_a") == {kept}


def test_memory_decay_is_the_tenants_own_and_never_deleted_by_it(
    admin: psycopg.Connection, two_tenants: tuple[psycopg.Connection, psycopg.Connection]
) -> None:
    a, b = two_tenants
    a_mid = add_memory(a, "ta", "a fact", last_accessed_at=T0 - 30 * DAY)
    b_mid = add_memory(b, "tb", "b fact", last_accessed_at=T0 - 30 * DAY)
    assert a.execute("select pgmem.decay(%s)", (T0,)).fetchone() == (1,)
    assert b.execute("select pgmem.decay(%s)", (T0,)).fetchone() == (1,)
    assert a.execute("select tenant_id, memory_id from pgmem.memory_decay").fetchall() == [
        ("ta", a_mid)
    ]
    # Another tenant's row can be neither read, written nor created.
    assert (
        a.execute(
            "update pgmem.memory_decay set effective_importance = 1 where memory_id = %s",
            (b_mid,),
        ).rowcount
        == 0
    )
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute("insert into pgmem.memory_decay values ('tb', %s, 1, now())", (b_mid,))
    # No DELETE (nor table-wide UPDATE): no LOCK TABLE that would stall every tenant.
    for statement in (
        "delete from pgmem.memory_decay",
        "lock table pgmem.memory_decay in access exclusive mode",
        "update pgmem.memory_decay set memory_id = memory_id + 1",
    ):
        with pytest.raises(errors.InsufficientPrivilege), a.transaction():
            a.execute(statement)
    assert memory(admin, b_mid)["effective_importance"] == pytest.approx(
        0.5 * 2 ** (-30 / 7), abs=1e-5
    )


def test_concurrent_decays_store_each_value_once(
    admin: psycopg.Connection, tenant: str, dsn: str
) -> None:
    """Two sessions decaying the same tenant at once: both finish, and every stored
    value is the formula's (the second upserts over the first, never a duplicate)."""
    import threading

    ids = [
        add_memory(admin, tenant, f"episode {i}", last_accessed_at=T0 - (i % 30) * DAY)
        for i in range(200)
    ]
    results: list[int] = []
    errors_seen: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                barrier.wait()
                row = conn.execute("select pgmem.decay(%s, %s)", (T0, tenant)).fetchone()
                assert row is not None
                results.append(row[0])
        except BaseException as exc:  # reported below
            errors_seen.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors_seen == []
    decayed = sum(1 for i in range(200) if i % 30 > 0)  # accessed at T0: unchanged
    assert decayed <= sum(results) <= 2 * decayed
    rows = dict(
        admin.execute(
            "select memory_id, effective_importance from pgmem.memory_decay where tenant_id = %s",
            (tenant,),
        ).fetchall()
    )
    assert len(rows) == decayed
    for i, mid in enumerate(ids):
        if i % 30:
            assert rows[mid] == pytest.approx(0.5 * 2 ** (-(i % 30) / 7), abs=1e-5)
        else:
            assert mid not in rows
