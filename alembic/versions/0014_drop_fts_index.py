"""Drop the full-text GIN index no statement uses.

memories_fts (GIN on tenant_id, subject, fts, active rows) was meant for
recall's term matches. Under a tenant policy the planner may not use it (@@
is not leakproof, so it cannot run inside an index scan ahead of the policy),
and since recall reads each query term's postings from its one pass over the
subject (sql/functions/20_recall.sql) no statement of pgmem uses it for any
role. It still cost every write: each new row version of an active memory
(remember, remember_many, decay's rescoring when it cannot be HOT) inserts
its terms into it, and it held ~114 bytes per memory.

Measured on 200,000 LoCoMo turns (subjects of 1,000, random vectors): the
first decay pass over the fresh import took 16.3 s with the index and
13.6 s without. A DBA who wants ad-hoc full-text search as a BYPASSRLS role
can create such an index again; pgmem does not need it.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("drop index if exists pgmem.memories_fts")
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        "create index memories_fts on pgmem.memories using gin (tenant_id, subject, fts)"
        " where status = 'active'"
    )
    op.execute("reset role")
