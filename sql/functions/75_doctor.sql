-- pgmem.doctor(): the database half of `pgmem doctor`. One row per check,
-- ok / warn / fail, with what was found and the command that fixes it, so a
-- DBA in psql reads the same diagnosis as the CLI user. The Python half adds
-- what only the client can see: whether the server answers at all, the schema
-- revision against the installed package, the embedding model, the LLM.
--
-- Runs as the caller: as pgmem_admin or a superuser it sees every tenant's
-- queue; as a tenant's role, only that tenant's (row-level security).

create or replace function pgmem.doctor(
    p_embedding_model text default null,
    p_embedding_dims integer default null,
    p_backlog_age interval default '5 minutes'
)
returns table (area text, status text, detail text, fix text)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_version text;
    v_cron_db text := pg_catalog.current_setting('cron.database_name', true);
    v_cron_here boolean;
    v_names text;
    v_count bigint;
    v_oldest timestamptz;
    v_error text;
begin
    -- Extensions pgmem needs (vector, btree_gin) and the one it schedules with.
    for area, v_version in
        select x.name, e.extversion
        from (values ('vector'), ('btree_gin')) as x (name)
        left join pg_catalog.pg_extension as e on e.extname = x.name
    loop
        if v_version is null then
            return query select area, 'fail',
                pg_catalog.format('extension %s is not installed in database %s', area,
                                  pg_catalog.current_database()),
                '`pgmem migrate` creates it (the server needs the package: scripts/install-postgres.sh)';
        else
            return query select area, 'ok', pg_catalog.format('%s %s', area, v_version), null::text;
        end if;
    end loop;

    select e.extversion into v_version from pg_catalog.pg_extension as e where e.extname = 'pg_cron';
    v_cron_here := v_version is not null;
    if v_cron_here then
        return query select 'pg_cron', 'ok', pg_catalog.format('pg_cron %s', v_version), null::text;
    elsif v_cron_db is null then
        return query select 'pg_cron', 'warn', 'pg_cron is not loaded on this server: nothing decays or archives on its own'::text,
            'load pg_cron (`pgmem db start` does), or run `pgmem maintain` from cron or a systemd timer'::text;
    else
        return query select 'pg_cron', 'warn',
            pg_catalog.format('pg_cron works in database %s (cron.database_name), not in %s',
                              v_cron_db, pg_catalog.current_database()),
            'schedule from that database with cron.schedule_in_database (see pgmem.cron_plan()), or run `pgmem maintain` from your own scheduler'::text;
    end if;

    -- Roles (cluster-wide, created by the first migration).
    select pg_catalog.string_agg(r.name, ', ' order by r.name) into v_names
    from unnest(array['pgmem_admin', 'pgmem_app', 'pgmem_service', 'pgmem_readonly']) as r (name)
    where not exists (select from pg_catalog.pg_roles as o where o.rolname = r.name);
    if v_names is null then
        return query select 'roles', 'ok', 'pgmem_admin, pgmem_app, pgmem_service, pgmem_readonly'::text, null::text;
    else
        return query select 'roles', 'fail', pg_catalog.format('missing role(s): %s', v_names),
            '`pgmem migrate` creates them (as a superuser)'::text;
    end if;

    -- Row-level security, enabled and forced, on every tenant table: those whose
    -- primary key leads with tenant_id (job_runs is cluster-wide; internal "_"
    -- tables are the administrator's).
    select pg_catalog.count(*),
           pg_catalog.string_agg(c.relname::text, ', ' order by c.relname)
               filter (where not (c.relrowsecurity and c.relforcerowsecurity))
    into v_count, v_names
    from pg_catalog.pg_class as c
    join pg_catalog.pg_index as i on i.indrelid = c.oid and i.indisprimary
    join pg_catalog.pg_attribute as a on a.attrelid = c.oid and a.attnum = i.indkey[0]
    where c.relnamespace = 'pgmem'::regnamespace and c.relkind in ('r', 'p')
      and a.attname = 'tenant_id' and c.relname !~ '^_';
    if v_names is null then
        return query select 'rls', 'ok',
            pg_catalog.format('row-level security forced on all %s tenant tables', v_count), null::text;
    else
        return query select 'rls', 'fail',
            pg_catalog.format('row-level security not forced on: %s', v_names),
            'run `pgmem migrate`, or ALTER TABLE pgmem.<table> ENABLE and FORCE ROW LEVEL SECURITY'::text;
    end if;

    -- The scheduled maintenance jobs and how their last runs went.
    if v_cron_here then
        if not pg_catalog.has_schema_privilege('cron', 'USAGE') then
            return query select 'cron jobs', 'warn',
                pg_catalog.format('role %s may not read the cron schema', current_user),
                'run `pgmem doctor` as pgmem_admin or a superuser'::text;
        else
            select pg_catalog.string_agg(p.jobname, ', ' order by p.jobname) into v_names
            from pgmem.cron_plan() as p
            where not exists (select from pgmem.scheduled_jobs() as s
                              where s.jobname = p.jobname and s.active);
            select pg_catalog.string_agg(s.jobname, ', ' order by s.jobname) into v_error
            from pgmem.scheduled_jobs() as s where s.last_status = 'failed';
            if v_names is not null then
                return query select 'cron jobs', 'warn',
                    pg_catalog.format('not scheduled: %s (their maintenance never runs)', v_names),
                    '`pgmem schedule` installs them'::text;
            elsif v_error is not null then
                return query select 'cron jobs', 'warn', pg_catalog.format('last run failed: %s', v_error),
                    '`pgmem jobs` lists them; cron.job_run_details says why'::text;
            else
                return query select 'cron jobs', 'ok',
                    (select pg_catalog.format('%s scheduled: %s', pg_catalog.count(*),
                                              pg_catalog.string_agg(
                                                  pg_catalog.format('%s %s', s.jobname,
                                                                    coalesce(s.last_status, 'not run yet')),
                                                  ', ' order by s.jobname))
                     from pgmem.scheduled_jobs() as s),
                    null::text;
            end if;
        end if;
    end if;

    -- Maintenance runs recorded by pgmem.run_job (from cron or `pgmem maintain`).
    select pg_catalog.string_agg(pg_catalog.format('%s (%s)', l.job, l.message), '; ' order by l.job)
    into v_names
    from pgmem.last_job_runs as l where l.status = 'failed';
    if v_names is not null then
        return query select 'maintenance', 'warn', pg_catalog.format('last run failed: %s', v_names),
            '`pgmem jobs` shows the runs; `pgmem maintain -j <job>` runs one again'::text;
    else
        return query select 'maintenance', 'ok',
            coalesce((select pg_catalog.format('last run %s', pg_catalog.max(l.started_at)::timestamptz(0))
                      from pgmem.last_job_runs as l having pg_catalog.count(*) > 0),
                     'no runs recorded yet'),
            null::text;
    end if;

    -- Tenants, and whether their stored vectors fit the embedder the client uses.
    select pg_catalog.count(*) into v_count from pgmem.tenants;
    if v_count = 0 then
        return query select 'tenants', 'warn', 'no tenants yet'::text, '`pgmem tenant create NAME`'::text;
    else
        return query select 'tenants', 'ok', pg_catalog.format('%s tenant(s)', v_count), null::text;
    end if;
    if p_embedding_dims is not null then
        select pg_catalog.string_agg(pg_catalog.format('%s (%s, %s dims)', s.tenant_id, s.embedding_model,
                                                       s.embedding_dims), ', ' order by s.tenant_id)
        into v_names
        from pgmem.settings as s
        where s.embedding_dims <> p_embedding_dims;
        if v_names is not null then
            return query select 'embedding dims', 'fail',
                pg_catalog.format('the embedder gives %s-dim vectors (%s); these store others: %s',
                                  p_embedding_dims, coalesce(p_embedding_model, 'unknown model'), v_names),
                'set PGMEM_EMBEDDER, PGMEM_EMBED_MODEL and PGMEM_EMBED_DIMS to the model the tenants were built with'::text;
        else
            select pg_catalog.string_agg(distinct s.embedding_model, ', ') into v_names
            from pgmem.settings as s
            -- NULL: no model recorded yet (the first client to declare one sets it).
            where s.embedding_model is not null and s.embedding_model is distinct from p_embedding_model;
            return query select 'embedding dims',
                case when v_names is null then 'ok' else 'warn' end,
                case when v_names is null
                     then pg_catalog.format('%s dims, as every tenant stores', p_embedding_dims)
                     else pg_catalog.format('%s dims match, but the settings name model(s) %s, not %s',
                                            p_embedding_dims, v_names, p_embedding_model) end,
                case when v_names is null then null
                     else 'same size, other model: their vectors are refused (PM025); set PGMEM_EMBEDDER/PGMEM_EMBED_MODEL to the stored one, or move a tenant with `pgmem reembed`' end;
        end if;
    end if;

    -- The worker's queue: waiting turns and jobs that gave up.
    select pg_catalog.count(*), pg_catalog.min(i.available_at)
    into v_count, v_oldest
    from pgmem.inbox as i where i.status = 'pending';
    if v_count > 0 and v_oldest < pg_catalog.now() - p_backlog_age then
        return query select 'inbox', 'warn',
            pg_catalog.format('%s job(s) waiting, the oldest due since %s', v_count, v_oldest::timestamptz(0)),
            'start the worker: `pgmem worker` (or `pgmem worker --once` to drain it)'::text;
    else
        return query select 'inbox', 'ok', pg_catalog.format('%s job(s) waiting', v_count), null::text;
    end if;
    select pg_catalog.count(*),
           (pg_catalog.array_agg(i.last_error order by i.finished_at desc nulls last))[1]
    into v_count, v_error
    from pgmem.inbox as i where i.status = 'failed';
    if v_count > 0 then
        return query select 'failed jobs', 'warn',
            pg_catalog.format('%s inbox job(s) failed; latest error: %s', v_count,
                              pg_catalog.left(coalesce(v_error, 'none recorded'), 200)),
            'fix the cause, then select pgmem.retry_failed_jobs() requeues them'::text;
    else
        return query select 'failed jobs', 'ok', 'no failed inbox jobs'::text, null::text;
    end if;
end
$$;

comment on function pgmem.doctor(text, integer, interval) is
    'Checks the installation from inside the database: extensions and versions, pg_cron, roles, forced row-level security on every tenant table, scheduled jobs and their last runs, failed maintenance runs, tenants, embedding size against the client''s model (p_embedding_model, p_embedding_dims), inbox backlog older than p_backlog_age and failed inbox jobs. One row per check: area, status (ok, warn, fail), detail and the fix. `pgmem doctor` adds server, schema and model checks.';
