-- Plain reads of one tenant's memories and history, for apps in any
-- language: one memory, a filtered list, a memory's history, a subject's
-- events, and the export. Ranking reads are pgmem.recall and pgmem.context.
--
-- Each names the tenant (m.tenant_id = pgmem._require_tenant()): a
-- superuser or pgmem_admin bypasses RLS, so without it a service session
-- bound with pgmem.set_tenant would read every tenant's rows; with no
-- tenant bound they fail with PM001. NULL filters mean "any". The
-- filters are written out in each function rather than shared through a
-- helper: a function call in the WHERE clause would hide them from the
-- planner (no index on subject or status) and from Citus's routing.

create or replace function pgmem.get_memory(p_memory_id bigint)
returns table (
    memory_id bigint, subject text, agent_id text, session_id text, kind text, content text,
    importance real, effective_importance real, confidence real, source text, triple_subject text,
    triple_predicate text, triple_object text, valid_from timestamptz, valid_to timestamptz,
    status text, status_changed_at timestamptz, pinned boolean, access_count integer,
    last_accessed_at timestamptz, expires_at timestamptz, metadata jsonb, created_at timestamptz,
    updated_at timestamptz, embedded boolean
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not a subquery: Citus routes the statement to the
    -- tenant's shard by it, and plans no SQL function with parameters
    -- (docs/scaling.md).
    v_tenant text := pgmem._require_tenant();
    v_subject text;
    v_pending record;
begin
    select m.subject into v_subject from pgmem.memories as m
    where m.tenant_id = v_tenant and m.memory_id = p_memory_id;
    -- Accesses recorded and not folded yet count (pgmem._pending_accesses).
    select * into v_pending from pgmem._pending_accesses(v_tenant, array[v_subject]);
    return query
    select m.memory_id, m.subject, m.agent_id, m.session_id, m.kind, m.content, m.importance,
           d.effective_importance, m.confidence, m.source, m.triple_subject, m.triple_predicate,
           m.triple_object, m.valid_from, m.valid_to, m.status, m.status_changed_at, m.pinned,
           m.access_count + coalesce(a.accesses, 0), greatest(m.last_accessed_at, a.last_accessed_at),
           m.expires_at, m.metadata, m.created_at, m.updated_at, m.embedding is not null
    from pgmem.memories as m
    left join pgmem.memory_decay as d on d.tenant_id = m.tenant_id and d.memory_id = m.memory_id
    left join unnest(v_pending.subjects, v_pending.memory_ids, v_pending.accesses,
                     v_pending.last_accessed_at)
        as a(subject, memory_id, accesses, last_accessed_at)
        on a.memory_id = m.memory_id and a.subject = m.subject
    where m.tenant_id = v_tenant and m.memory_id = p_memory_id;
end
$$;

comment on function pgmem.get_memory(bigint) is
    'One memory of the bound tenant with every field (embedded says whether it has a vector); no row for an unknown id. Does not count as an access.';

create or replace function pgmem.list_memories(
    p_subject text default null,
    p_statuses text[] default null,
    p_kinds text[] default null,
    p_session_id text default null,
    p_agent_id text default null,
    p_metadata jsonb default null,
    p_limit integer default 100,
    p_offset integer default 0
)
returns table (
    memory_id bigint, subject text, agent_id text, session_id text, kind text, content text,
    importance real, effective_importance real, source text, triple_subject text,
    triple_predicate text, triple_object text, valid_from timestamptz, valid_to timestamptz,
    status text, pinned boolean, access_count integer, last_accessed_at timestamptz,
    metadata jsonb, created_at timestamptz, updated_at timestamptz
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not a subquery: Citus routes the statement to the
    -- tenant's shard by it, and plans no SQL function with parameters
    -- (docs/scaling.md).
    v_tenant text := pgmem._require_tenant();
    v_pending record;
begin
    -- Accesses recorded and not folded yet count (pgmem._pending_accesses).
    select * into v_pending
    from pgmem._pending_accesses(v_tenant, case when p_subject is not null then array[p_subject] end);
    return query
    select m.memory_id, m.subject, m.agent_id, m.session_id, m.kind, m.content, m.importance,
           d.effective_importance, m.source, m.triple_subject, m.triple_predicate, m.triple_object,
           m.valid_from, m.valid_to, m.status, m.pinned, m.access_count + coalesce(a.accesses, 0),
           greatest(m.last_accessed_at, a.last_accessed_at), m.metadata, m.created_at, m.updated_at
    from pgmem.memories as m
    left join pgmem.memory_decay as d on d.tenant_id = m.tenant_id and d.memory_id = m.memory_id
    left join unnest(v_pending.subjects, v_pending.memory_ids, v_pending.accesses,
                     v_pending.last_accessed_at)
        as a(subject, memory_id, accesses, last_accessed_at)
        on a.memory_id = m.memory_id and a.subject = m.subject
    where m.tenant_id = v_tenant
      and (p_subject is null or m.subject = p_subject)
      and (p_statuses is null or m.status = any (p_statuses))
      and (p_kinds is null or m.kind = any (p_kinds))
      and (p_session_id is null or m.session_id = p_session_id)
      and (p_agent_id is null or m.agent_id = p_agent_id)
      and (p_metadata is null or m.metadata @> p_metadata)
    order by m.memory_id desc
    limit p_limit offset p_offset;
end
$$;

comment on function pgmem.list_memories(text, text[], text[], text, text, jsonb, integer, integer) is
    'The bound tenant''s memories, newest first, filtered by subject, statuses, kinds, session, agent and metadata containment (NULL: any); p_limit rows from p_offset.';

-- History outlives a purged memory (memory_events has no foreign key to it).
create or replace function pgmem.history(p_memory_id bigint)
returns table (
    event_id bigint, memory_id bigint, subject text, event text, actor text, old_content text,
    new_content text, details jsonb, created_at timestamptz
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not a subquery: Citus routes the statement to the
    -- tenant's shard by it, and plans no SQL function with parameters
    -- (docs/scaling.md).
    v_tenant text := pgmem._require_tenant();
begin
    return query
    select e.event_id, e.memory_id, e.subject, e.event, e.actor, e.old_content, e.new_content,
           e.details, e.created_at
    from pgmem.memory_events as e
    where e.tenant_id = v_tenant and e.memory_id = p_memory_id
    order by e.created_at, e.event_id;
end
$$;

comment on function pgmem.history(bigint) is
    'Every recorded change of one memory, oldest first (insert, reinforce, supersede, update, …); kept after the memory is purged.';

-- Events about a subject that no memory's history shows, e.g. the 'reject'
-- events of refused text (which keep no content).
create or replace function pgmem.subject_events(p_subject text, p_event text default null)
returns table (
    event_id bigint, memory_id bigint, event text, actor text, details jsonb, created_at timestamptz
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not a subquery: Citus routes the statement to the
    -- tenant's shard by it, and plans no SQL function with parameters
    -- (docs/scaling.md).
    v_tenant text := pgmem._require_tenant();
begin
    return query
    select e.event_id, e.memory_id, e.event, e.actor, e.details, e.created_at
    from pgmem.memory_events as e
    where e.tenant_id = v_tenant and e.subject = p_subject
      and (p_event is null or e.event = p_event)
    order by e.created_at, e.event_id;
end
$$;

comment on function pgmem.subject_events(text, text) is
    'The events about one subject, oldest first, optionally of one kind (p_event, e.g. ''reject''): details without old or new content.';

create or replace function pgmem.count_memories(p_subject text default null, p_statuses text[] default null)
returns bigint
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not a subquery: Citus routes the statement to the
    -- tenant's shard by it, and plans no SQL function with parameters
    -- (docs/scaling.md).
    v_tenant text := pgmem._require_tenant();
begin
    return (
        select pg_catalog.count(*)
        from pgmem.memories as m
        where m.tenant_id = v_tenant
          and (p_subject is null or m.subject = p_subject)
          and (p_statuses is null or m.status = any (p_statuses))
    );
end
$$;

comment on function pgmem.count_memories(text, text[]) is
    'How many memories pgmem.export_memories would return for the same filters.';

-- Everything needed to rebuild a memory elsewhere, in id order (the order it
-- was written, so an import replays supersessions in the same order).
-- (Its result gained kept and the store item's key, value and time to
-- live: a new result type is a new function.)
drop function if exists pgmem.export_memories(text, text[]);
create or replace function pgmem.export_memories(p_subject text default null, p_statuses text[] default null)
returns table (
    memory_id bigint, subject text, agent_id text, session_id text, kind text, content text,
    embedding real[], importance real, effective_importance real, confidence real, source text,
    triple_subject text, triple_predicate text, triple_object text, valid_from timestamptz,
    valid_to timestamptz, status text, status_changed_at timestamptz, pinned boolean,
    access_count integer, last_accessed_at timestamptz, expires_at timestamptz, metadata jsonb,
    created_at timestamptz, updated_at timestamptz, kept boolean, item_key text, item_value jsonb,
    item_ttl_minutes double precision
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not a subquery: Citus routes the statement to the
    -- tenant's shard by it, and plans no SQL function with parameters
    -- (docs/scaling.md).
    v_tenant text := pgmem._require_tenant();
    v_pending record;
begin
    -- Accesses recorded and not folded yet count (pgmem._pending_accesses).
    select * into v_pending
    from pgmem._pending_accesses(v_tenant, case when p_subject is not null then array[p_subject] end);
    return query
    select m.memory_id, m.subject, m.agent_id, m.session_id, m.kind, m.content,
           m.embedding::real[], m.importance, d.effective_importance, m.confidence,
           m.source, m.triple_subject, m.triple_predicate, m.triple_object, m.valid_from,
           m.valid_to, m.status, m.status_changed_at, m.pinned, m.access_count + coalesce(a.accesses, 0),
           greatest(m.last_accessed_at, a.last_accessed_at), m.expires_at, m.metadata, m.created_at,
           m.updated_at, m.kept, m.item_key, m.item_value, pg_catalog.date_part('epoch', m.item_ttl) / 60
    from pgmem.memories as m
    left join pgmem.memory_decay as d on d.tenant_id = m.tenant_id and d.memory_id = m.memory_id
    left join unnest(v_pending.subjects, v_pending.memory_ids, v_pending.accesses,
                     v_pending.last_accessed_at)
        as a(subject, memory_id, accesses, last_accessed_at)
        on a.memory_id = m.memory_id and a.subject = m.subject
    where m.tenant_id = v_tenant
      and (p_subject is null or m.subject = p_subject)
      and (p_statuses is null or m.status = any (p_statuses))
    order by m.memory_id;
end
$$;

comment on function pgmem.export_memories(text, text[]) is
    'The bound tenant''s memories with every field and the embedding as real[], in id order (write order), a store item''s key, value and ttl in minutes too: what pgmem export writes as JSON lines and Memory.import_memories reads back.';

-- The graph a subject's facts make, as an agent browses it: its entities with
-- the facts that name them, and the typed links of one memory.
create or replace function pgmem.entities(p_subject text, p_limit integer default 50)
returns table(entity text, facts bigint, memory_ids bigint[], triples jsonb)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not a subquery: Citus routes the statement by it.
    v_tenant text := pgmem._require_tenant();
begin
    if p_limit is null or p_limit not between 1 and 1000 then
        raise exception 'p_limit must be 1 to 1000, not %', coalesce(p_limit::text, 'NULL')
            using errcode = 'PM021', hint = 'The entities come most named first.';
    end if;
    return query
    select e.name, pg_catalog.count(*), pg_catalog.array_agg(m.memory_id order by m.memory_id),
           pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'memory_id', m.memory_id, 'subject', m.triple_subject, 'predicate', m.triple_predicate,
               'object', m.triple_object, 'content', m.content) order by m.memory_id)
    from pgmem.memories as m
    cross join lateral pg_catalog.unnest(pgmem._entities(m.triple_subject, m.triple_predicate,
                                                         m.triple_object)) as e(name)
    where m.tenant_id = v_tenant and m.subject = p_subject and m.status = 'active'
      and m.triple_predicate is not null
    group by e.name
    order by pg_catalog.count(*) desc, e.name
    limit p_limit;
end
$$;

comment on function pgmem.entities(text, integer) is
    'The named things (pgmem._entities of each triple) of a subject''s active facts, most named first, each with its facts'' ids and triples (subject, predicate, object, content); at most p_limit (1-1000).';

create or replace function pgmem.memory_links_of(p_memory_id bigint)
returns table(link_type text, direction text, memory_id bigint, content text, status text, weight real,
              created_at timestamptz)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
begin
    return query
    select l.link_type, 'to'::text, l.to_id, m.content, m.status, l.weight, l.created_at
    from pgmem.memory_links as l
    join pgmem.memories as m on m.tenant_id = l.tenant_id and m.memory_id = l.to_id
    where l.tenant_id = v_tenant and l.from_id = p_memory_id
    union all
    select l.link_type, 'from', l.from_id, m.content, m.status, l.weight, l.created_at
    from pgmem.memory_links as l
    join pgmem.memories as m on m.tenant_id = l.tenant_id and m.memory_id = l.from_id
    where l.tenant_id = v_tenant and l.to_id = p_memory_id
    order by 1, 3;
end
$$;

comment on function pgmem.memory_links_of(bigint) is
    'The typed links of one memory (same_session, derived_from, same_entity, supersedes, merged_into), both ways: direction to (this memory links to it) or from, the other memory''s id, content and status, weight.';
