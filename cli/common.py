"""Options, errors and output shared by the CLI verbs.

Errors: one line on stderr that names what to do next, and an exit code scripts can
trust: 0 ok, 1 error, 2 usage, 3 server not reachable, 4 not found.

Output: a table for people, whose text columns (content, messages) take the width
left by the others and end in an ellipsis when they do not fit, so numbers never
wrap; an empty result is a sentence, not an empty table. ``--json`` prints one JSON
document and ``--jsonl`` one JSON object per line, for scripts. Colour follows rich:
none when ``NO_COLOR`` is set or when the output is not a terminal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

import psycopg
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pgmem.db import resolve_dsn
from pgmem.server import redact

if TYPE_CHECKING:
    from rich.progress import Progress

console = Console()
err_console = Console(stderr=True)

EXIT_ERROR = 1
EXIT_USAGE = 2
# As `pgmem db status` (and pg_ctl) for a stopped server.
EXIT_UNREACHABLE = 3
EXIT_NOT_FOUND = 4

DsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn", envvar="PGMEM_DSN", help="PostgreSQL to use instead of the embedded server."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
JsonlOption = Annotated[
    bool, typer.Option("--jsonl", help="Print one JSON object per line (JSON Lines).")
]

# SQLSTATEs of sql/functions/01_tenancy.sql that a CLI user fixes with a flag or a verb.
NO_TENANT = "PM001"
UNKNOWN_TENANT = "PM002"

# Columns of free text: they share the width the other columns leave and are cut
# with an ellipsis in tables (`pgmem show` prints a memory whole).
TEXT_COLUMNS = frozenset(
    {
        "content",
        "old_content",
        "new_content",
        "message",
        "details",
        "detail",
        "fix",
        "metadata",
        "command",
        "counts",
        "error",
        "login_roles",
    }
)
# Short headers for long names of narrow columns, so the width goes to the text;
# --json and --jsonl keep the full names.
HEADERS = {
    "memory_id": "id",
    "importance": "imp",
    "effective_importance": "eff_imp",
    "relevance": "rel",
    "recency": "rec",
    "similarity": "sim",
    "related_id": "related",
    "access_count": "accesses",
    "display_name": "name",
    "active_memories": "active",
    "avg_importance": "imp",
    "memories": "count",
    "subjects": "users",
    "old_content": "old",
    "new_content": "new",
}
# Narrowest a text column gets when the table must shrink to fit.
MIN_TEXT_WIDTH = 16


def fail(message: str, code: int = EXIT_ERROR) -> typer.Exit:
    """Print one clear error line; `raise fail(...)` ends the command."""
    line = Text.assemble(("error:", "red"), " ", " ".join(message.split()))
    err_console.print(line, highlight=False, soft_wrap=True)
    return typer.Exit(code)


def warn_degraded(result: object) -> None:
    """A warning line on stderr when a read or write went on without the embedder
    (``result.degraded``): the answer is still printed and the exit code stays 0."""
    reason = getattr(result, "degraded_reason", None)
    if reason:
        line = Text.assemble(("warning:", "yellow"), " degraded: ", " ".join(reason.split()))
        err_console.print(line, highlight=False, soft_wrap=True)


def unreachable(exc: psycopg.OperationalError) -> bool:
    """Whether a connection failed because no server answered (not a login or SQL error)."""
    text = str(exc)
    return exc.sqlstate is None and any(
        sign in text
        for sign in (
            "Is the server running",
            "Connection refused",
            "No such file or directory",
            "timeout expired",
            "could not translate host name",
        )
    )


def _database_message(exc: psycopg.Error, dsn: str | None) -> tuple[str, int]:
    """The one line (and exit code) for a database error, naming the user's fix."""
    if isinstance(exc, psycopg.OperationalError) and unreachable(exc):
        where = f" at {redact(dsn)}" if dsn else ""
        return (
            f"cannot reach PostgreSQL{where}: the server is not running; start it with "
            "`pgmem db start` (or fix --dsn / PGMEM_DSN)",
            EXIT_UNREACHABLE,
        )
    diag = exc.diag
    primary = diag.message_primary or str(exc).strip().splitlines()[0]
    if diag.sqlstate == NO_TENANT:
        return (
            "no pgmem tenant is bound: pass -t/--tenant NAME or set PGMEM_TENANT "
            "(`pgmem tenant list` shows the tenants)",
            EXIT_ERROR,
        )
    if diag.sqlstate == UNKNOWN_TENANT:
        return (
            f"{primary} (`pgmem tenant list` shows the tenants, "
            "`pgmem tenant create NAME` adds one)",
            EXIT_ERROR,
        )
    hint = f" (hint: {diag.message_hint})" if diag.message_hint else ""
    code = f" [{diag.sqlstate}]" if diag.sqlstate else ""
    return f"{primary}{code}{hint}", EXIT_ERROR


@contextmanager
def database_errors(dsn: str | None = None) -> Iterator[None]:
    """Database errors as one line with the fix, not a traceback (`dsn` names the server)."""
    try:
        yield
    except psycopg.Error as exc:
        message, code = _database_message(exc, dsn)
        raise fail(message, code) from None


def dsn_for(dsn: str | None) -> str:
    """The DSN to use: --dsn/PGMEM_DSN, or the embedded server (started if it is not)."""
    with database_errors(dsn):
        try:
            return resolve_dsn(dsn)
        except Exception as exc:  # server start failures carry a clear message
            if isinstance(exc, psycopg.Error):
                raise
            raise fail(str(exc)) from None


# ------------------------------------------------------------------------ output


def output_format(as_json: bool, as_jsonl: bool) -> str:
    """'json', 'jsonl' or 'table'; both flags at once is a usage error."""
    if as_json and as_jsonl:
        raise fail("--json and --jsonl exclude each other: pick one", EXIT_USAGE)
    return "json" if as_json else "jsonl" if as_jsonl else "table"


def json_default(value: object) -> object:
    """JSON for what psycopg returns besides plain types."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return str(value)


def print_json(value: object, *, lines: bool = False) -> None:
    """One indented JSON document, or (``lines``) one compact object per line."""
    if not lines:
        json.dump(value, sys.stdout, default=json_default, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return
    for item in value if isinstance(value, list) else [value]:
        sys.stdout.write(json.dumps(item, default=json_default, ensure_ascii=False) + "\n")


def print_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    as_json: bool = False,
    as_jsonl: bool = False,
    title: str | None = None,
    columns: Sequence[str] | None = None,
    formatters: Mapping[str, Callable[[Any], str]] | None = None,
    empty: str | None = None,
) -> None:
    """Rows as a table for people (``empty`` says so when there are none), or JSON."""
    if as_json or as_jsonl:
        print_json([dict(r) for r in rows], lines=as_jsonl)
        return
    if not rows:
        console.print(empty or f"no {title or 'rows'}", highlight=False)
        return
    console.print(table(rows, title=title, columns=columns, formatters=formatters))


def table(
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str | None = None,
    columns: Sequence[str] | None = None,
    formatters: Mapping[str, Callable[[Any], str]] | None = None,
) -> Table:
    """A table that fits the console: text columns take what is left, cut with "…"."""
    columns = list(columns or rows[0].keys())
    formatters = formatters or {}
    cells = [[_one_line(formatters.get(c, cell)(row.get(c))) for c in columns] for row in rows]
    result = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=None,
        header_style="bold underline",
        pad_edge=False,
    )
    headers = [HEADERS.get(c, c) for c in columns]
    widest = [max([len(h), *(len(line[i]) for line in cells)]) for i, h in enumerate(headers)]
    text = [c in TEXT_COLUMNS for c in columns]
    # Two spaces between columns. The other columns keep their full width; text
    # columns share what they leave.
    room = console.width - sum(w for w, t in zip(widest, text, strict=True) if not t)
    room -= 2 * (len(columns) - 1)
    floor = MIN_TEXT_WIDTH
    if sum(min(w, floor) for w, t in zip(widest, text, strict=True) if t) > room:
        floor = 3  # too narrow for the usual floor: "x…" at least
    floors = [min(w, floor) for w in widest]
    spare = max(room - sum(f for f, t in zip(floors, text, strict=True) if t), 0)
    wanted = sum(w - f for w, f, t in zip(widest, floors, text, strict=True) if t)
    for column, header, natural, least, is_text in zip(
        columns, headers, widest, floors, text, strict=True
    ):
        if is_text:
            # Each text column gets its floor, then a share of what is left in
            # proportion to how much more it would show.
            grow = natural - least if wanted <= spare else spare * (natural - least) // wanted
            result.add_column(header, no_wrap=True, overflow="ellipsis", width=least + grow)
        else:
            numeric = any(
                isinstance(row.get(column), int | float | Decimal)
                and not isinstance(row.get(column), bool)
                for row in rows
            )
            result.add_column(header, no_wrap=True, justify="right" if numeric else "left")
    for line in cells:
        result.add_row(*(Text(value) for value in line))
    return result


def cell(value: Any) -> str:
    """A value as a table shows it: floats to 3 places, times to the minute, None as nothing."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M}"
    return str(value)


def _one_line(text: str) -> str:
    return " ".join(text.split()) if "\n" in text or "\t" in text else text


@contextmanager
def steps(*, quiet: bool) -> Iterator[Callable[[str], None]]:
    """A callback for the step messages of a long operation (eval, bench).

    On a terminal each message is printed above a spinner that shows the current step
    and the time spent; otherwise each is a plain line on stderr (a log); ``quiet``
    (--json) drops them.
    """
    if quiet:
        yield lambda _message: None
        return
    if not err_console.is_terminal:
        yield lambda message: err_console.print(Text(message), highlight=False, soft_wrap=True)
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("starting", total=None)

        def say(message: str) -> None:
            bar.console.print(Text(message, style="dim"), soft_wrap=True)
            bar.update(task, description=message)

        yield say


def progress(*, quiet: bool) -> Progress:
    """A bar on stderr, drawn only for a person watching (a TTY) and not for --json."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=quiet or not err_console.is_terminal,
        transient=True,
    )
