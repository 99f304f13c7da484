"""Storage and the write path at scale.

- pgmem.memories.embedding becomes halfvec(dims): two bytes a dimension
  instead of four (768 instead of 1,536 bytes at 384-d), about half of a
  memory's row. Cosine similarity in half precision ranks neighbours like
  single precision does (tests/test_storage.py measures recall@10 against
  the float32 exact scan on LoCoMo vectors). pgvector casts a vector to
  halfvec implicitly, so `m.embedding <=> p_embedding` with a vector query
  keeps its meaning and its index.
- The HNSW index covers large subjects only. Recall scans a subject of at
  most settings.exact_scan_limit active memories exactly and never asks the
  index for it, yet every write paid for an HNSW insert. pgmem.subjects.ann
  says a subject has crossed the limit (set by pgmem._ann_subjects after a
  write, never cleared: a subject that shrinks keeps its index entries) and
  pgmem.memories.ann copies it onto each of the subject's rows, which is
  what the partial index can test. Recall's HNSW branch names the same
  predicate.
- The memories_guard row trigger fires on updates of the columns it checks
  only (embedding, content, session, agent, triple, metadata): it compared
  exactly those, so nothing changes for a writer, but decay, archive,
  capacity and reinforcement no longer call it once per row.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# The column keeps its dimensions (its type modifier, fixed at the first
# migration by --dims); only the element type changes.
RETYPE = """
do $$
declare
    v_dims integer := (select a.atttypmod from pg_catalog.pg_attribute as a
                       where a.attrelid = 'pgmem.memories'::regclass and a.attname = 'embedding');
begin
    execute pg_catalog.format(
        'alter table pgmem.memories alter column embedding type public.%1$s(%2$s) using embedding::public.%1$s(%2$s)',
        '{type}', v_dims);
end
$$;
"""


# The columns pgmem._memories_guard (sql/functions/70_guards_triggers.sql) checks
# on an update; any other column cannot make it refuse or rewrite a row.
GUARDED = "embedding, content, session_id, agent_id, triple_subject, triple_predicate, triple_object, metadata"
GUARD = """
create trigger memories_guard before insert or update{columns} on pgmem.memories
    for each row execute function pgmem._memories_guard();
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("drop index pgmem.memories_embedding")
    op.execute(RETYPE.format(type="halfvec"))
    op.execute(
        """
alter table pgmem.subjects add column ann boolean not null default false;
alter table pgmem.memories add column ann boolean not null default false;
comment on column pgmem.subjects.ann is
    'The subject has had more than settings.exact_scan_limit active memories: its rows are in the HNSW index.';
comment on column pgmem.memories.ann is
    'Copy of pgmem.subjects.ann for the partial HNSW index (memories_embedding) and recall''s approximate branch.';
-- Only large subjects' rows: recall scans every other subject exactly.
create index memories_embedding on pgmem.memories using hnsw (embedding public.halfvec_cosine_ops)
    where status = 'active' and ann;
-- The write path flags subjects and rows as the caller (0002's column grants).
grant update (ann) on pgmem.subjects, pgmem.memories to pgmem_app;
"""
    )
    op.execute("drop trigger memories_guard on pgmem.memories")
    op.execute(GUARD.format(columns=" of " + GUARDED))
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("drop trigger memories_guard on pgmem.memories")
    op.execute(GUARD.format(columns=""))
    op.execute("drop index pgmem.memories_embedding")
    op.execute("alter table pgmem.memories drop column ann")
    op.execute("alter table pgmem.subjects drop column ann")
    op.execute(RETYPE.format(type="vector"))
    op.execute(
        "create index memories_embedding on pgmem.memories using hnsw"
        " (embedding public.vector_cosine_ops) where status = 'active'"
    )
    op.execute("reset role")
