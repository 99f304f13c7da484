-- pgmem.recall: the ranked rows of pgmem._recall (20_recall.sql, whose
-- opening comment describes the pipeline), and step 5 of it: every
-- returned row is reinforced (pgmem._reinforce: access_count + 1 and
-- last_accessed_at = now) in one statement, unless p_reinforce is false.

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
    -- SKIP LOCKED: a recall never waits for a writer or a maintenance pass
    -- holding the row; that access simply goes uncounted. Rows lock in
    -- key order (index scan over the sorted array), so recalls cannot deadlock.
    with touched as (
        update pgmem.memories as m
        set access_count = m.access_count + 1,
            last_accessed_at = greatest(m.last_accessed_at, v_now)
        from (select l.tenant_id, l.memory_id
              from pgmem.memories as l
              where l.tenant_id = v_tenant and l.memory_id = any(p_memory_ids)
              for no key update skip locked) as l
        where m.tenant_id = v_tenant and m.memory_id = l.memory_id
        returning 1
    )
    select pg_catalog.count(*)::integer into v_count from touched;
    return v_count;
end
$$;

comment on function pgmem._reinforce(bigint[], timestamptz) is
    'Internal to recall and context: access_count + 1 and last_accessed_at = now for the given memories of the bound tenant; returns how many (rows locked by another transaction are skipped).';

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
    -- A materialized CTE runs once: every returned row is reinforced by one
    -- UPDATE, after the ranking has read the rows as they were.
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
    '(access_count + 1, last access = p_now) unless p_reinforce => false; access_count and last_accessed_at are '
    'returned as they were before. Relevance = w_vector·cosine similarity + (1 − w_vector)·idf-weighted share of query terms matched. '
    'Scope: p_agent_id keeps, of p_subject''s memories, those written by that agent; p_shared_subjects adds other '
    'subjects of the same tenant (a team, a domain) to p_subject''s own, all of their memories whoever wrote them, '
    'ranked together, each row''s subject column saying whose it is.';
