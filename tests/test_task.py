"""Working memory: tasks, idempotent steps, crash and resume, distillation, expiry."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from conftest import Db, Tenant, raises_sqlstate

from pgmem import Memory

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
PLAN = ["search flights", "book the cheapest", "email the receipt"]


def start(conn: psycopg.Connection, session: str | None = "s1", **kw: object) -> int:
    row = conn.execute(
        "select pgmem.start_task('alice', 'book a flight to Rome', %(plan)s, %(session)s,"
        " p_max_retries => %(max_retries)s, p_ttl => %(ttl)s, p_now => %(now)s)",
        {"plan": json.dumps(PLAN), "session": session, "max_retries": None, "ttl": None}
        | {"now": None}
        | kw,
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_steps_are_recorded_once_and_resume_finds_the_open_task(
    new_tenant: Callable[[], Tenant],
) -> None:
    t = new_tenant()
    memory = Memory(conn=t.conn)
    task = memory.start_task("alice", "book a flight to Rome", PLAN, session_id="s1")
    assert task.state()["status"] == "running"
    first = task.record(1, observation="3 flights found", variables={"flights": 3})
    assert first == {"recorded": True, "current_step": 2, "status": "running"}
    again = task.record(1, observation="a replay after a crash", variables={"flights": 99})
    assert again == {"recorded": False, "current_step": 2, "status": "running"}
    state = task.state()
    assert state["variables"] == {"flights": 3}
    assert [(s["step"], s["observation"]) for s in state["steps"]] == [(1, "3 flights found")]
    resumed = memory.resume_task("alice", "s1")
    assert resumed is not None and resumed.task_id == task.task_id
    assert resumed.state()["last_completed_step"] == 1
    assert memory.resume_task("alice", "other") is None
    task.update(status="waiting_for_confirmation", variables={"pick": "AZ 101"})
    state = task.state()
    assert state["status"] == "waiting_for_confirmation"
    assert state["variables"] == {"flights": 3, "pick": "AZ 101"}
    assert [r["task_id"] for r in memory.tasks("alice", status="waiting_for_confirmation")] == [
        task.task_id
    ]


AGENT = textwrap.dedent(
    """
    import sys, time
    import psycopg
    dsn, task_id = sys.argv[1], int(sys.argv[2])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select pgmem.record_step(%s, 1, 'found 3 flights')", (task_id,))
        # Step 2 is under way (its transaction open, not committed) when the process dies.
        conn.execute("begin")
        conn.execute("select pgmem.record_step(%s, 2, 'booked AZ 101')", (task_id,))
        print("step 2 in flight", flush=True)
        time.sleep(600)
    """
)


def test_an_agent_killed_between_steps_resumes_after_its_last_completed_step(
    new_tenant: Callable[[], Tenant],
) -> None:
    t = new_tenant()
    task_id = start(t.conn)
    with subprocess.Popen(
        [sys.executable, "-c", AGENT, t.dsn, str(task_id)], stdout=subprocess.PIPE, text=True
    ) as agent:
        try:
            assert agent.stdout is not None
            assert agent.stdout.readline().strip() == "step 2 in flight"
        finally:
            agent.send_signal(signal.SIGKILL)
            agent.wait(timeout=30)
    assert agent.returncode == -signal.SIGKILL
    # The restarted agent: the latest open task of its session, after step 1.
    state = t.conn.execute(
        "select task_id, current_step, last_completed_step, status"
        " from pgmem.resume_task('alice', 's1')"
    ).fetchone()
    assert state == (task_id, 2, 1, "running")
    # It redoes step 1's record (harmless), then steps 2 and 3.
    recorded = [
        t.conn.execute(
            "select recorded from pgmem.record_step(%s, %s, %s)", (task_id, step, f"did {step}")
        ).fetchone()
        for step in (1, 2, 3)
    ]
    assert recorded == [(False,), (True,), (True,)]
    steps = t.conn.execute(
        "select step, observation from pgmem.task_steps order by step"
    ).fetchall()
    assert steps == [(1, "found 3 flights"), (2, "did 2"), (3, "did 3")]


def test_finishing_distils_the_task_and_clears_its_scratch_state(
    new_tenant: Callable[[], Tenant],
) -> None:
    t = new_tenant()
    memory = Memory(conn=t.conn)
    task = memory.start_task(
        "alice", "book a flight to Rome", PLAN, session_id="s1", variables={"x": 1}
    )
    task.record(1, observation="3 flights found")
    task.record(2, observation="booked AZ 101 for 120 EUR")
    ids = task.finish("AZ 101 booked", learned_rule="Search at least two airlines before booking.")
    episode = t.conn.execute(
        "select kind, content, session_id, metadata from pgmem.memories where memory_id = %s",
        (ids["memory_id"],),
    ).fetchone()
    assert episode is not None
    assert episode[0] == "episodic" and episode[2] == "s1"
    assert episode[1] == (
        'Task "book a flight to Rome" completed. Steps done: 1. search flights → 3 flights found; '
        "2. book the cheapest → booked AZ 101 for 120 EUR. Outcome: AZ 101 booked"
    )
    assert episode[3] == {"derived_from": {"task_id": task.task_id}, "task_status": "done"}
    rule = t.conn.execute(
        "select kind, content from pgmem.memories where memory_id = %s", (ids["procedure_id"],)
    ).fetchone()
    assert rule == ("procedural", "Search at least two airlines before booking.")
    link = t.conn.execute(
        "select from_id, to_id from pgmem.memory_links where link_type = 'derived_from'"
    ).fetchall()
    assert link == [(ids["procedure_id"], ids["memory_id"])]
    state = task.state()
    assert (state["status"], state["variables"], state["steps"]) == ("done", {}, [])
    assert state["memory_id"] == ids["memory_id"] and state["finished_at"] is not None
    assert memory.resume_task("alice", "s1") is None
    with raises_sqlstate("PM082"):
        task.finish("again")
    with raises_sqlstate("PM082"):
        task.record(3, observation="late")


def test_bad_input_raises_pm_codes_and_writes_nothing(new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    with raises_sqlstate("PM081"):
        t.conn.execute("select pgmem.start_task('alice', 'goal', '[]')")
    with raises_sqlstate("PM081"):
        t.conn.execute("""select pgmem.start_task('alice', 'goal', '["a", 3]')""")
    with raises_sqlstate("PM011"):
        t.conn.execute("""select pgmem.start_task('alice', ' ', '["a"]')""")
    with raises_sqlstate("PM083"):
        t.conn.execute("""select pgmem.start_task('alice', 'goal', '["a"]', p_status => 'done')""")
    assert t.conn.execute("select count(*) from pgmem.tasks").fetchone() == (0,)
    task_id = start(t.conn)
    for step in (0, 4, None):
        with raises_sqlstate("PM081"):
            t.conn.execute("select pgmem.record_step(%s, %s)", (task_id, step))
    with raises_sqlstate("PM080"):
        t.conn.execute("select pgmem.record_step(%s, 1)", (task_id + 1000,))
    with raises_sqlstate("PM083"):
        t.conn.execute("select pgmem.finish_task(%s, 'running')", (task_id,))
    with raises_sqlstate("PM081"):
        t.conn.execute("select pgmem.set_task(%s, p_current_step => 5)", (task_id,))
    assert t.conn.execute("select count(*) from pgmem.task_steps").fetchone() == (0,)
    assert t.conn.execute("select count(*) from pgmem.memories").fetchone() == (0,)
    assert t.conn.execute("select current_step, status from pgmem.tasks").fetchone() == (
        1,
        "running",
    )


def test_retries_past_the_maximum_fail_the_task(new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    task_id = start(t.conn, max_retries=1)
    assert t.conn.execute(
        "select * from pgmem.fail_step(%s, 1, 'timeout')", (task_id,)
    ).fetchone() == (
        1,
        "running",
    )
    assert t.conn.execute(
        "select * from pgmem.fail_step(%s, 1, 'timeout')", (task_id,)
    ).fetchone() == (
        1,
        "failed",
    )
    outcome = t.conn.execute("select outcome, memory_id from pgmem.tasks").fetchone()
    assert outcome is not None and outcome[0] == "step 1 failed after 1 retries: timeout"
    assert t.conn.execute(
        "select content from pgmem.memories where memory_id = %s", (outcome[1],)
    ).fetchone() == (
        'Task "book a flight to Rome" failed. Steps done: none. Outcome: ' + outcome[0],
    )


def test_expired_tasks_are_cancelled_by_the_sessions_job(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    t = new_tenant()
    idle = start(t.conn, ttl=timedelta(hours=2), now=T0)
    busy = start(t.conn, session="s2", ttl=timedelta(hours=2), now=T0)
    t.conn.execute(
        "select pgmem.record_step(%s, 1, 'x', p_now => %s)", (busy, T0 + timedelta(hours=1))
    )
    run = db.admin.execute(
        "select counts from pgmem.run_job('sessions', %s, %s)", (T0 + timedelta(hours=2.5), t.name)
    ).fetchone()
    assert run is not None and run[0]["expired_tasks"] == 1
    states = dict(t.conn.execute("select task_id, status from pgmem.tasks").fetchall())
    assert states == {idle: "cancelled", busy: "running"}  # a step pushes expiry on
    assert t.conn.execute(
        "select outcome, variables from pgmem.tasks where task_id = %s", (idle,)
    ).fetchone() == ("expired", {})
    # Expiry distils nothing: nobody finished the task.
    assert t.conn.execute("select count(*) from pgmem.memories").fetchone() == (0,)


def test_tenants_cannot_see_or_touch_each_others_tasks(new_tenant: Callable[[], Tenant]) -> None:
    a, b = new_tenant(), new_tenant()
    task_id = start(a.conn)
    a.conn.execute("select pgmem.record_step(%s, 1, 'secret')", (task_id,))
    for table in ("tasks", "task_steps"):
        assert b.conn.execute(f"select count(*) from pgmem.{table}").fetchone() == (0,)
    assert b.conn.execute("select * from pgmem.task_state(%s)", (task_id,)).fetchall() == []
    assert b.conn.execute("select * from pgmem.resume_task('alice', 's1')").fetchall() == []
    for call in (
        "select pgmem.record_step(%s, 2)",
        "select pgmem.finish_task(%s)",
        "select pgmem.set_task(%s, 'planning')",
        "select pgmem.fail_step(%s, 1, 'x')",
    ):
        with raises_sqlstate("PM080"):
            b.conn.execute(call, (task_id,))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        b.conn.execute(
            "insert into pgmem.task_steps (tenant_id, task_id, step, status)"
            " values (%s, %s, 2, 'done')",
            (a.name, task_id),
        )
    assert b.conn.execute("update pgmem.tasks set status = 'done'").rowcount == 0
    # Deletes are not B's to make at all (revision 0005): refused, A's step stays.
    with pytest.raises(psycopg.errors.InsufficientPrivilege), b.conn.transaction():
        b.conn.execute("delete from pgmem.task_steps")
    assert a.conn.execute("select count(*) from pgmem.task_steps").fetchone() == (1,)
    assert b.conn.execute("select pgmem.expire_tasks(now() + interval '1 year')").fetchone() == (0,)
    assert a.conn.execute("select status, current_step from pgmem.tasks").fetchone() == (
        "running",
        2,
    )
