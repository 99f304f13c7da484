"""Effective importance moves to a narrow table of its own: pgmem.memory_decay.

Decay rescored memories.effective_importance in place. A memory row is
~1.5–2 KB (content, a 384-d vector, its tsvector and conflict features), so
one heap page holds four or five and keeps room for one more version: when
decay writes most rows of a page, as its first pass over an import does,
most updates cannot be HOT and the new version of a ~2 KB row goes into every
btree of the table. On 200,000 LoCoMo rows the first pass took 13.6 s
(16.3 s with the GIN index 0014 dropped); at 1M the benchmark measured
93–107 s against a target of 30 s.

pgmem.memory_decay (tenant_id, memory_id, effective_importance, decayed_at)
holds the stored value, one ~60-byte row per memory decay has written; no
row means "not decayed yet", i.e. the importance itself, as NULL did. Decay
upserts it and never touches pgmem.memories; writing the same 200,000 values
there took 2.6 s.

No foreign key to pgmem.memories: checking one locks the referenced row (FOR
KEY SHARE), a write on each memory's heap page, and made the same pass 6.6 s
with 327 MB of WAL. Instead every statement that deletes memories deletes
their rows here (purge, erase_subject, drop_tenant), and purge also sweeps
rows whose memory is gone (a decay racing a delete can leave one).

Applications read it (RLS, like every tenant table) and write it only the way
the invoker-rights lifecycle functions do (INSERT and UPDATE of
effective_importance, decayed_at): no DELETE or table-wide UPDATE privilege,
which would let a role LOCK the table.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

TABLE = """
create table pgmem.memory_decay (
    tenant_id            text not null default pgmem.current_tenant(),
    memory_id            bigint not null,
    effective_importance real not null check (effective_importance between 0 and 1),
    decayed_at           timestamptz not null,
    primary key (tenant_id, memory_id)
)
-- Rows are rewritten in place by every decay that moves them: room for HOT.
with (fillfactor = 80);
comment on table pgmem.memory_decay is
    'Effective (decayed) importance of a memory as the last pgmem.decay (or archive, restore, update) stored it, and when; no row: not decayed yet, i.e. its importance. Written by the lifecycle functions, read by get_memory, list_memories, export and the memory_stats view.';
alter table pgmem.memory_decay enable row level security;
alter table pgmem.memory_decay force row level security;
create policy tenant_isolation on pgmem.memory_decay to pgmem_app
    using (tenant_id = pgmem.current_tenant()) with check (tenant_id = pgmem.current_tenant());
create policy readonly_inspection on pgmem.memory_decay for select to pgmem_readonly using (true);
create trigger memory_decay_require_tenant before insert or update or delete on pgmem.memory_decay
    for each statement execute function pgmem._require_tenant_trigger();
grant select, insert on pgmem.memory_decay to pgmem_app;
grant update (effective_importance, decayed_at) on pgmem.memory_decay to pgmem_app;
grant select on pgmem.memory_decay to pgmem_readonly;
"""

# pgmem.memory_stats (sql/functions/50_views.sql) reads the effective
# importance: the column cannot be dropped (nor the table, going down) while
# the view reads it, so each direction first points the view at the other.
STATS_VIEW = """
create or replace view pgmem.memory_stats
with (security_invoker = true)
as
select
    m.tenant_id,
    m.subject,
    m.kind,
    m.status,
    pg_catalog.count(*) as memories,
    pg_catalog.count(*) filter (where m.pinned) as pinned,
    pg_catalog.avg(m.importance)::real as avg_importance,
    pg_catalog.avg(coalesce({effective}, m.importance))::real as avg_effective_importance,
    pg_catalog.sum(m.access_count) as accesses,
    pg_catalog.min(m.created_at) as oldest,
    pg_catalog.max(m.created_at) as newest,
    pg_catalog.max(m.last_accessed_at) as last_accessed_at
from pgmem.memories as m
{join}group by m.tenant_id, m.subject, m.kind, m.status
"""
DECAY_JOIN = (
    "left join pgmem.memory_decay as d on d.tenant_id = m.tenant_id and d.memory_id = m.memory_id\n"
)


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(TABLE)
    op.execute(
        """
insert into pgmem.memory_decay (tenant_id, memory_id, effective_importance, decayed_at)
select m.tenant_id, m.memory_id, m.effective_importance, m.updated_at
from pgmem.memories as m
where m.effective_importance is not null
"""
    )
    op.execute(STATS_VIEW.format(effective="d.effective_importance", join=DECAY_JOIN))
    op.execute("alter table pgmem.memories drop column effective_importance")
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
alter table pgmem.memories
    add column effective_importance real check (effective_importance between 0 and 1);
grant update (effective_importance) on pgmem.memories to pgmem_app;
update pgmem.memories as m
set effective_importance = d.effective_importance
from pgmem.memory_decay as d
where d.tenant_id = m.tenant_id and d.memory_id = m.memory_id;
"""
    )
    op.execute(STATS_VIEW.format(effective="m.effective_importance", join=""))
    op.execute("drop table pgmem.memory_decay")
    op.execute("reset role")
