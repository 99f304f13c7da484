"""Memory rows stay whole up to a page: toast_tuple_target = 8160.

A memory row is ~1.4 KB on average (content, a 384-d halfvec, its tsvector
and conflict features), but a row past 2,032 bytes, PostgreSQL's default
target, had a column moved out of line, and the first one the toaster moved
was the vector (storage EXTERNAL, ~770 bytes). On the benchmark's LoCoMo
load 1.7% of rows had their vector in the TOAST table, about 17 of a
1,000-row subject: recall and every new fact of a write read each of those
through the TOAST index (perf: 2.3% of a remember_many batch in
heap_fetch_toast_slice under the distance, and _neighbours fetched them
again for each fact of a batch). With the target at its maximum a row is
compressed or moved out only when it would not fit a page otherwise (long
content still goes out of line).

The option applies to rows written from now on; rows already stored keep
their out-of-line values until they are written again.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("alter table pgmem.memories set (toast_tuple_target = 8160)")
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("alter table pgmem.memories reset (toast_tuple_target)")
    op.execute("reset role")
