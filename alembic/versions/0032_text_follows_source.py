"""A memory's contradiction features follow its source.

A stated turn or a store item holds no contradiction features: no rule ever
compares one, and computing them cost every turn ~0.2 ms. The memories_text
trigger decides by the row's source, so it must also run when only the
source changes: a turn an app turns into a fact gets its features then, and a
fact turned into a turn drops them.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-07
"""

from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

TRIGGER = """
drop trigger memories_text on pgmem.memories;
create trigger memories_text
    before insert or update of content, content_hash, fts, conflict_terms, conflict_marks, item_key{extra}
    on pgmem.memories
    for each row execute function pgmem._memories_text();
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(TRIGGER.format(extra=", source"))
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(TRIGGER.format(extra=""))
    op.execute("reset role")
