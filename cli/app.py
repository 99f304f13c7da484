"""Root of the `pgmem` command: each verb group lives in its own module."""

from __future__ import annotations

import typer

from pgmem.cli import db, migrate, tenant

app = typer.Typer(
    name="pgmem",
    help="Long-term memory for LLM agents, inside PostgreSQL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(db.app, name="db")
app.command("migrate")(migrate.migrate)
app.add_typer(tenant.app, name="tenant")


def main() -> None:
    app()
