-- Views for DBAs and operators. All are security_invoker: they are owned by
-- pgmem_admin, which bypasses RLS, so an owner-rights view would show every
-- tenant to anyone allowed to read it. As invoker views, pgmem_readonly
-- sees all tenants (its inspection policy) and pgmem_app its own.

-- The accesses recall recorded and the accesses job has not folded in yet,
-- per memory, for the views below (readers that take a tenant use
-- pgmem._pending_accesses). A view, which Citus plans as a subquery; going
-- down, revision 0036 leaves it empty before it drops the table.
create or replace view pgmem._accesses_pending
with (security_invoker = true)
as
select a.tenant_id, a.subject, u.memory_id, pg_catalog.count(*)::integer as accesses,
       pg_catalog.max(a.accessed_at) as last_accessed_at
from pgmem.memory_accesses as a
cross join lateral pg_catalog.unnest(a.memory_ids) as u(memory_id)
group by a.tenant_id, a.subject, u.memory_id;

comment on view pgmem._accesses_pending is
    'Per tenant, subject and memory: the accesses recorded in pgmem.memory_accesses and not folded yet, how many and the latest (internal; what the views count). RLS applies.';

revoke all on pgmem._accesses_pending from public;
grant select on pgmem._accesses_pending to pgmem_app, pgmem_readonly;

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
    -- Never-decayed rows (no memory_decay row) count at full importance.
    pg_catalog.avg(coalesce(d.effective_importance, m.importance))::real as avg_effective_importance,
    -- Accesses recorded and not folded yet count (pgmem._pending_accesses).
    pg_catalog.sum(m.access_count + coalesce(a.accesses, 0)) as accesses,
    pg_catalog.min(m.created_at) as oldest,
    pg_catalog.max(m.created_at) as newest,
    pg_catalog.max(greatest(m.last_accessed_at, a.last_accessed_at)) as last_accessed_at
from pgmem.memories as m
left join pgmem.memory_decay as d on d.tenant_id = m.tenant_id and d.memory_id = m.memory_id
left join pgmem._accesses_pending as a
    on a.tenant_id = m.tenant_id and a.memory_id = m.memory_id and a.subject = m.subject
group by m.tenant_id, m.subject, m.kind, m.status;

comment on view pgmem.memory_stats is
    'Memories per tenant, subject, kind and status: count, pinned, average importance and effective (decayed) importance, recalls, oldest/newest and last access. RLS applies: pgmem_app sees its tenant.';

create or replace view pgmem.archive_backlog
with (security_invoker = true)
as
select
    m.tenant_id,
    pg_catalog.count(*) filter (where m.status = 'active') as active,
    -- What the next archive run would take, computed at now() exactly as
    -- pgmem.archive() does.
    pg_catalog.count(*) filter (
        where m.status = 'active' and not m.pinned
          and pgmem._decayed(m.importance, p.decay_per_second, greatest(m.last_accessed_at, a.last_accessed_at),
                             pg_catalog.now())
              < p.archive_threshold
          and not coalesce(m.expires_at <= pg_catalog.now(), false)) as due_archive_weak,
    pg_catalog.count(*) filter (
        where m.status = 'active' and not m.pinned and m.expires_at <= pg_catalog.now()) as due_archive_expired,
    pg_catalog.count(*) filter (where m.status = 'archived') as archived,
    pg_catalog.count(*) filter (where m.status = 'deleted') as deleted,
    pg_catalog.count(*) filter (
        where m.status in ('archived', 'deleted') and m.status_changed_at < pg_catalog.now() - p.purge_grace)
        as due_purge,
    pg_catalog.min(m.status_changed_at) filter (where m.status = 'archived') as oldest_archived_at,
    pg_catalog.min(m.status_changed_at + p.purge_grace) filter (where m.status in ('archived', 'deleted'))
        as next_purge_at
from pgmem.memories as m
join pgmem._decay_policy as p on p.tenant_id = m.tenant_id and p.kind = m.kind
-- archive folds the accesses not folded yet first: they count here too.
left join pgmem._accesses_pending as a
    on a.tenant_id = m.tenant_id and a.memory_id = m.memory_id and a.subject = m.subject
group by m.tenant_id;

comment on view pgmem.archive_backlog is
    'Per tenant: active memories, those the next archive run would take (weak: decayed importance below archive_threshold; expired), archived and deleted ones, those past the purge grace, the oldest archival and the next purge time. Computed at now(). RLS applies.';

create or replace view pgmem.capacity_usage
with (security_invoker = true)
as
select
    m.tenant_id,
    m.subject,
    pg_catalog.count(*) as held,
    pg_catalog.count(*) filter (where m.status = 'active') as active,
    pg_catalog.count(*) filter (where m.status = 'archived') as archived,
    pg_catalog.count(*) filter (where m.pinned) as pinned,
    s.capacity_per_subject as capacity,
    pg_catalog.round(pg_catalog.count(*)::numeric / s.capacity_per_subject, 3) as used,
    greatest(pg_catalog.count(*) - s.capacity_per_subject, 0) as over_by
from pgmem.memories as m
join pgmem.settings as s on s.tenant_id = m.tenant_id
where m.status in ('active', 'archived')
group by m.tenant_id, m.subject, s.capacity_per_subject;

comment on view pgmem.capacity_usage is
    'Per tenant and subject: memories held against settings.capacity_per_subject (active + archived, as pgmem.enforce_capacity counts them), share used and excess the next capacity run evicts. RLS applies.';

create or replace view pgmem.last_job_runs
with (security_invoker = true)
as
select distinct on (j.job, j.tenant_id)
    j.job,
    j.tenant_id,
    j.status,
    j.counts,
    j.message,
    j.started_at,
    j.duration_ms,
    (select pg_catalog.max(o.started_at) from pgmem.job_runs as o
     where o.job = j.job and o.tenant_id is not distinct from j.tenant_id and o.status = 'ok') as last_ok_at,
    (select pg_catalog.count(*) from pgmem.job_runs as o
     where o.job = j.job and o.tenant_id is not distinct from j.tenant_id) as runs
from pgmem.job_runs as j
order by j.job, j.tenant_id, j.started_at desc;

comment on view pgmem.last_job_runs is
    'Latest run of each maintenance job (per tenant scope; NULL = all tenants) with its status, counts, message and duration, the last successful start and the number of recorded runs. Cluster-wide: pgmem_admin and pgmem_readonly only.';

revoke all on pgmem.memory_stats, pgmem.archive_backlog, pgmem.capacity_usage, pgmem.last_job_runs from public;
grant select on pgmem.memory_stats, pgmem.archive_backlog, pgmem.capacity_usage to pgmem_app, pgmem_readonly;
grant select on pgmem.last_job_runs to pgmem_readonly;
