"""Store items put with index=False are never embedded.

LangGraph's put(..., index=False) keeps an item out of vector search. Such an
item is a store memory whose metadata says {"index": false}; the worker's embed
pass (pgmem.claim_unembedded) passes it over, and the partial index it reads,
memories_unembedded, leaves it out, so a tenant with many such items does not
make every claim scan them.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-04
"""

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        drop index pgmem.memories_unembedded;
        create index memories_unembedded on pgmem.memories (tenant_id, memory_id)
            where status = 'active' and embedding is null
              and not (source = 'store' and metadata @> '{"index": false}');
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        drop index pgmem.memories_unembedded;
        create index memories_unembedded on pgmem.memories (tenant_id, memory_id)
            where status = 'active' and embedding is null;
        """
    )
    op.execute("reset role")
