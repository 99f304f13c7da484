"""`pgmem db`: the embedded local PostgreSQL server (logic in pgmem.server)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import psycopg
import typer

from pgmem import citus, server
from pgmem.cli.common import (
    DsnOption,
    JsonOption,
    database_errors,
    dsn_for,
    fail,
    print_rows,
)
from pgmem.config import Config
from pgmem.queries import citus as Q

app = typer.Typer(
    help=(
        "Run the local PostgreSQL server (pgvector + pg_cron) under PGMEM_HOME. "
        "With --dsn or PGMEM_DSN set, pgmem uses that server and does not manage it."
    ),
    no_args_is_help=True,
)

# `status` exits with this when the server is stopped, as pg_ctl and
# systemctl do, so scripts can test it.
EXIT_STOPPED = 3


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except server.ServerError as exc:
        raise fail(str(exc)) from None


def _describe(cluster: server.Cluster) -> None:
    typer.echo(f"cluster: {cluster.data_dir}")
    typer.echo(f"log:     {cluster.log_file}")
    if cluster.relocated:
        typer.echo(f"note:    {cluster.relocated}")


@app.command()
def start(
    dsn: DsnOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--citus",
            min=1,
            help="A Citus cluster: this server as coordinator plus N workers on the next ports.",
        ),
    ] = None,
) -> None:
    """Start the server, creating the cluster and database the first time."""
    config = Config.from_env(dsn=dsn)
    if workers is None and not config.dsn and citus.is_local_cluster(config):
        workers = len(citus.nodes(config)) - 1
    if workers is not None:
        with _errors():
            for node, started in citus.start(config, workers):
                state = "started" if started else "already running"
                typer.echo(f"{node.role}: {state}: {server.dsn(node.config)}")
        return
    with _errors():
        started = server.start(config)
        url = server.dsn(config)
        cluster = server.locate(config)
    typer.echo(f"{'started' if started else 'already running'}: {url}")
    _describe(cluster)


@app.command()
def stop(dsn: DsnOption = None) -> None:
    """Stop the server (fast shutdown: open sessions are rolled back); every Citus node."""
    config = Config.from_env(dsn=dsn)
    if not config.dsn and citus.is_local_cluster(config):
        with _errors():
            for node, stopped in citus.stop(config):
                typer.echo(f"{node.role}: {'stopped' if stopped else 'not running'}")
        return
    with _errors():
        stopped = server.stop(config)
    typer.echo("stopped" if stopped else "not running")


@app.command()
def status(dsn: DsnOption = None) -> None:
    """Say whether the server runs, and its URL. Exit code 3 when stopped."""
    config = Config.from_env(dsn=dsn)
    with _errors():
        if config.dsn:
            version = server.external_version(config)
            typer.echo(
                f"external server (not managed by pgmem), reachable, PostgreSQL {version}: "
                f"{server.redact(config.dsn)}"
            )
            return
        current = server.status(config)
        url = server.dsn(config)
        if citus.is_local_cluster(config):
            for node, state in citus.statuses(config)[1:]:
                where = f"{'running' if state.running else 'stopped'}: {server.dsn(node.config)}"
                typer.echo(f"citus {node.role}: {where}")
    if current.running:
        typer.echo(f"running (pid {current.pid}): {url}")
    elif not current.initialized:
        typer.echo(f"stopped, no cluster yet (`pgmem db start` creates it): {url}")
    elif current.stale_pid_file:
        typer.echo(f"stopped after a crash (`pgmem db start` recovers it): {url}")
    else:
        typer.echo(f"stopped: {url}")
    _describe(current.cluster)
    if not current.running:
        raise typer.Exit(EXIT_STOPPED)


@app.command()
def url(dsn: DsnOption = None) -> None:
    """Print the DSN that reaches the server as superuser (libpq URL)."""
    config = Config.from_env(dsn=dsn)
    with _errors():
        typer.echo(server.dsn(config))
        if not config.dsn and not server.status(config).running:
            typer.echo("note: the server is not running (`pgmem db start`)", err=True)


@app.command()
def nodes(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Citus: tenants, shards, memories and bytes per node (pgmem.node_distribution)."""
    with database_errors(), psycopg.connect(dsn_for(dsn)) as conn:
        rows = conn.cursor(row_factory=psycopg.rows.dict_row).execute(Q.NODE_DISTRIBUTION)
        print_rows(rows.fetchall(), as_json=as_json, title="memories per Citus node")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def psql(ctx: typer.Context, dsn: DsnOption = None) -> None:
    """Open psql on the server; extra arguments go to psql (e.g. -c 'select 1')."""
    config = Config.from_env(dsn=dsn)
    with _errors():
        argv = server.psql_argv(config, ctx.args)
    os.execv(argv[0], argv)
