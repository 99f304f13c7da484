"""`pgmem maintain`, `pgmem schedule`, `pgmem jobs`: lifecycle maintenance.

The work is in SQL (sql/functions/30_lifecycle.sql, 40_jobs.sql); these
verbs call pgmem.run_job, pgmem.schedule/unschedule and read pgmem.job_runs.
They need a pgmem_admin member (or superuser) DSN: a tenant role calls
pgmem.decay(), pgmem.archive()… in SQL on its own memories instead.
"""

from __future__ import annotations

from typing import Annotated, Any

import psycopg
import typer
from psycopg.rows import dict_row

from pgmem.cli.common import (
    DsnOption,
    JsonlOption,
    JsonOption,
    console,
    database_errors,
    dsn_for,
    fail,
    output_format,
    print_json,
    print_rows,
)
from pgmem.queries import admin as admin_queries

RUN_COLUMNS = [
    "run_id",
    "job",
    "tenant_id",
    "status",
    "counts",
    "started_at",
    "duration_ms",
    "message",
]
RUN_FORMAT = {
    "counts": lambda v: ", ".join(f"{k}={n}" for k, n in (v or {}).items()),
    "started_at": lambda v: f"{v:%Y-%m-%d %H:%M:%S}" if v else "",
    "duration_ms": lambda v: f"{v:.0f} ms" if v is not None else "",
}
OFF = "off"


def _connect(dsn: str | None) -> psycopg.Connection[dict[str, Any]]:
    # Autocommit: each job is its own transaction, so its advisory lock ends
    # with it and one job's work is kept even if a later one fails.
    return psycopg.connect(dsn_for(dsn), autocommit=True, row_factory=dict_row)


def maintain(
    job: Annotated[
        list[str] | None,
        typer.Option(
            "--job",
            "-j",
            help="Job to run (repeatable): archive, decay, capacity, purge, sessions,"
            " consolidate, watchdog, links, accesses. Default: all.",
        ),
    ] = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", "-t", help="Only this tenant (default: every tenant).")
    ] = None,
    now: Annotated[
        str | None,
        typer.Option("--now", help="Run as of this time (ISO 8601), e.g. to catch up or test."),
    ] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run maintenance now: every job, or those named (each recorded in pgmem.job_runs)."""
    with database_errors(dsn), _connect(dsn) as conn:
        row = conn.execute(admin_queries.JOB_NAMES).fetchone()
        assert row is not None
        jobs = job or list(row["jobs"])
        rows = []
        for name in jobs:
            # Each run its own transaction; links goes on in chunks, as pg_cron runs it.
            runs, again = 0, True
            while again:
                runs += 1
                run = conn.execute(
                    admin_queries.RUN_JOB,
                    {"job": name, "now": now, "tenant": tenant, "runs": runs},
                ).fetchone()
                assert run is not None
                again = run.pop("again")
                rows.append(run)
    print_rows(
        rows,
        as_json=as_json,
        title="maintenance runs",
        columns=RUN_COLUMNS,
        formatters=RUN_FORMAT,
    )
    failed = [r["job"] for r in rows if r["status"] == "failed"]
    if failed:
        raise fail(f"failed: {', '.join(failed)} (see the message column)")


def schedule(
    decay: Annotated[
        str | None, typer.Option("--decay", help="Cron schedule of decay, or 'off'.")
    ] = None,
    archive: Annotated[
        str | None, typer.Option("--archive", help="Cron schedule of archive, or 'off'.")
    ] = None,
    capacity: Annotated[
        str | None, typer.Option("--capacity", help="Cron schedule of capacity, or 'off'.")
    ] = None,
    purge: Annotated[
        str | None, typer.Option("--purge", help="Cron schedule of purge, or 'off'.")
    ] = None,
    sessions: Annotated[
        str | None,
        typer.Option(
            "--sessions",
            help="Cron schedule of sessions (idle sessions, retention, task expiry), or 'off'.",
        ),
    ] = None,
    consolidate: Annotated[
        str | None,
        typer.Option(
            "--consolidate",
            help="Cron schedule of consolidate (subjects due for insights), or 'off'.",
        ),
    ] = None,
    watchdog: Annotated[
        str | None,
        typer.Option(
            "--watchdog",
            help="Cron schedule of watchdog (ends tenant sessions idle in a transaction past"
            " settings.max_idle_in_transaction), or 'off'.",
        ),
    ] = None,
    links: Annotated[
        str | None,
        typer.Option(
            "--links",
            help="Cron schedule of links (the association links of stated turns written since),"
            " or 'off'.",
        ),
    ] = None,
    accesses: Annotated[
        str | None,
        typer.Option(
            "--accesses",
            help="Cron schedule of accesses (folds the accesses recall recorded into the"
            " memories), or 'off'.",
        ),
    ] = None,
    remove: Annotated[
        bool, typer.Option("--remove", help="Remove every pgmem job from pg_cron instead.")
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Install (or update) the pg_cron jobs; defaults: decay hourly, sessions every 15
    minutes, watchdog, links and accesses every minute, the others nightly."""
    with database_errors(dsn), _connect(dsn) as conn:
        if remove:
            row = conn.execute(admin_queries.UNSCHEDULE).fetchone()
            assert row is not None
            console.print(f"removed {row['removed']} pg_cron job(s)")
            return
        # Options left out keep the defaults declared in SQL (pgmem.cron_plan).
        defaults = {
            r["job"]: r["schedule"] for r in conn.execute(admin_queries.CRON_PLAN).fetchall()
        }
        given = {
            "decay": decay,
            "archive": archive,
            "capacity": capacity,
            "purge": purge,
            "sessions": sessions,
            "consolidate": consolidate,
            "watchdog": watchdog,
            "links": links,
            "accesses": accesses,
        }
        chosen = [
            None if value == OFF else (value or defaults[name]) for name, value in given.items()
        ]
        rows = conn.execute(admin_queries.SCHEDULE, chosen).fetchall()
    print_rows(rows, as_json=as_json, title="pg_cron jobs")


def jobs(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many recent runs.")] = 20,
    job: Annotated[str | None, typer.Option("--job", "-j", help="Only runs of this job.")] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """Show the scheduled pg_cron jobs and the latest runs."""
    fmt = output_format(as_json, as_jsonl)
    with database_errors(dsn), _connect(dsn) as conn:
        here = conn.execute(admin_queries.HAS_PG_CRON).fetchone()
        scheduled = conn.execute(admin_queries.SCHEDULED_JOBS).fetchall()
        runs = conn.execute(admin_queries.RECENT_RUNS, {"job": job, "limit": limit}).fetchall()
    if fmt != "table":
        print_json({"scheduled": scheduled, "runs": runs}, lines=fmt == "jsonl")
        return
    if here and here["here"]:
        print_rows(
            scheduled,
            title="scheduled (pg_cron)",
            empty="no pg_cron jobs scheduled: `pgmem schedule` installs them",
        )
    else:
        console.print(
            "pg_cron is not installed in this database (see `pgmem schedule`); "
            "run `pgmem maintain` from your own scheduler."
        )
    print_rows(
        runs,
        as_json=False,
        title="recent runs",
        columns=RUN_COLUMNS,
        formatters=RUN_FORMAT,
        empty="no maintenance runs recorded yet (`pgmem maintain` runs them now)",
    )
