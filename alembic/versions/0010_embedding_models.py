"""The embedding model a tenant's vectors come from, re-embedding, measured defaults.

- settings.embedding_model becomes nullable and no longer defaults to
  all-MiniLM-L6-v2: NULL means "not recorded yet", and the first client that
  declares its model for the tenant (pgmem.use_embedding_model) records it.
  Existing tenants keep the model they have. From then on a vector of another
  model is refused (PM025) wherever one is checked: recall, context, prompt,
  remember, remember_many, update, set_embedding.
- settings.reembed_model: the model a running re-embed moves the tenant to
  (pgmem.start_reembed), NULL otherwise.
- pgmem.reembed_vectors: the new model's vectors, staged by the worker's
  re-embed jobs until every memory has one; then pgmem.stage_reembed swaps them
  into pgmem.memories and switches settings.embedding_model in one
  transaction, so recall never sees vectors of two models.
- The '_default' settings (row and column defaults) take the values the
  LoCoMo dev sweep measured best (docs/eval.md, "Defaults").

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# Measured best on the LoCoMo dev split (`pgmem eval sweep`, docs/eval.md), and what
# 0001 set before. Column -> (new default, old default), as SQL literals.
DEFAULTS = {
    "w_recency": ("0.02", "0.1"),
    "ripple_damping": ("0.9", "0.5"),
    "w_vector": ("0.6", "0.5"),
    "w_importance": ("0.1", "0.2"),
}

TABLE = """
create table pgmem.reembed_vectors (
    tenant_id    text not null default pgmem.current_tenant(),
    memory_id    bigint not null,
    model        text not null,
    -- sha256 of the content the vector was computed from: a memory edited after
    -- its vector was staged is embedded again before the switch.
    content_hash bytea not null,
    embedding    public.vector not null,
    staged_at    timestamptz not null default now(),
    primary key (tenant_id, memory_id),
    foreign key (tenant_id, memory_id) references pgmem.memories on delete cascade
);
alter table pgmem.reembed_vectors enable row level security;
alter table pgmem.reembed_vectors force row level security;
-- Without a subquery, as 0004 made every policy: Citus refuses them.
create policy tenant_isolation on pgmem.reembed_vectors to pgmem_app
    using (tenant_id = pgmem.current_tenant()) with check (tenant_id = pgmem.current_tenant());
create policy readonly_inspection on pgmem.reembed_vectors for select to pgmem_readonly using (true);
create trigger reembed_vectors_require_tenant before insert or update or delete on pgmem.reembed_vectors
    for each statement execute function pgmem._require_tenant_trigger();
-- Written only by the owner-rights re-embed functions (sql/functions/66_models.sql):
-- applications hold no INSERT, UPDATE or DELETE on it (either would let them LOCK TABLE).
grant select on pgmem.reembed_vectors to pgmem_app, pgmem_readonly;
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("alter table pgmem.settings alter column embedding_model drop not null")
    op.execute("alter table pgmem.settings alter column embedding_model drop default")
    op.execute("update pgmem.settings set embedding_model = null where tenant_id = '_default'")
    op.execute("alter table pgmem.settings add column reembed_model text")
    for column, (new, _old) in DEFAULTS.items():
        op.execute(f"alter table pgmem.settings alter column {column} set default {new}")
        op.execute(f"update pgmem.settings set {column} = {new} where tenant_id = '_default'")
    op.execute(TABLE)
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("drop table pgmem.reembed_vectors")
    for column, (_new, old) in DEFAULTS.items():
        op.execute(f"alter table pgmem.settings alter column {column} set default {old}")
        op.execute(f"update pgmem.settings set {column} = {old} where tenant_id = '_default'")
    op.execute("alter table pgmem.settings drop column reembed_model")
    op.execute(
        "update pgmem.settings set embedding_model = 'all-MiniLM-L6-v2' where embedding_model is null"
    )
    op.execute(
        "alter table pgmem.settings alter column embedding_model set default 'all-MiniLM-L6-v2'"
    )
    op.execute("alter table pgmem.settings alter column embedding_model set not null")
    op.execute("reset role")
