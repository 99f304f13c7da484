"""The active memories of a subject's session, through an index.

The write path links a new memory to the active memories of its session
(pgmem._link_at_write). Without an index on the session, each stated turn read
every active row of its subject to find its session's few: ~5 ms a turn at
1,000 rows, growing with everything the user ever said. memories_session holds
the active rows that have a session, by subject and session.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-07
"""

from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        create index memories_session on pgmem.memories (tenant_id, subject, session_id)
            where status = 'active' and session_id is not null;
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("drop index pgmem.memories_session")
    op.execute("reset role")
