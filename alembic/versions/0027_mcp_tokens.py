"""Bearer tokens for `pgmem mcp` over HTTP.

pgmem._mcp_tokens: one row per token, keyed by the token's sha256 (the token
itself is shown once, when pgmem.create_mcp_token makes it, and kept nowhere),
with the tenant it acts for, optionally the one subject it is confined to, and a
label to list and revoke it by. Owner only: administrators make and revoke
tokens; a server checks one with pgmem.mcp_token, which answers only for a
tenant the session may act for.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-04
"""

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        create table pgmem._mcp_tokens (
            token_hash text primary key,
            tenant_id  text not null,
            subject    text check (subject is null or (pg_catalog.btrim(subject) <> ''
                                                       and pg_catalog.length(subject) <= 256)),
            label      text not null check (pg_catalog.btrim(label) <> '' and pg_catalog.length(label) <= 128),
            created_at timestamptz not null default now(),
            unique (tenant_id, label)
        );
        revoke all on pgmem._mcp_tokens from public, pgmem_app, pgmem_service, pgmem_readonly;
        alter table pgmem._mcp_tokens enable row level security, force row level security;
        comment on table pgmem._mcp_tokens is
            'Bearer tokens of pgmem mcp over HTTP, by sha256: tenant, optional subject, label (owner only).';
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("drop table pgmem._mcp_tokens")
    op.execute("reset role")
