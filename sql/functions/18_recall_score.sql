-- The score parts of recall (step 2 of the pipeline in 20_recall.sql):
-- similarity, text_match, relevance, importance, recency and access_boost
-- of the candidate memories, and their weighted sum (base_score).

-- Scoped recall (revision 0011) reads several subjects and filters by agent.
drop function if exists pgmem._recall_rows(text, pgmem.settings, text, bigint[], public.vector, text[], real[],
                                           timestamptz, timestamptz, text[], text, timestamptz, timestamptz, jsonb);
-- For recall's speed the caller gives each row's text_match, found with the
-- candidates, and the query vector as halfvec (the column's type: no cast
-- per row).
drop function if exists pgmem._recall_rows(text, pgmem.settings, text[], bigint[], public.vector, text[], real[],
                                           timestamptz, timestamptz, text[], text, timestamptz, timestamptz, jsonb,
                                           text);
-- The caller gives the kinds' half-lives (pgmem._half_life_seconds): recall
-- reads them once for its candidate ranking and for this.
drop function if exists pgmem._recall_rows(text, pgmem.settings, text[], bigint[], real[], public.halfvec,
                                           timestamptz, timestamptz, text[], text, timestamptz, timestamptz, jsonb,
                                           text);
-- The caller gives the accesses not folded yet (pgmem._pending_accesses),
-- read once for its scan and every call of this.
drop function if exists pgmem._recall_rows(text, pgmem.settings, text[], bigint[], real[], public.halfvec,
                                           timestamptz, timestamptz, text[], text, timestamptz, timestamptz, jsonb,
                                           text, text[], double precision[]);

create or replace function pgmem._half_life_seconds(
    p_settings pgmem.settings,
    out kinds text[],
    out seconds double precision[]
)
-- plpgsql for its cached plan: a SQL function with a FROM clause is planned
-- again in every statement that calls it.
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    select pg_catalog.array_agg(h.kind), pg_catalog.array_agg(extract(epoch from h.half_life))
    into kinds, seconds
    from pgmem._half_lives(p_settings) as h;
end
$$;

comment on function pgmem._half_life_seconds(pgmem.settings) is
    'Each memory kind''s half-life in seconds in one tenant''s settings, as two arrays in the same order: seconds[array_position(kinds, kind)] is a kind''s (internal; what pgmem._recency takes).';

-- The score parts as expressions, in one place: pgmem._recall_rows computes
-- them for the rows it returns, and pgmem._recall for every candidate of an
-- exact scan, to keep only the k best. SQL with no SET clause and qualified
-- operators, each argument read once where a caller may pass an expression:
-- PostgreSQL inlines them into the statements that call them.
create or replace function pgmem._similarity(p_distance double precision)
returns real
language sql
immutable parallel safe
security invoker
as $$
    -- A zero vector has no direction: its distance is NaN, treated as
    -- unrelated. The distance is read once (float8larger is strict), so an
    -- inlined call computes it once.
    select pg_catalog.float8larger(0, 1 operator(pg_catalog.-) nullif(p_distance, 'NaN'::double precision))::real
$$;

comment on function pgmem._similarity(double precision) is
    'Recall''s similarity part: max(0, 1 - cosine distance), NULL for no vector or a NaN distance (internal).';

-- A similarity as the share of the way from the model's base (what it gives
-- unrelated text, settings.similarity_base resolved by recall) to 1. An
-- embedding model whose unrelated pairs score 0.7 spreads its similarities
-- over the top quarter of [0, 1]: raw, they would weigh a quarter of what
-- the text match and the other parts of the score weigh, and a little
-- recency would outrank what the query is about. NULL base: raw similarity.
create or replace function pgmem._similarity_above_base(p_similarity real, p_base real)
returns real
language sql
immutable parallel safe
security invoker
as $$
    select coalesce(pg_catalog.float8larger(0, (p_similarity operator(pg_catalog.-) coalesce(p_base, 0))
                                               operator(pg_catalog./) (1 operator(pg_catalog.-) coalesce(p_base, 0))),
                    0)::real
$$;

comment on function pgmem._similarity_above_base(real, real) is
    'A similarity s measured from a base b: max(0, (s − b) / (1 − b)), 0 for no similarity; b NULL counts as 0 (internal; recall''s relevance).';

create or replace function pgmem._relevance(
    p_settings pgmem.settings,
    p_by_vector boolean,
    p_by_text boolean,
    p_similarity real,
    p_text_match real
)
returns real
language sql
immutable parallel safe
security invoker
as $$
    select (case
                when p_by_vector and p_by_text
                    then (p_settings.w_vector
                          operator(pg_catalog.*) pgmem._similarity_above_base(p_similarity, p_settings.similarity_base))
                         operator(pg_catalog.+) ((1 operator(pg_catalog.-) p_settings.w_vector)
                                                 operator(pg_catalog.*) p_text_match)
                when p_by_vector then pgmem._similarity_above_base(p_similarity, p_settings.similarity_base)
                when p_by_text then p_text_match
                else 0
            end)::real
$$;

comment on function pgmem._relevance(pgmem.settings, boolean, boolean, real, real) is
    'Recall''s relevance part: w_vector·s + (1 − w_vector)·text_match when the query has a vector and terms, either one alone otherwise, 0 with neither; s is the similarity measured from settings.similarity_base (pgmem._similarity_above_base) (internal).';

create or replace function pgmem._recency(
    p_pinned boolean,
    p_last_accessed_at timestamptz,
    p_now timestamptz,
    p_half_life_seconds double precision
)
returns real
language sql
immutable parallel safe
security invoker
as $$
    -- exp(-λ·h) with λ = ln 2 / half-life: 0.5 per half-life since the last access.
    select (case when p_pinned then 1
                 else pg_catalog.exp(((operator(pg_catalog.-) pg_catalog.ln(2))
                                      operator(pg_catalog.*) greatest(0, extract(epoch from p_now operator(pg_catalog.-)
                                                                                           p_last_accessed_at)))
                                     operator(pg_catalog./) p_half_life_seconds)
            end)::real
$$;

comment on function pgmem._recency(boolean, timestamptz, timestamptz, double precision) is
    'Recall''s recency part: 0.5 per half-life of the memory''s kind since its last access, 1 when pinned (internal).';

create or replace function pgmem._access_boost(p_access_count integer)
returns real
language sql
immutable parallel safe
security invoker
as $$
    -- Log of use frequency, as ACT-R's base-level activation; full at 100 uses.
    select least(1, pg_catalog.ln(1 operator(pg_catalog.+) p_access_count)
                    operator(pg_catalog./) pg_catalog.ln(101))::real
$$;

comment on function pgmem._access_boost(integer) is
    'Recall''s access_boost part: ln(1 + access_count) / ln(101), at most 1 (internal).';

-- Recall, context and prompt record their accesses in pgmem.memory_accesses
-- instead of updating the memories they return (20_recall_reinforce.sql);
-- the accesses job folds them in (pgmem.fold_accesses). Until then every
-- reader of access_count and last_accessed_at adds these, so an answer is
-- the one an update in place gave. A reader takes them as arrays, in a
-- statement of its own, and joins their unnest: Citus plans no SQL function
-- that reads a distributed table with parameters, and a plpgsql variable is
-- what routes a statement to the tenant's shard.
create or replace function pgmem._pending_accesses(
    p_tenant text,
    p_subjects text[],
    out subjects text[],
    out memory_ids bigint[],
    out accesses integer[],
    out last_accessed_at timestamptz[]
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- An access counts for a memory of the subject it was recorded under:
    -- readers join on both. The rows are about a minute's recalls of the
    -- subjects (the fold keeps them so), one index range.
    select pg_catalog.array_agg(x.subject), pg_catalog.array_agg(x.memory_id), pg_catalog.array_agg(x.accesses),
           pg_catalog.array_agg(x.last_accessed_at)
    into subjects, memory_ids, accesses, last_accessed_at
    from (select a.subject, u.memory_id, pg_catalog.count(*)::integer as accesses,
                 pg_catalog.max(a.accessed_at) as last_accessed_at
          from pgmem.memory_accesses as a
          cross join lateral pg_catalog.unnest(a.memory_ids) as u(memory_id)
          where a.tenant_id = p_tenant and (p_subjects is null or a.subject = any(p_subjects))
          group by a.subject, u.memory_id) as x;
end
$$;

comment on function pgmem._pending_accesses(text, text[]) is
    'Accesses of the given subjects'' memories (NULL: every subject of p_tenant) recorded in pgmem.memory_accesses and not folded yet, as four arrays in one order: subject, memory, how many, the latest; readers unnest them and add them to access_count and last_accessed_at (internal).';

create or replace function pgmem._base_score(
    p_settings pgmem.settings,
    p_importance real,
    p_recency real,
    p_access_boost real
)
returns double precision
language sql
immutable parallel safe
security invoker
as $$
    -- The stored importance, not effective_importance: that one is
    -- importance · recency (30_lifecycle.sql) and would count time twice.
    -- (OPERATOR() syntax has one precedence, left to right: hence the parentheses.)
    select (p_settings.w_importance::double precision operator(pg_catalog.*) p_importance)
           operator(pg_catalog.+) (p_settings.w_recency::double precision operator(pg_catalog.*) p_recency)
           operator(pg_catalog.+) (p_settings.w_access::double precision operator(pg_catalog.*) p_access_boost)
$$;

comment on function pgmem._base_score(pgmem.settings, real, real, real) is
    'The score of a memory but for relevance: w_importance·importance + w_recency·recency + w_access·access_boost (internal).';

create or replace function pgmem._score(p_settings pgmem.settings, p_relevance real, p_base_score double precision)
returns real
language sql
immutable parallel safe
security invoker
as $$
    select ((p_settings.w_relevance::double precision operator(pg_catalog.*) p_relevance)
            operator(pg_catalog.+) p_base_score)::real
$$;

comment on function pgmem._score(pgmem.settings, real, double precision) is
    'A recalled memory''s score: w_relevance·relevance + its base score (pgmem._base_score) (internal).';

-- A floor raised by p_fraction of the way from it to the best candidate's
-- value, so a query one memory answers well does not fill the prompt with
-- memories that merely clear the floor. No best value: the floor itself.
create or replace function pgmem._raised_floor(p_floor real, p_top real, p_fraction real)
returns real
language sql
immutable parallel safe
security invoker
as $$
    select (p_floor operator(pg_catalog.+)
            (p_fraction operator(pg_catalog.*)
             greatest(coalesce(p_top, p_floor) operator(pg_catalog.-) p_floor, 0)))::real
$$;

comment on function pgmem._raised_floor(real, real, real) is
    'A relevance floor raised by a fraction of the way to the best candidate''s value: floor + fraction·max(top − floor, 0) (internal).';

-- The two arguments after the candidate's own parts are the best similarity
-- and text match among the query's candidates, which settings.relative_floor
-- measures from; NULL: no relative part.
drop function if exists pgmem._answers(pgmem.settings, boolean, boolean, real, real);

create or replace function pgmem._answers(
    p_settings pgmem.settings,
    p_vector boolean,
    p_text boolean,
    p_similarity real,
    p_text_match real,
    p_top_similarity real,
    p_top_text_match real
)
returns boolean
language sql
immutable parallel safe
security invoker
as $$
    -- No query, or a vector query of a model without a calibrated floor:
    -- nothing to hold a candidate to (the relative part needs a floor to
    -- measure from). Otherwise one of the two must reach its floor, raised
    -- towards the best candidate's; importance and recency cannot lift an
    -- unrelated memory in.
    select (not p_vector and not p_text)
           or (p_vector and p_settings.min_similarity is null)
           or (p_vector and p_similarity operator(pg_catalog.>=)
                   pgmem._raised_floor(p_settings.min_similarity, p_top_similarity,
                                       p_settings.relative_floor)) is true
           or (p_text and p_text_match operator(pg_catalog.>=)
                   pgmem._raised_floor(p_settings.min_text_match, p_top_text_match,
                                       p_settings.relative_floor)) is true
$$;

comment on function pgmem._answers(pgmem.settings, boolean, boolean, real, real, real, real) is
    'Whether a candidate is relevant enough to answer a query at all: its similarity reaches settings.min_similarity (resolved to the model''s floor, pgmem.model_relevance_floor) or its text match reaches settings.min_text_match, each raised by settings.relative_floor of the way to the best candidate''s (internal).';

create or replace function pgmem._recall_rows(
    p_tenant text,
    p_settings pgmem.settings,
    -- The personal subject first, then the shared ones.
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
    p_agent_id text,
    -- pgmem._half_life_seconds(p_settings)
    p_half_life_kinds text[],
    p_half_life_seconds double precision[],
    -- pgmem._pending_accesses(p_tenant, p_subjects)
    p_accessed_subjects text[],
    p_accessed_ids bigint[],
    p_accesses integer[],
    p_accessed_at timestamptz[]
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
begin
    -- The one place the score parts are computed and visibility is decided;
    -- pgmem._recall calls it for the candidates and again for ripple rows.
    return query
    select m.memory_id, m.content, m.kind,
           r.similarity, r.text_match,
           pgmem._relevance(p_settings, p_embedding is not null, p_text_matches is not null, r.similarity,
                            r.text_match),
           m.importance, p.recency, p.access_boost,
           pgmem._base_score(p_settings, m.importance, p.recency, p.access_boost),
           m.embedding, m.session_id, m.status, m.pinned, m.accesses, m.last_access,
           m.created_at, m.valid_from, m.valid_to, m.metadata, m.subject
    from (
        -- One primary-key probe per id, fenced off from the filters below:
        -- with them in reach the (generic) plan reads the whole subject
        -- through memories_subject and joins the ids to that. The accesses
        -- not folded yet count as if they had been (pgmem._pending_accesses).
        select m.*, i.text_match,
               m.access_count + coalesce(a.accesses, 0) as accesses,
               greatest(m.last_accessed_at, a.last_accessed_at) as last_access
        from (select distinct on (i.id) i.id, i.text_match
              from unnest(p_memory_ids, p_text_matches) as i(id, text_match)
              where i.id is not null) as i
        join pgmem.memories as m on m.tenant_id = p_tenant and m.memory_id = i.id
        left join unnest(p_accessed_subjects, p_accessed_ids, p_accesses, p_accessed_at)
            as a(subject, memory_id, accesses, last_accessed_at)
            on a.memory_id = m.memory_id and a.subject = m.subject
        offset 0
    ) as m
    cross join lateral (
        select pgmem._similarity(m.embedding operator(public.<=>) p_embedding) as similarity,
               -- The share of the query's term weight the memory holds, as the
               -- caller found it (0 for a row holding no term); NULL without
               -- query terms.
               case when p_text_matches is not null then coalesce(m.text_match, 0) end as text_match
    ) as r
    cross join lateral (
        select pgmem._recency(m.pinned, m.last_access, p_now,
                              p_half_life_seconds[pg_catalog.array_position(p_half_life_kinds, m.kind)]) as recency,
               pgmem._access_boost(m.accesses) as access_boost
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
      and (p_since is null or m.valid_from >= p_since)
      and (p_until is null or m.valid_from < p_until)
      and (p_metadata is null or m.metadata @> p_metadata)
      -- An agent's scope is its own part of the personal subject; a shared
      -- subject (a team's) is everyone's, whoever wrote it.
      and (p_agent_id is null or m.agent_id = p_agent_id or m.subject <> p_subjects[1]);
end
$$;

comment on function pgmem._recall_rows(text, pgmem.settings, text[], bigint[], real[], public.halfvec,
                                       timestamptz, timestamptz, text[], text, timestamptz, timestamptz, jsonb,
                                       text, text[], double precision[], text[], bigint[], integer[],
                                       timestamptz[]) is
    'Internal to recall: the given memories that are visible and pass the filters, with their score parts (see sql/functions/20_recall.sql, step 2).';

-- A fact and the stated turn it was extracted from hold the same
-- information: recall shows the better ranked of the two, never both, and
-- forget takes both. The derived_from links touching p_ids (either way),
-- but not an insight's links to its sources, which summarise many turns.
-- plpgsql: on Citus a parameterised SQL function cannot be planned inside
-- a distributed query; one statement reads the links of every id at once.
drop function if exists pgmem._provenance_kin(text, bigint);

create or replace function pgmem._provenance_kin(p_tenant text, p_ids bigint[])
returns table(memory_id bigint, kin_id bigint)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select l.from_id, l.to_id
    from pgmem.memory_links as l
    join pgmem.memories as m on m.tenant_id = l.tenant_id and m.memory_id = l.from_id
    where l.tenant_id = p_tenant and l.from_id = any (p_ids) and l.link_type = 'derived_from'
      and not m.metadata ? 'consolidated_from'
    union
    select l.to_id, l.from_id
    from pgmem.memory_links as l
    join pgmem.memories as m on m.tenant_id = l.tenant_id and m.memory_id = l.from_id
    where l.tenant_id = p_tenant and l.to_id = any (p_ids) and l.link_type = 'derived_from'
      and not m.metadata ? 'consolidated_from';
end
$$;

comment on function pgmem._provenance_kin(text, bigint[]) is
    'For memories p_ids, each one a derived_from link joins it to (a fact and its stated turn, either way), insights'' links to their sources aside: recall shows only the better ranked of such a pair, forget takes both (internal).';
