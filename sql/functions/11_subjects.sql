-- The subjects a write touches: the per-(tenant, subject) lock every write
-- about a subject takes (the row of pgmem.subjects, SELECT … FOR UPDATE),
-- so concurrent writers cannot create twins, and the flag that puts a
-- subject grown past settings.exact_scan_limit into the HNSW index. The
-- write path (12_remember.sql, 14_remember_many.sql) and the other writes
-- about a subject (conflict decisions, edits, consolidation, merges) take
-- the lock; the write path flags the subjects it grows.

create or replace function pgmem._lock_subjects(p_tenant text, p_subjects text[], p_now timestamptz)
returns void
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_wanted integer := (select pg_catalog.count(distinct u.subject) from pg_catalog.unnest(p_subjects) as u(subject));
    v_locked integer;
    v_rounds integer := 0;
begin
    -- Bound to one end user (pgmem.bind_subject), a write about another is
    -- refused by name here, before row-level security refuses its row.
    perform pgmem._require_subject(p_tenant, p_subjects);
    loop
        -- In subject order, so that two batches sharing subjects cannot deadlock.
        perform
        from pgmem.subjects as s
        where s.tenant_id = p_tenant and s.subject = any (p_subjects)
        order by s.subject
        for update;
        get diagnostics v_locked = row_count;
        exit when v_locked = v_wanted;
        -- Fewer rows: a subject new to the tenant, or one an erase_subject
        -- deleted while we waited for its lock. Created (rows another
        -- transaction is creating are waited for), then locked in the next
        -- round. Locking first spares the usual write, whose subject exists,
        -- an INSERT ... ON CONFLICT (~0.3 ms).
        v_rounds := v_rounds + 1;
        if v_rounds >= 10 then
            raise exception 'could not lock the subjects rows of %', p_subjects
                using errcode = 'lock_not_available', hint = 'Subjects are being erased concurrently; retry.';
        end if;
        insert into pgmem.subjects (tenant_id, subject, created_at)
        select p_tenant, s.subject, p_now
        from (select distinct u.subject from pg_catalog.unnest(p_subjects) as u(subject)) as s
        order by s.subject
        on conflict do nothing;
    end loop;
end
$$;

comment on function pgmem._lock_subjects(text, text[], timestamptz) is
    'Creates the subjects rows if needed and locks them until the transaction ends: every write about a subject serializes here (internal).';

-- HNSW covers large subjects only (alembic 0006): recall scans a subject
-- of at most settings.exact_scan_limit active memories exactly, so an index
-- entry for its rows would cost every write and serve no read. After a
-- write inserts active rows, the subjects it touched that are not in the
-- index yet are counted (up to the limit + 1, an index-only scan) unless
-- their last count bounds them below the limit; one that
-- crossed the limit is flagged (pgmem.subjects.ann) and all its rows enter
-- the index (pgmem.memories.ann; rows inserted later copy the flag). The
-- flag is never cleared: a subject that shrinks keeps its entries, and
-- recall's approximate branch tests the same predicate. pgmem.index_subjects
-- does the same for every subject (rows written by plain SQL, a lowered limit).
create or replace function pgmem._ann_subjects(p_tenant text, p_settings pgmem.settings, p_subjects text[])
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_subject record;
    v_rows bigint;
    v_newest bigint;
    v_crossed text[] := '{}';
begin
    -- One simple statement per step, each naming the tenant: Citus routes
    -- every one of them to the tenant's shard (docs/scaling.md).
    -- A subject gains active rows by new memory ids: one counted with n rows
    -- when the tenant's newest id was c holds at most n + (newest - c) now,
    -- and is not counted again while that stays within the limit. (A restore
    -- makes an old row active again: it clears the count.)
    if p_subjects = '{}' then
        return 0;  -- a batch none of whose subjects can have crossed: nothing to read
    end if;
    select m.memory_id into v_newest
    from pgmem.memories as m
    where m.tenant_id = p_tenant
    order by m.memory_id desc
    limit 1;
    for v_subject in
        select s.subject, s.rows_counted, s.rows_counted_at from pgmem.subjects as s
        where s.tenant_id = p_tenant and (p_subjects is null or s.subject = any (p_subjects)) and not s.ann
    loop
        continue when v_subject.rows_counted_at <= v_newest
                      and v_subject.rows_counted + (v_newest - v_subject.rows_counted_at)
                          <= p_settings.exact_scan_limit;
        select pg_catalog.count(*) into v_rows
        from (select from pgmem.memories as m
              where m.tenant_id = p_tenant and m.subject = v_subject.subject and m.status = 'active'
              limit p_settings.exact_scan_limit + 1) as c;
        if v_rows > p_settings.exact_scan_limit then
            v_crossed := v_crossed || v_subject.subject;
        else
            update pgmem.subjects as s
            set rows_counted = v_rows, rows_counted_at = v_newest
            where s.tenant_id = p_tenant and s.subject = v_subject.subject;
        end if;
    end loop;
    if v_crossed <> '{}' then
        update pgmem.subjects as s set ann = true
        where s.tenant_id = p_tenant and s.subject = any (v_crossed);
        update pgmem.memories as m set ann = true
        where m.tenant_id = p_tenant and m.subject = any (v_crossed) and not m.ann;
    end if;
    return pg_catalog.cardinality(v_crossed);
end
$$;

comment on function pgmem._ann_subjects(text, pgmem.settings, text[]) is
    'Flags the subjects of p_tenant (p_subjects, NULL = all) that hold more than settings.exact_scan_limit active memories, and their rows, so that the partial HNSW index covers them; returns how many it flagged (internal; called after writes).';

create or replace function pgmem.index_subjects(p_tenant text default null)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._maintenance_scope(p_tenant);
    v_settings pgmem.settings;
    v_flagged bigint := 0;
begin
    for v_settings in
        select p.* from pgmem.settings as p
        where p.tenant_id <> '_default' and (v_tenant is null or p.tenant_id = v_tenant)
        order by p.tenant_id
    loop
        v_flagged := v_flagged + pgmem._ann_subjects(v_settings.tenant_id, v_settings, null);
        -- Rows written by plain SQL into a subject already in the index.
        update pgmem.memories as m
        set ann = true
        where m.tenant_id = v_settings.tenant_id and not m.ann
          and m.subject in (select s.subject from pgmem.subjects as s
                            where s.tenant_id = v_settings.tenant_id and s.ann);
    end loop;
    return v_flagged;
end
$$;

comment on function pgmem.index_subjects(text) is
    'Puts every subject with more than settings.exact_scan_limit active memories, and all its rows, into the partial HNSW index that recall uses for large subjects; returns how many subjects it added. pgmem.remember and remember_many do this for the subjects they write; call it after inserting rows with plain SQL or lowering exact_scan_limit. p_tenant (BYPASSRLS roles) limits it to one tenant; a tenant role covers its own.';
