-- Lifecycle: decay, archive, capacity, purge and restore.
--
-- Each maintenance function is set-based (one statement; capacity: rank,
-- then lock and evict) over every tenant the caller can see, each tenant
-- with its own settings (a join on pgmem.settings): a BYPASSRLS role
-- (superuser, pgmem_admin, the job runner in 40_jobs.sql) covers all
-- tenants, a tenant-bound role only its own (RLS). Every time-dependent
-- function takes p_now so tests and operators can move the clock. On Citus
-- the job runner calls them one tenant at a time, and every statement is
-- written so that Citus can route it to that tenant's shard
-- (docs/scaling.md).
--
-- Rows are claimed with FOR NO KEY UPDATE SKIP LOCKED: maintenance never
-- waits on a row a writer (or a tenant session) holds, two runs cannot
-- deadlock, and a skipped row is simply handled by the next run. NO KEY
-- UPDATE (what an UPDATE of non-key columns takes) leaves foreign-key
-- checks of concurrent memory_links inserts unblocked.

-- The decay rate of a memory of kind p_kind under one tenant's settings, for
-- the lifecycle statements, which join pgmem.settings itself rather than
-- pgmem._decay_policy: Citus cannot run a statement that locks rows (FOR NO
-- KEY UPDATE) of a distributed table and reads a function or VALUES list in
-- FROM (the kinds behind the view), but it can when the half-life is picked
-- from the settings row by a CASE. One case per kind of pgmem.kinds(); a kind
-- missing here has no rate (NULL), so it neither decays nor archives, and
-- test_lifecycle checks every kind against pgmem._half_lives. Inlined like
-- pgmem._decayed, hence no SET clause.
create or replace function pgmem._decay_rate(
    p_kind text,
    p_preference interval,
    p_semantic interval,
    p_episodic interval,
    p_procedural interval
)
returns double precision
language sql
immutable parallel safe
security invoker
as $$
    select pg_catalog.ln(2::double precision) operator(pg_catalog./) pg_catalog.date_part('epoch',
               case p_kind when 'preference' then p_preference when 'semantic' then p_semantic
                           when 'episodic' then p_episodic when 'procedural' then p_procedural end)
$$;

comment on function pgmem._decay_rate(text, interval, interval, interval, interval) is
    'ln 2 / half-life in seconds for a memory kind, given the tenant''s half_life_<kind> settings in pgmem.kinds() order (internal; inlined into the lifecycle statements, Citus-safe).';

-- Half-life and decay rate per tenant and memory kind (pgmem.kinds() names
-- each kind's settings column), with the tenant's thresholds.
create or replace view pgmem._decay_policy
with (security_invoker = true)
as
select
    s.tenant_id,
    k.kind,
    k.half_life,
    -- λ = ln 2 / half-life, per second, as the lifecycle statements compute it.
    pgmem._decay_rate(k.kind, s.half_life_preference, s.half_life_semantic, s.half_life_episodic,
                      s.half_life_procedural) as decay_per_second,
    s.archive_threshold,
    s.capacity_per_subject,
    s.purge_grace
from pgmem.settings as s
cross join lateral pgmem._half_lives(s) as k;

comment on view pgmem._decay_policy is
    'Per tenant and memory kind: half-life, decay rate per second (ln 2 / half-life) and the tenant''s archive threshold, capacity and purge grace (internal).';

-- No SET clause on purpose: a function with SET is never inlined, and this
-- one runs once per row in every decay/archive/capacity statement. Inlined,
-- it costs nothing; as a call it would cost a function invocation per row.
-- The body names the schema of every function and operator instead (least
-- and greatest are syntax, not functions), so the caller's search_path cannot
-- change what it means.
create or replace function pgmem._decayed(
    p_importance real,
    p_decay_per_second double precision,
    p_last_access timestamptz,
    p_now timestamptz
)
returns real
language sql
immutable parallel safe
security invoker
as $$
    -- importance · exp(−λ·t), t = seconds since last access (never negative).
    -- One expression (no FROM) so the planner can inline it. Neither exp()
    -- nor the cast to real may underflow (PostgreSQL raises an error), so
    -- the exponent stops at 27 (2e-12 of the importance, far below any
    -- threshold) and importances under 1e-6 count as 0.
    select case when p_importance operator(pg_catalog.<) 1e-6::real then 0::real
                else (p_importance::double precision operator(pg_catalog.*) pg_catalog.exp(
                          operator(pg_catalog.-) least(
                              p_decay_per_second operator(pg_catalog.*) greatest(
                                  pg_catalog.date_part('epoch', p_now operator(pg_catalog.-) p_last_access),
                                  0::double precision),
                              27::double precision)))::real
           end
$$;

comment on function pgmem._decayed(real, double precision, timestamptz, timestamptz) is
    'importance · exp(−λ · seconds since last access), λ = ln 2 / half-life (internal; inlined into the lifecycle statements).';

create or replace function pgmem._maintenance_scope(p_tenant text)
returns text
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text;
begin
    if pgmem._bypasses_rls() then
        return p_tenant;  -- NULL: every tenant
    end if;
    -- A tenant-bound role maintains its own rows only: RLS already hides
    -- the rest, but asking for another tenant is an error, not a silent 0.
    v_tenant := pgmem._require_tenant();
    if p_tenant is not null and p_tenant <> v_tenant then
        raise exception 'role % acts for tenant %, not for p_tenant = %', current_user, v_tenant, p_tenant
            using errcode = '42501',
                  hint = 'Omit p_tenant: a tenant role maintains its own memories only. '
                         'Cross-tenant maintenance runs as pgmem_admin (pgmem.run_job).';
    end if;
    return v_tenant;
end
$$;

comment on function pgmem._maintenance_scope(text) is
    'Tenant a maintenance call works on: p_tenant (NULL = all) for BYPASSRLS roles; the bound tenant for everyone else, 42501 when p_tenant names another (internal).';

-- Stored effective importance moves only when it changes by at least this
-- much: an hourly decay rewrites a value every few hours (episodic) to days
-- (semantic) instead of every hour. Nothing ranks or archives by the stored
-- value (recall scores importance and recency itself; archive and capacity
-- compute the exact value), so the lag only shows in what DBAs read.
create or replace function pgmem._decay_step()
returns real
language sql
immutable parallel safe
security invoker
as $$
    select 0.01::real
$$;

comment on function pgmem._decay_step() is
    'Smallest change of effective importance that decay writes (0.01; see 30_lifecycle.sql for why). Inlined, hence no SET clause (internal).';

create or replace function pgmem._set_effective_importance(
    p_tenant text,
    p_memory_id bigint,
    p_value real,
    p_now timestamptz
)
returns void
-- PL/pgSQL: Citus plans no SQL function that passes parameters to a
-- distributed table (docs/scaling.md).
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    insert into pgmem.memory_decay as d (tenant_id, memory_id, effective_importance, decayed_at)
    values (p_tenant, p_memory_id, p_value, p_now)
    on conflict (tenant_id, memory_id) do update
    set effective_importance = excluded.effective_importance, decayed_at = excluded.decayed_at;
end
$$;

comment on function pgmem._set_effective_importance(text, bigint, real, timestamptz) is
    'Stores one memory''s effective importance in pgmem.memory_decay, as of p_now (restore and update set it to the importance; internal).';

create or replace function pgmem.decay(
    p_now timestamptz default pg_catalog.now(),
    p_tenant text default null
)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
-- The pass hashes the stored values (~30 bytes a memory): at the default
-- 4 MB a 1M-memory pass spilled to disk in batches (2.35 s against 1.9 s
-- measured). Reset when the function returns.
set work_mem = '64MB'
as $$
declare
    v_tenant text := pgmem._maintenance_scope(p_tenant);
    v_updated bigint;
begin
    -- Decay reads the last access: the accesses recall recorded since the
    -- last fold are written first.
    perform pgmem._fold_accesses_rows(v_tenant);
    -- The stored value lives in pgmem.memory_decay, a ~60-byte row per
    -- memory: rescoring never writes a new version of the memory itself
    -- (~2 KB, in every btree of pgmem.memories when the page has no room
    -- for a HOT update; see alembic 0015). Only rows whose value moves by
    -- _decay_step() are written: most rows are left alone on most runs. No
    -- row means "not decayed yet", i.e. the importance itself, so fresh
    -- memories are not written until they have decayed by a step. Pinned
    -- and kept memories do not decay: their effective importance is their
    -- importance (reset here if they were pinned or kept after decaying).
    -- The memories are not locked: a value computed from a row an edit is
    -- changing meanwhile is off by that edit until the next run, which
    -- corrects it.
    insert into pgmem.memory_decay as d (tenant_id, memory_id, effective_importance, decayed_at)
    select m.tenant_id, m.memory_id, v.value, p_now
    from pgmem.memories as m
    join pgmem.settings as p on p.tenant_id = m.tenant_id
    left join pgmem.memory_decay as o on o.tenant_id = m.tenant_id and o.memory_id = m.memory_id
    cross join lateral (
        select case when m.pinned or m.kept then m.importance
                    else pgmem._decayed(m.importance, pgmem._decay_rate(m.kind, p.half_life_preference, p.half_life_semantic,
                                             p.half_life_episodic, p.half_life_procedural),
                           m.last_accessed_at, p_now)
               end as value
    ) as v
    where m.status = 'active'
      and (v_tenant is null or m.tenant_id = v_tenant)
      and (pg_catalog.abs(coalesce(o.effective_importance, m.importance) - v.value) >= pgmem._decay_step()
           or ((m.pinned or m.kept) and o.effective_importance <> m.importance))
    on conflict (tenant_id, memory_id) do update
    set effective_importance = excluded.effective_importance, decayed_at = excluded.decayed_at;
    get diagnostics v_updated = row_count;
    return v_updated;
end
$$;

comment on function pgmem.decay(timestamptz, text) is
    'Decays effective importance of active memories into pgmem.memory_decay: importance · exp(−λ·time since last access), λ = ln 2 / half_life_<kind> from the tenant''s settings; pinned and kept memories keep their importance. Writes only values that change by ≥ 0.01 (no row counts as the undecayed importance), never the memories themselves; returns how many. p_tenant (BYPASSRLS roles) limits it to one tenant.';

create or replace function pgmem.archive(
    p_now timestamptz default pg_catalog.now(),
    p_tenant text default null,
    out weak bigint,
    out expired bigint
)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._maintenance_scope(p_tenant);
begin
    perform pgmem._fold_accesses_rows(v_tenant);
    -- The score is computed here at p_now (from the last access, the
    -- accesses just folded included), so archival is exact whether or
    -- not decay ran first. Pinned and kept memories are never archived,
    -- expired or not.
    with due as (
        select m.tenant_id, m.memory_id, m.subject, v.score, p.archive_threshold,
               m.expires_at is not null and m.expires_at <= p_now as is_expired
        from pgmem.memories as m
        join pgmem.settings as p on p.tenant_id = m.tenant_id
        cross join lateral (
            select pgmem._decayed(m.importance, pgmem._decay_rate(m.kind, p.half_life_preference, p.half_life_semantic,
                                                 p.half_life_episodic, p.half_life_procedural),
                               m.last_accessed_at, p_now) as score
        ) as v
        where m.status = 'active'
          -- A store item is kept, but an app that gave it a time to live
          -- asked for it to go.
          and not m.pinned and (not m.kept or (m.source = 'store' and m.expires_at <= p_now))
          and (v_tenant is null or m.tenant_id = v_tenant)
          and (v.score < p.archive_threshold or m.expires_at <= p_now)
        for no key update of m skip locked
    ),
    archived as (
        update pgmem.memories as m
        set status = 'archived', status_changed_at = p_now
        from due as d
        where m.tenant_id = d.tenant_id and m.memory_id = d.memory_id
        returning d.*
    ),
    -- The score it was archived with, as its effective importance.
    scored as (
        insert into pgmem.memory_decay as x (tenant_id, memory_id, effective_importance, decayed_at)
        select a.tenant_id, a.memory_id, a.score, p_now
        from archived as a
        on conflict (tenant_id, memory_id) do update
        set effective_importance = excluded.effective_importance, decayed_at = excluded.decayed_at
    ),
    logged as (
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
        select a.tenant_id, a.memory_id, a.subject, 'archive',
               pg_catalog.jsonb_build_object(
                   'reason', case when a.is_expired then 'expired' else 'below_threshold' end,
                   'score', a.score, 'threshold', a.archive_threshold),
               p_now
        from archived as a
    )
    select pg_catalog.count(*) filter (where not a.is_expired), pg_catalog.count(*) filter (where a.is_expired)
    into weak, expired
    from archived as a;
end
$$;

comment on function pgmem.archive(timestamptz, text) is
    'Archives active memories, neither pinned nor kept (but store items past their time to live), whose decayed importance is below the tenant''s archive_threshold (weak) or whose expires_at has passed (expired): out of recall, still stored, restorable until purge. Logs an archive event per memory; returns both counts.';

create or replace function pgmem.enforce_capacity(
    p_now timestamptz default pg_catalog.now(),
    p_tenant text default null,
    out subjects bigint,
    out evicted_archived bigint,
    out evicted_active bigint
)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._maintenance_scope(p_tenant);
    v_tenants text[];
    v_ids bigint[];
begin
    -- Who was recalled decides who goes: the accesses not folded yet first.
    perform pgmem._fold_accesses_rows(v_tenant);
    -- A subject holds its active and archived memories (history rows —
    -- superseded, merged — and deleted ones do not count). Over the cap,
    -- the excess is evicted (status deleted, purged after the grace):
    -- archived first (oldest archival first), then active ones that were
    -- never recalled before recalled ones, lowest decayed importance (which
    -- folds age and importance together) first. Pinned memories count
    -- towards the cap but are never evicted; kept ones (application state)
    -- neither count nor go.
    with over_cap as (
        select m.tenant_id, m.subject, pg_catalog.count(*) - s.capacity_per_subject as excess
        from pgmem.memories as m
        join pgmem.settings as s on s.tenant_id = m.tenant_id
        where m.status in ('active', 'archived') and not m.kept
          and (v_tenant is null or m.tenant_id = v_tenant)
        group by m.tenant_id, m.subject, s.capacity_per_subject
        having pg_catalog.count(*) > s.capacity_per_subject
    ),
    ranked as (
        select m.tenant_id, m.memory_id, o.excess,
               pg_catalog.row_number() over (
                   partition by m.tenant_id, m.subject
                   order by m.status = 'archived' desc,
                            case when m.status = 'archived' then m.status_changed_at end,
                            m.access_count > 0,
                            pgmem._decayed(m.importance, pgmem._decay_rate(m.kind, p.half_life_preference, p.half_life_semantic,
                                                 p.half_life_episodic, p.half_life_procedural),
                               m.last_accessed_at, p_now),
                            m.memory_id) as evict_rank
        from over_cap as o
        join pgmem.memories as m on m.tenant_id = o.tenant_id and m.subject = o.subject
        join pgmem.settings as p on p.tenant_id = m.tenant_id
        where m.status in ('active', 'archived') and not m.pinned and not m.kept
          -- Implied by the join, but Citus routes a statement to one shard
          -- only when every scan of a distributed table names the tenant.
          and (v_tenant is null or m.tenant_id = v_tenant)
    )
    select coalesce(pg_catalog.array_agg(r.tenant_id), '{}'), coalesce(pg_catalog.array_agg(r.memory_id), '{}')
    into v_tenants, v_ids
    from ranked as r
    where r.evict_rank <= r.excess;
    -- Then the candidates are locked and evicted: two statements, because
    -- Citus cannot lock rows (FOR UPDATE) in a statement that also ranks them
    -- (window functions, aggregates). memory_id is an identity, unique across
    -- tenants (and across Citus nodes); tenant_id = any(...) lets the primary
    -- key find the rows. A row changed meanwhile is re-checked: only active
    -- or archived rows, neither pinned nor kept, are evicted.
    with due as (
        select m.tenant_id, m.memory_id, m.subject, m.status as old_status
        from pgmem.memories as m
        where m.tenant_id = any (v_tenants) and m.memory_id = any (v_ids)
          and (v_tenant is null or m.tenant_id = v_tenant)
          and m.status in ('active', 'archived') and not m.pinned and not m.kept
        for no key update of m skip locked
    ),
    evicted as (
        update pgmem.memories as m
        set status = 'deleted', status_changed_at = p_now
        from due as d
        where m.tenant_id = d.tenant_id and m.memory_id = d.memory_id
        returning d.*
    ),
    logged as (
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
        select e.tenant_id, e.memory_id, e.subject, 'evict',
               pg_catalog.jsonb_build_object('reason', 'capacity', 'from', e.old_status), p_now
        from evicted as e
    )
    select pg_catalog.count(distinct (e.tenant_id, e.subject)),
           pg_catalog.count(*) filter (where e.old_status = 'archived'),
           pg_catalog.count(*) filter (where e.old_status = 'active')
    into subjects, evicted_archived, evicted_active
    from evicted as e;
end
$$;

comment on function pgmem.enforce_capacity(timestamptz, text) is
    'Per-subject hard cap (settings.capacity_per_subject, default 2000 active + archived memories): evicts the excess — archived first, then never-recalled before recalled, lowest decayed importance first; never pinned, and kept memories neither count nor go. Evicted memories become deleted (purged after the grace) with an evict event. Returns subjects trimmed and evictions by former status.';

create or replace function pgmem.purge(
    p_now timestamptz default pg_catalog.now(),
    p_tenant text default null,
    out memories bigint,
    out inbox bigint
)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._maintenance_scope(p_tenant);
begin
    -- The deletes run with the owner's rights (71_owner_writes.sql): app
    -- roles hold no DELETE privilege, and scrubbing history needs UPDATE on
    -- memory_events, which is append-only for them.
    select r.memories, r.inbox into memories, inbox from pgmem._purge_rows(v_tenant, p_now) as r;
end
$$;

comment on function pgmem.purge(timestamptz, text) is
    'Hard-deletes archived and deleted memories whose status changed more than the tenant''s purge_grace (default 7 days) before p_now, scrubbing the content from their events and logging a content-free purge event each; deletes finished (done) inbox rows older than the grace and failed ones older than settings.failed_retention (30 days). Returns both counts.';

create or replace function pgmem.restore(p_memory_id bigint, p_now timestamptz default pg_catalog.now())
returns pgmem.memories
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem.current_tenant();
    v_memory pgmem.memories;
    v_duplicate bigint;
    v_expired boolean;
begin
    -- RLS hides other tenants' memories: for a tenant role they are unknown.
    -- With a tenant bound the lookup uses the primary key.
    select m.* into v_memory
    from pgmem.memories as m
    where m.memory_id = p_memory_id and (v_tenant is null or m.tenant_id = v_tenant)
    for no key update;
    if not found then
        raise exception 'unknown memory: p_memory_id = %', coalesce(p_memory_id::text, 'NULL')
            using errcode = 'PM030',
                  hint = 'It may have been purged or belong to another tenant; archived memories are listed by '
                         'select memory_id, subject, content from pgmem.memories where status = ''archived''.';
    end if;
    if v_memory.status = 'active' then
        return v_memory;  -- nothing to do: restoring twice is not an error
    end if;
    if v_memory.status <> 'archived' then
        raise exception 'memory % is %, only archived memories can be restored (p_memory_id = %)',
                        p_memory_id, v_memory.status, p_memory_id
            using errcode = 'PM031',
                  hint = case v_memory.status
                      when 'deleted' then 'It was forgotten or evicted; remember it again if it is still true.'
                      else 'Superseded and merged memories are history; the memory that replaced them is active.'
                  end;
    end if;
    select m.memory_id into v_duplicate
    from pgmem.memories as m
    where m.tenant_id = v_memory.tenant_id and m.subject = v_memory.subject
      and m.content_hash = v_memory.content_hash and m.status = 'active'
      and pgmem._episode_source(m.source) = pgmem._episode_source(v_memory.source);
    if found then
        raise exception 'memory % has the same content as active memory % (p_memory_id = %)',
                        p_memory_id, v_duplicate, p_memory_id
            using errcode = 'PM032',
                  hint = 'Use the active memory; the archived copy is purged after the grace period.';
    end if;

    -- Back in recall as if just used: otherwise the next archive run would
    -- take it away again. A passed expiry is cleared for the same reason.
    v_expired := v_memory.expires_at is not null and v_memory.expires_at <= p_now;
    update pgmem.memories as m
    set status = 'active',
        status_changed_at = p_now,
        last_accessed_at = greatest(m.last_accessed_at, p_now),
        expires_at = case when v_expired then null else m.expires_at end
    where m.tenant_id = v_memory.tenant_id and m.memory_id = v_memory.memory_id
    returning m.* into v_memory;
    perform pgmem._set_effective_importance(v_memory.tenant_id, v_memory.memory_id, v_memory.importance, p_now);
    -- An old id active again: the subject's last count no longer bounds it.
    update pgmem.subjects as s
    set rows_counted = null
    where s.tenant_id = v_memory.tenant_id and s.subject = v_memory.subject;
    -- An episode archived before pgmem.link_episodes reached it has no
    -- association links, and no later run takes it (its subject's mark has
    -- moved on): it gets them now, under its subject's lock as any linking.
    if pgmem._episode_source(v_memory.source)
       and pgmem._linkable(v_memory.session_id, v_memory.triple_predicate)
       and not exists (select from pgmem.memory_links as l
                       where l.tenant_id = v_memory.tenant_id and l.link_type in ('same_session', 'same_entity')
                         and (l.from_id = v_memory.memory_id or l.to_id = v_memory.memory_id)) then
        perform pgmem._lock_subjects(v_memory.tenant_id, array[v_memory.subject], p_now);
        perform pgmem._link_at_write(v_memory.tenant_id, array[v_memory.memory_id], p_now);
    end if;
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
    values (v_memory.tenant_id, v_memory.memory_id, v_memory.subject, 'restore',
            pg_catalog.jsonb_build_object('from', 'archived', 'expiry_cleared', v_expired), p_now);
    return v_memory;
end
$$;

comment on function pgmem.restore(bigint, timestamptz) is
    'Brings an archived memory back into recall (active, last access = p_now, a passed expiry cleared; an episode archived before it was linked gets its association links) and logs a restore event; returns the row. Unknown id: PM030; not archived: PM031; an active duplicate exists: PM032.';

-- Function grants: 99_grants.sql. Tenant roles may maintain and restore
-- their own memories (RLS confines them); pgmem_admin runs them across tenants.
revoke all on pgmem._decay_policy from public;
grant select on pgmem._decay_policy to pgmem_app, pgmem_readonly;
