"""Every time a tenant's row holds is a finite timestamp.

PostgreSQL accepts 'infinity' and '-infinity' as timestamptz. One such value
in a tenant's row (remember(..., p_now => 'infinity'), or an app role's
update of last_accessed_at) made decay and archive fail for every tenant
("cannot subtract infinite timestamps") and broke export and list for its
own. A check constraint per table refuses them on every path, SQL function
or direct write, whoever writes; NOT VALID, so an upgrade never fails on a
row written before (maintenance isolates such a tenant instead).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

TIMES = {
    "memories": (
        "valid_from",
        "valid_to",
        "last_accessed_at",
        "expires_at",
        "created_at",
        "updated_at",
        "status_changed_at",
    ),
    "memory_decay": ("decayed_at",),
    "memory_events": ("created_at",),
    "memory_links": ("created_at",),
    "inbox": ("available_at", "finished_at", "created_at"),
    "sessions": ("last_active_at", "created_at", "fold_lease_until", "closed_at"),
    "session_messages": ("created_at",),
    "session_summaries": ("created_at",),
    "subjects": ("created_at",),
    "tasks": ("created_at", "finished_at", "updated_at", "expires_at"),
    "task_steps": ("recorded_at",),
}


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    for table, columns in TIMES.items():
        check = " and ".join(f"({c} is null or pg_catalog.isfinite({c}))" for c in columns)
        op.execute(
            f"alter table pgmem.{table} add constraint {table}_finite_times check ({check}) not valid"
        )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    for table in TIMES:
        op.execute(f"alter table pgmem.{table} drop constraint {table}_finite_times")
    op.execute("reset role")
