"""A new memory is compared with its own kind of record only.

pgmem.write_probe gains episodic: whether the new memory is an episode (kind
episodic). pgmem._neighbours then measures a fact against the subject's facts
and an episode against its episodes, so a fact is never deduplicated into,
merged with or decided against an episode that shares its words ("User's name
is Audrey" against the turn "Audrey: What is his name?"), nor an episode into a
fact.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-05
"""

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
alter type pgmem.write_probe add attribute episodic boolean;
comment on type pgmem.write_probe is
    'A new memory as pgmem._neighbours compares it with its subject''s rows: its position in the caller''s batch, text, vector, valid time, pgmem._conflict_terms and _conflict_marks, whether to look for contradictions, and whether it is an episode (kind episodic: compared with episodes only, a fact with facts only) (internal).';
"""
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("alter type pgmem.write_probe drop attribute episodic")
    op.execute("reset role")
