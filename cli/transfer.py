"""`pgmem export` and `pgmem import`: a tenant's memories as JSON Lines.

One line per memory, as :meth:`pgmem.Memory.export` reads it: ids, subject, agent,
session, kind, content, embedding, importance, source, triple, valid time, status,
pin, access counts, timestamps and metadata. Import replays the active ones through
``pgmem.remember_many`` (so dedup and contradictions apply in the target tenant),
in one transaction: a bad line imports nothing.

Exit codes: 0 ok, 1 error (e.g. a bad line, named by its number), 2 usage.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from pgmem.cli.common import (
    DsnOption,
    JsonOption,
    console,
    dsn_for,
    fail,
    json_default,
    print_json,
    progress,
)
from pgmem.cli.memory import NoEmbedOption, TenantOption, UserFilter, memory_errors
from pgmem.client import ImportRecordError, Memory

STATUSES = ("active", "superseded", "merged", "archived", "deleted")


@contextmanager
def _output(path: Path | None) -> Iterator[IO[str]]:
    """stdout, or a file that appears complete or not at all (written aside, then renamed)."""
    if path is None or str(path) == "-":
        yield sys.stdout
        return
    directory = path.resolve().parent
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yield out
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def export(
    output: Annotated[
        Path | None,
        typer.Argument(help="File to write (default, or '-': stdout).", show_default=False),
    ] = None,
    user: UserFilter = None,
    status: Annotated[
        list[str] | None,
        typer.Option("--status", help=f"Only this status (repeatable): {', '.join(STATUSES)}."),
    ] = None,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
) -> None:
    """Write a tenant's (or one user's) memories as JSON Lines, embeddings included.

    Exit codes: 0 ok, 1 error, 2 usage.
    """
    for value in status or ():
        if value not in STATUSES:
            raise fail(f"--status {value!r} is not one of {', '.join(STATUSES)}")
    to_stdout = output is None or str(output) == "-"
    written = 0
    with (
        memory_errors(dsn),
        Memory(dsn_for(dsn), tenant=tenant, embedder=False, llm=False) as memory,
    ):
        total = memory.count_export(user, status=status)
        with _output(output) as out, progress(quiet=False) as bar:
            task = bar.add_task("exporting", total=total)
            for row in memory.export(user, status=status):
                out.write(json.dumps(row, default=json_default, ensure_ascii=False))
                out.write("\n")
                written += 1
                bar.advance(task)
    if not to_stdout:
        console.print(f"exported {written} memories to {output}")


def _records(lines: IO[str], line_of: list[int]) -> Iterator[Any]:
    """JSON values of the non-blank lines; line_of[i] is the line number of record i + 1."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise fail(f"line {number}: not JSON ({exc.msg})") from None
        line_of.append(number)
        yield record


def _line(line_of: list[int], position: int) -> int | str:
    return line_of[position - 1] if 0 < position <= len(line_of) else f"record {position}"


def _count_lines(path: Path) -> int | None:
    try:
        with path.open("rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return None


def import_(
    source: Annotated[Path, typer.Argument(help="JSON Lines from `pgmem export` ('-': stdin).")],
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", help="Import every memory for this subject instead."),
    ] = None,
    reembed: Annotated[
        bool, typer.Option("--reembed", help="Embed every content again; ignore the file's.")
    ] = False,
    no_embed: NoEmbedOption = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import memories exported by `pgmem export` into this tenant, all or nothing.

    Active memories go through pgmem.remember (dedup and contradictions apply),
    keeping kind, importance, triple, valid-from time, session, agent, metadata and
    pins; other statuses are skipped. Embeddings of the tenant's size are kept;
    others are computed again (or left to the worker with --no-embed).

    Exit codes: 0 ok, 1 error (the bad line is named), 2 usage.
    """
    if reembed and no_embed:
        raise fail("--reembed needs an embedding model; drop --no-embed")
    from_stdin = str(source) == "-"
    if not from_stdin and not source.is_file():
        raise fail(f"no such file: {source}")
    line_of: list[int] = []
    total = None if from_stdin else _count_lines(source)
    opened = nullcontext(sys.stdin) if from_stdin else source.open(encoding="utf-8")
    with (
        memory_errors(dsn),
        Memory(
            dsn_for(dsn), tenant=tenant, embedder=False if no_embed else None, llm=False
        ) as memory,
        opened as lines,
        progress(quiet=as_json) as bar,
    ):
        task = bar.add_task("importing", total=total)

        def advance(done: int) -> None:
            bar.update(task, completed=done)

        try:
            counts = memory.import_memories(
                _records(lines, line_of), user_id=user, reembed=reembed, progress=advance
            )
        except ImportRecordError as exc:
            where = f"line {_line(line_of, exc.position)}"
            if exc.last is not None and exc.last != exc.position:
                # The database names the item within the batch: p_items[n] counts from
                # the first line shown here.
                where = f"lines {_line(line_of, exc.position)}-{_line(line_of, exc.last)}"
            raise fail(f"{where}: {exc.reason}; nothing was imported") from None
    if as_json:
        print_json(counts)
        return
    handled = sum(v for k, v in counts.items() if k != "pinned")
    parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    console.print(f"imported {handled} records ({parts or 'none'})")
