"""Short-term and working memory verbs: `pgmem session …`, `pgmem task …`, `pgmem prompt`.

Thin shells around :class:`pgmem.session.Session` and :class:`pgmem.task.Task`, which
call the SQL functions of sql/functions/70_session.sql, 72_task.sql and 74_prompt.sql.
Exit codes as for the memory verbs: 0 ok, 1 error, 2 usage, 4 not found.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pgmem.cli.common import DsnOption, JsonOption, fail, print_rows, warn_degraded
from pgmem.cli.memory import (
    EXIT_NOT_FOUND,
    NoEmbedOption,
    TenantOption,
    UserFilter,
    UserOption,
    memory_errors,
    open_memory,
    print_json,
)

session_app = typer.Typer(help="Short-term memory: a conversation's turns, window and summary.")
task_app = typer.Typer(help="Working memory: tasks in progress and their steps.")

SessionArg = Annotated[str, typer.Argument(help="Session id (the app's conversation id).")]
WINDOW_COLUMNS = ["seq", "role", "protected", "tokens", "content"]
SESSION_COLUMNS = [
    "subject",
    "session_id",
    "status",
    "turns",
    "summarized_through",
    "last_active_at",
]
TASK_COLUMNS = ["task_id", "subject", "session_id", "status", "current_step", "steps", "goal"]


@session_app.command("append")
def append(
    session: SessionArg,
    role: Annotated[str, typer.Argument(help="system, user, assistant or tool.")],
    text: Annotated[str, typer.Argument(help="The turn's text.")],
    user: UserOption,
    protected: Annotated[
        bool, typer.Option("--protected", help="Never cut this turn from the window.")
    ] = False,
    no_extract: Annotated[
        bool, typer.Option("--no-extract", help="Do not queue a user turn for long-term memory.")
    ] = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Append one turn to a session (pgmem.append_message)."""
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        row = memory.session(session, user).append(
            role, text, protected=protected, extract=not no_extract
        )
    print_rows([row], as_json=as_json, title="appended")


@session_app.command("window")
def window(
    session: SessionArg,
    user: UserOption,
    turns: Annotated[int | None, typer.Option("--turns", help="At most this many turns.")] = None,
    tokens: Annotated[
        int | None, typer.Option("--tokens", help="At most this many tokens.")
    ] = None,
    strategy: Annotated[
        str | None, typer.Option("--strategy", help="recency or importance.")
    ] = None,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the turns a prompt keeps verbatim (pgmem.session_window)."""
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        rows = memory.session(session, user).window(turns=turns, tokens=tokens, strategy=strategy)
    print_rows(rows, as_json=as_json, title=f"window of {session}", columns=WINDOW_COLUMNS)


@session_app.command("summary")
def summary(
    session: SessionArg,
    user: UserOption,
    version: Annotated[
        int | None, typer.Option("--version", help="This version (default: the latest).")
    ] = None,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the rolling summary of a session (exit 4 when there is none yet)."""
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        row = memory.session(session, user).summary(version=version)
    if row is None:
        raise fail(f"session {session} of {user} has no summary (yet)", EXIT_NOT_FOUND)
    if as_json:
        print_json(row)
        return
    typer.echo(
        f"version {row['version']} ({row['method']}), turns 1-{row['through_seq']}, "
        f"{row['tokens']} tokens"
    )
    typer.echo(row["summary"])


@session_app.command("list")
def list_sessions(
    user: UserFilter = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many.")] = 50,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """List sessions, most recently active first."""
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        rows = memory.sessions(user, limit=limit)
    print_rows(rows, as_json=as_json, title="sessions", columns=SESSION_COLUMNS)


@session_app.command("close")
def close(
    session: SessionArg,
    user: UserOption,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
) -> None:
    """Close a session: its turns are purged after the tenant's retention."""
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        closed = memory.session(session, user).close()
    typer.echo("closed" if closed else "not open")


@task_app.command("list")
def list_tasks(
    user: UserFilter = None,
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status",
            help="Only this status (repeatable): planning, running, waiting_for_confirmation, "
            "done, failed, cancelled.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many.")] = 50,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """List tasks, newest first."""
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        rows = memory.tasks(user, status=status, limit=limit)
    print_rows(rows, as_json=as_json, title="tasks", columns=TASK_COLUMNS)


@task_app.command("show")
def show_task(
    task_id: Annotated[int, typer.Argument(help="Task id (from task list).")],
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a task with its plan and recorded steps (exit 4 if unknown)."""
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        try:
            state = memory.task(task_id).state()
        except LookupError as exc:
            raise fail(str(exc), EXIT_NOT_FOUND) from None
    if as_json:
        print_json(state)
        return
    typer.echo(f"task {state['task_id']}: {state['goal']} [{state['status']}]")
    done = {s["step"]: s for s in state["steps"]}
    for n, step in enumerate(state["plan"], start=1):
        mark = "x" if n in done else (">" if n == state["current_step"] else " ")
        observation = done.get(n, {}).get("observation")
        typer.echo(f"  [{mark}] {n}. {step}" + (f" → {observation}" if observation else ""))
    if state["variables"]:
        typer.echo(f"  variables: {state['variables']}")
    if state["outcome"]:
        typer.echo(f"  outcome: {state['outcome']} (memory {state['memory_id']})")


def prompt(
    session: SessionArg,
    query: Annotated[str, typer.Argument(help="What the next LLM call is about.")],
    user: UserOption,
    budget: Annotated[int, typer.Option("--budget", help="Token budget of the prompt.")] = 4000,
    no_embed: NoEmbedOption = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the assembled memory for the next LLM call (pgmem.prompt): the open task,
    the session summary, long-term memories for the query and the recent turns."""
    with memory_errors(dsn), open_memory(dsn, tenant, embed=not no_embed) as memory:
        block = memory.session(session, user).prompt(query, token_budget=budget)
    warn_degraded(block)
    if as_json:
        print_json({"prompt": block, "degraded": block.degraded})
    else:
        typer.echo(block)
