"""Scoped recall: recall and context filtered by agent, and across a subject's own
memories plus shared subjects of the same tenant, under RLS; and the time zones
relative dates are read in (revision 0011)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from conftest import Db, Tenant
from psycopg.rows import dict_row


def _remember(t: Tenant, subject: str, content: str, agent: str | None = None) -> int:
    row = t.conn.execute(
        "select memory_id from pgmem.remember(%s, %s, p_agent_id => %s)", (subject, content, agent)
    ).fetchone()
    assert row is not None
    return int(row[0])


def _recall(t: Tenant, subject: str, query: str, **args: Any) -> list[dict[str, Any]]:
    named = "".join(f", p_{name} => %({name})s" for name in args)
    with t.conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"select * from pgmem.recall(%(subject)s, %(query)s, p_reinforce => false{named})",
            {"subject": subject, "query": query, **args},
        ).fetchall()


def test_recall_across_personal_and_shared_subjects_says_whose(
    new_tenant: Callable[[], Tenant],
) -> None:
    a = new_tenant()
    own = _remember(a, "alice", "Alice deploys with blue green releases")
    team = _remember(a, "team:infra", "The infra team deploys on Tuesdays only")
    _remember(a, "bob", "Bob deploys from his laptop")  # not shared: never returned

    alone = _recall(a, "alice", "deploys")
    assert [(r["memory_id"], r["subject"]) for r in alone] == [(own, "alice")]

    both = _recall(a, "alice", "deploys", shared_subjects=["team:infra"])
    assert {(r["memory_id"], r["subject"]) for r in both} == {(own, "alice"), (team, "team:infra")}
    # The same subject twice, or the subject itself among the shared, counts once.
    again = _recall(a, "alice", "deploys", shared_subjects=["team:infra", "alice", "team:infra"])
    assert sorted(r["memory_id"] for r in again) == sorted(r["memory_id"] for r in both)

    block = a.conn.execute(
        "select pgmem.context('alice', 'deploys', p_shared_subjects => array['team:infra'],"
        " p_reinforce => false)"
    ).fetchone()
    assert block is not None
    assert "(team:infra) The infra team deploys on Tuesdays only" in block[0]
    assert "] Alice deploys with blue green releases" in block[0]  # own lines unlabelled


def test_a_shared_subject_of_another_tenant_is_never_visible(
    new_tenant: Callable[[], Tenant], db: Db
) -> None:
    a, b = new_tenant(), new_tenant()
    mine = _remember(a, "alice", "Alice's team ships the Atlas release")
    _remember(b, "team:atlas", "Atlas release secret: the launch code is 4242")
    rows = _recall(a, "alice", "Atlas release", shared_subjects=["team:atlas"])
    assert [r["memory_id"] for r in rows] == [mine]
    block = a.conn.execute(
        "select pgmem.context('alice', 'Atlas release launch code',"
        " p_shared_subjects => array['team:atlas'], p_reinforce => false)"
    ).fetchone()
    assert block is not None and "4242" not in block[0]
    # With the embedding path too (the exact scan and HNSW filter the same way).
    rows = _recall(a, "team:atlas", "launch code")
    assert rows == []
    # Tenant B sees its own through the same call.
    assert [
        r["subject"] for r in _recall(b, "x", "launch code", shared_subjects=["team:atlas"])
    ] == ["team:atlas"]


def test_recall_and_context_filter_by_agent(new_tenant: Callable[[], Tenant]) -> None:
    a = new_tenant()
    planner = _remember(a, "alice", "Alice's trip to Kyoto is booked", agent="planner")
    _remember(a, "alice", "Alice asked about Kyoto weather", agent="weather-bot")
    _remember(a, "alice", "Alice loves Kyoto temples")  # no agent
    rows = _recall(a, "alice", "Kyoto", agent_id="planner")
    assert [r["memory_id"] for r in rows] == [planner]
    assert len(_recall(a, "alice", "Kyoto")) == 3
    block = a.conn.execute(
        "select pgmem.context('alice', 'Kyoto', p_agent_id => 'planner', p_reinforce => false)"
    ).fetchone()
    assert block is not None
    assert "booked" in block[0] and "weather" not in block[0] and "temples" not in block[0]


def _unit(axis: int) -> str:
    v = [0.0] * 384
    v[axis], v[383] = 1.0, 1.0
    return "[" + ",".join(str(x / 2**0.5) for x in v) + "]"


@pytest.mark.parametrize("path", ["text", "exact", "hnsw"])
def test_agent_scope_keeps_shared_subjects_whoever_wrote_them(
    new_tenant: Callable[[], Tenant], db: Db, path: str
) -> None:
    """Every combination of agent, shared and own subjects, on each search path."""
    a = new_tenant()
    rows = {
        "own_planner": ("alice", "planner"),
        "own_other": ("alice", "weather-bot"),
        "own_none": ("alice", None),
        "team_planner": ("team:s12", "planner"),
        "team_other": ("team:s12", "weather-bot"),
        "team_none": ("team:s12", None),
        "bob_planner": ("bob", "planner"),  # neither own nor shared: never
    }
    ids = {}
    for i, (name, (subject, agent)) in enumerate(rows.items()):
        row = a.conn.execute(
            "select memory_id from pgmem.remember(%s, %s, %s::vector, p_agent_id => %s)",
            (subject, f"Kyoto trip note {name}", _unit(i), agent),
        ).fetchone()
        assert row is not None
        ids[name] = int(row[0])
    if path == "hnsw":
        db.admin.execute(
            "update pgmem.settings set exact_scan_limit = 0 where tenant_id = %s", (a.name,)
        )
        db.admin.execute("select pgmem.index_subjects(%s)", (a.name,))
        a.conn.execute("set enable_sort = off")
    query = "Kyoto trip" if path == "text" else None
    embedding = None if path == "text" else _unit(383)

    def names(agent: str | None, shared: list[str] | None) -> set[str]:
        with a.conn.cursor(row_factory=dict_row) as cur:
            got = cur.execute(
                "select memory_id from pgmem.recall('alice', %s, %s::vector, p_reinforce => false,"
                " p_agent_id => %s, p_shared_subjects => %s)",
                (query, embedding, agent, shared),
            ).fetchall()
        return {name for name, i in ids.items() if i in {r["memory_id"] for r in got}}

    own = {"own_planner", "own_other", "own_none"}
    team = {"team_planner", "team_other", "team_none"}
    assert names(None, None) == own
    assert names(None, ["team:s12"]) == own | team
    assert names("planner", None) == {"own_planner"}
    # The agent narrows the personal subject only: a team's memories are
    # everyone's, whoever wrote them.
    assert names("planner", ["team:s12"]) == {"own_planner"} | team
    assert names("weather-bot", ["team:s12"]) == {"own_other"} | team
    assert names("nobody", ["team:s12"]) == team
    block = a.conn.execute(
        "select pgmem.context('alice', 'Kyoto trip', %s::vector, p_agent_id => 'planner',"
        " p_shared_subjects => array['team:s12'], p_reinforce => false)",
        (embedding,),
    ).fetchone()
    assert block is not None
    assert "own_planner" in block[0] and "team_none" in block[0] and "team_other" in block[0]
    assert "own_other" not in block[0] and "own_none" not in block[0]
    assert "bob_planner" not in block[0]


def test_context_takes_a_time_window(new_tenant: Callable[[], Tenant], db: Db) -> None:
    a = new_tenant()
    old = _remember(a, "alice", "Alice went hiking in the Alps")
    new = _remember(a, "alice", "Alice went hiking in Patagonia")
    db.admin.execute(
        "update pgmem.memories set created_at = '2026-01-10', valid_from = '2026-01-10'"
        " where memory_id = %s",
        (old,),
    )
    db.admin.execute(
        "update pgmem.memories set created_at = '2026-11-10', valid_from = '2026-11-10'"
        " where memory_id = %s",
        (new,),
    )
    block = a.conn.execute(
        "select pgmem.context('alice', 'hiking', p_since => '2026-11-01', p_until => '2026-12-01',"
        " p_reinforce => false)"
    ).fetchone()
    assert block is not None and "Patagonia" in block[0] and "Alps" not in block[0]


def test_bad_shared_subjects_are_refused(new_tenant: Callable[[], Tenant]) -> None:
    a = new_tenant()
    for bad in ([""], [None], ["x" * 257]):
        with pytest.raises(psycopg.Error) as info:
            _recall(a, "alice", "anything", shared_subjects=bad)
        assert info.value.sqlstate == "PM010"


# ---------------------------------------------------------------- time zones


def test_time_zone_of_subject_then_tenant(new_tenant: Callable[[], Tenant], db: Db) -> None:
    a = new_tenant()

    def zone(subject: str) -> str:
        row = a.conn.execute("select pgmem.time_zone(%s)", (subject,)).fetchone()
        assert row is not None
        return str(row[0])

    assert zone("alice") == "UTC"  # the _default row
    db.admin.execute(
        "insert into pgmem.settings (tenant_id, time_zone) values (%s, 'Europe/Berlin')"
        " on conflict (tenant_id) do update set time_zone = excluded.time_zone",
        (a.name,),
    )
    assert zone("alice") == "Europe/Berlin"
    row = a.conn.execute("select pgmem.set_time_zone('alice', 'Asia/Shanghai')").fetchone()
    assert row == ("Asia/Shanghai",)
    assert (zone("alice"), zone("bob")) == ("Asia/Shanghai", "Europe/Berlin")
    a.conn.execute("select pgmem.set_time_zone('alice', null)")
    assert zone("alice") == "Europe/Berlin"
    with pytest.raises(psycopg.Error) as info:
        a.conn.execute("select pgmem.set_time_zone('alice', 'Mars/Olympus')")
    assert info.value.sqlstate == "PM110"
    with pytest.raises(psycopg.Error) as info:
        db.admin.execute(
            "update pgmem.settings set time_zone = 'Mars/Olympus' where tenant_id = %s", (a.name,)
        )
    assert info.value.sqlstate == "22023"


def test_a_subjects_time_zone_is_its_tenants_alone(
    new_tenant: Callable[[], Tenant], db: Db
) -> None:
    a, b = new_tenant(), new_tenant()
    a.conn.execute("select pgmem.set_time_zone('alice', 'Asia/Tokyo')")
    row = b.conn.execute("select pgmem.time_zone('alice')").fetchone()
    assert row == ("UTC",)
    zones = db.admin.execute(
        "select tenant_id, time_zone from pgmem.subjects where subject = 'alice'"
        " and tenant_id in (%s, %s)",
        (a.name, b.name),
    ).fetchall()
    assert zones == [(a.name, "Asia/Tokyo")]
