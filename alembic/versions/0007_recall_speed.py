"""Recall speed (issue 12): reinforcement no longer runs the memories guard.

The row trigger memories_guard (0002, body in sql/functions/70_guards.sql)
fired on every UPDATE of pgmem.memories. It inspects content, embedding,
session_id, agent_id, the triple and metadata only, and does nothing when
none of them changed, yet on every row recall reinforces (access_count,
last_accessed_at) and every row decay rescores (effective_importance) it
still ran: a PL/pgSQL call that detoasted the old and the new embedding to
compare them, the content, and the metadata. It now fires only when an
UPDATE sets one of the columns it inspects (UPDATE OF: any statement that
names one of them in SET, ON CONFLICT DO UPDATE included), so what it
checks and rewrites is unchanged and the writes that cannot concern it skip it.

Revision ID: 0007
Revises: 0005
Create Date: 2026-12-01
"""

from alembic import op

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None

# Exactly the columns pgmem._memories_guard reads on UPDATE.
GUARDED = "content, embedding, session_id, agent_id, triple_subject, triple_predicate, triple_object, metadata"


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        f"""
drop trigger memories_guard on pgmem.memories;
create trigger memories_guard before insert or update of {GUARDED} on pgmem.memories
    for each row execute function pgmem._memories_guard();
"""
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
drop trigger memories_guard on pgmem.memories;
create trigger memories_guard before insert or update on pgmem.memories
    for each row execute function pgmem._memories_guard();
"""
    )
    op.execute("reset role")
