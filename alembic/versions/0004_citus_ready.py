"""Citus-ready schema: tenant policies without a subquery, no trigger on tenants.

Citus refuses policies with subqueries on distributed and reference tables.
`(select pgmem.current_tenant())` was there to evaluate the binding once per
statement (an initplan); pgmem.current_tenant() is STABLE, so an index
condition `tenant_id = pgmem.current_tenant()` is evaluated once per scan
anyway, and every pgmem read of tenant rows goes through an index leading
with tenant_id.

The tenants_sync_settings trigger wrote pgmem.settings from a trigger on
pgmem.tenants; Citus cannot run a trigger that writes another distributed
or reference table (it fires on a shard). pgmem.create_tenant copies the
defaults row and pgmem.drop_tenant removes it instead. Both changes hold on
one server (docs/scaling.md).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TENANT_TABLES = (
    "tenants",
    "settings",
    "subjects",
    "memories",
    "memory_links",
    "memory_events",
    "inbox",
    "sessions",
    "session_messages",
    "session_summaries",
    "tasks",
    "task_steps",
)


def _isolation(table: str, is_tenant: str) -> str:
    visible = f"{is_tenant} or tenant_id = '_default'" if table == "settings" else is_tenant
    return f"""
drop policy tenant_isolation on pgmem.{table};
create policy tenant_isolation on pgmem.{table} to pgmem_app
    using ({visible}) with check ({is_tenant});
"""


def upgrade() -> None:
    for table in TENANT_TABLES:
        op.execute(_isolation(table, "tenant_id = pgmem.current_tenant()"))
    op.execute("drop trigger tenants_sync_settings on pgmem.tenants")


def downgrade() -> None:
    op.execute(
        """
create trigger tenants_sync_settings after insert or delete on pgmem.tenants
    for each row execute function pgmem._tenants_sync_settings();
"""
    )
    for table in TENANT_TABLES:
        op.execute(_isolation(table, "tenant_id = (select pgmem.current_tenant())"))
