"""The job runner (pgmem.run_job): advisory lock, recording in job_runs, who
may run it; pg_cron scheduling, including a real cron tick; the CLI verbs."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import settle_cron_runs
from psycopg import errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from test_lifecycle import DAY, T0, add_memory, status_of
from typer.testing import CliRunner

from pgmem import schema, server
from pgmem.cli.app import app

CRON_TICK_WAIT = 75  # seconds: one minute tick of pg_cron, plus start-up slack


def last_run(conn: psycopg.Connection, job: str) -> tuple | None:
    return conn.execute(
        "select status, counts, message from pgmem.job_runs"
        " where job = %s order by run_id desc limit 1",
        (job,),
    ).fetchone()


@pytest.fixture(autouse=True)
def week_long_episodes(admin: psycopg.Connection) -> None:
    """The day counts below assume a 7-day episodic half-life; the default
    (30 days) may change, so every tenant these tests create starts from it."""
    admin.execute(
        "update pgmem.settings set half_life_episodic = '7 days' where tenant_id = '_default'"
    )


@pytest.fixture
def other_session(dsn: str) -> Iterator[psycopg.Connection]:
    """A second, independent superuser session on the same database."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


def test_run_job_records_what_it_did(admin: psycopg.Connection) -> None:
    admin.execute("select pgmem.create_tenant('a'), pgmem.create_tenant('b')")
    add_memory(admin, "a", "weak a", importance=0.5)
    add_memory(admin, "b", "weak b", importance=0.5)
    now = T0 + 60 * DAY
    run = admin.execute(
        "select job, tenant_id, status, counts, started_at <= finished_at, duration_ms >= 0"
        " from pgmem.run_job('archive', %s)",
        (now,),
    ).fetchone()
    assert run == ("archive", None, "ok", {"weak": 2, "expired": 0}, True, True)
    assert admin.execute("select count(*) from pgmem.job_runs").fetchone() == (1,)
    # One tenant only, on request.
    add_memory(admin, "a", "weak a2", importance=0.5)
    add_memory(admin, "b", "weak b2", importance=0.5)
    run = admin.execute(
        "select tenant_id, counts from pgmem.run_job('archive', %s, 'b')", (now,)
    ).fetchone()
    assert run == ("b", {"weak": 1, "expired": 0})
    assert admin.execute(
        "select tenant_id, count(*) from pgmem.memories where status = 'active' group by 1"
    ).fetchall() == [("a", 1)]


def test_maintain_runs_every_job_in_order(admin: psycopg.Connection) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    add_memory(admin, "a", "old", importance=0.5)
    add_memory(admin, "a", "kept", kind="semantic", importance=0.5)
    rows = admin.execute(
        "select job, status, counts from pgmem.maintain(%s)", (T0 + 60 * DAY,)
    ).fetchall()
    # Archive first: decay does not rewrite what archive just took out.
    assert rows == [
        ("archive", "ok", {"weak": 1, "expired": 0}),
        ("decay", "ok", {"decayed": 1}),
        ("capacity", "ok", {"subjects": 0, "evicted_active": 0, "evicted_archived": 0}),
        ("purge", "ok", {"inbox": 0, "memories": 0}),
        ("sessions", "ok", {"closed": 0, "purged_messages": 0, "expired_tasks": 0}),
        ("consolidate", "ok", {"subjects": 0}),
        ("watchdog", "ok", {"ended": 0}),
        ("links", "ok", {"subjects": 0, "episodes": 0, "links": 0, "waiting": 0}),
        ("accesses", "ok", {"folded": 0}),
    ]


def test_run_job_unknown_job_and_tenant(admin: psycopg.Connection) -> None:
    with pytest.raises(psycopg.Error) as info:
        admin.execute("select pgmem.run_job('vacuum')")
    assert info.value.sqlstate == "PM035"
    assert "p_job = 'vacuum'" in info.value.diag.message_primary
    assert "archive, decay, capacity, purge, sessions, consolidate" in info.value.diag.message_hint
    with pytest.raises(psycopg.Error) as info:
        admin.execute("select pgmem.run_job('decay', now(), 'nobody')")
    assert info.value.sqlstate == "PM002"


def test_run_job_skips_while_another_session_holds_the_lock(
    admin: psycopg.Connection, other_session: psycopg.Connection
) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    mid = add_memory(admin, "a", "old", importance=0.5)
    # The lock is the job's row in pgmem._job_locks, which only the owner can lock.
    holder = other_session.transaction()
    holder.__enter__()
    pid = other_session.execute(
        "select pg_backend_pid() from pgmem._job_locks where job = 'archive' for update"
    ).fetchone()
    assert pid is not None
    run = admin.execute(
        "select status, counts, message from pgmem.run_job('archive', %s)", (T0 + 60 * DAY,)
    ).fetchone()
    assert run is not None
    assert run[:2] == ("skipped", {})
    assert f"pid {pid[0]}" in run[2]
    assert status_of(admin, mid) == ["active"]
    assert last_run(admin, "archive") == run  # the skip is recorded
    # Other jobs have their own locks.
    assert admin.execute("select status from pgmem.run_job('decay')").fetchone() == ("ok",)

    holder.__exit__(None, None, None)
    run = admin.execute(
        "select status, counts from pgmem.run_job('archive', %s)", (T0 + 60 * DAY,)
    ).fetchone()
    assert run == ("ok", {"weak": 1, "expired": 0})


def test_concurrent_runs_of_one_job_run_it_once(
    admin: psycopg.Connection, dsn: str, other_session: psycopg.Connection
) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    add_memory(admin, "a", "old", importance=0.5)
    # Session 1 runs the job in a transaction it has not committed yet: the
    # transaction-level lock is held until it does.
    with psycopg.connect(dsn) as first:
        run = first.execute(
            "select status from pgmem.run_job('archive', %s)", (T0 + 60 * DAY,)
        ).fetchone()
        assert run == ("ok",)
        second = other_session.execute(
            "select status, message from pgmem.run_job('archive', %s)", (T0 + 60 * DAY,)
        ).fetchone()
        assert second is not None
        assert second[0] == "skipped"
        first.commit()
    assert admin.execute(
        "select status, counts->>'weak' from pgmem.job_runs order by status"
    ).fetchall() == [("ok", "1"), ("skipped", None)]


def test_maintenance_does_not_wait_for_rows_a_writer_holds(
    admin: psycopg.Connection, dsn: str
) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    held = add_memory(admin, "a", "held by a writer", importance=0.5)
    free = add_memory(admin, "a", "free", importance=0.5)
    with psycopg.connect(dsn) as writer:
        writer.execute("select 1 from pgmem.memories where memory_id = %s for update", (held,))
        admin.execute("set lock_timeout = '2s'")  # a wait would fail the test, not hang it
        run = admin.execute(
            "select status, counts from pgmem.run_job('archive', %s)", (T0 + 60 * DAY,)
        ).fetchone()
        writer.rollback()
    assert run == ("ok", {"weak": 1, "expired": 0})
    assert status_of(admin, held, free) == ["active", "archived"]
    # The next run picks it up.
    admin.execute("select pgmem.run_job('archive', %s)", (T0 + 60 * DAY,))
    assert status_of(admin, held) == ["archived"]


def test_a_failing_job_is_recorded_not_lost(admin: psycopg.Connection) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    mid = add_memory(admin, "a", "old", importance=0.5)
    # Stand-in for any failure inside a job: history refuses archive events.
    admin.execute(
        """create function pg_temp.refuse() returns trigger language plpgsql as
           $$ begin raise exception 'disk on fire' using errcode = 'XX001'; end $$"""
    )
    admin.execute(
        "create trigger refuse before insert on pgmem.memory_events for each row"
        " when (new.event = 'archive') execute function pg_temp.refuse()"
    )
    run = admin.execute(
        "select status, counts, message from pgmem.run_job('archive', %s)", (T0 + 60 * DAY,)
    ).fetchone()
    assert run == ("failed", {"sqlstate": "XX001"}, "disk on fire")
    assert status_of(admin, mid) == ["active"]  # the job's changes were rolled back
    assert last_run(admin, "archive") == run
    # What pg_cron calls fails too (cron.job_run_details says failed), and the
    # failed run stays recorded.
    with pytest.raises(psycopg.Error) as info:
        admin.execute("call pgmem.run_scheduled_job('archive')")
    assert info.value.sqlstate == "PM037"
    assert "disk on fire" in info.value.diag.message_primary
    assert admin.execute(
        "select count(*) from pgmem.job_runs where job = 'archive' and status = 'failed'"
    ).fetchone() == (2,)


def test_purge_job_prunes_old_run_history(admin: psycopg.Connection) -> None:
    now = T0 + 200 * DAY
    admin.execute(
        "insert into pgmem.job_runs (job, status, started_at, finished_at) values"
        " ('decay', 'ok', %(old)s, %(old)s), ('decay', 'ok', %(recent)s, %(recent)s)",
        {"old": now - 91 * DAY, "recent": now - 89 * DAY},
    )
    admin.execute("select pgmem.run_job('purge', %s)", (now,))
    assert admin.execute("select job, started_at from pgmem.job_runs order by run_id").fetchall()[
        0
    ] == ("decay", now - 89 * DAY)


def test_only_pgmem_admin_members_run_jobs(
    admin: psycopg.Connection,
    login_role: Callable[[str], psycopg.Connection],
    tenant_login: Callable[[str], psycopg.Connection],
) -> None:
    a = tenant_login("a")
    admin.execute("select pgmem.create_tenant('b')")
    add_memory(a, "a", "weak a", importance=0.5)
    add_memory(admin, "b", "weak b", importance=0.5)
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute("select pgmem.run_job('archive')")
    # A login role in pgmem_admin has no BYPASSRLS itself (attributes are
    # not inherited); run_job still covers every tenant.
    operator = login_role("pgmem_admin")
    assert operator.execute(
        "select rolbypassrls or rolsuper from pg_roles where rolname = current_user"
    ).fetchone() == (False,)
    run = operator.execute(
        "select status, counts from pgmem.run_job('archive', %s)", (T0 + 60 * DAY,)
    ).fetchone()
    assert run == ("ok", {"weak": 2, "expired": 0})


@pytest.fixture
def standby() -> Iterator[str]:
    """A throwaway primary with pgmem migrated and a streaming hot standby
    of it (pg_basebackup -R); yields the standby's DSN."""
    try:
        binaries = server.find_binaries()
    except server.ServerError as exc:
        pytest.skip(str(exc))
    as_postgres: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="pgmem-standby-", dir="/tmp"))
    if as_postgres:
        shutil.chown(root, "postgres", "postgres")
    primary, replica = root / "primary", root / "standby"
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])

    def run(*argv: str | Path) -> None:
        subprocess.run([*as_postgres, *map(str, argv)], check=True, capture_output=True)

    def start(data: Path, port: int) -> None:
        options = f"-p {port} -k {root} -c listen_addresses=''"
        run(binaries.tool("pg_ctl"), "-D", data, "-l", data.with_suffix(".log"), "-o", options,
            "-w", "start")  # fmt: skip

    started: list[Path] = []
    try:
        run(binaries.tool("initdb"), "-D", primary, "-U", "postgres", "--auth=trust")
        start(primary, ports[0])
        started.append(primary)
        primary_dsn = f"postgresql://postgres@/postgres?host={root}&port={ports[0]}"
        schema.upgrade(primary_dsn)
        run(binaries.tool("pg_basebackup"), "-D", replica, "-R", "-h", root, "-p", ports[0],
            "-U", "postgres")  # fmt: skip
        start(replica, ports[1])
        started.append(replica)
        yield f"postgresql://postgres@/postgres?host={root}&port={ports[1]}"
    finally:
        for data in reversed(started):
            run(binaries.tool("pg_ctl"), "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_run_job_returns_at_once_on_a_replica(standby: str) -> None:
    with psycopg.connect(standby, autocommit=True) as conn:
        assert conn.execute("select pg_is_in_recovery()").fetchone() == (True,)
        for job in ("archive", "decay", "capacity", "purge"):
            run = conn.execute(
                "select run_id, job, status, message from pgmem.run_job(%s)", (job,)
            ).fetchone()
            assert run is not None
            assert run[:3] == (None, job, "skipped")
            assert "replica" in run[3]
        # The same cron setup is safe on every node: maintain() skips too.
        assert {r[0] for r in conn.execute("select status from pgmem.maintain()")} == {"skipped"}


# -- pg_cron ------------------------------------------------------------------


def cron_database(admin: psycopg.Connection) -> str | None:
    row = admin.execute("select current_setting('cron.database_name', true)").fetchone()
    return row[0] if row else None


def test_schedule_without_pg_cron_here_says_why_and_what_to_do(admin: psycopg.Connection) -> None:
    cron_db = cron_database(admin)
    if cron_db is None:
        pytest.skip("pg_cron is not loaded on this server")
    for call in ("select * from pgmem.schedule()", "select pgmem.unschedule()"):
        with pytest.raises(psycopg.Error) as info:
            admin.execute(call)
        assert info.value.sqlstate == "PM036"
        assert f'"{cron_db}" (cron.database_name)' in info.value.diag.message_primary
        assert "cron.schedule_in_database(" in info.value.diag.message_hint
        assert "pgmem maintain" in info.value.diag.message_hint
    # Listing is not an error: there is simply nothing scheduled here.
    assert admin.execute("select * from pgmem.scheduled_jobs()").fetchall() == []


def test_schedule_installs_updates_and_removes_cron_jobs(
    admin: psycopg.Connection, server_dsn: str, cron_dsn: str
) -> None:
    """In the cron database itself, inside a transaction that is rolled back."""
    cron_db = cron_database(admin)
    if cron_db is None:
        pytest.skip("pg_cron is not loaded on this server")
    from pgmem.paths import sql_dir

    with psycopg.connect(make_conninfo(server_dsn, dbname=cron_db)) as conn:
        ready = conn.execute(
            "select to_regclass('cron.job') is not null"
            " and to_regclass('pgmem.job_runs') is not null"
        ).fetchone()
        assert ready == (True,), f"database {cron_db} has no pg_cron or no pgmem schema"
        # This test's version of the functions, for this transaction only.
        conn.execute("set local role pgmem_admin")
        for name in ("30_lifecycle.sql", "40_jobs.sql"):
            conn.execute((sql_dir() / "functions" / name).read_text())
        conn.execute("reset role")

        rows = conn.execute(
            "select jobname, schedule, command from pgmem.schedule(p_decay => '*/5 * * * *')"
        ).fetchall()
        assert rows == [
            ("pgmem-decay", "*/5 * * * *", "call pgmem.run_scheduled_job('decay')"),
            ("pgmem-archive", "17 3 * * *", "call pgmem.run_scheduled_job('archive')"),
            ("pgmem-capacity", "27 3 * * *", "call pgmem.run_scheduled_job('capacity')"),
            ("pgmem-purge", "37 3 * * *", "call pgmem.run_scheduled_job('purge')"),
            ("pgmem-sessions", "*/15 * * * *", "call pgmem.run_scheduled_job('sessions')"),
            ("pgmem-consolidate", "47 3 * * *", "call pgmem.run_scheduled_job('consolidate')"),
            ("pgmem-watchdog", "* * * * *", "call pgmem.run_scheduled_job('watchdog')"),
            ("pgmem-links", "* * * * *", "call pgmem.run_scheduled_job('links')"),
            ("pgmem-accesses", "* * * * *", "call pgmem.run_scheduled_job('accesses')"),
        ]
        # Scheduling again updates in place; NULL removes a job.
        conn.execute("select pgmem.schedule(p_decay => '0 * * * *', p_purge => null)")
        jobs = conn.execute(
            "select jobname, schedule, database from pgmem.scheduled_jobs()"
        ).fetchall()
        assert jobs == [
            ("pgmem-accesses", "* * * * *", cron_db),
            ("pgmem-archive", "17 3 * * *", cron_db),
            ("pgmem-capacity", "27 3 * * *", cron_db),
            ("pgmem-consolidate", "47 3 * * *", cron_db),
            ("pgmem-decay", "0 * * * *", cron_db),
            ("pgmem-links", "* * * * *", cron_db),
            ("pgmem-sessions", "*/15 * * * *", cron_db),
            ("pgmem-watchdog", "* * * * *", cron_db),
        ]
        assert conn.execute("select pgmem.unschedule()").fetchone() == (8,)
        assert conn.execute("select count(*) from pgmem.scheduled_jobs()").fetchone() == (0,)
        conn.rollback()


@pytest.mark.slow
def test_pg_cron_really_runs_the_job(
    admin: psycopg.Connection, dsn: str, server_dsn: str, cron_dsn: str
) -> None:
    """Schedules the decay job from the cron database into this test's
    database (cron.schedule_in_database, as pgmem.schedule's hint says) and
    waits for a real minute tick to record its run in job_runs."""
    cron_db = cron_database(admin)
    if cron_db is None:
        pytest.skip("pg_cron is not loaded on this server")
    dbname = conninfo_to_dict(dsn)["dbname"]
    admin.execute("select pgmem.create_tenant('a')")
    mid = add_memory(admin, "a", "old", importance=0.8, last_accessed_at=T0)
    row = admin.execute("select command from pgmem.cron_plan() where job = 'decay'").fetchone()
    assert row is not None
    command = row[0]

    with psycopg.connect(make_conninfo(server_dsn, dbname=cron_db), autocommit=True) as cron:
        assert cron.execute("select to_regclass('cron.job') is not null").fetchone() == (True,)
        jobid = cron.execute(
            "select cron.schedule_in_database(%s, '* * * * *', %s, %s, current_user)",
            (f"pgmem-test-{dbname}", command, dbname),
        ).fetchone()[0]
        try:
            deadline = time.monotonic() + CRON_TICK_WAIT
            while (run := last_run(admin, "decay")) is None and time.monotonic() < deadline:
                time.sleep(1)
        finally:
            cron.execute("select cron.unschedule(%s)", (jobid,))
            # Let a run in flight finish before the database is dropped.
            settle_cron_runs(cron, jobid)
            details = cron.execute(
                "select status, return_message from cron.job_run_details where jobid = %s",
                (jobid,),
            ).fetchall()
            cron.execute("delete from cron.job_run_details where jobid = %s", (jobid,))
    assert run is not None, f"no run recorded within {CRON_TICK_WAIT} s (cron: {details})"
    status, counts, _ = run
    assert (status, counts) == ("ok", {"decayed": 1})
    effective = admin.execute(
        "select effective_importance from pgmem.memory_decay where memory_id = %s", (mid,)
    ).fetchone()
    assert effective is not None and effective[0] < 0.8
    assert [status for status, _ in details][:1] == ["succeeded"]


# -- CLI ----------------------------------------------------------------------


def test_cli_maintain_and_jobs(admin: psycopg.Connection, dsn: str) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    mid = add_memory(admin, "a", "old", importance=0.5)
    runner = CliRunner()
    now = (T0 + 60 * DAY).isoformat()
    result = runner.invoke(app, ["maintain", "--dsn", dsn, "--now", now, "--json"])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)
    assert [(r["job"], r["status"]) for r in runs] == [
        ("archive", "ok"),
        ("decay", "ok"),
        ("capacity", "ok"),
        ("purge", "ok"),
        ("sessions", "ok"),
        ("consolidate", "ok"),
        ("watchdog", "ok"),
        ("links", "ok"),
        ("accesses", "ok"),
    ]
    assert status_of(admin, mid) == ["archived"]

    later = (T0 + 70 * DAY).isoformat()
    result = runner.invoke(app, ["maintain", "--dsn", dsn, "-j", "purge", "--now", later])
    assert result.exit_code == 0, result.output
    assert "maintenance runs" in result.output
    result = runner.invoke(app, ["maintain", "--dsn", dsn, "-j", "purge", "--now", later, "--json"])
    assert [r["counts"] for r in json.loads(result.output)] == [{"inbox": 0, "memories": 0}]
    assert status_of(admin, mid) == [None]

    result = runner.invoke(app, ["jobs", "--dsn", dsn, "--json", "-n", "2"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert listed["scheduled"] == []
    assert [(r["job"], r["counts"]["memories"]) for r in listed["runs"]] == [
        ("purge", 0),
        ("purge", 1),
    ]
    result = runner.invoke(app, ["jobs", "--dsn", dsn])
    assert result.exit_code == 0, result.output
    assert "pg_cron is not installed in this database" in result.output


def test_cli_reports_failures_clearly(
    admin: psycopg.Connection, dsn: str, tenant_login: Callable[[str], psycopg.Connection]
) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["maintain", "--dsn", dsn, "-j", "nope"])
    assert result.exit_code == 1
    assert "unknown pgmem job" in result.output and "PM035" in result.output
    result = runner.invoke(app, ["schedule", "--dsn", dsn, "--decay", "off"])
    if cron_database(admin) is not None:
        assert result.exit_code == 1
        assert "cron.database_name" in result.output and "pgmem maintain" in result.output


def test_one_tenants_bad_row_fails_only_its_part_of_a_job(admin: psycopg.Connection) -> None:
    """A row no write path accepts now (an infinite time, left from before the
    check) fails decay and archive for its tenant alone: the others are
    maintained, and the failure is a run of its own, naming the tenant."""
    admin.execute("select pgmem.create_tenant('a'), pgmem.create_tenant('b')")
    add_memory(admin, "a", "weak a", importance=0.5)
    add_memory(admin, "b", "weak b", importance=0.5)
    bad = add_memory(admin, "b", "timeless b", importance=0.5)
    add_memory(admin, "a", "weak a2", importance=0.5)
    # An upgraded database: the row was written before the constraint, which
    # is NOT VALID and so does not look at it.
    admin.execute("alter table pgmem.memories drop constraint memories_finite_times")
    admin.execute(
        "update pgmem.memories set last_accessed_at = 'infinity' where memory_id = %s", (bad,)
    )
    definition = (
        "check ("
        + " and ".join(
            f"({c} is null or isfinite({c}))"
            for c in (
                "valid_from",
                "valid_to",
                "last_accessed_at",
                "expires_at",
                "created_at",
                "updated_at",
                "status_changed_at",
            )
        )
        + ") not valid"
    )
    admin.execute(f"alter table pgmem.memories add constraint memories_finite_times {definition}")

    now = T0 + 60 * DAY
    runs = {
        r[0]: r[1:]
        for r in admin.execute(
            "select job, status, counts, message from pgmem.maintain(%s)", (now,)
        ).fetchall()
    }
    assert set(runs) == {
        "archive",
        "decay",
        "capacity",
        "purge",
        "sessions",
        "consolidate",
        "watchdog",
        "links",
        "accesses",
    }
    assert all(status == "ok" for status, _, _ in runs.values()), runs
    _, counts, message = runs["archive"]
    assert counts["failed_tenants"] == 1 and "b" in message, runs["archive"]
    failed = admin.execute(
        "select job, tenant_id, counts ->> 'sqlstate' from pgmem.job_runs"
        " where status = 'failed' order by job"
    ).fetchall()
    assert [(job, tenant) for job, tenant, _ in failed] == [("archive", "b"), ("decay", "b")]
    assert all(state for _, _, state in failed)
    # Tenant a was maintained: its weak memories are archived; b's part rolled back.
    assert admin.execute(
        "select tenant_id, status, count(*) from pgmem.memories group by 1, 2 order by 1, 2"
    ).fetchall() == [("a", "archived", 2), ("b", "active", 2)]


def test_a_consolidate_payload_is_checked_and_a_bad_old_one_breaks_nothing(
    tenant_login: Callable[[str], psycopg.Connection], admin: psycopg.Connection
) -> None:
    acme = tenant_login("acme")
    acme.execute("insert into pgmem.subjects (subject) values ('alice')")
    for now in ('"not a timestamp"', '"infinity"', "42"):
        with pytest.raises(psycopg.Error) as info:
            acme.execute(
                "insert into pgmem.inbox (subject, job, payload, status)"
                f" values ('alice', 'consolidate', '{{\"now\": {now}}}', 'done')"
            )
        assert info.value.sqlstate == "PM040", info.value
    # One written before the check (here by the owner, whom the guard trusts).
    admin.execute(
        "insert into pgmem.inbox (tenant_id, subject, job, payload, status)"
        " values ('acme', 'alice', 'consolidate', '{\"now\": \"not a timestamp\"}', 'done')"
    )
    for n in range(8):
        add_memory(admin, "acme", f"episode {n} of a long week")
    (run,) = admin.execute(
        "select counts from pgmem.run_job('consolidate', %s)", (T0 + 60 * DAY,)
    ).fetchone()
    assert run == {"subjects": 1}


def test_the_watchdog_ends_a_tenants_idle_transaction_whatever_it_set(
    tenant_login: Callable[[str], psycopg.Connection], admin: psycopg.Connection
) -> None:
    idle = tenant_login("idle")
    busy = tenant_login("busy")
    admin.execute(
        "update pgmem.settings set max_idle_in_transaction = '1 second' where tenant_id = 'idle'"
    )
    idle.execute("set idle_in_transaction_session_timeout = 0")
    (role,) = idle.execute("select current_user").fetchone()
    idle.execute(f'alter role "{role}" set idle_in_transaction_session_timeout = 0')
    idle.execute("begin")
    idle.execute("select count(*) from pgmem.memories")
    busy.execute("begin")  # busy's own limit (60 s) is not reached
    busy.execute("select 1")
    time.sleep(1.5)
    (counts,) = admin.execute("select counts from pgmem.run_job('watchdog')").fetchone()
    assert counts == {"ended": 1}
    with pytest.raises(psycopg.OperationalError):
        idle.execute("select 1")
    assert busy.execute("select 1").fetchone() == (1,)
    busy.execute("rollback")
