-- The read path: pgmem.recall ranks a subject's memories for a query and
-- pgmem.context packs them into a prompt block. Here is the ranking,
-- pgmem._recall (steps 1-4); pgmem.recall, which adds step 5, is in
-- 20_recall_reinforce.sql and pgmem.context in 25_context.sql.
--
-- Pipeline of one recall:
--   1. candidates: the `candidate_pool` nearest memories by cosine distance
--      (when a query embedding is given) and the `candidate_pool` best
--      full-text matches, by text_match below (when the query text has
--      terms), united;
--   2. parts of every candidate (pgmem._recall_rows), all in [0, 1]:
--        similarity  = max(0, cosine similarity to the query embedding)
--        text_match  = share of the query's term weight the memory contains
--                      (English lexemes and CJK bigrams, see pgmem._tsv);
--                      each term weighs its idf among the subject's active
--                      memories, ln(1 + (N + 1) / (df + 1)), so rare words
--                      count for more than a name in every other memory
--        relevance   = w_vector·s + (1 − w_vector)·text_match with both
--                      inputs (settings.w_vector, default 0.6), s alone
--                      with an embedding only, text_match alone with text
--                      only (0 with neither); s = max(0, (similarity − b) /
--                      (1 − b)), b where the embedding model puts unrelated
--                      text (settings.similarity_base, NULL: the model's,
--                      pgmem.model_similarity_base), so a model whose
--                      cosines crowd near 1 weighs as much as one that uses
--                      the whole range
--        importance  = the memory's importance as written (not the decayed
--                      effective_importance: time is the recency part's job)
--        recency     = exp(-λ_kind · hours since last access),
--                      λ_kind = ln 2 / half_life_<kind>; 1 when pinned
--        access_boost = ln(1 + access_count) / ln(101), capped at 1
--      score = w_relevance·relevance + w_importance·importance
--            + w_recency·recency + w_access·access_boost  (tenant settings),
--      each part one inlined function (18_recall_score.sql). An exact scan
--      reads every part of every candidate already, so without MMR it
--      scores them there and step 2 reads whole rows for the 2k best only;
--   3. the k best by score (or by MMR when a λ is given) at or above the
--      minimum score, of the candidates that answer the query at all
--      (pgmem._answers: similarity at least settings.min_similarity, the
--      embedding model's calibrated floor unless the tenant set one, or
--      text_match at least settings.min_text_match, each floor raised by
--      settings.relative_floor of the way to the best candidate's value), a
--      fact and the stated turn it came from counted once
--      (the better ranked; pgmem._provenance_kin): the direct hits (hops = 0);
--   4. ripple (hops 1-3): memories linked to the hits (memory_links, both
--      directions, any link type) inherit the relevance of the memory they
--      were reached from times the link weight, and their whole score is
--      multiplied by ripple_damping once per hop; up to min(k,
--      settings.ripple_limit) more rows;
--   5. reinforcement (pgmem.recall only): an access of every returned
--      row recorded in pgmem.memory_accesses, one insert; the parts above
--      count the accesses recorded and not folded yet (18_recall_score.sql).
--
-- Fusion: a convex combination of absolute scores, not reciprocal rank
-- fusion. RRF turns ranks 1..10 into relevances 1.0..0.87 (k = 60), too
-- flat to outweigh importance and recency in the final score, and gives the
-- best row 1.0 however poor the match; cosine similarity and term coverage
-- keep their meaning, so min_score and the weights behave the same for every
-- query. Embeddings carry meaning, terms catch names and rare words; on
-- LoCoMo any w_vector from 0.3 to 0.6 scores alike (docs/eval.md), and
-- terms keep an English-only embedding model from drowning CJK matches.
--
-- Exact versus approximate: HNSW filters after it searches, so a subject
-- holding 0.1% of the index loses most of its neighbours. A subject with at
-- most settings.exact_scan_limit active memories is scanned exactly, in one
-- pass over its own rows (btree memories_subject) that yields both the
-- nearest and the best text matches (~1,000 rows: a few milliseconds); only
-- bigger subjects use the HNSW index, with pgvector's iterative scan
-- (hnsw.iterative_scan = relaxed_order) so the filter cannot starve the
-- result. Recall as of a past time reads superseded rows, which the partial
-- indexes leave out, so it is always exact.
--
-- Row-level security and full text: @@ is not leakproof, so under a tenant
-- policy the planner may not evaluate it inside an index scan (before the
-- policy): a GIN index on fts could serve BYPASSRLS roles only, and tenant
-- roles match text by filtering the subject's rows. Hence the single pass
-- above, and no such index (revision 0014 dropped memories_fts).

-- pgmem._recall names pgvector settings (hnsw.*) in its SET clause; the
-- migration runner loads pgvector before these files (alembic/env.py), so
-- they are real settings, not placeholders a non-superuser may not SET.

-- Scoped recall (revision 0011) added p_agent_id and p_shared_subjects and
-- the subject output column: the old signature goes, or calls by name would
-- be ambiguous between the two (pgmem.recall's goes in 20_recall_reinforce.sql).
drop function if exists pgmem._recall(text, text, public.vector, integer, text[], text, timestamptz, timestamptz,
                                      timestamptz, jsonb, double precision, double precision, integer, timestamptz);

create or replace function pgmem._recall(
    p_subject text,
    p_query text,
    p_embedding public.vector,
    p_k integer,
    p_kinds text[],
    p_session_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_as_of timestamptz,
    p_metadata jsonb,
    p_min_score double precision,
    p_mmr_lambda double precision,
    p_hops integer,
    p_now timestamptz,
    p_agent_id text,
    p_shared_subjects text[]
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
stable
security invoker
set search_path = pg_catalog, pg_temp
-- Big subjects search HNSW with a subject filter: keep scanning the graph
-- until enough rows pass the filter (pgvector 0.8); the SET clause confines
-- this (and the ef_search chosen below) to the call.
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 40
-- JIT would compile for ~100 ms whenever an exact scan over a big subject
-- crosses jit_above_cost; the queries themselves take milliseconds.
set jit = off
-- One plan per session for each statement here. Under the default
-- plan_cache_mode PostgreSQL planned the subject scan and the final ranking
-- again at every call (a custom plan looks cheaper than the generic one for
-- any one subject): 1.4 + 0.3 ms of a ~13 ms recall on real text. The one
-- choice a plan could get wrong without the call's values is how to read
-- the subject: a generic plan cannot tell a small subject from the average
-- one, and where a tenant has few subjects that average is most of the
-- table. With sequential scans off, the subject is read through
-- memories_subject whatever the statistics say (the HNSW branch is
-- dynamic SQL, planned for its values every time). Not on Citus
-- (pgmem._plan_per_call_on_citus).
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
as $$
#variable_conflict use_column
declare
    v_tenant text := pgmem._require_tenant();
    v_settings pgmem.settings;
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_pending record;
    v_at timestamptz := coalesce(p_as_of, p_now, pg_catalog.now());
    v_statuses text[];
    v_lexemes text[];
    v_terms tsquery[];
    -- The query vector in the column's type, cast once (not per row).
    v_query public.halfvec;
    v_tsquery tsquery;
    v_pool integer;
    v_subject_rows integer;
    v_ann boolean;
    v_exact boolean := false;
    v_near bigint[] := '{}';
    v_ids bigint[] := '{}';
    -- Each candidate's text_match (step 2), NULL without query terms.
    v_text real[];
    -- The best similarity and text match among the candidates, which the
    -- relative floor measures from (pgmem._answers); NULL: step 3 finds them.
    v_top_similarity real;
    v_top_text_match real;
    -- The personal subject and the shared ones (a team's, a domain's), once each.
    v_subjects text[];
    -- How many candidates go on to step 2: the k best by score when the
    -- scan knows every candidate's parts (no MMR, no HNSW); NULL: all.
    v_best integer;
    -- Each kind's half-life (pgmem._half_life_seconds), read once.
    v_kinds text[];
    v_half_life_seconds double precision[];
begin
    perform pgmem._plan_per_call_on_citus();
    if p_subject is null then
        raise exception 'recall needs a subject' using errcode = '22023';
    end if;
    if exists (select from pg_catalog.unnest(p_shared_subjects) as u(subject)
               where u.subject is null or pg_catalog.btrim(u.subject) = '' or pg_catalog.length(u.subject) > 256) then
        raise exception 'every shared subject must be 1 to 256 characters, not blank or NULL'
            using errcode = 'PM010', hint = 'p_shared_subjects names other subjects of the same tenant, e.g. a team.';
    end if;
    -- The personal subject first (pgmem._recall_rows scopes an agent to it),
    -- then the shared ones.
    v_subjects := array[p_subject] || array(select distinct u.subject
                                            from pg_catalog.unnest(p_shared_subjects) as u(subject)
                                            where u.subject <> p_subject);
    if p_k is null or p_k not between 1 and 1000 then
        raise exception 'k must be between 1 and 1000, not %', coalesce(p_k::text, 'NULL') using errcode = '22023';
    end if;
    if p_hops is null or p_hops not between 0 and 3 then
        raise exception 'hops must be between 0 and 3, not %', coalesce(p_hops::text, 'NULL') using errcode = '22023';
    end if;
    if p_mmr_lambda is not null and p_mmr_lambda not between 0 and 1 then
        raise exception 'the MMR lambda must be between 0 and 1, not %', p_mmr_lambda using errcode = '22023';
    end if;
    if p_kinds is not null and not p_kinds <@ array(select k.kind from pgmem.kinds() as k) then
        raise exception 'unknown memory kind in %', p_kinds
            using errcode = '22023', hint = 'Kinds are ' || pgmem._kind_list() || '.';
    end if;

    select s.* into v_settings
    from pgmem.settings as s
    where s.tenant_id in (v_tenant, '_default')
    order by s.tenant_id = '_default'
    limit 1;

    select h.kinds, h.seconds into v_kinds, v_half_life_seconds from pgmem._half_life_seconds(v_settings) as h;
    -- The relevance floor of the tenant's embedding model unless it set its own.
    v_settings.min_similarity := coalesce(v_settings.min_similarity,
                                          pgmem.model_relevance_floor(v_settings.embedding_model));
    -- Where the model puts unrelated text, unless the tenant set it.
    v_settings.similarity_base := coalesce(v_settings.similarity_base,
                                           pgmem.model_similarity_base(v_settings.embedding_model));

    -- A query vector is checked like a stored one (PM015 size, PM017 zero or
    -- degenerate); a vector cannot hold NaN, pgvector refuses it on input.
    if p_embedding is not null then
        perform pgmem._check_embedding_stats(v_settings, 'p_', public.vector_dims(p_embedding), true,
                                             public.vector_norm(p_embedding));
        v_query := p_embedding::public.halfvec;
    end if;

    v_statuses := case when v_at < v_now then array['active', 'superseded'] else array['active'] end;
    v_lexemes := pgmem._query_terms(p_query);  -- NULL: stop words only, nothing to match on
    if v_lexemes is not null then
        -- pgmem._tsq(p_query), without tokenizing the query a second time,
        -- and each term as a query of its own, built once.
        v_tsquery := pgmem._terms_query(v_lexemes);
        v_terms := array(select pgmem._tsquery_lexeme(l.lexeme)::pg_catalog.tsquery
                         from pg_catalog.unnest(v_lexemes) as l(lexeme));
    end if;
    -- MMR re-ranks a few times k (LangChain's fetch_k = 20 for k = 4).
    v_pool := greatest(v_settings.candidate_pool, p_k,
                                  case when p_mmr_lambda is not null then 4 * p_k else 0 end);

    -- Only a subject the write path flagged (pgmem._ann_subjects) has its
    -- rows in the partial HNSW index; any other is scanned exactly, and so
    -- are shared subjects unless every one of them is flagged.
    select pg_catalog.count(*) filter (where s.ann) = pg_catalog.cardinality(v_subjects) into v_ann
    from pgmem.subjects as s where s.tenant_id = v_tenant and s.subject = any(v_subjects);
    if p_embedding is not null and v_at >= v_now and v_ann then
        -- Counting stops one past the limit: cheap however big the subject.
        select pg_catalog.count(*) into v_subject_rows
        from (select from pgmem.memories as m
              where m.tenant_id = v_tenant and m.subject = any(v_subjects) and m.status = 'active'
              limit v_settings.exact_scan_limit + 1) as s;
    end if;

    if v_subject_rows > v_settings.exact_scan_limit then
        -- Big subject, approximate: HNSW, planned for these values (a
        -- generic plan cannot tell this subject from an average one).
        perform pg_catalog.set_config('hnsw.ef_search', least(v_pool, 1000)::text, true);
        execute $q$
            select coalesce(pg_catalog.array_agg(n.memory_id), '{}')
            from (select m.memory_id
                  from pgmem.memories as m
                  where m.tenant_id = $1 and m.subject = any($2) and m.status = 'active' and m.ann
                    and m.valid_from <= $3 and (m.valid_to is null or m.valid_to > $3)
                    and (m.expires_at is null or m.expires_at > $4)
                    and ($5::text[] is null or m.kind = any($5))
                    and ($6::text is null or m.session_id = $6)
                    and ($7::timestamptz is null or m.created_at >= $7)
                    and ($8::timestamptz is null or m.created_at < $8)
                    and ($9::jsonb is null or m.metadata @> $9)
                    and ($12::text is null or m.agent_id = $12 or m.subject <> $2[1])
                  order by m.embedding operator(public.<=>) $10
                  limit $11) as n
        $q$
        into v_near
        using v_tenant, v_subjects, v_at, v_now, p_kinds, p_session_id, p_since, p_until, p_metadata,
              v_query, v_pool, p_agent_id;
    else
        -- Exact nearest rows from the scan below.
        v_exact := p_embedding is not null;
    end if;

    -- The accesses not folded yet, read once: the scan and every
    -- pgmem._recall_rows call below count them.
    select * into v_pending from pgmem._pending_accesses(v_tenant, v_subjects);
    if v_lexemes is not null or v_exact then
        if p_mmr_lambda is null and (v_exact or p_embedding is null) then
            -- Twice k: room for the rows a fact and its turn collapse to one.
            v_best := 2 * p_k;
        end if;
        -- One pass over the subject's rows (btree memories_subject) yields
        --   * the nearest rows, exactly (HNSW found them above for a subject
        --     counted as too big for that);
        --   * the rows holding a query term (row-level security keeps a
        --     full-text index out of reach: see the top of this file), and from
        --     them each term's weight, pgmem._term_weight(N, df), N = the
        --     subject's active memories and df = those holding the term, and
        --     each row's text_match, the share of the query's term weight it
        --     holds;
        --   * the best text matches: the rows of highest text_match.
        -- The candidates, nearest and best matches, come out as one array of
        -- ids and one of their text_match (NULL without query terms): with
        -- v_best, only the k best by score, from the parts the scan read
        -- (step 2 reads whole rows, one primary-key probe each).
        -- Sorting outside the materialized CTE keeps the HNSW index out.
        with scan as materialized (
            select m.memory_id, m.kind, m.importance, m.pinned,
                   m.access_count + coalesce(a.accesses, 0) as access_count,
                   greatest(m.last_accessed_at, a.last_accessed_at) as last_accessed_at,
                   m.status = 'active' as counted,
                   m.valid_from <= v_at and (m.valid_to is null or m.valid_to > v_at)
                       and (m.expires_at is null or m.expires_at > v_now)
                       and (p_kinds is null or m.kind = any(p_kinds))
                       and (p_session_id is null or m.session_id = p_session_id)
                       and (p_since is null or m.valid_from >= p_since)
                       and (p_until is null or m.valid_from < p_until)
                       and (p_metadata is null or m.metadata @> p_metadata)
                       and (p_agent_id is null or m.agent_id = p_agent_id or m.subject <> p_subject) as visible,
                   case when v_exact then m.embedding operator(public.<=>) v_query end as distance,
                   -- One test of the OR query per row; only rows holding a
                   -- query term carry their tsvector on.
                   case when m.fts operator(pg_catalog.@@) v_tsquery then m.fts end as fts
            from pgmem.memories as m
            left join unnest(v_pending.subjects, v_pending.memory_ids, v_pending.accesses,
                             v_pending.last_accessed_at)
                as a(subject, memory_id, accesses, last_accessed_at)
                on a.memory_id = m.memory_id and a.subject = m.subject
            where m.tenant_id = v_tenant and m.subject = any(v_subjects) and m.status = any(v_statuses)
        ),
        -- The rows holding any query term, apart: each term's pass below
        -- reads these, not the whole subject (~0.4 ms a recall at 1,000
        -- rows and ~8 terms).
        holding as materialized (
            select s.memory_id, s.counted, s.visible, s.fts from scan as s where s.fts is not null
        ),
        -- Each query term's weight and the visible rows holding it: one
        -- lookup per (term, row holding any term).
        postings as materialized (
            select h.ids,
                   pgmem._term_weight((select pg_catalog.count(*) from scan as s where s.counted), h.df) as weight
            from pg_catalog.unnest(v_terms) as t(term)
            cross join lateral (
                select pg_catalog.count(*) filter (where s.counted) as df,
                       pg_catalog.array_agg(s.memory_id) filter (where s.visible) as ids
                from holding as s
                where s.fts operator(pg_catalog.@@) t.term
            ) as h
        ),
        matches as materialized (
            select u.memory_id,
                   (pg_catalog.sum(p.weight) / (select pg_catalog.sum(p2.weight) from postings as p2))::real
                       as text_match
            from postings as p
            cross join lateral pg_catalog.unnest(p.ids) as u(memory_id)
            group by u.memory_id
        )
        -- A grouping, not a join: its plan cannot turn into a nested loop
        -- over every matching row for each candidate.
        select coalesce(pg_catalog.array_agg(c.memory_id order by c.memory_id), '{}'),
               case when v_lexemes is not null
                    then pg_catalog.array_agg(coalesce(c.text_match, 0) order by c.memory_id) end,
               pg_catalog.max(c.top_similarity), pg_catalog.max(c.top_text_match)
        into v_ids, v_text, v_top_similarity, v_top_text_match
        from (
            select c.memory_id, c.text_match, c.top_similarity, c.top_text_match
            from (
                select c.memory_id, c.text_match, s.distance, s.kind, s.importance, s.pinned,
                       s.last_accessed_at, s.access_count,
                       -- Over every candidate, before the floor and the limit.
                       pg_catalog.max(pgmem._similarity(s.distance)) over () as top_similarity,
                       case when v_lexemes is not null
                            then pg_catalog.max(coalesce(c.text_match, 0)) over () end as top_text_match
                from (
                    select x.memory_id, pg_catalog.max(x.text_match) as text_match
                    from (
                        select n.memory_id, null::real as text_match, true as candidate
                        from (select s.memory_id from scan as s where s.visible and s.distance is not null
                              order by s.distance limit v_pool) as n
                        union all
                        select n.memory_id, null, true from pg_catalog.unnest(v_near) as n(memory_id)
                        union all
                        select m.memory_id, m.text_match,
                               pg_catalog.row_number() over (order by m.text_match desc, m.memory_id desc) <= v_pool
                        from matches as m
                    ) as x
                    group by x.memory_id
                    having pg_catalog.bool_or(x.candidate)
                ) as c
                join scan as s on s.memory_id = c.memory_id
            ) as c
            -- The floor and the score and order of step 3, from the same expressions.
            where v_best is null  -- not every part known here: step 3 holds them to the floor
               or pgmem._answers(v_settings, p_embedding is not null, v_lexemes is not null,
                                 pgmem._similarity(c.distance),
                                 case when v_lexemes is not null then coalesce(c.text_match, 0) end,
                                 c.top_similarity, c.top_text_match)
            order by case when v_best is not null
                          then pgmem._score(
                                   v_settings,
                                   pgmem._relevance(v_settings, p_embedding is not null, v_lexemes is not null,
                                                    pgmem._similarity(c.distance),
                                                    case when v_lexemes is not null
                                                         then coalesce(c.text_match, 0) end),
                                   pgmem._base_score(
                                       v_settings, c.importance,
                                       pgmem._recency(c.pinned, c.last_accessed_at, v_now,
                                                      v_half_life_seconds[pg_catalog.array_position(v_kinds,
                                                                                                    c.kind)]),
                                       pgmem._access_boost(c.access_count)))
                     end desc,
                     c.memory_id desc
            limit v_best
        ) as c;
    elsif p_embedding is null and pg_catalog.btrim(coalesce(p_query, '')) = '' then
        -- No query at all: rank every visible memory by importance and
        -- recency. (A query of stop words only matches nothing.)
        v_ids := array(
            select m.memory_id
            from pgmem.memories as m
            where m.tenant_id = v_tenant and m.subject = any(v_subjects) and m.status = any(v_statuses));
    else
        v_ids := v_near;  -- HNSW's, without query terms
    end if;

    if p_mmr_lambda is null and p_hops = 0 then
        -- Steps 2 and 3 alone, the usual call: the statement below also
        -- sets up the MMR and ripple CTEs, which have nothing to do here.
        return query
        with scored as materialized (
            select r.*, pgmem._score(v_settings, r.relevance, r.base_score) as score
            from pgmem._recall_rows(v_tenant, v_settings, v_subjects, v_ids, v_text, v_query,
                                    v_now, v_at,
                                    p_kinds, p_session_id, p_since, p_until, p_metadata, p_agent_id,
                                    v_kinds, v_half_life_seconds, v_pending.subjects, v_pending.memory_ids,
                                    v_pending.accesses, v_pending.last_accessed_at) as r
        ),
        kin as materialized (
            select k.* from pgmem._provenance_kin(v_tenant, array(select s.memory_id from scored as s)) as k
        ),
        top as materialized (
            select coalesce(v_top_similarity, pg_catalog.max(s.similarity)) as similarity,
                   coalesce(v_top_text_match, pg_catalog.max(s.text_match)) as text_match
            from scored as s
        )
        select r.memory_id, r.content, r.kind, r.score, r.relevance, r.importance, r.recency, r.access_boost,
               r.similarity, r.text_match, 0, null::bigint, null::text,
               r.session_id, r.status, r.pinned, r.access_count, r.last_accessed_at, r.created_at,
               r.valid_from, r.valid_to, r.metadata, r.subject
        from scored as r
        cross join top as t
        where r.score >= coalesce(p_min_score, 0)::real
          and pgmem._answers(v_settings, p_embedding is not null, v_lexemes is not null, r.similarity, r.text_match,
                             t.similarity, t.text_match)
          -- a fact and its stated turn: the better ranked alone
          and not exists (select from kin as k
                          join scored as o on o.memory_id = k.kin_id
                          where k.memory_id = r.memory_id and (o.score, o.memory_id) > (r.score, r.memory_id))
        order by r.score desc, r.memory_id desc
        limit p_k;
        return;
    end if;

    return query
    with recursive
    direct as materialized (
        select r.*, pgmem._score(v_settings, r.relevance, r.base_score) as score
        from pgmem._recall_rows(v_tenant, v_settings, v_subjects, v_ids, v_text, v_query,
                                v_now, v_at,
                                p_kinds, p_session_id, p_since, p_until, p_metadata, p_agent_id,
                                v_kinds, v_half_life_seconds, v_pending.subjects, v_pending.memory_ids,
                                v_pending.accesses, v_pending.last_accessed_at) as r
    ),
    kin as materialized (
        select k.* from pgmem._provenance_kin(v_tenant, array(select x.memory_id from direct as x)) as k
    ),
    top as materialized (
        select coalesce(v_top_similarity, pg_catalog.max(d.similarity)) as similarity,
               coalesce(v_top_text_match, pg_catalog.max(d.text_match)) as text_match
        from direct as d
    ),
    ranked as materialized (
        select d.*, pg_catalog.row_number() over (order by d.score desc, d.memory_id desc) as rank
        from direct as d
        cross join top as t
        where d.score >= coalesce(p_min_score, 0)::real
          and pgmem._answers(v_settings, p_embedding is not null, v_lexemes is not null, d.similarity, d.text_match,
                             t.similarity, t.text_match)
          -- a fact and its stated turn: the better ranked alone
          and not exists (select from kin as k
                          join direct as o on o.memory_id = k.kin_id
                          where k.memory_id = d.memory_id and (o.score, o.memory_id) > (d.score, d.memory_id))
    ),
    -- Maximal marginal relevance (Carbonell & Goldstein 1998), greedily:
    -- next = argmax λ·score − (1 − λ)·max cosine similarity to those picked.
    mmr (step, memory_id, picked, vectors) as (
        select 1, r.memory_id, array[r.memory_id], array[r.embedding]
        from ranked as r
        where p_mmr_lambda is not null and r.rank = 1
        union all
        select m.step + 1, n.memory_id, m.picked || n.memory_id, m.vectors || n.embedding
        from mmr as m
        cross join lateral (
            select r.memory_id, r.embedding
            from ranked as r
            where r.rank <= v_pool and r.memory_id <> all(m.picked)
            order by p_mmr_lambda * r.score - (1 - p_mmr_lambda) * coalesce(
                         (select pg_catalog.max(1 - (r.embedding operator(public.<=>) v.vector))
                          from pg_catalog.unnest(m.vectors) as v(vector)), 0) desc,
                     r.rank
            limit 1
        ) as n
        where m.step < p_k
    ),
    picked as materialized (
        select r.* from ranked as r where p_mmr_lambda is null and r.rank <= p_k
        union all
        select r.* from ranked as r join mmr as m on m.memory_id = r.memory_id
    ),
    -- Breadth-first over memory_links, one row per hop holding the whole
    -- frontier, so each memory is reached once, by its shortest path (best
    -- inherited relevance among equals). Only visible memories of the same
    -- subject are walked through; the filters apply to what is returned.
    walk (hop, ids, relevances, vias, links, visited) as (
        select 0, pg_catalog.array_agg(p.memory_id), pg_catalog.array_agg(p.relevance),
               pg_catalog.array_agg(null::bigint), pg_catalog.array_agg(null::text), pg_catalog.array_agg(p.memory_id)
        from picked as p
        where p_hops > 0
        having pg_catalog.count(*) > 0
        union all
        select w.hop + 1, n.ids, n.relevances, n.vias, n.links, w.visited || n.ids
        from walk as w
        cross join lateral (
            select pg_catalog.array_agg(x.other order by x.other),
                   pg_catalog.array_agg(x.relevance order by x.other),
                   pg_catalog.array_agg(x.via order by x.other),
                   pg_catalog.array_agg(x.link_type order by x.other)
            from (
                select distinct on (e.other) e.other, (f.relevance * e.weight)::real as relevance, f.id as via,
                       e.link_type
                -- unnest of several arrays is syntax (ROWS FROM), not a pg_catalog function.
                from unnest(w.ids, w.relevances) as f(id, relevance)
                cross join lateral (
                    select l.to_id, l.link_type, l.weight
                    from pgmem.memory_links as l
                    where l.tenant_id = v_tenant and l.from_id = f.id
                    union all
                    select l.from_id, l.link_type, l.weight
                    from pgmem.memory_links as l
                    where l.tenant_id = v_tenant and l.to_id = f.id
                ) as e(other, link_type, weight)
                join pgmem.memories as m on m.tenant_id = v_tenant and m.memory_id = e.other
                where e.other <> all(w.visited)
                  and m.subject = any(v_subjects) and m.status = any(v_statuses)
                  and m.valid_from <= v_at and (m.valid_to is null or m.valid_to > v_at)
                  and (m.expires_at is null or m.expires_at > v_now)
                order by e.other, f.relevance * e.weight desc, f.id
            ) as x
        ) as n(ids, relevances, vias, links)
        where w.hop < p_hops and n.ids is not null
    ),
    reached as materialized (
        select w.hop, u.memory_id, u.relevance, u.via, u.link_type
        from walk as w
        cross join lateral unnest(w.ids, w.relevances, w.vias, w.links)
            as u(memory_id, relevance, via, link_type)
        where w.hop > 0
    ),
    ripple as (
        select r.memory_id, r.content, r.kind, s.score, c.relevance, r.importance, r.recency, r.access_boost,
               null::real as similarity, null::real as text_match, c.hop, c.via, c.link_type,
               r.session_id, r.status, r.pinned, r.access_count, r.last_accessed_at, r.created_at,
               r.valid_from, r.valid_to, r.metadata, r.subject
        from reached as c
        join pgmem._recall_rows(v_tenant, v_settings, v_subjects, array(select c2.memory_id from reached as c2),
                                null, v_query, v_now, v_at,
                                p_kinds, p_session_id, p_since, p_until, p_metadata, p_agent_id,
                                v_kinds, v_half_life_seconds, v_pending.subjects, v_pending.memory_ids,
                                v_pending.accesses, v_pending.last_accessed_at) as r
            on r.memory_id = c.memory_id
        cross join lateral (
            select (pg_catalog.power(v_settings.ripple_damping::double precision, c.hop)
                    * (v_settings.w_relevance::double precision * c.relevance + r.base_score))::real as score
        ) as s
        where s.score >= coalesce(p_min_score, 0)::real
          and p_hops > 0  -- a one-time filter: without hops _recall_rows is not even called
        order by s.score desc, r.memory_id desc
        -- Capped by settings.ripple_limit: linked rows are context, not the answer, and must not crowd out the hits.
        limit least(p_k, v_settings.ripple_limit)
    )
    select p.memory_id, p.content, p.kind, p.score, p.relevance, p.importance, p.recency, p.access_boost,
           p.similarity, p.text_match, 0, null::bigint, null::text,
           p.session_id, p.status, p.pinned, p.access_count, p.last_accessed_at, p.created_at,
           p.valid_from, p.valid_to, p.metadata, p.subject
    from picked as p
    union all
    select * from ripple
    order by 4 desc, 1 desc;
end
$$;

comment on function pgmem._recall(text, text, public.vector, integer, text[], text, timestamptz, timestamptz,
                                  timestamptz, jsonb, double precision, double precision, integer, timestamptz,
                                  text, text[]) is
    'Internal to recall and context: the ranked rows of a recall, without reinforcement.';
