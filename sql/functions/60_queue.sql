-- The asynchronous write path: apps enqueue raw conversation turns with
-- plain SQL; the Python worker claims them (FOR UPDATE SKIP LOCKED, woken
-- by NOTIFY pgmem_inbox), extracts facts, embeds them and calls
-- pgmem.remember in the same transaction that marks the job done, so a
-- killed worker loses nothing and applies nothing twice.

-- Before facts had a confidence and an expiry (revision 0008) it had no
-- p_confidence and p_expires_at.
drop function if exists pgmem.enqueue(text, jsonb, text, text, jsonb, timestamptz);

create or replace function pgmem.enqueue(
    p_subject text,
    p_messages jsonb,
    p_session_id text default null,
    p_agent_id text default null,
    p_metadata jsonb default '{}',
    p_occurred_at timestamptz default null,
    p_confidence double precision default null,
    p_expires_at timestamptz default null
)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_messages jsonb;
    v_id bigint;
begin
    -- A bare string is one user message; an object is one message.
    v_messages := case pg_catalog.jsonb_typeof(p_messages)
        when 'string' then pg_catalog.jsonb_build_array(
                               pg_catalog.jsonb_build_object('role', 'user', 'content', p_messages))
        when 'object' then pg_catalog.jsonb_build_array(p_messages)
        else p_messages end;
    if v_messages is null or pg_catalog.jsonb_typeof(v_messages) <> 'array'
       or pg_catalog.jsonb_array_length(v_messages) = 0
       or exists (select from pg_catalog.jsonb_array_elements(v_messages) as m(msg)
                  where pg_catalog.jsonb_typeof(m.msg) <> 'object'
                     or pg_catalog.jsonb_typeof(m.msg -> 'content') is distinct from 'string') then
        raise exception 'p_messages must be a non-empty JSON array of {"role", "content"} objects'
            using errcode = 'PM040',
                  hint = 'e.g. ''[{"role": "user", "content": "I prefer dark mode"}]'' or a JSON string.';
    end if;
    if p_metadata is null or pg_catalog.jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'p_metadata must be a JSON object' using errcode = 'PM040', hint = 'Pass ''{}'' for none.';
    end if;
    -- The subject's own check, as PM040 rather than the table's 23502/23514.
    if p_subject is null or pg_catalog.btrim(p_subject) = '' or pg_catalog.length(p_subject) > 256 then
        raise exception 'p_subject must be 1 to 256 characters, not %',
                        coalesce(pg_catalog.length(p_subject)::text || ' characters', 'NULL')
            using errcode = 'PM040', hint = 'Pass the user or entity the turn is about, e.g. ''alice''.';
    end if;
    -- Checked now, as remember would check them for each fact of the turn.
    perform pgmem._check_truth_input(null, p_confidence, p_expires_at, coalesce(p_occurred_at, pg_catalog.now()));
    perform pgmem._require_subject(v_tenant, array[p_subject]);
    insert into pgmem.subjects (tenant_id, subject) values (v_tenant, p_subject)
    on conflict do nothing;
    insert into pgmem.inbox (tenant_id, job, subject, session_id, agent_id, payload)
    values (v_tenant, 'turn', p_subject, p_session_id, p_agent_id,
            pg_catalog.jsonb_build_object('messages', v_messages, 'metadata', p_metadata,
                                          'occurred_at', p_occurred_at)
            || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object('confidence', p_confidence,
                                                                          'expires_at', p_expires_at)))
    returning inbox_id into v_id;
    -- No payload: every role may LISTEN, so naming the tenant would tell
    -- any tenant when another one enqueues.
    perform pg_catalog.pg_notify('pgmem_inbox', '');
    return v_id;
end
$$;

comment on function pgmem.enqueue(text, jsonb, text, text, jsonb, timestamptz, double precision, timestamptz) is
    'Queues a conversation turn (JSON array of {role, content}, or a string) for the worker to extract, embed and remember; returns the inbox id and wakes workers (NOTIFY pgmem_inbox). p_confidence and p_expires_at, when given, apply to every fact of the turn (PM026, PM027 as in remember).';

-- Before it took the worker's model it had two arguments.
drop function if exists pgmem.claim_jobs(integer, timestamptz);

-- Whether a worker embedding with p_model may take a job: a re-embed job
-- names its model; every other job embeds with the tenant's
-- (settings.embedding_model, NULL until the first worker records its own).
-- A worker on another model would fail the job with PM025 and spend its
-- retries, so it never claims it.
create or replace function pgmem._job_fits_model(p_job text, p_payload jsonb, p_tenant_model text, p_model text)
returns boolean
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select p_model is null
        or case when p_job = 'embed' and p_payload ? 'reembed' then p_payload ->> 'reembed' = p_model
                else coalesce(p_tenant_model = p_model, true) end
$$;

comment on function pgmem._job_fits_model(text, jsonb, text, text) is
    'Whether a worker embedding with p_model may claim an inbox job (p_job, p_payload) of a tenant on p_tenant_model: a re-embed job of that model, or any other job of a tenant on that model or with none recorded yet; true for a NULL p_model (internal).';

create or replace function pgmem.claim_jobs(
    p_limit integer default 16,
    p_now timestamptz default null,
    p_model text default null
)
returns setof pgmem.inbox
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem.current_tenant();
    v_due timestamptz := coalesce(p_now, pg_catalog.now());
    v_limit integer := greatest(coalesce(p_limit, 16), 1);
    v_tenants text[];
    v_claimed bigint[] := '{}';
    v_taken integer;
    v_job pgmem.inbox;
    v_t text;
    v_model text;
begin
    -- Rows stay locked until the caller's transaction ends: the caller
    -- marks them done or failed in that same transaction. RLS applies: a
    -- BYPASSRLS worker serves every tenant, a tenant-bound one its own.
    if v_tenant is not null or pgmem._distributed() then
        -- One tenant (or Citus, where a worker is bound to one): its queue in
        -- order. The bound tenant is also named in the WHERE clause (RLS
        -- filters the same rows): on Citus that routes the locking read to
        -- the tenant's shard, where a multi-shard FOR UPDATE is refused
        -- (docs/scaling.md).
        -- The tenant's model is read here, a constant in the locking read.
        v_model := (select s.embedding_model from pgmem.settings as s where s.tenant_id = v_tenant);
        return query
        select i.*
        from pgmem.inbox as i
        where i.status = 'pending' and i.available_at <= v_due
          and (v_tenant is null or i.tenant_id = v_tenant)
          and (v_tenant is null or pgmem._job_fits_model(i.job, i.payload, v_model, p_model))
        order by i.available_at, i.inbox_id
        limit v_limit
        for update skip locked;
        return;
    end if;
    -- Every tenant: round robin, one job per tenant per round, tenants in the
    -- order their oldest due job has waited. A tenant's flood fills only the
    -- places no other tenant wants; it cannot push another's turn back. The
    -- tenants with pending work come from a loose scan of inbox_pending (one
    -- probe per tenant, however long its queue).
    with recursive queued (tenant_id) as (
        (select i.tenant_id from pgmem.inbox as i where i.status = 'pending'
         order by i.tenant_id limit 1)
        union all
        select (select i.tenant_id from pgmem.inbox as i
                where i.status = 'pending' and i.tenant_id > q.tenant_id
                order by i.tenant_id limit 1)
        from queued as q
        where q.tenant_id is not null
    )
    select pg_catalog.array_agg(w.tenant_id order by w.oldest, w.tenant_id)
    into v_tenants
    from (select q.tenant_id,
                 (select pg_catalog.min(i.available_at) from pgmem.inbox as i
                  where i.tenant_id = q.tenant_id and i.status = 'pending' and i.available_at <= v_due) as oldest
          from queued as q
          where q.tenant_id is not null) as w
    where w.oldest is not null;
    while v_tenants is not null and pg_catalog.cardinality(v_claimed) < v_limit loop
        v_taken := 0;
        foreach v_t in array v_tenants loop
            exit when pg_catalog.cardinality(v_claimed) >= v_limit;
            v_model := (select s.embedding_model from pgmem.settings as s where s.tenant_id = v_t);
            select i.* into v_job
            from pgmem.inbox as i
            where i.tenant_id = v_t and i.status = 'pending' and i.available_at <= v_due
              and i.inbox_id <> all (v_claimed)
              and pgmem._job_fits_model(i.job, i.payload, v_model, p_model)
            order by i.available_at, i.inbox_id
            limit 1
            for update skip locked;
            if found then
                v_claimed := v_claimed || v_job.inbox_id;
                v_taken := v_taken + 1;
                return next v_job;
            else
                v_tenants := pg_catalog.array_remove(v_tenants, v_t);
            end if;
        end loop;
        exit when v_taken = 0;
    end loop;
end
$$;

comment on function pgmem.claim_jobs(integer, timestamptz, text) is
    'Locks up to p_limit pending inbox jobs that are due (FOR UPDATE SKIP LOCKED), taking one job per tenant in turn (the tenant waiting longest first) so that no tenant''s queue delays another''s; with p_model, only jobs a worker embedding with that model can do (pgmem._job_fits_model). Finish each with pgmem.finish_job or pgmem.fail_job in the same transaction.';

create or replace function pgmem.finish_job(p_tenant text, p_inbox_id bigint, p_result jsonb default '{}')
returns void
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- PL/pgSQL, not SQL: Citus plans no SQL-language function that passes
    -- parameters to a distributed table (docs/scaling.md).
    update pgmem.inbox as i
    set status = 'done', finished_at = pg_catalog.now(), attempts = i.attempts + 1,
        payload = i.payload || pg_catalog.jsonb_build_object('result', p_result)
    where i.tenant_id = p_tenant and i.inbox_id = p_inbox_id;
end
$$;

comment on function pgmem.finish_job(text, bigint, jsonb) is
    'Marks a claimed inbox job done and keeps what it did in payload.result.';

create or replace function pgmem.fail_job(
    p_tenant text,
    p_inbox_id bigint,
    p_error text,
    p_max_attempts integer default 5,
    p_now timestamptz default null
)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- Citus refuses non-immutable calls inside COALESCE in a modification.
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_attempt integer;
    v_finished timestamptz;
    v_status text;
begin
    -- Exponential backoff (2, 4, 8… seconds, capped at an hour); after
    -- p_max_attempts the job is kept as failed with its error, never dropped.
    -- The attempt count is read first: timestamptz + interval is only STABLE,
    -- and Citus refuses a STABLE call over a column in an UPDATE.
    select i.attempts + 1 into v_attempt
    from pgmem.inbox as i
    where i.tenant_id = p_tenant and i.inbox_id = p_inbox_id
    for update;
    if v_attempt >= p_max_attempts then
        v_finished := pg_catalog.now();  -- Citus allows no now() inside CASE
    end if;
    update pgmem.inbox as i
    set attempts = v_attempt,
        last_error = pg_catalog.left(p_error, 2000),
        status = case when v_attempt >= p_max_attempts then 'failed' else 'pending' end,
        finished_at = v_finished,
        available_at = v_now + pg_catalog.make_interval(secs => least(pg_catalog.power(2, v_attempt), 3600))
    where i.tenant_id = p_tenant and i.inbox_id = p_inbox_id
    returning i.status into v_status;
    return v_status;
end
$$;

comment on function pgmem.fail_job(text, bigint, text, integer, timestamptz) is
    'Records a failed attempt of an inbox job: retried later with exponential backoff, marked failed after p_max_attempts. Returns the new status.';

create or replace function pgmem.retry_failed_jobs(p_inbox_id bigint default null)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_count bigint;
begin
    -- PL/pgSQL, not SQL: Citus plans no SQL-language function that passes
    -- parameters to a distributed table (docs/scaling.md).
    with retried as (
        update pgmem.inbox as i
        set status = 'pending', attempts = 0, available_at = pg_catalog.now(), finished_at = null
        where i.status = 'failed' and (p_inbox_id is null or i.inbox_id = p_inbox_id)
        returning 1
    )
    select pg_catalog.count(*) into v_count from retried;
    return v_count;
end
$$;

comment on function pgmem.retry_failed_jobs(bigint) is
    'Puts failed inbox jobs (all visible ones, or one id) back in the queue; returns how many.';
