-- pgmem.recall: the ranked rows of pgmem._recall (20_recall.sql, whose
-- opening comment describes the pipeline), and step 5 of it: an access of
-- every returned row is recorded (pgmem._reinforce) in one statement,
-- unless p_reinforce is false, and folded into the memories later
-- (pgmem.fold_accesses).

-- Scoped recall (revision 0011) added p_agent_id and p_shared_subjects and
-- the subject output column: the old signatures go, or calls by name would be
-- ambiguous between the two.
drop function if exists pgmem.recall(text, text, public.vector, integer, text[], text, timestamptz, timestamptz,
                                     timestamptz, jsonb, double precision, double precision, integer, boolean,
                                     timestamptz);

create or replace function pgmem._reinforce(p_memory_ids bigint[], p_now timestamptz default null)
returns integer
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not the call in the WHERE clause: Citus routes the
    -- statement to the tenant's shard by it (docs/scaling.md).
    v_tenant text := pgmem._require_tenant();
    -- Citus refuses non-immutable calls inside COALESCE in a modification.
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_count integer;
begin
    -- An access is recorded, not written into the memory: one row a
    -- subject, no lock on any memory, so a recall neither waits for a
    -- writer nor loses an access to one. pgmem.fold_accesses writes them
    -- into access_count and last_accessed_at; readers add them until then.
    -- A connection bound to an end user records accesses of what it reads,
    -- a shared subject's memories too (the table's binding policy).
    with returned as (
        select m.subject, m.memory_id
        from pgmem.memories as m
        where m.tenant_id = v_tenant and m.memory_id = any(p_memory_ids)
    ),
    recorded as (
        insert into pgmem.memory_accesses (tenant_id, subject, memory_ids, accessed_at)
        select v_tenant, r.subject, pg_catalog.array_agg(r.memory_id order by r.memory_id), v_now
        from returned as r
        group by r.subject
        returning pg_catalog.cardinality(memory_ids) as n
    )
    select coalesce(pg_catalog.sum(r.n), 0)::integer into v_count from recorded as r;
    return v_count;
end
$$;

comment on function pgmem._reinforce(bigint[], timestamptz) is
    'Internal to recall, context and prompt: records one access (as of p_now) of each given memory of the bound tenant in pgmem.memory_accesses, folded into access_count and last_accessed_at by pgmem.fold_accesses; returns how many.';

create or replace function pgmem._fold_accesses_rows(p_tenant text)
returns bigint
language plpgsql
volatile
-- security definer: app roles may not delete (71_owner_writes.sql says
-- why), and decay, archive and capacity, which tenant roles call, fold
-- first. The session must be one that may act for p_tenant.
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text;
    v_folded bigint := 0;
    v_taken record;
    v_access record;
    v_subjects text[] := '{}';
    v_ids bigint[] := '{}';
    v_times timestamptz[] := '{}';
begin
    perform pgmem._require_session_for(p_tenant);
    if p_tenant is null then
        -- A tenant at a time: each statement below names its tenant, which
        -- Citus needs to route it (and to lock rows at all).
        for v_tenant in select distinct a.tenant_id from pgmem.memory_accesses as a order by 1 loop
            v_folded := v_folded + pgmem._fold_accesses_rows(v_tenant);
        end loop;
        return v_folded;
    end if;
    -- The rows are taken (deleted) as they are read: an access recorded
    -- meanwhile stays for the next fold. Simple statements, each routed to
    -- the tenant's shard on Citus (a DELETE ... RETURNING feeding other
    -- statements of one query makes Citus pass it through intermediate
    -- results, which failed there).
    for v_taken in
        delete from pgmem.memory_accesses as a
        where a.tenant_id = p_tenant
        returning a.subject, a.memory_ids, a.accessed_at
    loop
        v_subjects := v_subjects
                      || pg_catalog.array_fill(v_taken.subject, array[pg_catalog.cardinality(v_taken.memory_ids)]);
        v_ids := v_ids || v_taken.memory_ids;
        v_times := v_times
                   || pg_catalog.array_fill(v_taken.accessed_at, array[pg_catalog.cardinality(v_taken.memory_ids)]);
    end loop;
    -- An access counts for a memory of the subject it was recorded under (a
    -- row naming another subject's memory, written by hand, counts for none).
    -- In key order, so that two folds cannot deadlock. A memory a writer
    -- holds is passed over and its accesses are recorded again, as one row,
    -- for the next fold; those of memories gone (purged, erased) go.
    for v_access in
        select x.subject, x.memory_id, pg_catalog.count(*)::integer as accesses, pg_catalog.max(x.at) as at
        from unnest(v_subjects, v_ids, v_times) as x(subject, memory_id, at)
        group by x.subject, x.memory_id
        order by x.memory_id
    loop
        update pgmem.memories as m
        set access_count = m.access_count + v_access.accesses,
            last_accessed_at = greatest(m.last_accessed_at, v_access.at)
        from (select l.memory_id
              from pgmem.memories as l
              where l.tenant_id = p_tenant and l.memory_id = v_access.memory_id and l.subject = v_access.subject
              for no key update skip locked) as l
        where m.tenant_id = p_tenant and m.memory_id = l.memory_id;
        if found then
            v_folded := v_folded + 1;
        elsif exists (select from pgmem.memories as m
                      where m.tenant_id = p_tenant and m.memory_id = v_access.memory_id
                        and m.subject = v_access.subject) then
            insert into pgmem.memory_accesses (tenant_id, subject, memory_ids, accessed_at)
            values (p_tenant, v_access.subject, pg_catalog.array_fill(v_access.memory_id, array[v_access.accesses]),
                    v_access.at);
        end if;
    end loop;
    return v_folded;
end
$$;

comment on function pgmem._fold_accesses_rows(text) is
    'The work of pgmem.fold_accesses with the owner''s rights, for a session that may act for p_tenant (NULL: every tenant, owner sessions only) (internal).';

create or replace function pgmem.fold_accesses(p_tenant text default null)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- A tenant session folds its own tenant's; an owner session every
    -- tenant's, or p_tenant's.
    return pgmem._fold_accesses_rows(coalesce(p_tenant, case when not pgmem._bypasses_rls()
                                                              then pgmem._require_tenant() end));
end
$$;

comment on function pgmem.fold_accesses(text) is
    'Writes the accesses recall, context and prompt recorded in pgmem.memory_accesses into the memories (access_count + their number, last_accessed_at = the latest) and deletes them; returns how many memories it updated. A memory locked by a writer keeps its accesses for the next fold. The accesses job runs it every minute, and decay, archive and capacity run it first; readers count the accesses not folded yet, so it changes no answer. A tenant session folds its tenant''s; an owner session every tenant''s (or p_tenant''s).';

create or replace function pgmem.recall(
    p_subject text,
    p_query text default null,
    p_embedding public.vector default null,
    p_k integer default 10,
    p_kinds text[] default null,
    p_session_id text default null,
    p_since timestamptz default null,
    p_until timestamptz default null,
    p_as_of timestamptz default null,
    p_metadata jsonb default null,
    p_min_score double precision default 0,
    p_mmr_lambda double precision default null,
    p_hops integer default 0,
    p_reinforce boolean default true,
    p_now timestamptz default null,
    p_agent_id text default null,
    p_shared_subjects text[] default null
)
returns table (
    memory_id bigint,
    content text,
    kind text,
    score real,
    relevance real,
    importance real,
    recency real,
    access_boost real,
    similarity real,
    text_match real,
    hops integer,
    via_memory_id bigint,
    via_link text,
    session_id text,
    status text,
    pinned boolean,
    access_count integer,
    last_accessed_at timestamptz,
    created_at timestamptz,
    valid_from timestamptz,
    valid_to timestamptz,
    metadata jsonb,
    subject text
)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if not coalesce(p_reinforce, true) then
        -- No write at all: works in read-only transactions and on replicas.
        return query
        select * from pgmem._recall(p_subject, p_query, p_embedding, p_k, p_kinds, p_session_id, p_since, p_until,
                                    p_as_of, p_metadata, p_min_score, p_mmr_lambda, p_hops, p_now,
                                    p_agent_id, p_shared_subjects);
        return;
    end if;
    -- A materialized CTE runs once: an access of every returned row is
    -- recorded by one INSERT, after the ranking has read the rows as they were.
    return query
    with ranked as materialized (
        select * from pgmem._recall(p_subject, p_query, p_embedding, p_k, p_kinds, p_session_id, p_since, p_until,
                                    p_as_of, p_metadata, p_min_score, p_mmr_lambda, p_hops, p_now,
                                    p_agent_id, p_shared_subjects)
    ),
    reinforced as materialized (
        select pgmem._reinforce(array(select r.memory_id from ranked as r), p_now) as n
    )
    select r.* from ranked as r left join reinforced on true
    order by r.score desc, r.memory_id desc;
end
$$;

comment on function pgmem.recall(text, text, public.vector, integer, text[], text, timestamptz, timestamptz,
                                 timestamptz, jsonb, double precision, double precision, integer, boolean, timestamptz,
                                 text, text[]) is
    'Ranks a subject''s memories for a query text and/or embedding: the k best (score = w_relevance·relevance + '
    'w_importance·importance + w_recency·recency + w_access·access_boost, weights from the tenant''s settings), '
    'each with its score parts, plus up to min(k, settings.ripple_limit) memories linked to them when p_hops > 0 (hops, via_memory_id, via_link; '
    'score damped by ripple_damping per hop). Filters: p_kinds, p_session_id, valid_from (the event time) in [p_since, p_until), '
    'metadata @> p_metadata, score >= p_min_score; p_as_of returns what was valid then, superseded facts included. '
    'p_mmr_lambda (0..1) picks a diverse set (maximal marginal relevance). Returned memories are reinforced '
    '(access_count + 1, last access = p_now: recorded in pgmem.memory_accesses, counted by every read at once and '
    'folded in by pgmem.fold_accesses) unless p_reinforce => false; access_count and last_accessed_at are '
    'returned as they were before. Relevance = w_vector·cosine similarity + (1 − w_vector)·idf-weighted share of query terms matched. '
    'Scope: p_agent_id keeps, of p_subject''s memories, those written by that agent; p_shared_subjects adds other '
    'subjects of the same tenant (a team, a domain) to p_subject''s own, all of their memories whoever wrote them, '
    'ranked together, each row''s subject column saying whose it is.';
