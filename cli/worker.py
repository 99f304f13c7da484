"""`pgmem worker`: the ingest worker (logic in pgmem.worker)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Annotated

import typer

from pgmem.cli.common import DsnOption, database_errors, dsn_for, fail
from pgmem.embed import EmbeddingError
from pgmem.extract import LLMError
from pgmem.worker import (
    DEFAULT_BATCH,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_POLL_INTERVAL,
    Worker,
    WorkerError,
)


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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Log warnings only.")] = False,
    dsn: DsnOption = None,
) -> None:
    """Turn queued conversation turns into memories; embed and merge what SQL left.

    Claims pgmem.inbox jobs in batches (FOR UPDATE SKIP LOCKED), woken by
    NOTIFY pgmem_inbox. SIGTERM or Ctrl-C finishes the current batch and exits 0.
    """
    # pgmem's progress at INFO; libraries (model loading, HTTP clients) only when they warn.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s"
    )
    logging.getLogger("pgmem").setLevel(logging.WARNING if quiet else logging.INFO)
    url = dsn_for(dsn)
    with database_errors():
        try:
            runner = Worker(
                url,
                tenant=tenant,
                batch=batch,
                poll_interval=poll_interval,
                max_attempts=max_attempts,
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
