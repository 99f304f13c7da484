-- Scheduled maintenance: the job runner, pg_cron scheduling, job listing.
--
-- pgmem.run_job(job) is what pg_cron (or `pgmem maintain`, or any other
-- scheduler) calls. It
--   * returns at once on a replica (pg_is_in_recovery()), so the same cron
--     setup is safe on every node; nothing is recorded there (read-only);
--   * locks the job's row in pgmem._job_locks (FOR UPDATE SKIP LOCKED) and,
--     when another session holds it, records a 'skipped' run naming the
--     holder instead of waiting or running twice. Only the owner can touch
--     that table, so no tenant can switch maintenance off (an advisory key,
--     as before, could be held by any role). A job skipped three times in a
--     row or more says so in its message and raises a WARNING;
--   * runs the set-based function of 30_lifecycle.sql over every tenant and
--     records counts and duration in pgmem.job_runs ('ok', or 'failed' with
--     the error: a failing job is recorded, not lost with a rollback). When
--     the set-based statement fails, the job runs again tenant by tenant,
--     each in a subtransaction: one tenant's bad rows fail only its part (a
--     failed run with its tenant_id) and never the others' maintenance.
-- Who may call what:
--   * pgmem.job_runs is cluster-wide history: pgmem_admin writes it (through
--     run_job), pgmem_readonly reads it, tenant roles have no rights on it;
--   * run_job, maintain, schedule and unschedule: pgmem_admin members only;
--   * tenant roles call pgmem.decay(), archive(), enforce_capacity(),
--     purge() and restore() directly; RLS confines those to their rows.

create or replace function pgmem._job_names()
returns text[]
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- In the order `pgmem maintain` runs them. Archive goes first: it
    -- computes exact scores itself, so decay then does not rewrite rows that
    -- are about to leave recall; capacity then finds the newly archived rows
    -- to evict first; purge removes what the others set aside. sessions
    -- (short-term and working memory: idle sessions, old turns, expired
    -- tasks) touches none of their tables. consolidate only queues work for
    -- the worker (32_consolidate.sql), over what the others left active.
    -- watchdog ends tenant sessions idle in a transaction past their limit.
    -- links makes the association links of the episodes written since.
    -- accesses folds the accesses recall recorded into the memories (archive,
    -- decay and capacity fold them first themselves).
    select array['archive', 'decay', 'capacity', 'purge', 'sessions', 'consolidate', 'watchdog', 'links', 'accesses']
$$;

comment on function pgmem._job_names() is
    'The maintenance jobs pgmem.run_job knows, in the order pgmem.maintain runs them: archive, decay, capacity, purge, sessions, consolidate, watchdog, links, accesses (internal).';

-- Replaced by a row lock in pgmem._job_locks: anyone can compute
-- and hold an advisory key, and holding it switched maintenance off.
drop function if exists pgmem._job_lock_key(text);

create or replace function pgmem._job_lock_holder(p_job text)
returns text
language sql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- A session that locked a job row holds ROW SHARE on pgmem._job_locks
    -- for its transaction; only the owner's sessions can (no one else has
    -- any privilege on the table). p_job names the job for the message.
    -- xact_start is hidden from non-superusers for other roles' sessions.
    select pg_catalog.format('pid %s (role %s%s)', l.pid, a.usename,
                             ', since ' || a.xact_start::text)
    from pg_catalog.pg_locks as l
    left join pg_catalog.pg_stat_activity as a on a.pid = l.pid
    where l.locktype = 'relation' and l.granted and l.mode = 'RowShareLock'
      and l.relation = 'pgmem._job_locks'::regclass
      and l.pid <> pg_catalog.pg_backend_pid()
      and p_job is not null
    limit 1
$$;

comment on function pgmem._job_lock_holder(text) is
    'Which session holds a maintenance job''s row in pgmem._job_locks, for the message of a skipped run (internal).';

-- A tenant's limits must hold whatever the tenant sets: its login role's
-- idle_in_transaction_session_timeout is only a default it may change
-- (ALTER ROLE itself, SET), and a transaction left open holds back VACUUM
-- of every tenant's dead rows. The limit here is settings'
-- max_idle_in_transaction, which only pgmem_admin writes. Ending a backend
-- needs pg_signal_backend and seeing its state pg_read_all_stats (granted to
-- pgmem_admin by the migration, when a superuser runs it); superuser
-- sessions are never signalled.
create or replace function pgmem.end_idle_transactions(p_tenant text default null)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_ended bigint;
begin
    select pg_catalog.count(*) filter (where pg_catalog.pg_terminate_backend(a.pid))
    into v_ended
    from pg_catalog.pg_stat_activity as a
    join pgmem._tenant_logins as l on l.role_name = a.usename
    join pgmem.settings as s on s.tenant_id = l.tenant_id
    where (p_tenant is null or l.tenant_id = p_tenant)
      and a.state in ('idle in transaction', 'idle in transaction (aborted)')
      and a.state_change < pg_catalog.clock_timestamp() - s.max_idle_in_transaction
      and a.pid <> pg_catalog.pg_backend_pid();
    if v_ended > 0 then
        raise log 'pgmem watchdog ended % tenant session(s) idle in a transaction past settings.max_idle_in_transaction', v_ended;
    end if;
    return v_ended;
end
$$;

comment on function pgmem.end_idle_transactions(text) is
    'Terminates the backends of tenant login roles (of p_tenant, or every tenant) idle in a transaction for longer than their tenant''s settings.max_idle_in_transaction, whatever timeout the session set itself; returns how many. The watchdog job runs it every minute. pgmem_admin only.';

create or replace function pgmem._job_counts(p_job text, p_now timestamptz, p_tenant text)
returns jsonb
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return case p_job
        when 'decay' then pg_catalog.jsonb_build_object('decayed', pgmem.decay(p_now, p_tenant))
        when 'archive' then (select pg_catalog.to_jsonb(r) from pgmem.archive(p_now, p_tenant) as r)
        when 'capacity' then (select pg_catalog.to_jsonb(r) from pgmem.enforce_capacity(p_now, p_tenant) as r)
        when 'purge' then (select pg_catalog.to_jsonb(r) from pgmem.purge(p_now, p_tenant) as r)
        when 'sessions' then (select pg_catalog.to_jsonb(r) from pgmem.expire_sessions(p_now, p_tenant) as r)
                             || pg_catalog.jsonb_build_object('expired_tasks', pgmem.expire_tasks(p_now, p_tenant))
        when 'consolidate' then pg_catalog.jsonb_build_object('subjects', pgmem.mark_consolidation(p_now, p_tenant))
        when 'watchdog' then pg_catalog.jsonb_build_object('ended', pgmem.end_idle_transactions(p_tenant))
        -- A subject it links stays locked until the run commits: a writer
        -- of one waits at most for a chunk of 100, not for every subject.
        when 'links' then (select pg_catalog.to_jsonb(r) from pgmem.link_episodes(p_now, p_tenant, null, 100) as r)
        when 'accesses' then pg_catalog.jsonb_build_object('folded', pgmem._fold_accesses_rows(p_tenant))
    end;
end
$$;

comment on function pgmem._job_counts(text, timestamptz, text) is
    'Runs the work of one maintenance job for p_tenant (NULL = every tenant) and returns its counts as jsonb; pgmem.run_job locks, loops and records (internal).';

-- The tenants a run goes through one by one (on Citus, or when a tenant's
-- rows fail the set-based statement): every tenant, but for links only
-- those with a marked subject and for accesses those with accesses to
-- fold. Both run every minute, and on Citus each tenant is a call routed
-- to its shard, made whether it has work or not.
create or replace function pgmem._job_tenants(p_job text)
returns setof text
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_job = 'links' then
        return query
        select distinct s.tenant_id from pgmem.subjects as s where s.links_pending_from is not null
        order by s.tenant_id;
    elsif p_job = 'accesses' then
        return query select distinct a.tenant_id from pgmem.memory_accesses as a order by a.tenant_id;
    else
        return query select t.tenant_id from pgmem.tenants as t order by t.tenant_id;
    end if;
end
$$;

comment on function pgmem._job_tenants(text) is
    'The tenants pgmem.run_job visits one by one for a job: every tenant, or for links those with a subject whose links wait, for accesses those with accesses to fold (internal).';

create or replace function pgmem.run_job(
    p_job text,
    p_now timestamptz default pg_catalog.now(),
    p_tenant text default null
)
returns pgmem.job_runs
language plpgsql
volatile
-- security definer: the run must bypass RLS to cover every tenant in one
-- statement, and BYPASSRLS is a role attribute that membership does not
-- pass on. As its owner (pgmem_admin) the job works the same whichever
-- login role pg_cron or an operator uses. Only pgmem_admin members may
-- execute it (see the grants below), and they can SET ROLE pgmem_admin
-- anyway, so it grants nothing new.
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_started timestamptz := pg_catalog.clock_timestamp();
    v_status text := 'ok';
    v_counts jsonb := '{}';
    v_message text;
    v_state text;
    v_skips bigint;
    v_tenant text;
    v_each boolean;
    v_failed pgmem.job_runs[] := '{}';
    v_tried integer;
    v_part_started timestamptz;
    v_run pgmem.job_runs;
begin
    if p_job is null or not p_job = any (pgmem._job_names()) then
        raise exception 'unknown pgmem job: p_job = %', coalesce(pg_catalog.quote_literal(p_job), 'NULL')
            using errcode = 'PM035',
                  hint = 'Jobs: ' || pg_catalog.array_to_string(pgmem._job_names(), ', ') || '.';
    end if;
    if p_tenant is not null and not exists (select from pgmem.tenants as t where t.tenant_id = p_tenant) then
        raise exception 'unknown pgmem tenant: p_tenant = %', p_tenant
            using errcode = 'PM002', hint = 'Omit p_tenant to maintain every tenant.';
    end if;
    if pg_catalog.pg_is_in_recovery() then
        -- A standby cannot write job_runs: report the skip without a row.
        v_run := row(null, p_job, p_tenant, 'skipped', '{}', 'read-only replica: maintenance runs on the primary',
                     v_started, pg_catalog.clock_timestamp(), null);
        return v_run;
    end if;

    perform from pgmem._job_locks as l where l.job = p_job for update skip locked;
    if not found then
        v_status := 'skipped';
        v_message := 'another session is running this job: '
                     || coalesce(pgmem._job_lock_holder(p_job), 'holder gone');
        -- Skips in a row since the last run that was not one: an operator
        -- must see maintenance that stopped, not a quiet list of skips.
        v_skips := 1 + (select pg_catalog.count(*) from pgmem.job_runs as j
                        where j.job = p_job and j.status = 'skipped'
                          and j.started_at > coalesce((select pg_catalog.max(o.started_at) from pgmem.job_runs as o
                                                       where o.job = p_job and o.status <> 'skipped'), '-infinity'));
        if v_skips >= 3 then
            v_message := v_message || pg_catalog.format(' (skipped %s times in a row)', v_skips);
            raise warning 'pgmem job % skipped % times in a row: %', p_job, v_skips, v_message;
        end if;
    else
        begin
            if p_tenant is null and not pgmem._distributed() then
                -- One set-based statement covers every tenant at once.
                begin
                    v_counts := pgmem._job_counts(p_job, p_now, null);
                    v_each := false;
                exception when others then
                    -- Some tenant's rows fail it; the statement's work is
                    -- rolled back to here and the job goes tenant by tenant,
                    -- so that only that tenant's part fails.
                    v_each := true;
                end;
            else
                -- Citus: one tenant at a time, the tenant a constant, so
                -- every statement is routed to the one shard holding it
                -- (Citus refuses multi-shard FOR UPDATE).
                v_each := p_tenant is null;
                if not v_each then
                    v_counts := pgmem._job_counts(p_job, p_now, p_tenant);
                end if;
            end if;
            if v_each then
                -- Each tenant in its own subtransaction: a tenant whose rows
                -- fail the job gets a failed run of its own (tenant_id set)
                -- and the others' work stands; the counts are summed. When
                -- every tenant fails, the failure is not a tenant's: the run
                -- fails, as a set-based one would.
                v_counts := '{}';
                v_tried := 0;
                for v_tenant in select t.tenant from pgmem._job_tenants(p_job) as t(tenant) loop
                    v_tried := v_tried + 1;
                    v_part_started := pg_catalog.clock_timestamp();
                    begin
                        select coalesce(pg_catalog.jsonb_object_agg(
                                   c.key, coalesce((v_counts ->> c.key)::bigint, 0) + (c.value #>> '{}')::bigint),
                                   '{}')
                        into v_counts
                        from pg_catalog.jsonb_each(pgmem._job_counts(p_job, p_now, v_tenant)) as c;
                    exception when others then
                        get stacked diagnostics v_state = returned_sqlstate;
                        v_failed := v_failed || row(null, p_job, v_tenant, 'failed',
                                                    pg_catalog.jsonb_build_object('sqlstate', v_state), sqlerrm,
                                                    v_part_started, pg_catalog.clock_timestamp(), null)::pgmem.job_runs;
                    end;
                end loop;
                if pg_catalog.cardinality(v_failed) = v_tried and v_tried > 0 then
                    v_status := 'failed';
                    v_counts := v_failed[1].counts;
                    v_message := v_failed[1].message;
                    raise warning 'pgmem job % failed: % (SQLSTATE %)', p_job, v_message, v_counts ->> 'sqlstate';
                elsif v_failed <> '{}' then
                    insert into pgmem.job_runs (job, tenant_id, status, counts, message, started_at, finished_at)
                    select f.job, f.tenant_id, f.status, f.counts, f.message, f.started_at, f.finished_at
                    from pg_catalog.unnest(v_failed) as f;
                    v_counts := v_counts || pg_catalog.jsonb_build_object('failed_tenants', pg_catalog.cardinality(v_failed));
                    v_message := pg_catalog.format('failed for %s tenant(s): %s (each has a failed run of its own)',
                                                   pg_catalog.cardinality(v_failed),
                                                   (select pg_catalog.string_agg(f.tenant_id, ', ' order by f.tenant_id)
                                                    from pg_catalog.unnest(v_failed) as f));
                    raise warning 'pgmem job %: %', p_job, v_message;
                end if;
            end if;
            if p_job = 'purge' then
                -- The run history is pruned with the rest; 90 days answers
                -- "did the jobs run, how long did they take" with room to spare.
                delete from pgmem.job_runs as j where j.started_at < p_now - interval '90 days';
            end if;
            if p_now <> pg_catalog.now() and v_status = 'ok' then
                v_message := pg_catalog.concat_ws('; ', v_message, pg_catalog.format('as of %s (moved clock)', p_now));
            end if;
        exception when others then
            -- The job's changes are rolled back to here; the failure is
            -- recorded (and logged) instead of vanishing with the transaction.
            get stacked diagnostics v_state = returned_sqlstate;
            v_status := 'failed';
            v_counts := pg_catalog.jsonb_build_object('sqlstate', v_state);
            v_message := sqlerrm;
            raise warning 'pgmem job % failed: % (SQLSTATE %)', p_job, sqlerrm, v_state;
        end;
    end if;

    insert into pgmem.job_runs (job, tenant_id, status, counts, message, started_at, finished_at)
    values (p_job, p_tenant, v_status, v_counts, v_message, v_started, pg_catalog.clock_timestamp())
    returning * into v_run;
    return v_run;
end
$$;

comment on function pgmem.run_job(text, timestamptz, text) is
    'Runs one maintenance job (decay, archive, capacity, purge, sessions, consolidate, watchdog, links, accesses) over every tenant (or p_tenant) under its row lock in pgmem._job_locks (skip locked), and records it in pgmem.job_runs: ok with counts, skipped (lock held elsewhere) or failed with the error; a tenant whose rows fail the job gets a failed run of its own (counts.failed_tenants, message) while the others are maintained. Returns the recorded row; on a replica returns a skipped row at once and records nothing. pgmem_admin only.';

-- The links job takes a chunk of subjects a transaction (its writers wait
-- for it meanwhile): whoever runs it goes on, in a new transaction, while
-- subjects wait and the last chunk linked some (none: writers hold the rest,
-- left for the next run), up to 100 runs a call.
-- (Its run's fields, not a job_runs row: Citus distributes every pgmem
-- function, and job_runs, cluster-wide history, is a table it does not.)
create or replace function pgmem._run_again(p_job text, p_status text, p_counts jsonb, p_runs integer)
returns boolean
language sql
immutable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select p_job = 'links' and p_status = 'ok' and p_runs < 100
           and coalesce((p_counts ->> 'waiting')::integer, 0) > 0
           and coalesce((p_counts ->> 'subjects')::integer, 0) > 0
$$;

comment on function pgmem._run_again(text, text, jsonb, integer) is
    'Whether a job that has just run (p_runs times in this call) should run again in a new transaction: links, while subjects wait and its last chunk linked some, up to 100 runs (internal; pgmem.run_scheduled_job and `pgmem maintain`).';

create or replace procedure pgmem.run_scheduled_job(p_job text)
language plpgsql
security invoker
-- No SET search_path here, unlike everywhere else: a procedure with a SET
-- clause cannot COMMIT. Every name below is schema-qualified instead.
as $$
declare
    v_run pgmem.job_runs;
    v_runs integer := 0;
begin
    loop
        v_run := pgmem.run_job(p_job);
        -- The recorded run must outlive the error below, which is what makes
        -- pg_cron's cron.job_run_details say 'failed' too.
        commit;
        v_runs := v_runs + 1;
        exit when not pgmem._run_again(v_run.job, v_run.status, v_run.counts, v_runs);
    end loop;
    if v_run.status = 'failed' then
        raise exception 'pgmem job % failed: %', p_job, v_run.message
            using errcode = 'PM037', hint = 'The run is recorded in pgmem.job_runs (`pgmem jobs`).';
    end if;
end
$$;

comment on procedure pgmem.run_scheduled_job(text) is
    'What pg_cron calls: pgmem.run_job(p_job), committed (links: again while subjects wait, a chunk of 100 a transaction, up to 100 chunks), then error PM037 if the run failed, so that cron.job_run_details records the failure that pgmem.job_runs records. pgmem_admin only.';

create or replace function pgmem.maintain(p_now timestamptz default pg_catalog.now(), p_tenant text default null)
returns setof pgmem.job_runs
language sql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select r.*
    from pg_catalog.unnest(pgmem._job_names()) with ordinality as j (job, position)
    cross join lateral pgmem.run_job(j.job, p_now, p_tenant) as r
    order by j.position
$$;

comment on function pgmem.maintain(timestamptz, text) is
    'Runs every maintenance job now, in order (archive, decay, capacity, purge, sessions, consolidate, watchdog, links, accesses), in the caller''s transaction; returns the recorded runs. `pgmem maintain` runs them one transaction each. pgmem_admin only.';

-- The four-schedule forms predate the sessions job, the five-schedule ones
-- the consolidate job, the six-schedule ones the watchdog, the seven-schedule
-- ones the links job, the eight-schedule ones the accesses job.
drop function if exists pgmem.schedule(text, text, text, text);
drop function if exists pgmem.cron_plan(text, text, text, text);
drop function if exists pgmem.schedule(text, text, text, text, text);
drop function if exists pgmem.cron_plan(text, text, text, text, text);
drop function if exists pgmem.schedule(text, text, text, text, text, text);
drop function if exists pgmem.cron_plan(text, text, text, text, text, text);
drop function if exists pgmem.schedule(text, text, text, text, text, text, text);
drop function if exists pgmem.cron_plan(text, text, text, text, text, text, text);
drop function if exists pgmem.schedule(text, text, text, text, text, text, text, text);
drop function if exists pgmem.cron_plan(text, text, text, text, text, text, text, text);

create or replace function pgmem.cron_plan(
    p_decay text default '7 * * * *',
    p_archive text default '17 3 * * *',
    p_capacity text default '27 3 * * *',
    p_purge text default '37 3 * * *',
    p_sessions text default '*/15 * * * *',
    p_consolidate text default '47 3 * * *',
    p_watchdog text default '* * * * *',
    p_links text default '* * * * *',
    p_accesses text default '* * * * *'
)
returns table (job text, jobname text, schedule text, command text)
language sql
immutable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Defaults: decay hourly; archive, capacity and purge once a day at
    -- night, ten minutes apart so each sees the previous one's result;
    -- sessions every 15 minutes, so an expired task is cancelled soon after;
    -- consolidate nightly after purge, for the worker to write insights;
    -- watchdog every minute, so an idle open transaction ends soon after its limit.
    -- links every minute, so a stated turn's links follow it within a minute.
    -- accesses every minute, so the accesses readers add up stay few.
    -- Minute-level cron syntax only: pg_cron 1.4 (Debian 12) has no seconds.
    select j.job, 'pgmem-' || j.job, j.schedule,
           pg_catalog.format('call pgmem.run_scheduled_job(%L)', j.job)
    from (values (1, 'decay', p_decay), (2, 'archive', p_archive),
                 (3, 'capacity', p_capacity), (4, 'purge', p_purge),
                 (5, 'sessions', p_sessions), (6, 'consolidate', p_consolidate),
                 (7, 'watchdog', p_watchdog), (8, 'links', p_links),
                 (9, 'accesses', p_accesses)) as j (position, job, schedule)
    order by j.position
$$;

comment on function pgmem.cron_plan(text, text, text, text, text, text, text, text, text) is
    'The pg_cron jobs pgmem.schedule() installs: job, cron job name, schedule (NULL = not scheduled) and command. Useful to schedule from another database with cron.schedule_in_database.';

create or replace function pgmem._require_cron(p_for text)
returns void
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_cron_db text := pg_catalog.current_setting('cron.database_name', true);
    v_example text;
begin
    if exists (select from pg_catalog.pg_extension as e where e.extname = 'pg_cron') then
        return;
    end if;
    select pg_catalog.string_agg(pg_catalog.format('select cron.schedule_in_database(%L, %L, %L, %L);',
                                                   p.jobname || '-' || pg_catalog.current_database(),
                                                   p.schedule, p.command, pg_catalog.current_database()), ' ')
    into v_example
    from pgmem.cron_plan() as p;
    if v_cron_db is null then
        raise exception '% needs pg_cron, which is not loaded on this server', p_for
            using errcode = 'PM036',
                  detail = 'pg_cron must be in shared_preload_libraries; it then runs jobs from the one '
                           'database named by cron.database_name.',
                  hint = 'Load pg_cron (`pgmem db start` does), or run `pgmem maintain` (select * from '
                         'pgmem.maintain()) from your own scheduler: cron, a systemd timer, Kubernetes CronJob.';
    end if;
    raise exception '% needs pg_cron in this database, but pg_cron works in database "%" (cron.database_name), not "%"',
                    p_for, v_cron_db, pg_catalog.current_database()
        using errcode = 'PM036',
              detail = pg_catalog.format('pg_cron runs jobs from one database per server, cron.database_name = %L; '
                                         'pgmem installs the extension only there.', v_cron_db),
              hint = pg_catalog.format('Connect to database %L and run: %s Or run `pgmem maintain` (select * from '
                                       'pgmem.maintain()) from your own scheduler.', v_cron_db, v_example);
end
$$;

comment on function pgmem._require_cron(text) is
    'Returns when pg_cron is installed in this database; otherwise raises PM036 saying why (cron.database_name) and how to schedule maintenance instead (internal).';

create or replace function pgmem.schedule(
    p_decay text default '7 * * * *',
    p_archive text default '17 3 * * *',
    p_capacity text default '27 3 * * *',
    p_purge text default '37 3 * * *',
    p_sessions text default '*/15 * * * *',
    p_consolidate text default '47 3 * * *',
    p_watchdog text default '* * * * *',
    p_links text default '* * * * *',
    p_accesses text default '* * * * *'
)
returns table (job text, jobname text, schedule text, command text, jobid bigint)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    perform pgmem._require_cron('pgmem.schedule()');
    -- A job whose schedule is NULL is removed; the others are created or,
    -- since cron.schedule upserts by job name, updated in place.
    perform cron.unschedule(c.jobid)
    from cron.job as c
    join pgmem.cron_plan(p_decay, p_archive, p_capacity, p_purge, p_sessions, p_consolidate, p_watchdog, p_links,
                                  p_accesses) as p on p.jobname = c.jobname
    where p.schedule is null and c.database = pg_catalog.current_database();
    return query
    select p.job, p.jobname, p.schedule, p.command,
           case when p.schedule is not null then cron.schedule(p.jobname, p.schedule, p.command) end
    from pgmem.cron_plan(p_decay, p_archive, p_capacity, p_purge, p_sessions, p_consolidate, p_watchdog, p_links,
                                  p_accesses) as p;
end
$$;

comment on function pgmem.schedule(text, text, text, text, text, text, text, text, text) is
    'Installs (or updates) the pg_cron jobs pgmem-decay (default hourly), pgmem-archive, pgmem-capacity, pgmem-purge and pgmem-consolidate (daily), pgmem-sessions (every 15 minutes), pgmem-watchdog, pgmem-links and pgmem-accesses (every minute); a NULL schedule removes that job. Each runs pgmem.run_job as the calling role. Raises PM036 with a way out when pg_cron is not installed in this database.';

create or replace function pgmem.unschedule()
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_removed bigint;
begin
    perform pgmem._require_cron('pgmem.unschedule()');
    -- In the select list, cron.unschedule runs only for rows the WHERE kept.
    select pg_catalog.count(*) filter (where cron.unschedule(c.jobid)) into v_removed
    from cron.job as c
    where c.jobname in (select p.jobname from pgmem.cron_plan() as p)
      and c.database = pg_catalog.current_database();
    return v_removed;
end
$$;

comment on function pgmem.unschedule() is
    'Removes pgmem''s pg_cron jobs for this database; returns how many were removed.';

create or replace function pgmem.scheduled_jobs()
returns table (
    jobid bigint, jobname text, schedule text, command text, database text, username text, active boolean,
    last_start timestamptz, last_status text
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Empty, not an error, when pg_cron is not here or not readable: the
    -- caller still has pgmem.job_runs (pgmem.last_job_runs).
    if not exists (select from pg_catalog.pg_extension as e where e.extname = 'pg_cron')
       or not pg_catalog.has_schema_privilege('cron', 'USAGE') then
        return;
    end if;
    return query
    select c.jobid, c.jobname::text, c.schedule, c.command, c.database, c.username, c.active,
           d.start_time, d.status
    from cron.job as c
    left join lateral (
        select r.start_time, r.status from cron.job_run_details as r
        where r.jobid = c.jobid order by r.start_time desc nulls last limit 1
    ) as d on true
    where c.jobname like 'pgmem-%' and c.database = pg_catalog.current_database()
    order by c.jobname;
end
$$;

comment on function pgmem.scheduled_jobs() is
    'pgmem''s pg_cron jobs for this database with their last start and status (cron.job_run_details); empty when pg_cron is not installed here or the caller may not read it.';
