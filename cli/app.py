"""Root of the `pgmem` command: each verb group lives in its own module."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="pgmem",
    help="Long-term memory for LLM agents, inside PostgreSQL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def main() -> None:
    app()
