"""`pgmem tenant create|list|drop|move|token|tokens|revoke-token`."""

from __future__ import annotations

import secrets
from typing import Annotated

import psycopg
import typer
from psycopg.rows import dict_row

from pgmem.cli.common import (
    EXIT_NOT_FOUND,
    DsnOption,
    JsonlOption,
    JsonOption,
    console,
    database_errors,
    dsn_for,
    fail,
    output_format,
    print_rows,
)
from pgmem.queries import admin as admin_queries
from pgmem.queries import citus as Q

app = typer.Typer(help="Create, list and drop tenants.", no_args_is_help=True)

TenantArg = Annotated[str, typer.Argument(help="Tenant name: a-z, 0-9, _ and -.")]


@app.command()
def create(
    tenant: TenantArg,
    login: Annotated[
        bool, typer.Option("--login", help="Also create a login role bound to this tenant.")
    ] = False,
    role: Annotated[
        str | None,
        typer.Option("--role", help="Login role name (default: opaque, pgmem_t_<16 hex>)."),
    ] = None,
    password: Annotated[
        str | None,
        typer.Option(
            "--password",
            envvar="PGMEM_TENANT_PASSWORD",
            help="Login password (default: generated).",
        ),
    ] = None,
    display_name: Annotated[str | None, typer.Option("--name", help="Display name.")] = None,
    dsn: DsnOption = None,
) -> None:
    """Create a tenant (idempotent); with --login, a role that sees only this tenant."""
    with database_errors(dsn), psycopg.connect(dsn_for(dsn)) as conn:
        conn.execute(admin_queries.CREATE_TENANT, {"tenant": tenant, "display_name": display_name})
        console.print(f"tenant [bold]{tenant}[/bold] ready")
        if login:
            secret = password or secrets.token_urlsafe(18)
            row = conn.execute(
                admin_queries.CREATE_TENANT_LOGIN,
                {"tenant": tenant, "password": secret, "role": role},
            ).fetchone()
            assert row is not None
            console.print(f"login role [bold]{row[0]}[/bold] bound to {tenant}")
            if password is None:
                console.print(f"password: {secret}  (shown once; store it now)", highlight=False)


@app.command("list")
def list_tenants(
    dsn: DsnOption = None, as_json: JsonOption = False, as_jsonl: JsonlOption = False
) -> None:
    """List tenants with their login roles, subjects and active memories."""
    output_format(as_json, as_jsonl)
    with database_errors(dsn), psycopg.connect(dsn_for(dsn)) as conn:
        cur = conn.cursor(row_factory=psycopg.rows.dict_row)
        rows = cur.execute(admin_queries.TENANT_SUMMARY).fetchall()
    print_rows(
        rows,
        as_json=as_json,
        as_jsonl=as_jsonl,
        title="tenants",
        formatters={"login_roles": lambda v: ", ".join(v or [])},
        empty="no tenants yet: `pgmem tenant create NAME` adds one",
    )


@app.command()
def drop(
    tenant: TenantArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    dsn: DsnOption = None,
) -> None:
    """Drop a tenant with every row it owns and its login roles."""
    if not yes:
        typer.confirm(f"Drop tenant {tenant} and all its memories?", abort=True)
    with database_errors(dsn), psycopg.connect(dsn_for(dsn)) as conn:
        row = conn.execute(admin_queries.DROP_TENANT, {"tenant": tenant}).fetchone()
        assert row is not None
    console.print(f"tenant {tenant} dropped ({row[0]} memories removed)")


@app.command()
def move(
    tenant: TenantArg,
    to_node: Annotated[
        str,
        typer.Option(
            "--to-node",
            help="Citus worker as host:port (the nodename and nodeport of pg_dist_node).",
        ),
    ],
    dsn: DsnOption = None,
) -> None:
    """Citus: give a hot tenant a shard of its own and move it to another worker."""
    host, _, port = to_node.rpartition(":")
    if not host or not port.isdigit():
        raise typer.BadParameter("expected host:port", param_hint="--to-node")
    with database_errors(), psycopg.connect(dsn_for(dsn), autocommit=True) as conn:
        row = conn.execute(Q.MOVE_TENANT, (tenant, host, int(port))).fetchone()
        assert row is not None
    shard, source, target, moved = row
    state = "moved" if moved else "already there"
    console.print(f"tenant {tenant} (shard {shard}): {source} -> {target}: {state}")


LabelOption = Annotated[
    str, typer.Option("--label", help="Which client the token is for, e.g. claude-desktop.")
]


@app.command()
def token(
    tenant: TenantArg,
    label: LabelOption,
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", help="Confine the token to this subject's memories."),
    ] = None,
    dsn: DsnOption = None,
) -> None:
    """Make a bearer token for `pgmem mcp --transport http --auth` (shown once)."""
    with database_errors(dsn), psycopg.connect(dsn_for(dsn)) as conn:
        row = conn.execute(
            admin_queries.CREATE_MCP_TOKEN, {"tenant": tenant, "label": label, "subject": user}
        ).fetchone()
    assert row is not None
    console.print(
        f"token {label!r} for tenant [bold]{tenant}[/bold]" + (f", user {user}" if user else "")
    )
    console.print(f"{row[0]}  (shown once; store it now)", highlight=False, soft_wrap=True)


@app.command()
def tokens(
    tenant: Annotated[str | None, typer.Argument(help="Only this tenant's tokens.")] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """List the bearer tokens of pgmem mcp (labels, never the tokens)."""
    with database_errors(dsn), psycopg.connect(dsn_for(dsn), row_factory=dict_row) as conn:
        rows = conn.execute(admin_queries.MCP_TOKENS, {"tenant": tenant}).fetchall()
    print_rows(
        rows, as_json=as_json, as_jsonl=as_jsonl, title="pgmem mcp tokens", empty="no tokens"
    )


@app.command("revoke-token")
def revoke_token(tenant: TenantArg, label: LabelOption, dsn: DsnOption = None) -> None:
    """Revoke a bearer token of pgmem mcp at once."""
    with database_errors(dsn), psycopg.connect(dsn_for(dsn)) as conn:
        row = conn.execute(
            admin_queries.REVOKE_MCP_TOKEN, {"tenant": tenant, "label": label}
        ).fetchone()
    if row is None or not row[0]:
        raise fail(f"tenant {tenant} has no token labelled {label!r}", EXIT_NOT_FOUND)
    console.print(f"token {label!r} of tenant {tenant} revoked")
