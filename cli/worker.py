"""`pgmem worker`: the ingest worker (logic in pgmem.worker)."""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING, Annotated, Any

import psycopg
import typer
from psycopg.rows import dict_row
from rich.progress import TaskID

from pgmem import ingest
from pgmem.cli.common import DsnOption, database_errors, dsn_for, err_console, fail, progress
from pgmem.embed import EmbeddingError
from pgmem.extract import LLMError
from pgmem.queries import backlog
from pgmem.worker import (
    DEFAULT_BATCH,
    DEFAULT_JOB_TIMEOUT,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_POLL_INTERVAL,
    Worker,
    WorkerError,
)

if TYPE_CHECKING:
    from rich.progress import Progress


class _DrainingWorker(Worker):
    """A `--once` worker that advances two bars: inbox jobs, then memories embedded."""

    # Until watch(): no bars (not a terminal, --quiet, or not --once).
    _bar: Progress | None = None
    _tasks: tuple[TaskID, TaskID] = (TaskID(0), TaskID(0))

    def watch(self, bar: Progress, jobs: TaskID, embeddings: TaskID) -> None:
        self._bar, self._tasks = bar, (jobs, embeddings)

    def run_batch(self, conn: Any) -> int:
        claimed = super().run_batch(conn)
        self._advance(self._tasks[0], claimed)
        return claimed

    def embed_pass(self, conn: Any) -> int:
        embedded = super().embed_pass(conn)
        self._advance(self._tasks[1], embedded)
        return embedded

    def _advance(self, task: TaskID, done: int) -> None:
        if self._bar is None:
            return
        self._bar.advance(task, done)
        # Work enqueued during the run counts too: the bar grows rather than overflow.
        state = self._bar.tasks[task]
        if state.total is not None and state.completed > state.total:
            self._bar.update(task, total=state.completed)


def worker(
    once: Annotated[
        bool, typer.Option("--once", help="Drain the jobs that are due, then exit.")
    ] = False,
    batch: Annotated[
        int, typer.Option("--batch", min=1, max=1000, help="Jobs claimed per transaction.")
    ] = DEFAULT_BATCH,
    poll_interval: Annotated[
        float,
        typer.Option(
            "--poll-interval",
            min=0.05,
            help="Seconds between polls when no NOTIFY arrives (also picks up retries).",
        ),
    ] = DEFAULT_POLL_INTERVAL,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            "-t",
            envvar="PGMEM_TENANT",
            help="Serve this tenant only (default: all tenants, which needs a BYPASSRLS role).",
        ),
    ] = None,
    max_attempts: Annotated[
        int,
        typer.Option("--max-attempts", min=1, help="Attempts before a job is marked failed."),
    ] = DEFAULT_MAX_ATTEMPTS,
    job_timeout: Annotated[
        float,
        typer.Option(
            "--job-timeout",
            min=0.1,
            envvar="PGMEM_JOB_TIMEOUT",
            help="Seconds one job may take (extraction, embedding and SQL) before it fails"
            " and is retried, so it cannot stall its batch.",
        ),
    ] = DEFAULT_JOB_TIMEOUT,
    episode_roles: Annotated[
        list[str] | None,
        typer.Option(
            "--episode-role",
            help="Also keep this role's turns as episodes (assistant, tool); the user's"
            " always are. Repeatable.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Log warnings only.")] = False,
    dsn: DsnOption = None,
) -> None:
    """Turn queued conversation turns into memories; embed and merge what SQL left.

    Claims pgmem.inbox jobs in batches (FOR UPDATE SKIP LOCKED), woken by
    NOTIFY pgmem_inbox. SIGTERM or Ctrl-C finishes the current batch and exits 0.
    """
    # A --once run on a terminal draws bars (jobs, embeddings) and logs above them.
    bars = once and not quiet and err_console.is_terminal
    handler: logging.Handler
    if bars:
        from rich.logging import RichHandler

        handler = RichHandler(console=err_console, show_path=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    # pgmem's progress at INFO; libraries (model loading, HTTP clients) only when they warn.
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("pgmem").setLevel(logging.WARNING if quiet else logging.INFO)
    url = dsn_for(dsn)
    try:
        roles = ingest.episode_roles(episode_roles)
    except ValueError as exc:
        raise fail(str(exc)) from None
    with database_errors(dsn), progress(quiet=not bars) as bar:
        try:
            runner = _DrainingWorker(
                url,
                tenant=tenant,
                batch=batch,
                poll_interval=poll_interval,
                max_attempts=max_attempts,
                job_timeout=job_timeout,
                episode_roles=roles,
            )
            if bars:
                with psycopg.connect(url, row_factory=dict_row) as conn:
                    ahead = conn.execute(backlog.BACKLOG, {"tenant": tenant}).fetchone()
                assert ahead is not None
                runner.watch(
                    bar,
                    bar.add_task("inbox jobs", total=ahead["jobs"]),
                    bar.add_task("embeddings", total=ahead["unembedded"]),
                )
            stats = runner.run(once=once)
        except (WorkerError, EmbeddingError, LLMError) as exc:
            raise fail(str(exc)) from None
        except KeyboardInterrupt:
            # A second signal: the open batch rolled back, its jobs are pending again.
            raise fail("stopped at once; the open batch was rolled back", code=130) from None
    summary = stats.as_dict()
    if stats.jobs and stats.seconds > 0:
        summary["jobs_per_second"] = round(stats.jobs / stats.seconds, 1)
    typer.echo(json.dumps(summary))
