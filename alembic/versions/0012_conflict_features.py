"""Write path on real text: stored contradiction features, checked inserts in bulk.

The contradiction check (0008) compares a new fact with its 16 nearest close
neighbours by offline rules over their text. On LoCoMo turns each comparison
(pgmem.contradiction) cost ~0.4 ms: it spelled both facts again, matched the
vocabulary's patterns against both, and PostgreSQL recompiled most of those
patterns on every call (a backend keeps 32 compiled regular expressions; the
write path uses more). With the terms and marks of every stored fact kept
beside it (13_conflict.sql: pgmem._conflict_terms, pgmem._conflict_marks), a
pair is judged from two arrays each, and a pattern runs only for the rare pair
that names two words of an antonym pair or two values of one attribute.

- memories.conflict_terms, memories.conflict_marks: kept by the row trigger
  memories_text (pgmem._memories_text), which now also fires on a write of
  either column (a direct write is replaced by the computed value, as for fts).
  Existing rows keep NULL, which readers take as "compute from the text" (the
  same result, at the old cost); rewriting every row here would put a large
  table through all its indexes during the upgrade. Changing
  pgmem.conflict_vocabulary() needs a migration that recomputes them.

- pgmem.memory_row: the columns of a new memory as pgmem.remember and
  remember_many hand them to pgmem._store_memories (70_guards.sql), which checks
  and redacts a whole batch as the memories_guard trigger does row by row, then
  inserts it with the owner's rights, which the trigger does not check again.
  Row by row, the trigger's ~30 regular expressions and the text columns' ~20
  outnumber the 32 a backend keeps compiled, so each row compiled them all
  again: 2-9 ms a row on LoCoMo turns against ~0.4 ms for the batch.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
alter table pgmem.memories add column conflict_terms text[], add column conflict_marks text[];
create type pgmem.memory_row as (
    subject text,
    agent_id text,
    session_id text,
    kind text,
    content text,
    embedding public.vector,
    importance real,
    confidence real,
    source text,
    triple_subject text,
    triple_predicate text,
    triple_object text,
    valid_from timestamptz,
    valid_to timestamptz,
    status text,
    expires_at timestamptz,
    metadata jsonb,
    ann boolean
);
drop trigger memories_text on pgmem.memories;
create trigger memories_text
    before insert or update of content, content_hash, fts, conflict_terms, conflict_marks on pgmem.memories
    for each row execute function pgmem._memories_text();
"""
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
drop function if exists pgmem._store_memories(text, pgmem.memory_row[], timestamptz);
drop type pgmem.memory_row;
drop trigger memories_text on pgmem.memories;
alter table pgmem.memories drop column conflict_terms, drop column conflict_marks;
-- 0007's body (sql/functions is not re-applied on a downgrade).
create or replace function pgmem._memories_text() returns trigger
language plpgsql security invoker set search_path = pg_catalog, pg_temp
as $$
begin
    new.content_hash := pgmem._content_hash(new.content);
    new.fts := pgmem._tsv(new.content);
    return new;
end
$$;
create trigger memories_text before insert or update of content, content_hash, fts on pgmem.memories
    for each row execute function pgmem._memories_text();
"""
    )
    op.execute("reset role")
