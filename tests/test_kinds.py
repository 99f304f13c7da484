"""Memory kinds have one definition, pgmem.kinds(): the CHECK on pgmem.memories.kind,
the half-life columns of pgmem.settings and Python's KINDS must agree with it, and
every place that treats kinds differently reads it."""

from __future__ import annotations

import re
from collections.abc import Callable

import psycopg
import pytest
from conftest import Db, Tenant
from psycopg.types.json import Jsonb

from pgmem.extract import KINDS

NewTenant = Callable[[], Tenant]


def _kinds(db: Db) -> list[tuple[str, int, str, str]]:
    return db.admin.execute("select * from pgmem.kinds() order by section").fetchall()


def test_python_kinds_are_the_sql_kinds(db: Db) -> None:
    assert list(KINDS) == [k for k, *_ in _kinds(db)]


def test_the_kind_check_and_the_settings_columns_match_the_kinds(db: Db) -> None:
    (check,) = db.admin.execute(
        "select pg_get_constraintdef(c.oid) from pg_constraint as c"
        " where c.conrelid = 'pgmem.memories'::regclass and c.contype = 'c'"
        " and pg_get_constraintdef(c.oid) like '%%kind%%'"
    ).fetchone() or (None,)
    assert check is not None
    assert sorted(re.findall(r"'(\w+)'::text", check)) == sorted(k for k, *_ in _kinds(db))
    columns = {
        r[0]
        for r in db.admin.execute(
            "select attname from pg_attribute where attrelid = 'pgmem.settings'::regclass"
            " and attnum > 0 and not attisdropped and atttypid = 'interval'::regtype"
        )
    }
    assert {setting for *_, setting in _kinds(db)} <= columns
    half_lives = db.admin.execute(
        "select h.kind, h.half_life from pgmem.settings as s, pgmem._half_lives(s) as h"
        " where s.tenant_id = '_default' order by h.kind"
    ).fetchall()
    assert len(half_lives) == len(KINDS) and all(h is not None for _, h in half_lives)


def test_each_kind_has_its_own_half_life(db: Db, new_tenant: NewTenant) -> None:
    """Recency in recall and the decay policy use each kind's own setting (a kind
    missing from recall's old CASE fell silently into the procedural half-life)."""
    tenant: Tenant = new_tenant()
    db.admin.execute(
        "update pgmem.settings set half_life_episodic = '1 day', half_life_semantic = '2 days',"
        " half_life_preference = '4 days', half_life_procedural = '8 days'"
        " where tenant_id = %s",
        (tenant.name,),
    )
    items = [{"content": f"fact about {kind} things", "kind": kind} for kind in KINDS]
    tenant.conn.execute(
        "select * from pgmem.remember_many(%s, 'dora', '2026-01-01')", (Jsonb(items),)
    )
    rows = tenant.conn.execute(
        "select r.kind, r.recency from pgmem.recall('dora', 'fact things', p_k => 10,"
        " p_reinforce => false, p_now => '2026-01-05') as r"
    ).fetchall()
    recency = dict(rows)
    # Four days after the last access: 2^-4, 2^-2, 2^-1, 2^-0.5.
    expected = {"episodic": 0.0625, "semantic": 0.25, "preference": 0.5, "procedural": 2**-0.5}
    assert recency.keys() == expected.keys()
    for kind, value in expected.items():
        assert recency[kind] == pytest.approx(value, rel=1e-5), kind
    policy = dict(
        db.admin.execute(
            "select kind, half_life from pgmem._decay_policy where tenant_id = %s", (tenant.name,)
        ).fetchall()
    )
    assert {k: v.days for k, v in policy.items()} == {
        "episodic": 1,
        "semantic": 2,
        "preference": 4,
        "procedural": 8,
    }


def test_context_sections_follow_the_kinds(db: Db, new_tenant: NewTenant) -> None:
    tenant: Tenant = new_tenant()
    items = [{"content": f"note on {kind} matters", "kind": kind} for kind in reversed(KINDS)]
    tenant.conn.execute("select * from pgmem.remember_many(%s, 'erin')", (Jsonb(items),))
    (block,) = tenant.conn.execute(
        "select pgmem.context('erin', 'note matters', p_token_budget => 1000)"
    ).fetchone() or (None,)
    headings = re.findall(r"^## (.+)$", block, re.M)
    assert headings == [heading for _, _, heading, _ in _kinds(db)]


def test_unknown_kind_hint_lists_the_kinds(new_tenant: NewTenant) -> None:
    tenant: Tenant = new_tenant()
    with pytest.raises(psycopg.Error) as info:
        tenant.conn.execute("select pgmem.remember('fay', 'x', p_kind => 'dream')")
    assert info.value.sqlstate == "PM013"
    assert info.value.diag.message_hint == "Use one of: " + ", ".join(KINDS) + "."
