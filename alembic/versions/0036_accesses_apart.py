"""Recall records its accesses in a narrow table; a job folds them in.

Recall reinforced every row it returned in place: access_count + 1 and
last_accessed_at = now on pgmem.memories, a locking pass and an UPDATE of
~2 KB rows (a new version of each, its WAL, a page's room for HOT) inside
every reinforcing read. Measured on LoCoMo text at 100k (1,000 rows a
subject), that was 0.36 ms of a 5.1 ms p50 and 0.74 ms of an 8.2 ms p95.

pgmem.memory_accesses (tenant_id, subject, memory_ids, accessed_at) takes one
row per recall (and per subject it returned rows of): an insert, no lock on
any memory, so a recall never waits for or skips a row a writer holds.
Recall, context, prompt, the profile and the reads add the rows still there
to what pgmem.memories holds, so every answer is the one an in-place update
gave; pgmem.fold_accesses (the 'accesses' job, every minute under pg_cron,
and decay, archive and capacity before they read) moves them into the
memories and deletes them.

No foreign key, as for memory_decay: checking one locks the subject's row,
which a writer holds for its whole write. No statement trigger requiring a
tenant either (0.1 ms of a 0.25 ms insert): applications may only insert,
and an insert without one fails its policy check. Erasing a subject or a tenant
deletes its rows; rows of memories purged meanwhile are dropped by the fold.
Applications insert (RLS: their tenant, and the bound end user's own
subject); deleting is the owner's, through the fold.

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-08
"""

from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

JOB_LOCK = """
alter table pgmem._job_locks drop constraint _job_locks_job_check;
alter table pgmem._job_locks add constraint _job_locks_job_check check (job in ({jobs}));
"""
JOBS = "'archive', 'decay', 'capacity', 'purge', 'sessions', 'consolidate', 'watchdog', 'links'"

TABLE = """
create table pgmem.memory_accesses (
    tenant_id   text not null default pgmem.current_tenant(),
    subject     text not null,
    memory_ids  bigint[] not null,
    accessed_at timestamptz not null
);
comment on table pgmem.memory_accesses is
    'Accesses recorded by recall, context and prompt and not yet folded into pgmem.memories (access_count, last_accessed_at) by pgmem.fold_accesses: one row per call and subject, the memories it returned. Readers of those columns add these rows; the accesses job folds them every minute.';
create index memory_accesses_subject on pgmem.memory_accesses (tenant_id, subject);
alter table pgmem.memory_accesses enable row level security;
alter table pgmem.memory_accesses force row level security;
create policy tenant_isolation on pgmem.memory_accesses to pgmem_app
    using (tenant_id = pgmem.current_tenant()) with check (tenant_id = pgmem.current_tenant());
create policy readonly_inspection on pgmem.memory_accesses for select to pgmem_readonly using (true);
grant select, insert on pgmem.memory_accesses to pgmem_app;
grant select on pgmem.memory_accesses to pgmem_readonly;
"""

# What the fold does, as the owner: going down, the rows still waiting are
# written into the memories before the table goes.
FOLD = """
update pgmem.memories as m
set access_count = m.access_count + a.accesses,
    last_accessed_at = greatest(m.last_accessed_at, a.last_accessed_at)
from (select a.tenant_id, u.memory_id, pg_catalog.count(*)::integer as accesses,
             pg_catalog.max(a.accessed_at) as last_accessed_at
      from pgmem.memory_accesses as a
      cross join lateral pg_catalog.unnest(a.memory_ids) as u(memory_id)
      group by a.tenant_id, u.memory_id) as a
where m.tenant_id = a.tenant_id and m.memory_id = a.memory_id
"""

UNSCHEDULE = """
do $$
begin
    if pg_catalog.to_regclass('cron.job') is not null then
        perform cron.unschedule(j.jobid) from cron.job as j
        where j.jobname = 'pgmem-accesses' and j.database = pg_catalog.current_database();
    end if;
end
$$;
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(TABLE)
    op.execute(JOB_LOCK.format(jobs=JOBS + ", 'accesses'"))
    op.execute("insert into pgmem._job_locks (job) values ('accesses')")
    op.execute("reset role")


def downgrade() -> None:
    # The job would fail every minute on a schema that no longer knows it.
    op.execute(UNSCHEDULE)
    op.execute("set local role pgmem_admin")
    op.execute("delete from pgmem.job_runs where job = 'accesses'")
    op.execute("delete from pgmem._job_locks where job = 'accesses'")
    op.execute(JOB_LOCK.format(jobs=JOBS))
    op.execute("reset role")
    # As the migrating role (a superuser or the owner with BYPASSRLS): every
    # tenant's rows.
    op.execute(FOLD)
    # The DBA views read pgmem._accesses_pending (sql/functions/50_views.sql):
    # it stays, empty, so that they do too.
    op.execute(
        """
create or replace view pgmem._accesses_pending with (security_invoker = true) as
select null::text as tenant_id, null::text as subject, null::bigint as memory_id,
       null::integer as accesses, null::timestamptz as last_accessed_at
where false
"""
    )
    op.execute("drop table pgmem.memory_accesses")
