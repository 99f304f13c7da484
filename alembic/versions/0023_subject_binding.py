"""End-user binding: where a connection's binding to one end user is kept.

pgmem.bind_subject (sql/functions/92_subject_binding.sql) records the
backend (pid and start time), its tenant and its subject here; once
pgmem.enable_subject_binding narrows the tenant_isolation policies, they
check it. Owner-only: no application role may read or write it, so no
connection can see or forge another's binding. No
foreign key to tenants: on Citus that would make it a Citus local table,
and binding is refused there anyway.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04
"""

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        create table pgmem._subject_bindings (
            pid             integer primary key,
            backend_start   timestamptz not null,
            tenant_id       text not null,
            subject         text not null,
            shared_subjects text[] not null default '{}',
            bound_at        timestamptz not null default now()
        );
        revoke all on pgmem._subject_bindings from public, pgmem_app, pgmem_service, pgmem_readonly;
        comment on table pgmem._subject_bindings is
            'Connections bound to one end user (pgmem.bind_subject), by backend pid and start time (owner only).';
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        select pgmem._subject_binding_policies(false);
        -- With the functions that return its rows.
        drop table pgmem._subject_bindings cascade;
        """
    )
    op.execute("reset role")
