"""Memory verbs: `pgmem add|search|context|list|show|history|forget|erase|pin|stats`.

Each verb is a thin shell around :class:`pgmem.Memory`, which calls the pgmem.* SQL
functions. Human output is a rich table; ``--json`` prints JSON for scripts.

Exit codes, the same for every verb: 0 ok, 1 error (one line on stderr, with the
database's hint when it gives one), 2 usage error, 4 not found (an unknown memory id).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from pgmem.cli.common import (
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    DsnOption,
    JsonlOption,
    JsonOption,
    cell,
    console,
    database_errors,
    dsn_for,
    fail,
    json_default,
    output_format,
    print_json,
    print_rows,
    warn_degraded,
)
from pgmem.client import ImportRecordError, Memory, MemoryNotFound, TenantError
from pgmem.embed import EmbeddingError
from pgmem.extract import KINDS, LLMError

# The tenant is optional: a DSN whose role is a tenant's login role is bound to that
# tenant already.
TenantOption = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        "-t",
        envvar="PGMEM_TENANT",
        help="Tenant to act for (not needed when the DSN's role is a tenant login role).",
    ),
]
UserOption = Annotated[
    str,
    typer.Option("--user", "-u", envvar="PGMEM_USER", help="Subject: whom the memories are about."),
]
UserFilter = Annotated[
    str | None,
    typer.Option("--user", "-u", envvar="PGMEM_USER", help="Only this subject (default: all)."),
]
MemoryIdArg = Annotated[int, typer.Argument(help="Memory id (from add, search or list).")]
KindOption = Annotated[
    list[str] | None,
    typer.Option("--kind", help=f"Only this kind (repeatable): {', '.join(KINDS)}."),
]
NoEmbedOption = Annotated[
    bool,
    typer.Option(
        "--no-embed", help="Do not load an embedding model: text only (the worker embeds later)."
    ),
]

SEARCH_COLUMNS = ["memory_id", "score", "relevance", "importance", "recency", "kind", "content"]
LIST_COLUMNS = ["memory_id", "subject", "kind", "status", "pinned", "importance", "content"]
HISTORY_COLUMNS = [
    "created_at",
    "event",
    "actor",
    "old_content",
    "new_content",
    "details",
]
ADD_COLUMNS = ["action", "memory_id", "kind", "content", "related_id", "similarity"]


# ---------------------------------------------------------------- plumbing


def show_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    fmt: str,
    title: str,
    columns: Sequence[str],
    empty: str,
) -> None:
    """Rows as a table for people (or a sentence when there are none), or JSON for scripts."""
    print_rows(
        rows,
        as_json=fmt == "json",
        as_jsonl=fmt == "jsonl",
        title=title,
        columns=columns,
        formatters=FORMATS,
        empty=empty,
    )


def _short_json(value: Any) -> str:
    return json.dumps(value, default=json_default, ensure_ascii=False) if value else ""


# Times and numbers as common.cell shows them; these columns differ.
FORMATS = {
    "details": _short_json,
    "metadata": _short_json,
    "pinned": lambda v: "yes" if v else "",
}


@contextmanager
def memory_errors(dsn: str | None = None) -> Iterator[None]:
    """Database and client errors as one line on stderr: exit 4 for an unknown id, else 1."""
    with database_errors(dsn):
        try:
            yield
        except MemoryNotFound as exc:
            raise fail(str(exc), EXIT_NOT_FOUND) from None
        except (TenantError, EmbeddingError, LLMError, ImportRecordError, ValueError) as exc:
            raise fail(str(exc)) from None


def open_memory(dsn: str | None, tenant: str | None, *, embed: bool = False) -> Memory:
    """A client for one command; embedding and LLM models only when the verb needs them."""
    return Memory(dsn_for(dsn), tenant=tenant, embedder=None if embed else False, llm=False)


def _json_object(raw: str | None, option: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise fail(f"{option} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise fail(f'{option} must be a JSON object, e.g. \'{{"project": "x"}}\'')
    return value


def _read_input(text: str | None, messages: Path | None) -> str | list[Any]:
    """The text argument ('-' reads stdin) or a JSON file of {role, content} messages."""
    if messages is not None:
        if text is not None:
            raise fail("give either TEXT or --messages, not both")
        try:
            raw = sys.stdin.read() if str(messages) == "-" else messages.read_text()
            value = json.loads(raw)
        except (OSError, json.JSONDecodeError) as exc:
            raise fail(f"cannot read messages from {messages}: {exc}") from None
        if not isinstance(value, list):
            raise fail('--messages must hold a JSON array of {"role", "content"} objects')
        return value
    if text is None:
        raise fail("nothing to add: give TEXT (or - for stdin) or --messages FILE")
    return sys.stdin.read() if text == "-" else text


# ------------------------------------------------------------------- verbs


def add(
    text: Annotated[
        str | None, typer.Argument(help="What was said ('-' reads stdin).", show_default=False)
    ] = None,
    *,
    user: UserOption,
    messages: Annotated[
        Path | None,
        typer.Option("--messages", help="JSON file ('-' for stdin) of [{role, content}, …]."),
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent id.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Session id.")] = None,
    metadata: Annotated[
        str | None, typer.Option("--metadata", help="JSON object stored with each memory.")
    ] = None,
    raw: Annotated[
        bool, typer.Option("--raw", help="Store the text as it is: no fact extraction.")
    ] = False,
    kind: Annotated[
        str | None, typer.Option("--kind", help="Kind of a --raw memory (default semantic).")
    ] = None,
    importance: Annotated[
        float | None, typer.Option("--importance", help="0..1, for a --raw memory.")
    ] = None,
    enqueue: Annotated[
        bool, typer.Option("--enqueue", help="Only queue the turn for `pgmem worker`.")
    ] = False,
    no_embed: NoEmbedOption = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remember what a user said; prints what pgmem did with each fact.

    Facts are extracted (rules, or an LLM when one is configured), embedded and
    handed to pgmem.remember: inserted, reinforced, superseded, deduplicated,
    merge_pending or rejected. --raw stores the text as it is.

    Exit codes: 0 ok, 1 error, 2 usage, 4 not found.
    """
    content = _read_input(text, messages)
    meta = _json_object(metadata, "--metadata")
    if raw and isinstance(content, str) and not content.strip():
        raise fail("nothing to store: the text is empty")
    with memory_errors(dsn):
        memory = Memory(
            dsn_for(dsn),
            tenant=tenant,
            embedder=False if (no_embed or enqueue) else None,
            llm=None if not raw and not enqueue else False,
        )
        with memory:
            results = memory.add(
                content,
                user,
                agent_id=agent,
                session_id=session,
                metadata=meta,
                infer=not raw,
                enqueue=enqueue,
                kind=kind if raw else None,
                importance=importance if raw else None,
            )
    warn_degraded(results)
    if as_json:
        print_json(results)
    elif enqueue:
        console.print(f"queued as inbox job {results[0]['inbox_id']}")
    elif not results:
        console.print("nothing to remember: no facts found")
    else:
        print_rows(results, as_json=False, title=f"remembered for {user}", columns=ADD_COLUMNS)


# Scope and time of search and context: scoped recall, and times in questions.
SinceOption = Annotated[
    datetime | None, typer.Option("--since", help="Only memories created at or after this.")
]
UntilOption = Annotated[
    datetime | None, typer.Option("--until", help="Only memories created before this.")
]
ScopeAgentOption = Annotated[
    str | None, typer.Option("--agent", help="Only memories written by this agent.")
]
SharedOption = Annotated[
    list[str] | None,
    typer.Option("--shared", help="Also a shared subject (a team, a domain); repeatable."),
]
NoTimeOption = Annotated[
    bool,
    typer.Option(
        "--no-time", help="Do not read a time in the query (last week, 上周) as --since/--until."
    ),
]
NowOption = Annotated[
    datetime | None, typer.Option("--now", help="The moment 'yesterday' is relative to.")
]


def search(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    user: UserOption,
    k: Annotated[int, typer.Option("--k", "-k", help="How many memories.")] = 10,
    kind: KindOption = None,
    filters: Annotated[
        str | None,
        typer.Option("--filter", help="JSON object the memory's metadata must contain."),
    ] = None,
    hops: Annotated[int, typer.Option("--hops", help="Follow memory links (0-3).")] = 0,
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    min_score: Annotated[float, typer.Option("--min-score", help="Drop weaker hits.")] = 0.0,
    as_of: Annotated[
        datetime | None, typer.Option("--as-of", help="Recall what was valid at this time.")
    ] = None,
    diversity: Annotated[
        float | None, typer.Option("--diversity", help="MMR lambda 0..1 for a varied result.")
    ] = None,
    no_reinforce: Annotated[
        bool, typer.Option("--no-reinforce", help="Do not count this as an access.")
    ] = False,
    since: SinceOption = None,
    until: UntilOption = None,
    agent: ScopeAgentOption = None,
    shared: SharedOption = None,
    no_time: NoTimeOption = False,
    now: NowOption = None,
    no_embed: NoEmbedOption = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """Recall a user's memories for a query, best first.

    Each hit shows the parts of its score (relevance, importance, recency). A time the
    query names ("last week", "上周", "in May 2023") limits the hits to its window
    unless --since/--until or --no-time say otherwise.

    Exit codes: 0 ok, 1 error, 2 usage, 4 not found.
    """
    fmt = output_format(as_json, as_jsonl)
    metadata = _json_object(filters, "--filter")
    with memory_errors(dsn), open_memory(dsn, tenant, embed=not no_embed) as memory:
        rows = memory.search(
            query,
            user,
            k,
            kinds=kind,
            filters=metadata,
            hops=hops,
            session_id=session,
            min_score=min_score,
            as_of=as_of,
            diversity=diversity,
            reinforce=not no_reinforce,
            since=since,
            until=until,
            agent_id=agent,
            shared_subjects=shared,
            parse_time=not no_time,
            now=now,
        )
    warn_degraded(rows)
    columns = (
        SEARCH_COLUMNS
        + (["hops", "via_memory_id"] if hops else [])
        + (["subject"] if shared else [])
    )
    show_rows(
        rows,
        fmt=fmt,
        title=f"{user}: {query}",
        columns=columns,
        empty=f"no memories of {user} match {query!r}"
        + ("" if min_score == 0 else f" (none scores {min_score} or more)"),
    )


def context(
    query: Annotated[str, typer.Argument(help="What the prompt is about.")],
    user: UserOption,
    budget: Annotated[int, typer.Option("--budget", help="Token budget of the block.")] = 500,
    kind: KindOption = None,
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    hops: Annotated[int, typer.Option("--hops", help="Follow memory links (0-3).")] = 0,
    since: SinceOption = None,
    until: UntilOption = None,
    agent: ScopeAgentOption = None,
    shared: SharedOption = None,
    no_time: NoTimeOption = False,
    now: NowOption = None,
    no_embed: NoEmbedOption = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """Print the memory block for a prompt, within a budget.

    Sections by kind, dated lines, most relevant first (pgmem.context).

    Exit codes: 0 ok, 1 error, 2 usage, 4 not found.
    """
    fmt = output_format(as_json, as_jsonl)
    with memory_errors(dsn), open_memory(dsn, tenant, embed=not no_embed) as memory:
        block = memory.context(
            query,
            user,
            budget,
            kinds=kind,
            session_id=session,
            hops=hops,
            since=since,
            until=until,
            agent_id=agent,
            shared_subjects=shared,
            parse_time=not no_time,
            now=now,
        )
    warn_degraded(block)
    if fmt != "table":
        print_json({"context": block, "degraded": block.degraded}, lines=fmt == "jsonl")
    elif block.strip():
        typer.echo(block)
    else:
        console.print(f"no memories of {user} for {query!r}: the block is empty", highlight=False)


def list_memories(
    user: UserFilter = None,
    kind: KindOption = None,
    status: Annotated[
        str,
        typer.Option(
            "--status",
            help="active, superseded, merged, archived, deleted, or all.",
        ),
    ] = "active",
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many.")] = 50,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many first.")] = 0,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """List memories, newest first.

    Exit codes: 0 ok, 1 error, 2 usage, 4 not found.
    """
    fmt = output_format(as_json, as_jsonl)
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        rows = memory.get_all(
            user,
            kinds=kind,
            status=None if status == "all" else status,
            session_id=session,
            agent_id=agent,
            limit=limit,
            offset=offset,
        )
    which = "" if status == "all" else f"{status} "
    whose = f" of {user}" if user else ""
    show_rows(
        rows,
        fmt=fmt,
        title="memories",
        columns=LIST_COLUMNS,
        empty=f"no {which}memories{whose}"
        + (f" past offset {offset}" if offset else "")
        + (" (add one with `pgmem add`)" if not user and not offset and status == "active" else ""),
    )


def show(
    memory_id: MemoryIdArg,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """Show one memory with every field.

    The content is shown whole (tables elsewhere cut it to fit).

    Exit codes: 0 ok, 1 error, 2 usage, 4 not found (no such memory in this tenant).
    """
    fmt = output_format(as_json, as_jsonl)
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        row = memory.get(memory_id)
    if row is None:
        raise fail(f"unknown memory id: {memory_id} (`pgmem list` shows the ids)", EXIT_NOT_FOUND)
    if fmt != "table":
        print_json(row, lines=fmt == "jsonl")
        return
    _print_fields(row, title=f"memory {memory_id}")


def _print_fields(row: Mapping[str, Any], *, title: str) -> None:
    """One record as "field  value" lines; long values wrap, whole."""
    table = Table(
        title=title, title_justify="left", title_style="bold", show_header=False, box=None
    )
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in row.items():
        table.add_row(key, Text(FORMATS.get(key, cell)(value)))
    console.print(table)


def history(
    memory_id: MemoryIdArg,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """Show every recorded change of a memory, oldest first.

    Exit codes: 0 ok, 1 error, 2 usage, 4 not found (no memory and no history).
    """
    fmt = output_format(as_json, as_jsonl)
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        rows = memory.history(memory_id)
    if not rows:
        raise fail(
            f"no history for memory id {memory_id} (`pgmem list --status all` shows the ids)",
            EXIT_NOT_FOUND,
        )
    show_rows(
        rows,
        fmt=fmt,
        title=f"history of memory {memory_id}",
        columns=HISTORY_COLUMNS,
        empty=f"no history for memory id {memory_id}",
    )


def forget(
    memory_id: MemoryIdArg,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget a memory: recall no longer returns it; its history stays.

    Exit codes: 0 ok (also when it was forgotten already), 1 error, 2 usage, 4 not found.
    """
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        changed = memory.delete(memory_id)
    if as_json:
        print_json({"memory_id": memory_id, "forgotten": changed})
    else:
        console.print(
            f"memory {memory_id} " + ("forgotten" if changed else "was forgotten already")
        )


def pin(
    memory_id: MemoryIdArg,
    unpin: Annotated[bool, typer.Option("--unpin", help="Unpin instead.")] = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Pin a memory (it never decays or gets archived), or --unpin it.

    Exit codes: 0 ok (also when nothing changed), 1 error, 2 usage, 4 not found.
    """
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        changed = memory.unpin(memory_id) if unpin else memory.pin(memory_id)
    state = "unpinned" if unpin else "pinned"
    if as_json:
        print_json({"memory_id": memory_id, "pinned": not unpin, "changed": changed})
    else:
        console.print(f"memory {memory_id} {state}" + ("" if changed else " already"))


PROFILE_COLUMNS = ["memory_id", "reason", "kind", "content", "importance", "pinned"]


def profile(
    user: UserOption,
    add: Annotated[
        str | None, typer.Option("--add", help="Store this text and put it in the profile.")
    ] = None,
    include: Annotated[
        int | None, typer.Option("--include", help="Put this memory id in the profile.", min=1)
    ] = None,
    remove: Annotated[
        int | None, typer.Option("--remove", help="Take this memory id out of the profile.", min=1)
    ] = None,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """Show or edit a user's core profile (in every prompt).

    The profile is the few facts every prompt shows first, whatever the query.
    --add, --include or --remove edit it, then it is shown.

    Exit codes: 0 ok, 1 error, 2 usage, 4 not found (an unknown id).
    """
    fmt = output_format(as_json, as_jsonl)
    if sum(option is not None for option in (add, include, remove)) > 1:
        raise fail("give one of --add, --include and --remove", EXIT_USAGE)
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        if add is not None:
            try:
                memory.add_to_profile(add, user)
            except ValueError as error:
                raise fail(str(error), EXIT_ERROR) from error
        elif include is not None or remove is not None:
            memory.set_profile(include or remove or 0, member=include is not None)
        rows = memory.profile(user)
    show_rows(
        rows,
        fmt=fmt,
        title=f"core profile of {user}",
        columns=PROFILE_COLUMNS,
        empty=f"{user} has no core profile yet (pinned memories and core facts appear here)",
    )


def erase(
    user: UserOption,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Erase everything about a user for good: memories, links, history, queued jobs.

    Exit codes: 0 ok (also for an unknown user: nothing to erase), 1 error, 2 usage.
    """
    if not yes:
        typer.confirm(f"Erase every memory and all history of {user!r}?", abort=True)
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        removed = memory.erase_user(user)
    if as_json:
        print_json({"subject": user, "memories": removed})
    else:
        console.print(f"erased {user}: {removed} memories removed")


def stats(
    user: UserFilter = None,
    top: Annotated[int, typer.Option("--top", help="Subjects shown by capacity use.")] = 20,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """Memories per kind and status, backlog and capacity use.

    The archive and purge backlog and the capacity use per subject come along.

    Read from the views pgmem.memory_stats, pgmem.archive_backlog and
    pgmem.capacity_usage.

    Exit codes: 0 ok, 1 error, 2 usage.
    """
    fmt = output_format(as_json, as_jsonl)
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        result = memory.stats(user, top=top)
    if fmt != "table":
        print_json(result, lines=fmt == "jsonl")
        return
    rows: Sequence[Mapping[str, Any]] = result["memories"]
    print_rows(
        [dict(r) for r in rows],
        as_json=False,
        title="memories" + (f" of {user}" if user else ""),
        columns=[
            "kind",
            "status",
            "memories",
            "subjects",
            "pinned",
            "avg_importance",
            "accesses",
            "newest",
        ],
        formatters=FORMATS,
        empty="no memories" + (f" of {user}" if user else "") + " yet (add one with `pgmem add`)",
    )
    if result["backlog"] is not None and user is None:
        _print_fields(result["backlog"], title="archive and purge backlog")
    if result["capacity"]:
        print_rows(result["capacity"], title="capacity use")


def watch(
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", envvar="PGMEM_USER", help="Only this subject's changes."),
    ] = None,
    after: Annotated[
        str,
        typer.Option(
            "--after", help="Stream position to start after (0/0: the beginning; a printed one)."
        ),
    ] = "0/0",
    once: Annotated[
        bool, typer.Option("--once", help="Print the changes recorded so far, then exit.")
    ] = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_jsonl: JsonlOption = False,
) -> None:
    """Follow the tenant's memory changes as they happen (inserts, updates, supersessions,
    deletes…), one line each, until interrupted; ``--jsonl`` for one JSON object a line,
    each with its ``stream_position`` to resume from (``--after``)."""
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        events = (
            iter(_all_changes(memory, after, user)) if once else memory.watch(user, after=after)
        )
        try:
            for row in events:
                if as_jsonl:
                    print_json(dict(row), lines=True)
                else:
                    text = row["new_content"] or row["old_content"] or ""
                    sys.stdout.write(
                        f"{row['stream_position']}  {row['created_at']:%Y-%m-%d %H:%M:%S}  "
                        f"{row['event']:<11} {row['subject'] or '-'}  "
                        f"#{row['memory_id'] or '-'}  {text}\n"
                    )
                sys.stdout.flush()
        except KeyboardInterrupt:
            return


def _all_changes(memory: Memory, after: str, user: str | None) -> Iterator[Mapping[str, Any]]:
    while True:
        rows = memory.changes(after, user, limit=1000)
        yield from rows
        if len(rows) < 1000:
            return
        after = rows[-1]["stream_position"]
