-- The worker's side of the write path (pgmem/worker.py), beyond the queue
-- of 60_queue.sql:
--   * memories written by plain SQL without an embedding are found and
--     locked set-based (pgmem.claim_unembedded) and get their vector from
--     pgmem.set_embedding; no inbox row is needed for them;
--   * near-duplicates that pgmem.remember marked 'merge_pending' are merged
--     by pgmem.merge once the worker has the merged text (LLM, or the more
--     specific of the two facts).
-- Like the queue, everything runs in the worker's batch transaction, so a
-- killed worker leaves no half-embedded or half-merged state behind.
--
-- Error codes: the write path's for the same faults (PM015-PM017 unusable
-- embedding, PM022 unknown memory id), and
--   PM060  pgmem.merge given one id twice, or memories of two subjects.

-- Before it took the worker's model it had one argument.
drop function if exists pgmem.claim_unembedded(integer);

create or replace function pgmem.claim_unembedded(p_limit integer default 64, p_model text default null)
returns table (tenant_id text, memory_id bigint, subject text, content text)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem.current_tenant();
    v_model text;
begin
    -- FOR NO KEY UPDATE (what the UPDATE in set_embedding takes) keeps
    -- concurrent inserts of memory_links (foreign-key checks) unblocked;
    -- SKIP LOCKED lets several workers embed side by side. Rows stay locked
    -- until the caller's transaction ends. RLS applies: a BYPASSRLS worker
    -- sees every tenant, a tenant-bound one its own. The bound tenant is
    -- named in the WHERE clause too: on Citus that routes the locking read to
    -- the tenant's shard (docs/scaling.md).
    -- Only tenants on the worker's model (or none recorded yet): another
    -- model's vector would be refused (PM025).
    if v_tenant is not null then
        -- The tenant's model a constant: Citus routes the read to one shard.
        v_model := (select s.embedding_model from pgmem.settings as s where s.tenant_id = v_tenant);
        return query
        select m.tenant_id, m.memory_id, m.subject, m.content
        from pgmem.memories as m
        where m.status = 'active' and m.embedding is null and m.tenant_id = v_tenant
          and not (m.source = 'store' and m.metadata @> '{"index": false}')
          and pgmem._job_fits_model(null, null, v_model, p_model)
        order by m.memory_id
        limit greatest(p_limit, 1)
        for no key update of m skip locked;
        return;
    end if;
    return query
    select m.tenant_id, m.memory_id, m.subject, m.content
    from pgmem.memories as m
    where m.status = 'active' and m.embedding is null
      -- A store item put with index false stays out of vector search
      -- (memories_unembedded leaves it out too).
      and not (m.source = 'store' and m.metadata @> '{"index": false}')
      and (p_model is null
           or coalesce((select s.embedding_model = p_model from pgmem.settings as s
                        where s.tenant_id = m.tenant_id), true))
    order by m.memory_id
    limit greatest(p_limit, 1)
    for no key update of m skip locked;
end
$$;

comment on function pgmem.claim_unembedded(integer, text) is
    'Locks up to p_limit active memories without an embedding (but store items put with index false) (FOR NO KEY UPDATE SKIP LOCKED), oldest first, of tenants on p_model (or with no model recorded; every tenant when NULL); give each its vector with pgmem.set_embedding in the same transaction.';


create or replace function pgmem.set_embedding(
    p_memory_id bigint,
    p_embedding real[],
    p_model text default null
)
returns void
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_settings pgmem.settings;
    v_subject text;
begin
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant;
    perform pgmem._check_embedding_model(v_settings, p_model);
    perform pgmem._check_embedding(v_settings, p_embedding);
    update pgmem.memories as m
    set embedding = p_embedding::public.vector, updated_at = pg_catalog.now()
    where m.tenant_id = v_tenant and m.memory_id = p_memory_id
    returning m.subject into v_subject;
    if not found then
        raise exception 'tenant % has no memory %', v_tenant, coalesce(p_memory_id::text, 'NULL')
            using errcode = 'PM022';
    end if;
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details)
    values (v_tenant, p_memory_id, v_subject, 'embed',
            pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                'dims', v_settings.embedding_dims, 'model', p_model)));
end
$$;

comment on function pgmem.set_embedding(bigint, real[], text) is
    'Stores the embedding of a memory (real[] or vector, checked like pgmem.remember checks one: PM015-PM017, PM025 when p_model is not the tenant''s; PM022 for an unknown id) and records an embed event naming p_model.';

create or replace function pgmem.merge(
    p_keep_id bigint,
    p_other_id bigint,
    p_content text default null,
    p_embedding real[] default null,
    p_now timestamptz default null
)
returns table (action text, keep_id bigint, other_id bigint, content_changed boolean)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
    v_subject text;
    v_keep pgmem.memories;
    v_other pgmem.memories;
    v_content text;
    v_redacted text[];
    v_details jsonb := '{}';
begin
    keep_id := p_keep_id;
    other_id := p_other_id;
    content_changed := false;
    if p_keep_id is null or p_other_id is null or p_keep_id = p_other_id then
        raise exception 'pgmem.merge needs two different memory ids, not % and %',
                        coalesce(p_keep_id::text, 'NULL'), coalesce(p_other_id::text, 'NULL')
            using errcode = 'PM060';
    end if;
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant;
    if p_embedding is not null then
        perform pgmem._check_embedding(v_settings, p_embedding);
    end if;

    -- Every write about a subject holds its lock (as pgmem.remember does),
    -- taken before the memory rows, in remember's order.
    select m.subject into v_subject from pgmem.memories as m
    where m.tenant_id = v_tenant and m.memory_id = p_keep_id;
    if not found then
        raise exception 'tenant % has no memory %', v_tenant, p_keep_id using errcode = 'PM022';
    end if;
    perform pgmem._lock_subjects(v_tenant, array[v_subject], v_now);
    select m.* into v_keep from pgmem.memories as m
    where m.tenant_id = v_tenant and m.memory_id = p_keep_id
    for no key update;
    select m.* into v_other from pgmem.memories as m
    where m.tenant_id = v_tenant and m.memory_id = p_other_id
    for no key update;
    -- Its accesses not folded yet are its history too (pgmem._pending_accesses).
    select v_other.access_count + coalesce(pg_catalog.sum(a.accesses), 0)::integer,
           greatest(v_other.last_accessed_at, pg_catalog.max(a.last_accessed_at))
    into v_other.access_count, v_other.last_accessed_at
    from pgmem._pending_accesses(v_tenant, array[v_other.subject]) as p
    cross join lateral unnest(p.subjects, p.memory_ids, p.accesses, p.last_accessed_at)
        as a(subject, memory_id, accesses, last_accessed_at)
    where a.memory_id = p_other_id and a.subject = v_other.subject;
    if v_other.memory_id is null then
        raise exception 'tenant % has no memory %', v_tenant, p_other_id using errcode = 'PM022';
    end if;
    if v_keep.subject <> v_other.subject then
        raise exception 'memories % and % are about different subjects (% and %)',
                        p_keep_id, p_other_id, v_keep.subject, v_other.subject
            using errcode = 'PM060', hint = 'Only facts about the same subject can be merged.';
    end if;

    -- A repeated merge (a retried job, a second worker) changes nothing.
    if v_other.status = 'merged' and exists (
           select from pgmem.memory_links as l
           where l.tenant_id = v_tenant and l.from_id = p_other_id and l.to_id = p_keep_id
             and l.link_type = 'merged_into') then
        action := 'already_merged';
        return next;
        return;
    end if;
    -- Superseded, archived, deleted or merged elsewhere since the job was
    -- queued: the decision that asked for the merge no longer holds.
    if v_keep.status <> 'active' or v_other.status <> 'active' then
        action := 'skipped';
        return next;
        return;
    end if;

    -- The merged text goes through remember's filters: injected text is
    -- ignored (the kept fact stays as it was), secrets are redacted.
    if p_content is not null and pg_catalog.btrim(p_content) <> '' and p_content <> v_keep.content then
        if pgmem.detect_injection(p_content) is not null then
            v_details := pg_catalog.jsonb_build_object('ignored_content', 'prompt_injection',
                                                       'rule', pgmem.detect_injection(p_content));
        else
            select r.content, r.kinds into v_content, v_redacted from pgmem._redact_many(array[p_content]) as r;
            if pg_catalog.cardinality(v_redacted) > 0 then
                v_details := pg_catalog.jsonb_build_object('redacted', pg_catalog.to_jsonb(v_redacted));
            end if;
            if v_content = v_keep.content then
                v_content := null;
            end if;
        end if;
    end if;

    -- The other row goes first: it frees its content for the kept row.
    update pgmem.memories as m
    set status = 'merged', status_changed_at = v_now, updated_at = v_now
    where m.tenant_id = v_tenant and m.memory_id = p_other_id;

    -- A third active memory already saying the merged text: keep the text
    -- as it was rather than break the one-active-copy rule.
    if v_content is not null and exists (
           select from pgmem.memories as m
           where m.tenant_id = v_tenant and m.subject = v_subject and m.status = 'active'
             and m.content_hash = pgmem._content_hash(v_content) and m.memory_id <> p_keep_id
             and pgmem._episode_source(m.source) = pgmem._episode_source(v_keep.source)) then
        v_details := v_details || pg_catalog.jsonb_build_object('ignored_content', 'duplicate');
        v_content := null;
    end if;
    content_changed := v_content is not null;

    -- The kept row carries what both knew: the stronger importance and
    -- confidence, both access histories, the earlier start of validity, a
    -- pin or triple either had.
    update pgmem.memories as m
    set content = coalesce(v_content, m.content),
        embedding = case when v_content is null then m.embedding
                         else p_embedding::public.vector end,  -- NULL: the worker's embed pass fills it
        importance = greatest(m.importance, v_other.importance),
        confidence = greatest(m.confidence, v_other.confidence),
        access_count = m.access_count + v_other.access_count,
        last_accessed_at = greatest(m.last_accessed_at, v_other.last_accessed_at),
        valid_from = least(m.valid_from, v_other.valid_from),
        pinned = m.pinned or v_other.pinned,
        expires_at = case when m.expires_at is null or v_other.expires_at is null then null
                          else greatest(m.expires_at, v_other.expires_at) end,
        triple_subject = coalesce(m.triple_subject, v_other.triple_subject),
        triple_predicate = case when m.triple_subject is null then v_other.triple_predicate else m.triple_predicate end,
        triple_object = case when m.triple_subject is null then v_other.triple_object else m.triple_object end,
        metadata = v_other.metadata || m.metadata,
        updated_at = v_now
    where m.tenant_id = v_tenant and m.memory_id = p_keep_id;

    -- Links of the merged row now also lead to the kept one (ripple recall).
    insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, weight, created_at)
    select v_tenant, p_keep_id, l.to_id, l.link_type, l.weight, v_now
    from pgmem.memory_links as l
    where l.tenant_id = v_tenant and l.from_id = p_other_id and l.to_id <> p_keep_id
      and l.link_type <> 'merged_into'
    on conflict do nothing;
    insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, weight, created_at)
    select v_tenant, l.from_id, p_keep_id, l.link_type, l.weight, v_now
    from pgmem.memory_links as l
    where l.tenant_id = v_tenant and l.to_id = p_other_id and l.from_id <> p_keep_id
      and l.link_type <> 'merged_into'
    on conflict do nothing;
    insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, created_at)
    values (v_tenant, p_other_id, p_keep_id, 'merged_into', v_now);

    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                     created_at)
    values (v_tenant, p_keep_id, v_subject, 'merge', v_keep.content, coalesce(v_content, v_keep.content),
            v_details || pg_catalog.jsonb_build_object('role', 'kept', 'merged_from', p_other_id,
                                                       'content_changed', content_changed),
            v_now),
           (v_tenant, p_other_id, v_subject, 'merge', v_other.content, coalesce(v_content, v_keep.content),
            pg_catalog.jsonb_build_object('role', 'merged', 'merged_into', p_keep_id),
            v_now);
    action := 'merged';
    return next;
end
$$;

comment on function pgmem.merge(bigint, bigint, text, real[], timestamptz) is
    'Merges near-duplicate p_other_id into p_keep_id: the other row becomes status merged with a merged_into link, the kept row takes p_content/p_embedding when given (injection-checked, redacted) and the stronger of both rows'' importance, pins and history; merge events on both. Returns merged, already_merged (repeat: no change) or skipped (either row no longer active). PM022 unknown id, PM060 same id or different subjects.';
