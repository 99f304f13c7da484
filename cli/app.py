"""Root of the `pgmem` command: each verb group lives in its own module."""

from __future__ import annotations

import typer

from pgmem.cli import (
    bench,
    db,
    demo,
    layers,
    maintenance,
    memory,
    migrate,
    tenant,
    transfer,
    worker,
)
from pgmem.cli import eval as eval_cmd
from pgmem.cli import mcp as mcp_cmd

app = typer.Typer(
    name="pgmem",
    help="Long-term memory for LLM agents, inside PostgreSQL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("demo")(demo.demo)
app.add_typer(db.app, name="db")
app.command("migrate")(migrate.migrate)
app.add_typer(tenant.app, name="tenant")
app.command("worker")(worker.worker)
app.command("maintain")(maintenance.maintain)
app.command("schedule")(maintenance.schedule)
app.command("jobs")(maintenance.jobs)
app.add_typer(eval_cmd.app, name="eval")
app.command("bench")(bench.bench)

app.command("add")(memory.add)
app.command("search")(memory.search)
app.command("context")(memory.context)
app.command("list")(memory.list_memories)
app.command("show")(memory.show)
app.command("history")(memory.history)
app.command("forget")(memory.forget)
app.command("pin")(memory.pin)
app.command("erase")(memory.erase)
app.command("stats")(memory.stats)
app.command("export")(transfer.export)
app.command("import")(transfer.import_)
app.add_typer(layers.session_app, name="session")
app.add_typer(layers.task_app, name="task")
app.command("prompt")(layers.prompt)
app.command("mcp")(mcp_cmd.mcp)


def main() -> None:
    app()
