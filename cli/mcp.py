"""`pgmem mcp`: serve pgmem's memory as MCP tools (logic in pgmem.integrations.mcp_server)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from pgmem.cli.common import DsnOption, dsn_for, fail

# The port the MCP SDK's own examples use for streamable HTTP.
DEFAULT_HTTP_PORT = 8000
# Tools act for a tenant: without --auth the server is reachable from this machine only.
HTTP_HOST = "127.0.0.1"
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def mcp(
    transport: Annotated[
        Transport,
        typer.Option("--transport", help="stdio (an MCP client starts the server) or http."),
    ] = Transport.stdio,
    port: Annotated[
        int,
        typer.Option("--port", min=1, max=65535, help="HTTP port (streamable HTTP at /mcp)."),
    ] = DEFAULT_HTTP_PORT,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help=f"HTTP address to listen on (default {HTTP_HOST}); any other needs --auth.",
        ),
    ] = HTTP_HOST,
    auth: Annotated[
        bool,
        typer.Option(
            "--auth",
            help="HTTP: every request must carry a bearer token of the tenant "
            "(pgmem tenant token TENANT --label NAME).",
        ),
    ] = False,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            "-t",
            envvar="PGMEM_TENANT",
            help="Tenant to act for (a pgmem_service DSN); omit for a tenant login role.",
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            envvar="PGMEM_USER",
            help="Fix the subject: every tool acts on this user's memories only.",
        ),
    ] = None,
    no_embed: Annotated[
        bool,
        typer.Option("--no-embed", help="No embedding model: text only (the worker embeds)."),
    ] = False,
    dsn: DsnOption = None,
) -> None:
    """Serve memory to agents over the Model Context Protocol.

    Tools: long-term (remember, recall, context, list_memories, update, forget, pin,
    unpin, history), sessions (append_turn, session_window, session_summary, prompt)
    and tasks (start_task, resume_task, task_state, record_step, fail_step,
    finish_task); resource pgmem://memories/{user}, updated when that user's memories
    change. The server acts for one tenant and
    refuses to start without one. Needs the optional extra named mcp (make setup installs it).
    """
    try:
        from pgmem.integrations.mcp_server import StartupError, bind, build_server
    except ImportError as exc:
        raise fail(f"{exc}: install the extra with pip install 'pgmem-engine[mcp]'") from None
    from pgmem.client import Memory

    if transport is Transport.http and host not in LOOPBACK and not auth:
        raise fail(
            f"refusing to serve {host} without --auth: anyone who can reach it would act for "
            "the tenant; make tokens with pgmem tenant token TENANT --label NAME"
        )
    if transport is Transport.stdio and auth:
        raise fail("--auth applies to --transport http (stdio serves the client that starts it)")
    memory = Memory(dsn_for(dsn), tenant=tenant, embedder=False if no_embed else None)
    try:
        binding = bind(memory, subject=user)
    except StartupError as exc:
        memory.close()
        raise fail(str(exc)) from None
    url_host = f"[{host}]" if ":" in host else host
    server = build_server(
        binding,
        watcher=lambda: Memory(dsn_for(dsn), tenant=tenant, embedder=False, llm=False),
        auth_url=f"http://{url_host}:{port}" if auth else None,
    )
    try:
        if transport is Transport.stdio:
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        memory.close()
