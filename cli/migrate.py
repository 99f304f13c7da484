"""`pgmem migrate`: alembic revisions plus the idempotent sql/ files."""

from __future__ import annotations

from typing import Annotated

import typer

from pgmem import citus, schema
from pgmem.cli.common import (
    DsnOption,
    JsonOption,
    console,
    database_errors,
    dsn_for,
    fail,
    print_rows,
)


def migrate(
    dsn: DsnOption = None,
    to: Annotated[
        str, typer.Option("--to", help="Target revision (head, base or an id).")
    ] = "head",
    down: Annotated[
        bool, typer.Option("--down", help="Downgrade to --to (e.g. --down --to base).")
    ] = False,
    sql: Annotated[
        bool,
        typer.Option("--sql", help="Print the SQL of an upgrade from scratch; change nothing."),
    ] = False,
    dims: Annotated[
        int | None,
        typer.Option(
            "--dims", min=1, max=16000, help="Embedding size, fixed by the first migration."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Bring the pgmem schema to a revision (default: upgrade to head) and show its status."""
    if sql:
        if down:
            raise fail("--sql prints upgrades only; review a downgrade in alembic/versions/")
        typer.echo(schema.upgrade_sql(to, dims or schema.DEFAULT_DIMS))
        return
    target = dsn_for(dsn)
    with database_errors():
        try:
            if down:
                schema.downgrade(target, to)
            elif citus.has_citus(target):
                # A Citus coordinator: the tenant tables end up distributed.
                for table, kind, _colocation, shards in citus.upgrade(target, to, dims):
                    console.print(f"citus: {table}: {kind} ({shards} shards)")
            else:
                schema.upgrade(target, to, dims)
        except schema.SchemaError as exc:
            raise fail(str(exc)) from None
        show_status(target, as_json)


def show_status(dsn: str, as_json: bool) -> None:
    info = schema.status(dsn)
    if as_json:
        print_rows([info], as_json=True)
        return
    revision = info["revision"] or "none (empty)"
    state = "at head" if info["revision"] == info["head"] else f"head is {info['head']}"
    console.print(
        f"schema revision: [bold]{revision}[/bold] ({state}); embedding dims: {info['dims']}"
    )
    tables = info["tables"]
    assert isinstance(tables, list)
    if tables:
        print_rows(tables, as_json=False, title="pgmem tables")
    console.print(f"roles: {', '.join(info['roles']) or 'none'}")  # type: ignore[arg-type]
    extensions = info["extensions"]
    assert isinstance(extensions, dict)
    console.print("extensions: " + (", ".join(f"{k} {v}" for k, v in extensions.items()) or "none"))
    if "pg_cron" in extensions:
        console.print("pg_cron: available in this database (pgmem.schedule() installs the jobs)")
    else:
        console.print(
            f"pg_cron: not in this database (cron.database_name = {info['cron_database']}); "
            "run `pgmem maintain` from another scheduler"
        )
