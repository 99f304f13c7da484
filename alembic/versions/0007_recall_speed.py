"""Recall speed: reinforcing a recalled row writes only its access columns.

Recall adds 1 to access_count and moves last_accessed_at of every row it
returns; decay rescores effective_importance. On PostgreSQL 15 each such
UPDATE also did work that cannot concern it:

- memories.content_hash and memories.fts were stored generated columns, and
  PostgreSQL 15 recomputes every stored generated column on every UPDATE,
  whatever it sets: _tsv and _content_hash ran again for each reinforced row
  (~0.25 ms a row), and a recomputed tsvector that had been stored compressed
  is not byte-equal to the old one, so the update could not be HOT and went
  into every index again, HNSW included. They become plain columns, kept by
  the row trigger memories_text (body pgmem._memories_text in
  sql/functions/00_text.sql), which fires on INSERT and on an UPDATE that
  writes content (or the two columns themselves: a direct write of either is
  replaced by the computed value, as a generated column cannot be written).
  DROP EXPRESSION keeps the stored values; nothing is rewritten.
- The row trigger memories_guard fires on the columns it checks only since
  0006, so a reinforcement no longer runs it.
- A HOT update needs room for the new row version on the row's own page.
  fillfactor 90 (0001) keeps 819 bytes free, less than one row with a 384-d
  embedding (~2 KB), so about a third of reinforcements went into every
  index again, HNSW included (~2 ms each). 75 keeps 2,048 bytes: room for
  one version of any row, since TOAST moves a row over 2,032 bytes out of
  line. It applies to pages filled from now on (VACUUM FULL or pg_repack
  rewrites existing ones). It costs heap space (LoCoMo rows at 100k: 166 to
  ~220 MB); two reinforced rows on one page in one recall can still miss.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# Replaced by sql/functions/00_text.sql at the end of the same migration;
# CREATE TRIGGER needs it to exist first.
STUB = """
create or replace function pgmem._memories_text() returns trigger
language plpgsql security invoker set search_path = pg_catalog, pg_temp
as $$ begin return new; end $$;
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(STUB)
    op.execute(
        """
alter table pgmem.memories alter column content_hash drop expression;
alter table pgmem.memories alter column fts drop expression;
create trigger memories_text before insert or update of content, content_hash, fts on pgmem.memories
    for each row execute function pgmem._memories_text();
alter table pgmem.memories set (fillfactor = 75);
"""
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
alter table pgmem.memories set (fillfactor = 90);
drop trigger memories_text on pgmem.memories;
drop function pgmem._memories_text();
-- A column cannot become generated again in place: add it anew (every row is
-- recomputed) and rebuild the two indexes that went with the old one.
alter table pgmem.memories drop column content_hash, drop column fts;
alter table pgmem.memories
    add column content_hash text generated always as (pgmem._content_hash(content)) stored,
    add column fts tsvector generated always as (pgmem._tsv(content)) stored;
create unique index memories_active_content on pgmem.memories (tenant_id, subject, content_hash)
    where status = 'active';
create index memories_fts on pgmem.memories using gin (tenant_id, subject, fts) where status = 'active';
"""
    )
    op.execute("reset role")
