"""Root of the `pgmem` command: each verb group lives in its own module.

Verbs are imported only when they run. `pgmem --help` lists them from the table below
without importing a single verb module, and `pgmem list` imports the memory verbs but
never the benchmark, the migrations (alembic, SQLAlchemy) or an embedding model: a
newcomer's first commands start in a fraction of a second. The one-line summaries
are the first line of each verb's docstring (tests/test_cli_ux.py keeps them equal).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, NamedTuple

import typer
from typer.core import TyperGroup


class Verb(NamedTuple):
    module: str  # under pgmem.cli
    attribute: str  # a function (one command) or a typer.Typer (a group of commands)
    summary: str


# In the order `pgmem --help` shows them: first steps, memory, operations, quality.
VERBS: dict[str, Verb] = {
    "demo": Verb("demo", "demo", "Run the end-to-end demo."),
    "doctor": Verb("doctor", "doctor", "Check the whole setup and say how to fix what is wrong."),
    "db": Verb("db", "app", "Run the local PostgreSQL server (pgvector + pg_cron)."),
    "migrate": Verb("migrate", "migrate", "Bring the pgmem schema to a revision."),
    "tenant": Verb("tenant", "app", "Create, list and drop tenants."),
    "add": Verb(
        "memory", "add", "Remember what a user said; prints what pgmem did with each fact."
    ),
    "search": Verb("memory", "search", "Recall a user's memories for a query, best first."),
    "context": Verb("memory", "context", "Print the memory block for a prompt, within a budget."),
    "list": Verb("memory", "list_memories", "List memories, newest first."),
    "show": Verb("memory", "show", "Show one memory with every field."),
    "history": Verb("memory", "history", "Show every recorded change of a memory, oldest first."),
    "forget": Verb("memory", "forget", "Forget a memory: recall no longer returns it."),
    "pin": Verb("memory", "pin", "Pin a memory (it never decays or gets archived), or --unpin it."),
    "profile": Verb("memory", "profile", "Show or edit a user's core profile (in every prompt)."),
    "erase": Verb("memory", "erase", "Erase everything about a user for good."),
    "stats": Verb("memory", "stats", "Memories per kind and status, backlog and capacity use."),
    "watch": Verb("memory", "watch", "Follow the tenant's memory changes as they happen."),
    "export": Verb(
        "transfer", "export", "Write a tenant's (or one user's) memories as JSON Lines."
    ),
    "import": Verb(
        "transfer", "import_", "Import memories exported by `pgmem export` into this tenant."
    ),
    "session": Verb(
        "layers", "session_app", "Short-term memory: a conversation's turns, window and summary."
    ),
    "task": Verb("layers", "task_app", "Working memory: tasks in progress and their steps."),
    "prompt": Verb("layers", "prompt", "Print the assembled memory for the next LLM call."),
    "mcp": Verb("mcp", "mcp", "Serve memory to agents over the Model Context Protocol."),
    "worker": Verb("worker", "worker", "Turn queued conversation turns into memories."),
    "reembed": Verb("reembed", "reembed", "Move a tenant's memories to another embedding model."),
    "maintain": Verb("maintenance", "maintain", "Run maintenance now: every job, or those named."),
    "schedule": Verb("maintenance", "schedule", "Install (or update) the pg_cron jobs."),
    "jobs": Verb("maintenance", "jobs", "Show the scheduled pg_cron jobs and the latest runs."),
    "eval": Verb("eval", "app", "Measure retrieval quality on public benchmarks."),
    "bench": Verb("bench", "bench", "Benchmark recall latency, quality and throughput at scale."),
}


def load_verb(name: str) -> Any:
    """The click command of one verb: imports its module now."""
    verb = VERBS[name]
    target = getattr(importlib.import_module(f"pgmem.cli.{verb.module}"), verb.attribute)
    # Built the way a root app with add_typer/command would build it, so a group of one
    # command (`pgmem eval locomo`) stays a group instead of collapsing into it.
    root = typer.Typer()
    if isinstance(target, typer.Typer):
        root.add_typer(target, name=name)
    else:
        root.command(name)(target)
    root.callback()(lambda: None)
    return typer.main.get_command(root).commands[name]  # type: ignore[attr-defined]


class _LazyVerb:
    """Stands in for a verb's command: lists with its summary, loads the real one when used.

    Help listings read only ``name``, ``short_help``, ``help``, ``hidden``, ``deprecated``
    and ``rich_help_panel``; anything else (parsing, invoking, completing) is the real
    command's, imported on first touch.
    """

    hidden = False
    deprecated = False
    rich_help_panel = None

    def __init__(self, name: str) -> None:
        self.name = name
        self.short_help = self.help = VERBS[name].summary
        self._command: Any = None

    def __getattr__(self, attribute: str) -> Any:
        if self._command is None:
            self._command = load_verb(self.name)
        return getattr(self._command, attribute)

    def get_short_help_str(self, limit: int = 45) -> str:
        return self.short_help


class LazyGroup(TyperGroup):
    """The root group: every verb of VERBS, each loaded when used."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        # The proxies also feed typer's "Did you mean 'list'?" for a mistyped verb.
        self.commands = {name: _LazyVerb(name) for name in VERBS}  # type: ignore[misc]

    def list_commands(self, ctx: Any) -> list[str]:
        return list(VERBS)


app = typer.Typer(
    name="pgmem",
    cls=LazyGroup,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def root() -> None:
    """Long-term memory for LLM agents, inside PostgreSQL.

    Start with `pgmem doctor`. Exit codes: 0 ok, 1 error, 2 usage,
    3 server not reachable, 4 not found.
    """


def main() -> None:
    """Run the command; usage errors, like every other error, are one line on stderr."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:
        # `pgmem` or `pgmem db` alone: rich printed the help already (exit 2, as before);
        # without rich, click hands it back as the message.
        if exc.format_message().strip():
            typer.echo(exc.format_message(), err=True)
        sys.exit(exc.exit_code)
    except ClickException as exc:
        from pgmem.cli.common import fail

        ctx = getattr(exc, "ctx", None)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        raise SystemExit(fail(f"{exc.format_message()}{where}", exc.exit_code).exit_code) from None
    except typer.Abort:
        from pgmem.cli.common import fail

        raise SystemExit(fail("aborted", 1).exit_code) from None
    sys.exit(code if isinstance(code, int) else 0)
