-- The score parts of recall (step 2 of the pipeline in 20_recall.sql):
-- similarity, text_match, relevance, importance, recency and access_boost
-- of the candidate memories, and their weighted sum (base_score).

-- Scoped recall (revision 0011) reads several subjects and filters by agent.
drop function if exists pgmem._recall_rows(text, pgmem.settings, text, bigint[], public.vector, text[], real[],
                                           timestamptz, timestamptz, text[], text, timestamptz, timestamptz, jsonb);
-- Issue 12: the caller gives each row's text_match, found with the
-- candidates, and the query vector as halfvec (the column's type: no cast
-- per row).
drop function if exists pgmem._recall_rows(text, pgmem.settings, text[], bigint[], public.vector, text[], real[],
                                           timestamptz, timestamptz, text[], text, timestamptz, timestamptz, jsonb,
                                           text);

create or replace function pgmem._recall_rows(
    p_tenant text,
    p_settings pgmem.settings,
    p_subjects text[],
    p_memory_ids bigint[],
    p_text_matches real[],
    p_embedding public.halfvec,
    p_now timestamptz,
    p_as_of timestamptz,
    p_kinds text[],
    p_session_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_metadata jsonb,
    p_agent_id text
)
returns table (
    memory_id bigint,
    content text,
    kind text,
    similarity real,
    text_match real,
    relevance real,
    importance real,
    recency real,
    access_boost real,
    base_score double precision,
    embedding public.halfvec,
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
-- plpgsql, not sql: a SQL function that cannot be inlined is planned again
-- on every call (~1 ms here); plpgsql keeps the plan for the session.
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    -- Each kind's half-life in seconds, found by the kind's position.
    v_kinds text[];
    v_half_life_seconds double precision[];
begin
    select pg_catalog.array_agg(h.kind), pg_catalog.array_agg(extract(epoch from h.half_life))
    into v_kinds, v_half_life_seconds
    from pgmem._half_lives(p_settings) as h;
    -- The one place the score parts are computed and visibility is decided;
    -- pgmem._recall calls it for the candidates and again for ripple rows.
    return query
    select m.memory_id, m.content, m.kind,
           r.similarity, r.text_match,
           (case
                when p_embedding is not null and p_text_matches is not null
                    then p_settings.w_vector * coalesce(r.similarity, 0)
                         + (1 - p_settings.w_vector) * r.text_match
                when p_embedding is not null then coalesce(r.similarity, 0)
                when p_text_matches is not null then r.text_match
                else 0
            end)::real,
           p.importance, p.recency, p.access_boost,
           p_settings.w_importance::double precision * p.importance
               + p_settings.w_recency::double precision * p.recency
               + p_settings.w_access::double precision * p.access_boost,
           m.embedding, m.session_id, m.status, m.pinned, m.access_count, m.last_accessed_at,
           m.created_at, m.valid_from, m.valid_to, m.metadata, m.subject
    from (
        -- One primary-key probe per id, fenced off from the filters below:
        -- with them in reach the (generic) plan reads the whole subject
        -- through memories_subject and joins the ids to that.
        select m.*, i.text_match
        from (select distinct on (i.id) i.id, i.text_match
              from unnest(p_memory_ids, p_text_matches) as i(id, text_match)
              where i.id is not null) as i
        join pgmem.memories as m on m.tenant_id = p_tenant and m.memory_id = i.id
        offset 0
    ) as m
    cross join lateral (
        select m.embedding operator(public.<=>) p_embedding as distance
    ) as d
    cross join lateral (
        select
            -- A zero vector has no direction: its distance is NaN, treated as unrelated.
            case when d.distance is null or d.distance = 'NaN'::double precision then null
                 else greatest(0, 1 - d.distance)::real
            end as similarity,
            -- The share of the query's term weight the memory holds, as the
            -- caller found it (0 for a row holding no term); NULL without
            -- query terms.
            case when p_text_matches is not null then coalesce(m.text_match, 0) end as text_match
    ) as r
    cross join lateral (
        select
            -- The stored importance, not effective_importance: that one is
            -- importance · recency (30_lifecycle.sql) and would count time twice.
            m.importance,
            (case when m.pinned then 1
                  -- exp(-λ·h) with λ = ln 2 / half-life: 0.5 per half-life since the last access.
                  else pg_catalog.exp(-pg_catalog.ln(2)
                       * greatest(0, extract(epoch from p_now - m.last_accessed_at))
                       / v_half_life_seconds[pg_catalog.array_position(v_kinds, m.kind)])
             end)::real as recency,
            -- Log of use frequency, as ACT-R's base-level activation; full at 100 uses.
            least(1, pg_catalog.ln(1 + m.access_count) / pg_catalog.ln(101))::real as access_boost
    ) as p
    where m.subject = any(p_subjects)
      -- Visible: active now, or as of a past time also superseded facts
      -- that were valid then; expired memories are gone for every as-of.
      and (m.status = 'active' or (p_as_of < p_now and m.status = 'superseded'))
      and m.valid_from <= p_as_of
      and (m.valid_to is null or m.valid_to > p_as_of)
      and (m.expires_at is null or m.expires_at > p_now)
      and (p_kinds is null or m.kind = any(p_kinds))
      and (p_session_id is null or m.session_id = p_session_id)
      and (p_since is null or m.created_at >= p_since)
      and (p_until is null or m.created_at < p_until)
      and (p_metadata is null or m.metadata @> p_metadata)
      and (p_agent_id is null or m.agent_id = p_agent_id);
end
$$;

comment on function pgmem._recall_rows(text, pgmem.settings, text[], bigint[], real[], public.halfvec,
                                       timestamptz, timestamptz, text[], text, timestamptz, timestamptz, jsonb,
                                       text) is
    'Internal to recall: the given memories that are visible and pass the filters, with their score parts (see sql/functions/20_recall.sql, step 2).';
