-- Association links at write, and consolidation of episodes into insights.
--
-- Association links (pgmem._link_at_write: the write path calls it for
-- every new active fact; pgmem.link_episodes for the episodes written since
-- their subject's links_pending_from, in the order they were written):
--   * same_entity: the two facts name one entity (pgmem._entities of their
--     triples: normalized names, not the user);
--   * same_session: otherwise, the two facts come from one session (one
--     conversation, so also one turn);
--   weight: same_entity 0.5 + 0.5·cosine (0.75 without vectors), a shared
--   name being evidence on its own; same_session the cosine similarity
--   (at least 0.05; 0.5 without vectors). Ripple recall passes the weight on
--   as a factor of relevance.
--   Bound: a memory holds at most settings.max_links_per_memory association
--   links (both directions). A new fact links to its strongest candidates
--   that still have room; a full memory takes no new link. Links are never
--   deleted to make room: app roles hold no DELETE on memory_links (it would
--   let them LOCK TABLE), and on Citus the owner may not touch a shard the
--   tenant role has just written in the same transaction (docs/scaling.md).
--   Structural links (supersedes, merged_into, derived_from) are history and
--   not bounded.
--
-- Consolidation (the 'consolidate' job of 40_jobs.sql, the worker's
-- pgmem/consolidate.py):
--   1. pg_cron runs pgmem.mark_consolidation: a subject with at least
--      consolidate_min_sources episodes older than consolidate_after that no
--      insight covers yet gets one 'consolidate' inbox job (none while one is
--      pending, none again until more episodes come of age);
--   2. the worker asks pgmem.consolidation_clusters for the subject's
--      clusters: connected episodes, an edge joining two episodes at most
--      consolidate_window apart that are similar (cosine >=
--      consolidate_similarity) or share an entity; a cluster keeps at most
--      consolidate_max_sources episodes (oldest first) and at least
--      consolidate_min_sources. Each comes with an extractive digest;
--   3. the worker writes one insight per cluster: with an LLM, a statement
--      the model writes from the episodes; without one, the digest (the
--      episodes' own text, dated and labelled extractive: no language model
--      summarizes anything). pgmem.consolidate stores it as a semantic
--      memory through remember's decision (so it can be a duplicate of a
--      known fact), links it derived_from each source, and lowers the
--      sources' importance by consolidate_importance, or archives them when
--      consolidate_sources = 'archive'.
--   An episode with a derived_from link into it from an insight is
--   consolidated: no later run takes it again. (The facts extracted from a
--   stated turn link derived_from it too; they consolidate nothing.)
--
-- Error codes: PM062 bad consolidate arguments (unknown method, no sources,
-- the same source twice); PM011/PM012/PM015-PM017 as remember.

create or replace function pgmem._entities(p_triple_subject text, p_triple_predicate text, p_triple_object text)
returns text[]
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- The named things of a triple, normalized: the triple's subject unless
    -- it is the user (every rule fact is about the user: no signal), the
    -- qualifier of a qualified predicate ('opinion_of:sushi' → sushi, whose
    -- object is then a value such as likes), and otherwise the object.
    -- Numbers are values, not names.
    select coalesce(pg_catalog.array_agg(distinct e.name order by e.name), '{}')
    from (values (pgmem._normalize(p_triple_subject)),
                 (pgmem._normalize(nullif(pg_catalog.split_part(p_triple_predicate, ':', 2), ''))),
                 (case when pg_catalog.strpos(p_triple_predicate, ':') = 0 then pgmem._normalize(p_triple_object) end)
         ) as e(name)
    where e.name is not null and e.name <> '' and e.name !~ '^[0-9 .,]+$'
      and e.name not in ('user', 'the user', 'i', 'me', '我', '用户')
$$;

comment on function pgmem._entities(text, text, text) is
    'The normalized entity names of a triple (subject unless the user, qualifier of a predicate like opinion_of:x, else the object; no numbers): what same_entity links compare (internal).';

-- What an association link can join a memory by: its session, or its
-- triple's entities. A memory with neither links to nothing, now or later.
-- SQL without a SET clause, so a query inlines it.
create or replace function pgmem._linkable(p_session_id text, p_triple_predicate text)
returns boolean
language sql
immutable parallel safe
security invoker
as $$
    select p_session_id is not null or p_triple_predicate is not null
$$;

comment on function pgmem._linkable(text, text) is
    'Whether a memory with this session and triple predicate can get association links (same_session, same_entity) at all (internal).';

create or replace function pgmem._link_at_write(p_tenant text, p_memory_ids bigint[], p_now timestamptz)
returns integer
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_max integer;
    v_id bigint;
    v_fact record;
    v_entities text[];
    v_used bigint;
    v_candidates bigint[];
    v_barred bigint[];
    v_added integer;
    v_total integer := 0;
begin
    -- The caller holds the subject's lock (pgmem._lock_subjects): links stay
    -- within one subject, so counts cannot race.
    select s.max_links_per_memory into v_max from pgmem.settings as s where s.tenant_id = p_tenant;
    if coalesce(v_max, 0) = 0 or p_memory_ids is null then
        return 0;
    end if;
    -- One statement per new fact, in the order written: a fact of a batch
    -- sees the rows of the batch before it like any other row.
    foreach v_id in array p_memory_ids loop
        -- The new fact, read once by its key (no status in the condition: a
        -- plan made on a table without statistics then has one index to use).
        select x.subject, x.status, x.session_id, x.embedding, x.triple_predicate,
               case when x.triple_predicate is not null
                    then pgmem._entities(x.triple_subject, x.triple_predicate, x.triple_object) end as entities
        into v_fact
        from pgmem.memories as x
        where x.tenant_id = p_tenant and x.memory_id = v_id;
        -- Nothing to link for a fact no longer active, or without a session
        -- or a triple (most direct writes).
        continue when v_fact.status is distinct from 'active'
                      or not pgmem._linkable(v_fact.session_id, v_fact.triple_predicate);
        v_entities := v_fact.entities;
        -- The new fact's own room: a batch's earlier facts may have linked to it.
        v_used := (select pg_catalog.count(*) from pgmem.memory_links as l
                   where l.tenant_id = p_tenant and l.from_id = v_id
                     and l.link_type in ('same_session', 'same_entity'))
                  + (select pg_catalog.count(*) from pgmem.memory_links as l
                     where l.tenant_id = p_tenant and l.to_id = v_id
                       and l.link_type in ('same_session', 'same_entity'));
        continue when v_used >= v_max;
        -- The possible candidates, then what bars one: a link with the new
        -- fact already, or no room left. Each is one read for all candidates
        -- (a key list on each of memory_links' two indexes), not a read per
        -- candidate, each of which would start a scan under the tenant policy.
        -- The session's rows and the subject's triple facts each through
        -- an index of their own (memories_session, memories_triple), not the
        -- subject's every row.
        v_candidates := array(
            select m.memory_id
            from pgmem.memories as m
            where m.tenant_id = p_tenant and m.subject = v_fact.subject and m.status = 'active'
              and m.session_id = v_fact.session_id and m.memory_id <> v_id
            union
            select m.memory_id
            from pgmem.memories as m
            where v_fact.triple_predicate is not null
              and m.tenant_id = p_tenant and m.subject = v_fact.subject and m.status = 'active'
              and m.triple_predicate is not null and m.memory_id <> v_id);
        continue when pg_catalog.cardinality(v_candidates) = 0;
        v_barred := array(
            select l.id
            from (select l.from_id as id, l.to_id as other, l.link_type
                  from pgmem.memory_links as l
                  where l.tenant_id = p_tenant and l.from_id = any (v_candidates)
                  union all
                  select l.to_id, l.from_id, l.link_type
                  from pgmem.memory_links as l
                  where l.tenant_id = p_tenant and l.to_id = any (v_candidates)) as l
            group by l.id
            having pg_catalog.bool_or(l.other = v_id)
                or pg_catalog.count(*) filter (where l.link_type in ('same_session', 'same_entity')) >= v_max);
        insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, weight, created_at)
        select p_tenant, v_id, c.memory_id, c.link_type, c.weight, p_now
        from (
            select m.memory_id, f.link_type,
                   least(1, case when f.link_type = 'same_entity' then 0.5 + 0.5 * coalesce(f.sim, 0.5)
                                            else greatest(0.05, coalesce(f.sim, 0.5)) end)::real as weight
            from pgmem.memories as m
            cross join lateral (
                select case when v_fact.triple_predicate is not null and m.triple_predicate is not null
                                 and v_entities
                                     operator(pg_catalog.&&)
                                     pgmem._entities(m.triple_subject, m.triple_predicate, m.triple_object)
                            then 'same_entity'
                            when v_fact.session_id is not null and m.session_id = v_fact.session_id
                            then 'same_session'
                       end as link_type,
                       -- NaN (a degenerate stored vector) is no similarity.
                       case when (v_fact.embedding operator(public.<=>) m.embedding) <> 'NaN'::double precision
                            then greatest(0, 1 - (v_fact.embedding operator(public.<=>) m.embedding)) end as sim
            ) as f
            where m.tenant_id = p_tenant and m.memory_id = any (v_candidates)
              and not m.memory_id = any (v_barred)
              and f.link_type is not null
        ) as c
        order by c.weight desc, c.memory_id desc
        limit v_max - v_used
        on conflict do nothing;
        get diagnostics v_added = row_count;
        v_total := v_total + v_added;
    end loop;
    return v_total;
end
$$;

comment on function pgmem._link_at_write(text, bigint[], timestamptz) is
    'Links each new active memory (in order) to the same subject''s active memories that share an entity (same_entity) or its session (same_session), strongest first, at most settings.max_links_per_memory association links per memory on either end; returns how many links it added. The write path (facts) and pgmem.link_episodes call it under the subject''s lock (internal).';

-- An episode (a stated turn, pgmem._episode_source) is linked after its
-- write, not in it: its links matter only to ripple recall, and reading its
-- session's turns and their links was a fifth to a half of a turn's write.
-- The write records the subject's oldest unlinked episode; this links the
-- subject's active episodes from there on as one batch of the write path
-- would have (in id order, each seeing all the others), and clears the mark.
-- Subjects locked by a writer are skipped: their mark stays for the next run.
-- A subject it takes stays locked until the caller's transaction ends, so
-- p_limit bounds how many one transaction takes; 'waiting' says how many
-- marked subjects it left (over the limit, or held by a writer), for the
-- caller to go on in a new transaction. What a run costs is the write path's
-- cost per episode: it moved, it did not vanish.
create or replace function pgmem.link_episodes(
    p_now timestamptz default null,
    p_tenant text default null,
    p_subjects text[] default null,
    p_limit integer default null
)
returns table(subjects integer, episodes integer, links integer, waiting integer)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
set jit = off
as $$
declare
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_scope text := pgmem._maintenance_scope(p_tenant);
    v_tenant text;
    v_pending record;
    v_ids bigint[];
begin
    if p_limit is not null and p_limit < 1 then
        raise exception 'p_limit must be at least 1 (NULL: no limit), not %', p_limit
            using errcode = '22023';
    end if;
    subjects := 0;
    episodes := 0;
    links := 0;
    -- Tenant by tenant: on Citus a locking read must stay within one shard.
    for v_tenant in
        select distinct s.tenant_id
        from pgmem.subjects as s
        where s.links_pending_from is not null and (v_scope is null or s.tenant_id = v_scope)
        order by s.tenant_id
    loop
        exit when subjects >= p_limit;
        for v_pending in
            select s.subject, s.links_pending_from
            from pgmem.subjects as s
            where s.tenant_id = v_tenant and s.links_pending_from is not null
              and (p_subjects is null or s.subject = any (p_subjects))
            order by s.subject
            limit p_limit - subjects
            for update skip locked
        loop
            v_ids := array(
                select m.memory_id
                from pgmem.memories as m
                where m.tenant_id = v_tenant and m.subject = v_pending.subject and m.status = 'active'
                  and m.memory_id >= v_pending.links_pending_from and pgmem._episode_source(m.source)
                  and pgmem._linkable(m.session_id, m.triple_predicate)
                order by m.memory_id);
            links := links + pgmem._link_at_write(v_tenant, v_ids, v_now);
            update pgmem.subjects as s set links_pending_from = null
            where s.tenant_id = v_tenant and s.subject = v_pending.subject;
            subjects := subjects + 1;
            episodes := episodes + pg_catalog.cardinality(v_ids);
        end loop;
    end loop;
    -- Those this call took are no longer marked (to this transaction).
    waiting := (select pg_catalog.count(*)
                from pgmem.subjects as s
                where s.links_pending_from is not null and (v_scope is null or s.tenant_id = v_scope)
                  and (p_subjects is null or s.subject = any (p_subjects)));
    return next;
end
$$;

comment on function pgmem.link_episodes(timestamptz, text, text[], integer) is
    'Makes the association links of the episodes written since each subject''s links_pending_from (of p_subjects, or every subject; at most p_limit subjects), as the write path makes a fact''s, and clears the mark; subjects a writer holds are left for the next run. The links job runs it every minute, 100 subjects a transaction; the worker after each batch. Returns how many subjects, episodes and links, and how many marked subjects are still waiting. A tenant role links its own tenant''s (p_tenant NULL or its own); pgmem_admin every tenant''s or p_tenant''s.';

create or replace function pgmem._consolidation_pool(
    p_tenant text,
    p_settings pgmem.settings,
    p_subject text,
    p_now timestamptz
)
returns table (memory_id bigint, content text, embedding public.halfvec, valid_from timestamptz, entities text[])
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- PL/pgSQL, not SQL: Citus plans no SQL-language function that passes
    -- parameters to a distributed table (docs/scaling.md).
    return query
    select m.memory_id, m.content, m.embedding, m.valid_from,
           pgmem._entities(m.triple_subject, m.triple_predicate, m.triple_object)
    from pgmem.memories as m
    where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active' and m.kind = 'episodic'
      and not m.pinned
      and m.created_at <= p_now - p_settings.consolidate_after
      and not exists (select from pgmem.memory_links as l
                      join pgmem.memories as i on i.tenant_id = l.tenant_id and i.memory_id = l.from_id
                      where l.tenant_id = p_tenant and l.to_id = m.memory_id and l.link_type = 'derived_from'
                        and i.metadata ? 'consolidated_from');
end
$$;

comment on function pgmem._consolidation_pool(text, pgmem.settings, text, timestamptz) is
    'A subject''s episodes that consolidation may take: active, not pinned, older than consolidate_after, not yet the source of an insight (internal).';

create or replace function pgmem.consolidation_clusters(p_subject text, p_now timestamptz default null)
returns table (
    cluster integer,
    memory_ids bigint[],
    contents text[],
    first_at timestamptz,
    last_at timestamptz,
    digest text
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
begin
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant;
    return query
    with recursive pool as materialized (
        select p.* from pgmem._consolidation_pool(v_tenant, v_settings, p_subject, v_now) as p
    ),
    edges as materialized (
        select a.memory_id as a, b.memory_id as b
        from pool as a
        join pool as b on a.memory_id < b.memory_id
        where pg_catalog.abs(extract(epoch from a.valid_from - b.valid_from))
                  <= extract(epoch from v_settings.consolidate_window)
          and (a.entities operator(pg_catalog.&&) b.entities
               or (a.embedding operator(public.<=>) b.embedding) <= 1 - v_settings.consolidate_similarity)
    ),
    undirected as (
        select e.a, e.b from edges as e
        union all
        select e.b, e.a from edges as e
    ),
    -- Connected components: every episode reaches its whole cluster, and
    -- the smallest id it reaches names the cluster.
    reach (root, node) as (
        select p.memory_id, p.memory_id from pool as p
        union
        select r.root, u.b from reach as r join undirected as u on u.a = r.node
    ),
    component as (
        select r.root as node, pg_catalog.min(r.node) as id from reach as r group by r.root
    ),
    -- A big component is cut into runs of consolidate_max_sources, oldest
    -- first; a run too short to be a pattern waits for more episodes.
    runs as (
        select c.id, p.*,
               (pg_catalog.row_number() over (partition by c.id order by p.valid_from, p.memory_id) - 1)
                   / v_settings.consolidate_max_sources as run
        from component as c
        join pool as p on p.memory_id = c.node
    ),
    clusters as (
        select r.id, r.run,
               pg_catalog.array_agg(r.memory_id order by r.valid_from, r.memory_id) as ids,
               pg_catalog.array_agg(r.content order by r.valid_from, r.memory_id) as texts,
               pg_catalog.min(r.valid_from) as first_at, pg_catalog.max(r.valid_from) as last_at
        from runs as r
        group by r.id, r.run
        having pg_catalog.count(*) >= v_settings.consolidate_min_sources
    )
    select (pg_catalog.row_number() over (order by c.first_at, c.id, c.run))::integer,
           c.ids, c.texts, c.first_at, c.last_at,
           -- The extractive digest: the episodes' own words, dated, within
           -- max_content_bytes (4 bytes a character at most in UTF-8).
           pg_catalog.left(
               pg_catalog.format('[extractive insight: no LLM; %s episodes, %s to %s] ',
                                 pg_catalog.cardinality(c.ids), pg_catalog.to_char(c.first_at, 'YYYY-MM-DD'),
                                 pg_catalog.to_char(c.last_at, 'YYYY-MM-DD'))
                   || pg_catalog.array_to_string(
                          array(select pg_catalog.regexp_replace(t, '\s+', ' ', 'g')
                                from pg_catalog.unnest(c.texts) as t), ' | '),
               v_settings.max_content_bytes / 4)
    from clusters as c
    order by 1;
end
$$;

comment on function pgmem.consolidation_clusters(text, timestamptz) is
    'The clusters of a subject''s episodes that consolidation would turn into insights now (or as of p_now): connected episodes at most consolidate_window apart that are similar (cosine >= consolidate_similarity) or share an entity, consolidate_min_sources to consolidate_max_sources each (oldest first), with their ids, texts, dates and an extractive digest (the insight written without a language model).';

create or replace function pgmem.consolidate(
    p_subject text,
    p_source_ids bigint[],
    p_content text,
    p_embedding real[] default null,
    p_method text default 'extractive',
    p_now timestamptz default null
)
returns table (action text, insight_id bigint, sources integer, source_action text)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
set jit = off
as $$
#variable_conflict use_column
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
    v_rule text;
    v_content text;
    v_redacted text[];
    v_valid integer;
    v_importance real;
    v_from timestamptz;
    v_to timestamptz;
    v_sources bigint[];
begin
    if p_method is null or p_method not in ('llm', 'extractive') then
        raise exception 'unknown consolidation method: %', coalesce(pg_catalog.quote_literal(p_method), 'NULL')
            using errcode = 'PM062', hint = 'p_method is llm (a model wrote the insight) or extractive.';
    end if;
    if pg_catalog.cardinality(p_source_ids) is null or pg_catalog.cardinality(p_source_ids) = 0
       or (select pg_catalog.count(distinct s) from pg_catalog.unnest(p_source_ids) as s)
          <> pg_catalog.cardinality(p_source_ids) then
        raise exception 'pgmem.consolidate needs distinct source memory ids, not %', coalesce(p_source_ids::text, 'NULL')
            using errcode = 'PM062', hint = 'Pass the memory_ids of a row of pgmem.consolidation_clusters().';
    end if;
    v_settings := pgmem._begin_write(v_tenant, p_subject, p_content, 'semantic', null, p_embedding, null, null,
                                     null, case p_method when 'llm' then 'llm' else 'rule' end, '{}', null, null,
                                     v_now, v_now);

    -- The sources as the clusters showed them: still active episodes of this
    -- subject that no insight covers. Anything else (archived, merged,
    -- consolidated by another worker meanwhile) and the cluster is stale.
    select pg_catalog.count(*), pg_catalog.max(m.importance), pg_catalog.min(m.valid_from),
           pg_catalog.max(m.valid_from)
    into v_valid, v_importance, v_from, v_to
    from (select m.* from pgmem.memories as m
          where m.tenant_id = v_tenant and m.memory_id = any (p_source_ids)
          for no key update) as m
    where m.subject = p_subject and m.status = 'active' and m.kind = 'episodic'
      and not exists (select from pgmem.memory_links as l
                      join pgmem.memories as i on i.tenant_id = l.tenant_id and i.memory_id = l.from_id
                      where l.tenant_id = v_tenant and l.to_id = m.memory_id and l.link_type = 'derived_from'
                        and i.metadata ? 'consolidated_from');
    sources := pg_catalog.cardinality(p_source_ids);
    if v_valid <> pg_catalog.cardinality(p_source_ids) then
        action := 'skipped';
        return next;
        return;
    end if;

    v_rule := pgmem.detect_injection(p_content);
    if v_rule is not null then
        perform pgmem._reject(v_tenant, p_subject, array[p_content], array[v_rule], null, v_now);
        action := 'rejected';
        return next;
        return;
    end if;
    select r.content, r.kinds into v_content, v_redacted from pgmem._redact_many(array[p_content]) as r;

    -- The insight takes remember's decision (it may be a fact known already),
    -- as strong as its strongest source, valid from its first.
    select d.action, d.memory_id into action, insight_id
    from pgmem._remember_decide(v_tenant, v_settings, p_subject, v_content, v_redacted,
                                p_embedding::public.vector, 'semantic', v_importance, null, null, null, null, null,
                                case p_method when 'llm' then 'llm' else 'rule' end,
                                pg_catalog.jsonb_build_object('consolidated_from', pg_catalog.cardinality(p_source_ids),
                                                              'method', p_method,
                                                              'first_at', v_from, 'last_at', v_to),
                                v_from, v_now,
                                pgmem._default_confidence(v_settings, case p_method when 'llm' then 'llm' else 'rule' end),
                                pgmem._default_expiry(v_settings, 'semantic', v_from),
                                -- An insight restates its sources: it must not retire
                                -- one of them as a contradiction before they are lowered,
                                -- nor be folded into one of them.
                                false, null, null, p_source_ids) as d;
    -- Only a source said again word for word is the insight itself.
    v_sources := array(select s from pg_catalog.unnest(p_source_ids) as s where s <> insight_id);

    insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, created_at)
    select v_tenant, insight_id, s, 'derived_from', v_now from pg_catalog.unnest(v_sources) as s
    on conflict do nothing;

    if v_settings.consolidate_sources = 'archive' then
        update pgmem.memories as m
        set status = 'archived', status_changed_at = v_now, updated_at = v_now
        where m.tenant_id = v_tenant and m.memory_id = any (v_sources);
        source_action := 'archived';
    else
        update pgmem.memories as m
        set importance = m.importance * v_settings.consolidate_importance, updated_at = v_now
        where m.tenant_id = v_tenant and m.memory_id = any (v_sources);
        source_action := 'lowered';
    end if;
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
    select v_tenant, m.memory_id, p_subject, case source_action when 'archived' then 'archive' else 'update' end,
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'reason', 'consolidated', 'insight_id', insight_id, 'method', p_method,
               'importance', case source_action when 'lowered' then m.importance end)),
           v_now
    from pgmem.memories as m
    where m.tenant_id = v_tenant and m.memory_id = any (v_sources);
    sources := pg_catalog.cardinality(v_sources);
    return next;
end
$$;

comment on function pgmem.consolidate(text, bigint[], text, real[], text, timestamptz) is
    'Writes one insight (a semantic memory through remember''s decision: injection-checked, redacted, possibly a duplicate of a known fact) from the episodes p_source_ids of p_subject, links it derived_from each source and lowers their importance by settings.consolidate_importance, or archives them when consolidate_sources = archive; events on every row. p_method: llm or extractive (no language model). Returns the insight''s write action and id, or skipped when a source is no longer an unconsolidated active episode. PM062 bad method or ids.';

create or replace function pgmem.mark_consolidation(p_now timestamptz default null, p_tenant text default null)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_marked bigint;
begin
    -- Set-based over every tenant (or one). A subject is due when it has
    -- enough episodes to consolidate and some came of age since its last
    -- job looked (payload.now), and no job of its is pending. The job is
    -- due at once (available_at is the real clock, even under a moved one).
    -- payload.now is read leniently: a tenant's own malformed row (written
    -- before the inbox guard checked it) must not fail the job for all.
    insert into pgmem.inbox (tenant_id, job, subject, payload, available_at, created_at)
    select d.tenant_id, 'consolidate', d.subject, pg_catalog.jsonb_build_object('now', v_now),
           pg_catalog.now(), pg_catalog.now()
    from (select m.tenant_id, m.subject, s.consolidate_after, pg_catalog.max(m.created_at) as newest
          from pgmem.memories as m
          join pgmem.settings as s on s.tenant_id = m.tenant_id
          where (p_tenant is null or m.tenant_id = p_tenant)
            and m.status = 'active' and m.kind = 'episodic' and not m.pinned
            and m.created_at <= v_now - s.consolidate_after
            and not exists (select from pgmem.memory_links as l
                            join pgmem.memories as i on i.tenant_id = l.tenant_id and i.memory_id = l.from_id
                            where l.tenant_id = m.tenant_id and l.to_id = m.memory_id
                              and l.link_type = 'derived_from' and i.metadata ? 'consolidated_from')
          group by m.tenant_id, m.subject, s.consolidate_after, s.consolidate_min_sources
          having pg_catalog.count(*) >= s.consolidate_min_sources) as d
    where not exists (select from pgmem.inbox as i
                      where i.tenant_id = d.tenant_id and i.subject = d.subject and i.job = 'consolidate'
                        and (i.status = 'pending'
                             or pgmem._timestamptz_or_null(i.payload ->> 'now') - d.consolidate_after
                                >= d.newest))
    order by d.tenant_id, d.subject;
    get diagnostics v_marked = row_count;
    if v_marked > 0 then
        perform pg_catalog.pg_notify('pgmem_inbox', '');  -- no tenant: any role may LISTEN
    end if;
    return v_marked;
end
$$;

comment on function pgmem.mark_consolidation(timestamptz, text) is
    'The consolidate job''s SQL part: queues one consolidate inbox job per subject (of every tenant, or p_tenant) with at least consolidate_min_sources unconsolidated episodes older than consolidate_after, unless one is pending or none came of age since the last; the worker writes the insights. Returns how many subjects it marked.';
