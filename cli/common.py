"""Options and output helpers shared by the CLI verbs."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

import psycopg
import typer
from rich.console import Console
from rich.table import Table

from pgmem.db import resolve_dsn

console = Console()
err_console = Console(stderr=True)

DsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn", envvar="PGMEM_DSN", help="PostgreSQL to use instead of the embedded server."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one clear error line; `raise fail(...)` ends the command."""
    err_console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@contextmanager
def database_errors() -> Iterator[None]:
    """Turn database errors into one line with the server's hint, not a traceback."""
    try:
        yield
    except psycopg.Error as exc:
        diag = getattr(exc, "diag", None)
        primary = (diag.message_primary if diag else None) or str(exc).strip().splitlines()[0]
        hint = f" (hint: {diag.message_hint})" if diag and diag.message_hint else ""
        code = f" [{diag.sqlstate}]" if diag and diag.sqlstate else ""
        raise fail(f"{primary}{code}{hint}") from None


def dsn_for(dsn: str | None) -> str:
    with database_errors():
        try:
            return resolve_dsn(dsn)
        except Exception as exc:  # server start failures carry a clear message
            if isinstance(exc, psycopg.Error):
                raise
            raise fail(str(exc)) from None


def print_rows(
    rows: Sequence[dict[str, Any]],
    *,
    as_json: bool,
    title: str | None = None,
    columns: Sequence[str] | None = None,
    formatters: dict[str, Callable[[Any], str]] | None = None,
) -> None:
    """Rows as a rich table for people, or JSON (one array) for scripts."""
    if as_json:
        json.dump(list(rows), sys.stdout, default=str, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return
    columns = list(columns or (rows[0].keys() if rows else []))
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    formatters = formatters or {}
    for row in rows:
        table.add_row(*(formatters.get(c, _cell)(row.get(c)) for c in columns))
    console.print(table)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
