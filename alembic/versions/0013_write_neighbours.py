"""One scan of a subject per write: pgmem.write_probe.

A write read its subject's active rows twice: once for the contradiction
candidates (pgmem._conflicts) and once more for the nearest row, the
duplicate and merge check. remember_many did the first once per item, so a
batch of 50 items for one subject read that subject 51 times. On LoCoMo turns
each read of a 1,000-row subject costs ~3 ms: most of a write.

pgmem._neighbours (13_conflict_decisions.sql) reads the subject once for a set of new
facts, each given as a pgmem.write_probe (what the rules read of it: its text,
vector, valid time, terms and marks), and returns each probe's contradiction
candidates and its nearest row. pgmem.remember asks it for one probe;
remember_many for all the items of a subject at once.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
create type pgmem.write_probe as (
    item integer,
    content text,
    embedding public.halfvec,
    valid_from timestamptz,
    terms text[],
    marks text[],
    check_conflicts boolean
);
comment on type pgmem.write_probe is
    'A new fact as pgmem._neighbours compares it with its subject''s rows: its position in the caller''s batch, text, vector, valid time, pgmem._conflict_terms and _conflict_marks, and whether to look for contradictions (internal).';
"""
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
drop function if exists pgmem._neighbours(text, pgmem.settings, text, pgmem.write_probe[]);
drop type pgmem.write_probe;
"""
    )
    op.execute("reset role")
