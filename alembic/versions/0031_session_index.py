"""A stated turn's write costs the same however long the user's history.

The write path links a new memory to the active memories of its session
(pgmem._link_at_write). Without an index on the session, each stated turn read
every active row of its subject to find its session's few: ~5 ms a turn at
1,000 rows, growing with everything the user ever said. memories_session holds
the active rows that have a session, by subject and session.

After each insert the write path asked whether the subject had crossed
exact_scan_limit by counting its active rows (pgmem._ann_subjects), which a
fact's write reads anyway but a stated turn's does not: ~1.3 ms a turn at
3,500 rows. pgmem.subjects now keeps the last count and the tenant's newest
memory id at that count; a subject cannot have gained more rows than ids drawn
since, so it is counted again only once that bound reaches the limit.

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
        alter table pgmem.subjects
            add column rows_counted integer,
            add column rows_counted_at bigint;
        comment on column pgmem.subjects.rows_counted is
            'Active memories of the subject when pgmem._ann_subjects last counted them (NULL: never, or a memory was restored since).';
        comment on column pgmem.subjects.rows_counted_at is
            'The tenant''s newest memory id at that count: the subject has at most rows_counted plus the ids drawn since.';
        grant update (rows_counted, rows_counted_at) on pgmem.subjects to pgmem_app;
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        revoke update (rows_counted, rows_counted_at) on pgmem.subjects from pgmem_app;
        alter table pgmem.subjects drop column rows_counted, drop column rows_counted_at;
        drop index pgmem.memories_session;
        """
    )
    op.execute("reset role")
