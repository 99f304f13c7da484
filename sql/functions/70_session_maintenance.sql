-- Short-term memory kept bounded: the rolling summary of the turns that
-- left the window, and the expiry of idle sessions. The turns and the
-- window themselves are in 70_session.sql.
--
-- Rolling summary: the worker claims sessions whose turns left the recency
-- window (pgmem.claim_folds, a lease: appends are never blocked), folds
-- previous summary + evicted turns into a new summary (an LLM, or the
-- labelled extractive fallback) and stores it as a new version with its
-- turn range (pgmem.save_summary).
--
-- Expiry (pgmem.expire_sessions, part of the sessions maintenance job):
-- sessions idle longer than settings.session_idle are closed, and the turns
-- of sessions closed longer than settings.session_retention are deleted;
-- summaries stay.

-- Takes the two window settings, not the settings row: on Citus the call runs
-- on a worker, where a reference table's row type is its shard's.
create or replace function pgmem._fold_through(
    p_tenant text, p_subject text, p_session_id text, p_window_turns integer, p_window_tokens integer
)
returns bigint
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- The recency window decides what left: everything older than its
    -- oldest optional unit (all turns when it keeps none).
    select coalesce(pg_catalog.min(u.unit_seq) filter (where u.chosen and not u.mandatory) - 1,
                    pg_catalog.max(u.unit_seq))
    from pgmem._window_units(p_tenant, p_subject, p_session_id, p_window_turns,
                             p_window_tokens, 'recency') as u
$$;

comment on function pgmem._fold_through(text, text, text, integer, integer) is
    'Highest turn that has left the recency window of a session: the rolling summary should reach it (internal).';

create or replace function pgmem.claim_folds(
    p_limit integer default 8,
    p_lease interval default '5 minutes',
    p_now timestamptz default null
)
returns table (
    tenant_id text, subject text, session_id text, from_seq bigint, through_seq bigint,
    previous_version integer, previous_summary text, turns jsonb
)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_tenant text := pgmem.current_tenant();
begin
    -- A lease, not a lock held during the LLM call: appends keep going while
    -- a worker summarizes, and a crashed worker's lease simply runs out.
    -- The bound tenant is named in the WHERE clause as in pgmem.claim_jobs:
    -- on Citus that routes the locking read to the tenant's shard.
    return query
    with candidates as (
        select s.tenant_id, s.subject, s.session_id, s.summarized_through, st.window_turns, st.window_tokens
        from pgmem.sessions as s
        join pgmem.settings as st on st.tenant_id = s.tenant_id
        where (s.unsummarized_turns > st.window_turns or s.unsummarized_tokens > st.window_tokens)
          and (s.fold_lease_until is null or s.fold_lease_until < v_now)
          and (v_tenant is null or s.tenant_id = v_tenant)
        order by s.last_active_at
        limit greatest(p_limit, 1)
        for update of s skip locked
    ),
    due as (
        select c.tenant_id, c.subject, c.session_id, c.summarized_through,
               pgmem._fold_through(c.tenant_id, c.subject, c.session_id, c.window_turns, c.window_tokens) as through_seq
        from candidates as c
    ),
    leased as (
        update pgmem.sessions as s
        set fold_lease_until = v_now + p_lease
        from due as d
        where s.tenant_id = d.tenant_id and s.subject = d.subject and s.session_id = d.session_id
          and d.through_seq > d.summarized_through
          and (v_tenant is null or s.tenant_id = v_tenant)
        returning d.*
    )
    select l.tenant_id, l.subject, l.session_id, l.summarized_through + 1, l.through_seq,
           p.version, p.summary,
           (select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                        'seq', m.seq, 'role', m.role, 'content', m.content) order by m.seq), '[]')
            from pgmem.session_messages as m
            where m.tenant_id = l.tenant_id and m.subject = l.subject and m.session_id = l.session_id
              and (v_tenant is null or m.tenant_id = v_tenant)
              and m.seq > l.summarized_through and m.seq <= l.through_seq
              and not (m.role = 'system' or m.protected))
    from leased as l
    left join lateral (
        select v.version, v.summary from pgmem.session_summaries as v
        where v.tenant_id = l.tenant_id and v.subject = l.subject and v.session_id = l.session_id
          and (v_tenant is null or v.tenant_id = v_tenant)
        order by v.version desc limit 1
    ) as p on true;
end
$$;

comment on function pgmem.claim_folds(integer, interval, timestamptz) is
    'For the worker: leases up to p_limit sessions whose turns left the window and returns, for each, the turns to '
    'fold (from_seq..through_seq, without system and protected turns, which stay in the window) and the previous '
    'summary. Finish with pgmem.save_summary; an expired lease (p_lease) makes the session claimable again.';

create or replace function pgmem.save_summary(
    p_subject text,
    p_session_id text,
    p_from_seq bigint,
    p_through_seq bigint,
    p_summary text,
    p_method text,
    p_model text default null,
    p_now timestamptz default null
)
returns integer
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_done bigint;
    v_version integer;
begin
    perform pgmem._check_session_key(p_subject, p_session_id);
    if p_method is null or p_method not in ('llm', 'extractive') then
        raise exception 'unknown summary method: p_method = %', coalesce(pg_catalog.quote_literal(p_method), 'NULL')
            using errcode = 'PM074', hint = 'Methods: llm, extractive.';
    end if;
    if p_summary is null or pg_catalog.btrim(p_summary) = '' then
        raise exception 'p_summary is empty' using errcode = 'PM011', hint = 'Store a summary with some text.';
    end if;
    select s.summarized_through into v_done
    from pgmem.sessions as s
    where s.tenant_id = v_tenant and s.subject = p_subject and s.session_id = p_session_id
    for update;
    if not found then
        raise exception 'unknown session: % of subject %', p_session_id, p_subject
            using errcode = 'PM075', hint = 'Append a turn first (pgmem.append_message).';
    end if;
    if p_from_seq is distinct from v_done + 1 or p_through_seq is null or p_through_seq < p_from_seq then
        -- Another worker folded meanwhile (or the range is bad): keep what is there.
        return null;
    end if;
    select coalesce(pg_catalog.max(v.version), 0) + 1 into v_version
    from pgmem.session_summaries as v
    where v.tenant_id = v_tenant and v.subject = p_subject and v.session_id = p_session_id;
    insert into pgmem.session_summaries (tenant_id, subject, session_id, version, from_seq, through_seq, summary,
                                         method, model, tokens, created_at)
    values (v_tenant, p_subject, p_session_id, v_version, p_from_seq, p_through_seq, p_summary, p_method, p_model,
            pgmem._estimate_tokens(p_summary), coalesce(p_now, pg_catalog.now()));
    update pgmem.sessions as s
    set summarized_through = p_through_seq,
        fold_lease_until = null,
        unsummarized_turns = (select pg_catalog.count(*) from pgmem.session_messages as m
                              where m.tenant_id = v_tenant and m.subject = p_subject
                                and m.session_id = p_session_id and m.seq > p_through_seq
                                and m.role in ('user', 'assistant') and not m.protected),
        unsummarized_tokens = (select coalesce(pg_catalog.sum(m.tokens), 0) from pgmem.session_messages as m
                               where m.tenant_id = v_tenant and m.subject = p_subject
                                 and m.session_id = p_session_id and m.seq > p_through_seq)
    where s.tenant_id = v_tenant and s.subject = p_subject and s.session_id = p_session_id;
    return v_version;
end
$$;

comment on function pgmem.save_summary(text, text, bigint, bigint, text, text, text, timestamptz) is
    'Stores a new version of a session''s rolling summary covering turns up to p_through_seq (p_from_seq must follow '
    'the previous version) and releases the fold lease. Returns the version, or NULL when another fold got there '
    'first. PM074 unknown method, PM075 unknown session.';

create or replace function pgmem.expire_sessions(
    p_now timestamptz default pg_catalog.now(),
    p_tenant text default null,
    out closed bigint,
    out purged_messages bigint
)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._maintenance_scope(p_tenant);
begin
    -- The closing time is computed in a subquery: Citus refuses an UPDATE
    -- whose own SET or WHERE calls a STABLE function (timestamptz ± interval)
    -- on columns. The rows are locked there (waiting, as the UPDATE would)
    -- and the idle test is rechecked on a row that changed meanwhile.
    with due as (
        select s.tenant_id, s.subject, s.session_id,
               -- Closed as of when it went idle, so the retention counts from then.
               s.last_active_at + st.session_idle as closed_at
        from pgmem.sessions as s
        join pgmem.settings as st on st.tenant_id = s.tenant_id
        where s.status = 'open'
          and s.last_active_at < p_now - st.session_idle
          and (v_tenant is null or s.tenant_id = v_tenant)
        for no key update of s
    ),
    idle as (
        update pgmem.sessions as s
        set status = 'closed', closed_at = d.closed_at
        from due as d
        where s.tenant_id = d.tenant_id and s.subject = d.subject and s.session_id = d.session_id
        returning 1
    )
    select pg_catalog.count(*) into closed from idle;
    -- Turns go after the retention, with the owner's rights: app roles hold
    -- no DELETE privilege (71_owner_writes.sql).
    purged_messages := pgmem._delete_closed_turns(v_tenant, p_now);
end
$$;

comment on function pgmem.expire_sessions(timestamptz, text) is
    'Closes sessions idle longer than the tenant''s session_idle (1 day) and deletes the turns of sessions closed '
    'longer than session_retention (30 days) before p_now; summaries stay. Part of the sessions maintenance job.';
