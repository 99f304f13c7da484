-- The write path: pgmem.remember decides what a new fact does to memory,
-- in one transaction and under a per-(tenant, subject) lock (the row of
-- pgmem.subjects, SELECT … FOR UPDATE), so concurrent writers cannot
-- create twins. In this order:
--   1. text matching a prompt-injection rule      → 'rejected' (nothing stored;
--      a 'reject' event keeps the rule and a SHA-256 of the text, not the text)
--   2. same normalized content already active      → 'reinforced'
--   3. same subject + triple_subject + predicate:
--        same object                               → 'reinforced' (that row)
--        other object                              → 'superseded' (old row closed,
--                                                    status superseded, link)
--        other object, but older (valid_from) than
--        the active fact: a late arrival           → 'outdated' (stored already
--                                                    superseded by the newer one)
--   4. cosine similarity ≥ settings.duplicate_threshold → 'deduplicated'
--   5. cosine similarity ≥ settings.merge_threshold     → 'merge_pending'
--      (inserted, and a 'merge' job for the worker in pgmem.inbox)
--   6. otherwise                                    → 'inserted'
-- Secrets and personal data are redacted (pgmem.redact) before any of this,
-- so two facts that differ only in a phone number are the same fact.
-- Every change writes a pgmem.memory_events row. Similarity is checked by
-- an exact scan over the subject's active memories, not the HNSW index: a
-- subject holds at most settings.capacity_per_subject rows, and an ANN
-- index filtered to one subject can miss its nearest neighbour.
--
-- Error codes (SQLSTATE class PM; PM001-PM003 are tenancy's, PM04x the queue's):
--   PM010  p_subject is NULL, blank or longer than 256 characters
--   PM011  p_content is NULL, empty or only white space
--   PM012  p_content is larger than settings.max_content_bytes (UTF-8 bytes)
--   PM013  p_kind is not episodic, semantic, preference or procedural
--   PM014  p_importance is outside 0..1
--   PM015  p_embedding has the wrong number of dimensions (settings.embedding_dims)
--   PM016  p_embedding holds NaN, an infinite or a NULL element
--   PM017  p_embedding is the zero vector (cosine similarity is undefined)
--   PM018  the triple is incomplete: give subject, predicate and object, or none
--   PM019  p_source is not rule, llm, manual, sql or import
--   PM020  p_metadata is not a JSON object
--   PM021  p_items is not a JSON array of objects with known keys (remember_many)
--   PM022  unknown memory id: this tenant has no memory with that id
-- In remember_many the argument is named p_items[<n>].<field>, n counting from 1
-- like the item column of its result.

create or replace function pgmem._embedding_stats(
    p_embedding real[],
    out dims integer,
    out finite boolean,
    out norm double precision
)
language sql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Embeddings arrive as real[] rather than vector: a vector cannot even
    -- hold NaN, so the caller would get pgvector's cast error, not PM016.
    select case when pg_catalog.array_ndims(p_embedding) = 1 then pg_catalog.cardinality(p_embedding) else -1 end,
           pg_catalog.count(*) filter (where x.v is null or x.v in ('NaN', 'Infinity', '-Infinity')) = 0,
           pg_catalog.sum(x.v::double precision * x.v::double precision)
    from pg_catalog.unnest(p_embedding) as x(v)
$$;

comment on function pgmem._embedding_stats(real[]) is
    'Dimensions (-1 for a nested array), whether every element is finite, and the squared norm of an embedding (internal; see pgmem._check_embedding_stats).';

create or replace function pgmem._check_embedding_stats(
    p_settings pgmem.settings,
    p_arg text,
    p_dims integer,
    p_finite boolean,
    p_norm double precision
)
returns void
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- The one place an embedding is refused: PM015 size, PM016 NaN/∞/NULL,
    -- PM017 zero vector. p_arg names the argument ('p_' or 'p_items[3].').
    if p_dims is distinct from p_settings.embedding_dims then
        raise exception '%embedding has %; this tenant stores %-dimensional vectors', p_arg,
                        case when p_dims < 0 then 'more than one array dimension'
                             else coalesce(p_dims, 0) || ' dimensions' end,
                        p_settings.embedding_dims
            using errcode = 'PM015',
                  hint = pg_catalog.format('Embed with the tenant''s model (%s, a one-dimensional array of %s numbers), '
                                           'or pass NULL and let the worker embed it.',
                                           p_settings.embedding_model, p_settings.embedding_dims);
    end if;
    if not p_finite then
        raise exception '%embedding holds NaN, an infinite value or a NULL', p_arg
            using errcode = 'PM016', hint = 'Every element must be a finite number; check the embedding model''s output.';
    end if;
    if p_norm = 0 then
        raise exception '%embedding is the zero vector', p_arg
            using errcode = 'PM017',
                  hint = 'A zero vector has no direction for cosine similarity; pass NULL to store text only.';
    end if;
end
$$;

comment on function pgmem._check_embedding_stats(pgmem.settings, text, integer, boolean, double precision) is
    'Raises PM015 (dimension), PM016 (NaN, infinite or NULL element) or PM017 (zero vector) for an embedding measured by pgmem._embedding_stats or set-based (internal).';

create or replace function pgmem._check_embedding(p_settings pgmem.settings, p_embedding real[])
returns void
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pgmem._check_embedding_stats(p_settings, 'p_', s.dims, s.finite, s.norm)
    from pgmem._embedding_stats(p_embedding) as s
$$;

comment on function pgmem._check_embedding(pgmem.settings, real[]) is
    'Raises PM015, PM016 or PM017 for an unusable embedding, as pgmem.remember does (internal).';

create or replace function pgmem._check_memory_input(
    p_item integer,
    p_settings pgmem.settings,
    p_subject text,
    p_content text,
    p_kind text,
    p_importance double precision,
    p_dims integer,
    p_finite boolean,
    p_norm double precision,
    p_triple_subject text,
    p_triple_predicate text,
    p_triple_object text,
    p_source text,
    p_metadata jsonb
)
returns void
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- Argument names as the caller wrote them: p_content, or p_items[3].content.
    v_arg text := case when p_item is null then 'p_' else pg_catalog.format('p_items[%s].', p_item) end;
begin
    if p_subject is null or pg_catalog.btrim(p_subject) = '' or pg_catalog.length(p_subject) > 256 then
        raise exception '%subject must be 1 to 256 characters, not blank', v_arg
            using errcode = 'PM010',
                  hint = 'The subject is whom the memory is about, usually the user id.';
    end if;
    if p_content is null or pg_catalog.btrim(p_content, E' \t\n\r\f\x0b\u00a0\u3000') = '' then
        raise exception '%content is empty', v_arg
            using errcode = 'PM011', hint = 'Pass the fact as text, e.g. ''User prefers dark mode''.';
    end if;
    if pg_catalog.octet_length(p_content) > p_settings.max_content_bytes then
        raise exception '%content is % bytes; this tenant stores at most % bytes per memory',
                        v_arg, pg_catalog.octet_length(p_content), p_settings.max_content_bytes
            using errcode = 'PM012',
                  hint = 'Split it into smaller facts, or raise max_content_bytes in the tenant''s pgmem.settings row.';
    end if;
    -- The same list as the CHECK constraint on pgmem.memories.kind.
    if p_kind is null or p_kind not in ('episodic', 'semantic', 'preference', 'procedural') then
        raise exception '%kind % is not a memory kind', v_arg, coalesce(pg_catalog.quote_literal(p_kind), 'NULL')
            using errcode = 'PM013', hint = 'Use one of: episodic, semantic, preference, procedural.';
    end if;
    if p_importance is not null and not (p_importance between 0 and 1) then
        raise exception '%importance % is outside 0..1', v_arg, p_importance
            using errcode = 'PM014',
                  hint = 'Pass a value between 0 and 1, or NULL for the tenant''s default_importance.';
    end if;
    if p_dims is not null then
        perform pgmem._check_embedding_stats(p_settings, v_arg, p_dims, p_finite, p_norm);
    end if;
    if pg_catalog.num_nulls(p_triple_subject, p_triple_predicate, p_triple_object) not in (0, 3)
       or pg_catalog.btrim(p_triple_subject) = '' or pg_catalog.btrim(p_triple_predicate) = ''
       or pg_catalog.btrim(p_triple_object) = '' then
        raise exception '%triple_subject, %triple_predicate and %triple_object must be given together', v_arg, v_arg, v_arg
            using errcode = 'PM018',
                  hint = 'A triple is (subject, predicate, object), e.g. (''user'', ''theme'', ''dark''); pass all three, non-blank, or none.';
    end if;
    -- The same list as the CHECK constraint on pgmem.memories.source.
    if p_source is null or p_source not in ('rule', 'llm', 'manual', 'sql', 'import') then
        raise exception '%source % is not a memory source', v_arg, coalesce(pg_catalog.quote_literal(p_source), 'NULL')
            using errcode = 'PM019', hint = 'Use one of: rule, llm, manual, sql, import.';
    end if;
    if p_metadata is null or pg_catalog.jsonb_typeof(p_metadata) <> 'object' then
        raise exception '%metadata must be a JSON object', v_arg
            using errcode = 'PM020', hint = 'Pass ''{}'' for none.';
    end if;
end
$$;

comment on function pgmem._check_memory_input(integer, pgmem.settings, text, text, text, double precision, integer, boolean,
                                               double precision, text, text, text, text, jsonb) is
    'Raises PM010-PM020 (see sql/functions/10_write.sql) for a memory that must not be stored; p_item numbers the item of a batch (internal).';

create or replace function pgmem._lock_subjects(p_tenant text, p_subjects text[], p_now timestamptz)
returns void
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_wanted integer := (select pg_catalog.count(distinct u.subject) from pg_catalog.unnest(p_subjects) as u(subject));
    v_locked integer;
    v_rounds integer := 0;
begin
    loop
        -- In subject order, so that two batches sharing subjects cannot deadlock.
        insert into pgmem.subjects (tenant_id, subject, created_at)
        select p_tenant, s.subject, p_now
        from (select distinct u.subject from pg_catalog.unnest(p_subjects) as u(subject)) as s
        order by s.subject
        on conflict do nothing;
        perform
        from pgmem.subjects as s
        where s.tenant_id = p_tenant and s.subject = any (p_subjects)
        order by s.subject
        for update;
        get diagnostics v_locked = row_count;
        -- Fewer rows: an erase_subject deleted one while we waited for its
        -- lock; the next round creates it again.
        exit when v_locked = v_wanted;
        v_rounds := v_rounds + 1;
        if v_rounds >= 10 then
            raise exception 'could not lock the subjects rows of %', p_subjects
                using errcode = 'lock_not_available', hint = 'Subjects are being erased concurrently; retry.';
        end if;
    end loop;
end
$$;

comment on function pgmem._lock_subjects(text, text[], timestamptz) is
    'Creates the subjects rows if needed and locks them until the transaction ends: every write about a subject serializes here (internal).';

create or replace function pgmem._remember_decide(
    p_tenant text,
    p_settings pgmem.settings,
    p_subject text,
    p_content text,
    p_redacted text[],
    p_embedding public.vector,
    p_kind text,
    p_importance real,
    p_triple_subject text,
    p_triple_predicate text,
    p_triple_object text,
    p_session_id text,
    p_agent_id text,
    p_source text,
    p_metadata jsonb,
    p_valid_from timestamptz,
    p_now timestamptz
)
returns table(action text, memory_id bigint, related_id bigint, similarity real)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
-- JIT compiles a query in ~100 ms; these queries run in milliseconds but
-- their cost estimates (nested scans over vectors) cross jit_above_cost.
set jit = off
as $$
#variable_conflict use_column
-- The decision itself, for validated and redacted input whose subject the
-- caller has locked (pgmem._lock_subjects).
declare
    v_hash text := pgmem._content_hash(p_content);
    v_details jsonb := case when pg_catalog.cardinality(p_redacted) > 0
                            then pg_catalog.jsonb_build_object('redacted', pg_catalog.to_jsonb(p_redacted))
                            else '{}'::jsonb end;
    v_id bigint;
    v_old_content text;
    v_old_embedding public.vector;
    v_sim real;
    v_superseded bigint[];
    v_new_id bigint;
    v_newer_id bigint;
    v_newer_from timestamptz;
    -- Triple keys compare case-insensitively, without surrounding space.
    v_subject_key text := pg_catalog.lower(pg_catalog.btrim(p_triple_subject));
    v_predicate_key text := pg_catalog.lower(pg_catalog.btrim(p_triple_predicate));
begin
    if p_agent_id is not null then
        v_details := v_details || pg_catalog.jsonb_build_object('agent_id', p_agent_id);
    end if;

    -- 2. The same fact in other words is the same fact: reinforce it.
    select m.memory_id into v_id
    from pgmem.memories as m
    where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active' and m.content_hash = v_hash;
    if found then
        action := 'reinforced';
        similarity := 1;
    end if;

    -- 3. Triples: the same (subject, predicate) with another object replaces
    -- the old fact; with the same object it is the old fact again.
    if v_id is null and p_triple_predicate is not null then
        select m.memory_id, m.content into v_id, v_old_content
        from pgmem.memories as m
        where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active'
          and m.triple_predicate is not null
          and pg_catalog.lower(m.triple_predicate) = v_predicate_key
          and pg_catalog.lower(m.triple_subject) = v_subject_key
          and pgmem._normalize(m.triple_object) = pgmem._normalize(p_triple_object)
        order by m.valid_from desc, m.memory_id desc
        limit 1;
        if found then
            action := 'reinforced';
        else
            -- A fact that arrives late (an import, a second worker) and is
            -- older than the active one for its key is history: it is stored
            -- already superseded by the newer fact, never over it.
            select m.memory_id, m.valid_from, m.embedding into v_newer_id, v_newer_from, v_old_embedding
            from pgmem.memories as m
            where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active'
              and m.triple_predicate is not null
              and pg_catalog.lower(m.triple_predicate) = v_predicate_key
              and pg_catalog.lower(m.triple_subject) = v_subject_key
              and m.valid_from > p_valid_from
            order by m.valid_from, m.memory_id
            limit 1;
            if found then
                action := 'outdated';
                related_id := v_newer_id;
                similarity := (1 - (v_old_embedding OPERATOR(public.<=>) p_embedding))::real;
            end if;
        end if;
        if v_id is null and action is null then
            with closed as (
                update pgmem.memories as m
                set status = 'superseded',
                    valid_to = greatest(m.valid_from, p_valid_from),
                    status_changed_at = p_now,
                    updated_at = p_now
                where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active'
                  and m.triple_predicate is not null
                  and pg_catalog.lower(m.triple_predicate) = v_predicate_key
                  and pg_catalog.lower(m.triple_subject) = v_subject_key
                returning m.memory_id, m.valid_from, m.embedding
            )
            select pg_catalog.array_agg(c.memory_id order by c.valid_from desc, c.memory_id desc),
                   (pg_catalog.array_agg(c.embedding order by c.valid_from desc, c.memory_id desc))[1]
            into v_superseded, v_old_embedding
            from closed as c;
            if v_superseded is not null then
                action := 'superseded';
                related_id := v_superseded[1];
                similarity := (1 - (v_old_embedding OPERATOR(public.<=>) p_embedding))::real;
            end if;
        end if;
    end if;

    -- 4./5. Nearest active memory of the subject by cosine similarity (exact:
    -- the OFFSET 0 fence keeps the planner off the tenant-wide HNSW index).
    if v_id is null and action is null and p_embedding is not null then
        select d.memory_id, d.content, (1 - d.distance)::real into v_id, v_old_content, v_sim
        from (select m.memory_id, m.content, m.embedding OPERATOR(public.<=>) p_embedding as distance
              from pgmem.memories as m
              where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active'
                and m.embedding is not null
              offset 0) as d
        order by d.distance, d.memory_id
        limit 1;
        if v_sim >= p_settings.duplicate_threshold then
            action := 'deduplicated';
            similarity := v_sim;
        else
            if v_sim >= p_settings.merge_threshold then
                action := 'merge_pending';
                related_id := v_id;
                similarity := v_sim;
            end if;
            v_id := null;
        end if;
    end if;

    if v_id is not null then
        -- reinforced / deduplicated: one more access, never less important.
        -- Only unindexed columns change (embedding only when it was
        -- missing), so the update can stay HOT.
        update pgmem.memories as m
        set access_count = m.access_count + 1,
            last_accessed_at = greatest(m.last_accessed_at, p_now),
            importance = greatest(m.importance, p_importance),
            embedding = coalesce(m.embedding, p_embedding),
            updated_at = p_now
        where m.tenant_id = p_tenant and m.memory_id = v_id;
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                         created_at)
        values (p_tenant, v_id, p_subject,
                case when action = 'deduplicated' then 'deduplicate' else 'reinforce' end,
                v_old_content, case when v_old_content is not null then p_content end,
                v_details || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                    'match', case when action = 'deduplicated' then 'embedding'
                                  when v_old_content is not null then 'triple' else 'content' end,
                    'similarity', v_sim)),
                p_now);
        memory_id := v_id;
        return next;
        return;
    end if;

    insert into pgmem.memories as m (tenant_id, subject, agent_id, session_id, kind, content, embedding, importance,
                                     source, triple_subject, triple_predicate, triple_object, valid_from,
                                     valid_to, status, status_changed_at, last_accessed_at, metadata, created_at,
                                     updated_at)
    values (p_tenant, p_subject, p_agent_id, p_session_id, p_kind, p_content, p_embedding, p_importance,
            p_source, pg_catalog.btrim(p_triple_subject), pg_catalog.btrim(p_triple_predicate),
            pg_catalog.btrim(p_triple_object), p_valid_from,
            v_newer_from, case when v_newer_id is null then 'active' else 'superseded' end,
            p_now, p_now, p_metadata, p_now, p_now)
    returning m.memory_id into v_new_id;
    action := coalesce(action, 'inserted');
    memory_id := v_new_id;

    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, new_content, details, created_at)
    values (p_tenant, v_new_id, p_subject, 'insert', p_content,
            v_details || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                'action', action, 'related_id', related_id, 'similarity', similarity,
                'supersedes', pg_catalog.to_jsonb(v_superseded))),
            p_now);

    if action = 'outdated' then
        insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, created_at)
        values (p_tenant, v_newer_id, v_new_id, 'supersedes', p_now);
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                         created_at)
        values (p_tenant, v_new_id, p_subject, 'supersede', p_content, null,
                v_details || pg_catalog.jsonb_build_object('superseded_by', v_newer_id, 'late', true), p_now);
    elsif action = 'superseded' then
        insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, created_at)
        select p_tenant, v_new_id, o.id, 'supersedes', p_now from pg_catalog.unnest(v_superseded) as o(id);
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                         created_at)
        select p_tenant, m.memory_id, p_subject, 'supersede', m.content, p_content,
               v_details || pg_catalog.jsonb_build_object('superseded_by', v_new_id), p_now
        from pgmem.memories as m
        where m.tenant_id = p_tenant and m.memory_id = any (v_superseded);
    elsif action = 'merge_pending' then
        insert into pgmem.inbox (tenant_id, job, subject, session_id, agent_id, payload, available_at, created_at)
        values (p_tenant, 'merge', p_subject, p_session_id, p_agent_id,
                pg_catalog.jsonb_build_object('memory_id', v_new_id, 'related_id', related_id,
                                              'similarity', similarity),
                p_now, p_now);
        -- Wakes the worker at commit, like pgmem.enqueue.
        perform pg_catalog.pg_notify('pgmem_inbox', p_tenant);
    end if;
    return next;
end
$$;

comment on function pgmem._remember_decide(text, pgmem.settings, text, text, text[], public.vector, text, real, text,
                                            text, text, text, text, text, jsonb, timestamptz, timestamptz) is
    'Core of pgmem.remember for checked, redacted input whose subject is locked: reinforce, supersede, deduplicate, insert for merge or insert, with events (internal).';

create or replace function pgmem._reject(
    p_tenant text,
    p_subject text,
    p_contents text[],
    p_rules text[],
    p_agent_id text,
    p_now timestamptz
)
returns void
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- PL/pgSQL, not SQL: Citus plans no SQL-language function that passes
    -- parameters to a distributed table (docs/scaling.md).
    -- The injected text is not kept anywhere, not even in history: only the
    -- rule, its size and a SHA-256 to recognise it if it comes back.
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
    select p_tenant, null, p_subject, 'reject',
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'reason', 'prompt_injection', 'rule', r.rule,
               'sha256', pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(r.content, 'UTF8')), 'hex'),
               'bytes', pg_catalog.octet_length(r.content), 'agent_id', p_agent_id)),
           p_now
    from rows from (pg_catalog.unnest(p_contents), pg_catalog.unnest(p_rules)) as r(content, rule);
end
$$;

comment on function pgmem._reject(text, text, text[], text[], text, timestamptz) is
    'Writes the reject events of rejected (prompt-injection) contents: rule, byte size and SHA-256, never the text (internal).';

create or replace function pgmem.remember(
    p_subject text,
    p_content text,
    p_embedding real[] default null,
    p_kind text default 'semantic',
    -- double precision, not real: a float parameter from a client (float8) must match without a cast.
    p_importance double precision default null,
    p_triple_subject text default null,
    p_triple_predicate text default null,
    p_triple_object text default null,
    p_session_id text default null,
    p_agent_id text default null,
    p_source text default 'sql',
    p_metadata jsonb default '{}',
    p_valid_from timestamptz default null,
    p_now timestamptz default null
)
returns table(action text, memory_id bigint, related_id bigint, similarity real)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
-- JIT compiles a query in ~100 ms; these queries run in milliseconds but
-- their cost estimates (nested scans over vectors) cross jit_above_cost.
set jit = off
as $$
#variable_conflict use_column
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
    v_dims integer;
    v_finite boolean;
    v_norm double precision;
    v_rule text;
    v_content text;
    v_redacted text[];
    v_object text;
    v_object_redacted text[];
begin
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant;
    if p_embedding is not null then
        -- A vector argument works too (pgvector casts vector to real[]).
        select e.dims, e.finite, e.norm into v_dims, v_finite, v_norm from pgmem._embedding_stats(p_embedding) as e;
    end if;
    perform pgmem._check_memory_input(null, v_settings, p_subject, p_content, p_kind, p_importance, v_dims, v_finite,
                                      v_norm, p_triple_subject, p_triple_predicate, p_triple_object, p_source,
                                      p_metadata);
    v_rule := pgmem.detect_injection(p_content);
    perform pgmem._lock_subjects(v_tenant, array[p_subject], v_now);
    if v_rule is not null then
        perform pgmem._reject(v_tenant, p_subject, array[p_content], array[v_rule], p_agent_id, v_now);
        action := 'rejected';
        return next;
        return;
    end if;
    select r.content, r.kinds into v_content, v_redacted from pgmem._redact_many(array[p_content]) as r;
    select r.object, r.kinds into v_object, v_object_redacted
    from pgmem._redact_objects(array[p_triple_predicate], array[p_triple_object]) as r;
    v_redacted := v_redacted || array(select k from pg_catalog.unnest(v_object_redacted) as k
                                      where not k = any (v_redacted));
    return query
        select d.action, d.memory_id, d.related_id, d.similarity
        from pgmem._remember_decide(v_tenant, v_settings, p_subject, v_content, v_redacted,
                                    p_embedding::public.vector, p_kind,
                                    coalesce(p_importance::real, v_settings.default_importance),
                                    p_triple_subject, p_triple_predicate, v_object, p_session_id, p_agent_id,
                                    p_source, p_metadata, coalesce(p_valid_from, v_now), v_now) as d;
end
$$;

comment on function pgmem.remember(text, text, real[], text, double precision, text, text, text, text, text, text,
                                   jsonb, timestamptz, timestamptz) is
    'Stores a fact about p_subject and says what it did: rejected (prompt injection), reinforced (already known), superseded (same subject+predicate, new object; old row kept for history), outdated (an older fact for a key whose current fact is newer: stored as history), deduplicated (cosine >= settings.duplicate_threshold), merge_pending (>= merge_threshold: inserted, merge job queued) or inserted. Secrets are redacted first. p_embedding: real[] or vector of settings.embedding_dims, NULL for text only. Errors PM010-PM020.';

create or replace function pgmem.remember_many(
    p_items jsonb,
    p_subject text default null,
    p_now timestamptz default null
)
returns table(item integer, action text, memory_id bigint, related_id bigint, similarity real)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
-- JIT compiles a query in ~100 ms; these queries run in milliseconds but
-- their cost estimates (nested scans over vectors) cross jit_above_cost.
set jit = off
as $$
#variable_conflict use_column
-- Bulk form of pgmem.remember with the same decisions, as if its items
-- were remembered one by one in order. Items independent of the rest of
-- the batch are decided and written set-based (a few statements for the
-- whole batch); the rest go through remember's own path one by one.
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
    v_n integer;
    v_bad record;
    v_embeddings public.vector[];
    v_rejected integer[];
    v_rules text[];
    v_contents text[];
    v_redacted text[];
    v_objects text[];
    v_item record;
    v_keys constant text[] := array['subject', 'content', 'embedding', 'kind', 'importance', 'triple_subject',
                                    'triple_predicate', 'triple_object', 'session_id', 'agent_id', 'source',
                                    'metadata', 'valid_from'];
begin
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant;
    if p_items is null or pg_catalog.jsonb_typeof(p_items) <> 'array' then
        raise exception 'p_items must be a JSON array of objects'
            using errcode = 'PM021',
                  hint = 'e.g. ''[{"subject": "alice", "content": "likes tea", "embedding": [0.1, …]}]''.';
    end if;
    v_n := pg_catalog.jsonb_array_length(p_items);
    if v_n = 0 then
        return;
    end if;
    select e.i, pg_catalog.jsonb_typeof(e.v) as type,
           (select pg_catalog.min(k.key) from pg_catalog.jsonb_object_keys(
                case when pg_catalog.jsonb_typeof(e.v) = 'object' then e.v else '{}' end) as k(key)
            where k.key <> all (v_keys)) as unknown_key,
           pg_catalog.jsonb_typeof(e.v -> 'embedding') as embedding_type,
           pg_catalog.jsonb_typeof(e.v -> 'importance') as importance_type
    into v_bad
    from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    where pg_catalog.jsonb_typeof(e.v) <> 'object'
       or exists (select from pg_catalog.jsonb_object_keys(e.v) as k(key) where k.key <> all (v_keys))
       or pg_catalog.jsonb_typeof(e.v -> 'embedding') not in ('array', 'string', 'null')
       or pg_catalog.jsonb_typeof(e.v -> 'importance') not in ('number', 'null')
    order by e.i
    limit 1;
    if found then
        if v_bad.type <> 'object' then
            raise exception 'p_items[%] is a JSON %, not an object', v_bad.i, v_bad.type
                using errcode = 'PM021', hint = 'Each item is an object such as {"content": "likes tea"}.';
        elsif v_bad.unknown_key is not null then
            raise exception 'p_items[%] has an unknown key %', v_bad.i, pg_catalog.quote_literal(v_bad.unknown_key)
                using errcode = 'PM021', hint = 'Known keys: ' || pg_catalog.array_to_string(v_keys, ', ') || '.';
        elsif v_bad.embedding_type not in ('array', 'string', 'null') then
            raise exception 'p_items[%].embedding must be a JSON array of % numbers or a vector literal string',
                            v_bad.i, v_settings.embedding_dims
                using errcode = 'PM015', hint = 'Leave it out (or null) to store text only and let the worker embed it.';
        else
            raise exception 'p_items[%].importance must be a number between 0 and 1', v_bad.i
                using errcode = 'PM014', hint = 'Leave it out (or null) for the tenant''s default_importance.';
        end if;
    end if;

    -- Embeddings: one cast for the whole batch; only if it fails, find the item.
    begin
        v_embeddings := array(
            select case pg_catalog.jsonb_typeof(e.v -> 'embedding')
                        when 'string' then (e.v ->> 'embedding')::public.vector
                        when 'array' then ((e.v -> 'embedding')::text)::public.vector
                   end
            from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
            order by e.i);
    exception when others then
        for v_item in
            select e.i, case pg_catalog.jsonb_typeof(e.v -> 'embedding')
                             when 'string' then e.v ->> 'embedding' else (e.v -> 'embedding')::text end as embedding
            from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
            where pg_catalog.jsonb_typeof(e.v -> 'embedding') in ('array', 'string')
            order by e.i
        loop
            begin
                perform v_item.embedding::public.vector;
            exception when others then
                raise exception 'p_items[%].embedding holds a value that is not a finite number', v_item.i
                    using errcode = 'PM016',
                          hint = 'Every element must be a finite number, as a JSON array or a vector literal ''[0.1, …]''.';
            end;
        end loop;
        raise;
    end;

    perform pgmem._check_memory_input(
                e.i::integer, v_settings, coalesce(e.v ->> 'subject', p_subject), e.v ->> 'content',
                coalesce(e.v ->> 'kind', 'semantic'), (e.v ->> 'importance')::double precision,
                public.vector_dims(x.embedding), true, public.vector_norm(x.embedding),
                e.v ->> 'triple_subject', e.v ->> 'triple_predicate', e.v ->> 'triple_object',
                coalesce(e.v ->> 'source', 'sql'), coalesce(e.v -> 'metadata', '{}'))
    from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    join pg_catalog.unnest(v_embeddings) with ordinality as x(embedding, i) on x.i = e.i;

    v_contents := array(select e.v ->> 'content'
                        from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) order by e.i);
    select pg_catalog.array_agg(d.item order by d.item), pg_catalog.array_agg(d.rule order by d.item)
    into v_rejected, v_rules
    from pgmem._detect_injection_many(v_contents) as d;
    v_rejected := coalesce(v_rejected, '{}');
    select pg_catalog.array_agg(r.content order by r.item),
           pg_catalog.array_agg(pg_catalog.array_to_string(r.kinds || array(
               select k from pg_catalog.unnest(o.kinds) as k where not k = any (r.kinds)), ',') order by r.item),
           pg_catalog.array_agg(o.object order by r.item)
    into v_contents, v_redacted, v_objects
    from pgmem._redact_many(v_contents) as r
    join pgmem._redact_objects(
             array(select e.v ->> 'triple_predicate'
                   from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) order by e.i),
             array(select e.v ->> 'triple_object'
                   from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) order by e.i)) as o
      on o.item = r.item;

    perform pgmem._lock_subjects(v_tenant,
                                 array(select coalesce(e.v ->> 'subject', p_subject)
                                       from pg_catalog.jsonb_array_elements(p_items) as e(v)),
                                 v_now);

    -- The batch as rows. Items that meet nothing else of the batch (no
    -- twin, nothing within merge_threshold, no triple key in play) are
    -- decided and written set-based; the others (meets_batch) go through
    -- pgmem._remember_decide one by one, in item order, after them. Both
    -- orders give the same result: such independent items only reinforce
    -- rows or add rows nobody else in the batch matches.
    create temporary table if not exists _pgmem_batch (
        item integer primary key,
        subject text not null,
        content text not null,
        content_hash text not null,
        redacted text[] not null,
        embedding public.vector,
        kind text not null,
        importance real not null,
        triple_subject text,
        triple_predicate text,
        triple_object text,
        session_id text,
        agent_id text,
        source text not null,
        metadata jsonb not null,
        valid_from timestamptz not null,
        rejected_rule text,
        twins_in_batch boolean not null,   -- same content or triple key as another item
        exact_id bigint,                   -- active row with the same content
        near_id bigint,                    -- nearest active row within merge_threshold
        near_similarity real,
        meets_batch boolean not null default false,
        action text,
        memory_id bigint,
        related_id bigint,
        similarity real
    ) on commit drop;
    create index if not exists _pgmem_batch_content on pg_temp._pgmem_batch (subject, content_hash);
    truncate pg_temp._pgmem_batch;
    insert into pg_temp._pgmem_batch (item, subject, content, content_hash, redacted, embedding, kind, importance,
                                      triple_subject, triple_predicate, triple_object, session_id, agent_id, source,
                                      metadata, valid_from, rejected_rule, twins_in_batch, action)
    select x.i, x.subject, x.content, x.content_hash, x.redacted, x.embedding, x.kind, x.importance,
           x.triple_subject, x.triple_predicate, x.triple_object, x.session_id, x.agent_id, x.source, x.metadata,
           x.valid_from, x.rule,
           pg_catalog.count(*) over (partition by x.subject, x.content_hash) > 1
           or (x.triple_predicate is not null
               and pg_catalog.count(*) over (partition by x.subject, pg_catalog.lower(x.triple_subject),
                                                          pg_catalog.lower(x.triple_predicate)) > 1),
           case when x.rule is not null then 'rejected' end
    from (select e.i, coalesce(e.v ->> 'subject', p_subject) as subject, c.content,
                 pgmem._content_hash(c.content) as content_hash,
                 coalesce(pg_catalog.string_to_array(nullif(c.redacted, ''), ','), '{}') as redacted, c.embedding,
                 coalesce(e.v ->> 'kind', 'semantic') as kind,
                 coalesce((e.v ->> 'importance')::real, v_settings.default_importance) as importance,
                 pg_catalog.btrim(e.v ->> 'triple_subject') as triple_subject,
                 pg_catalog.btrim(e.v ->> 'triple_predicate') as triple_predicate,
                 pg_catalog.btrim(c.object) as triple_object,
                 e.v ->> 'session_id' as session_id, e.v ->> 'agent_id' as agent_id,
                 coalesce(e.v ->> 'source', 'sql') as source, coalesce(e.v -> 'metadata', '{}') as metadata,
                 coalesce((e.v ->> 'valid_from')::timestamptz, v_now) as valid_from, j.rule
          from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
          join rows from (pg_catalog.unnest(v_contents), pg_catalog.unnest(v_redacted),
                          pg_catalog.unnest(v_embeddings), pg_catalog.unnest(v_objects))
               with ordinality as c(content, redacted, embedding, object, i) on c.i = e.i
          left join rows from (pg_catalog.unnest(v_rejected), pg_catalog.unnest(v_rules)) as j(i, rule)
               on j.i = e.i) as x;
    analyze pg_temp._pgmem_batch;

    perform pgmem._reject(v_tenant, b.subject, array[e.v ->> 'content'], array[b.rejected_rule], b.agent_id, v_now)
    from pg_temp._pgmem_batch as b
    join pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) on e.i = b.item
    where b.rejected_rule is not null;

    -- On a Citus cluster every item goes the one-by-one way: the set-based
    -- statements join this session's temporary table with distributed tables,
    -- which Citus cannot plan (docs/scaling.md). Same decisions, by the above.
    if pgmem._distributed() then
        update pg_temp._pgmem_batch as b set meets_batch = true where b.rejected_rule is null;
    else
        update pg_temp._pgmem_batch as b
        set exact_id = m.memory_id
        from pgmem.memories as m
        where b.rejected_rule is null
          and m.tenant_id = v_tenant and m.subject = b.subject and m.status = 'active' and m.content_hash = b.content_hash;

        -- Nearest active row within merge_threshold; each subject's rows are read once.
        update pg_temp._pgmem_batch as b
        set near_id = n.memory_id, near_similarity = n.similarity
        from (select distinct on (x.item) x.item, m.memory_id,
                     (1 - (m.embedding OPERATOR(public.<=>) x.embedding))::real as similarity
              from (select distinct c.subject from pg_temp._pgmem_batch as c where c.rejected_rule is null) as s
              cross join lateral (
                  select m.memory_id, m.embedding from pgmem.memories as m
                  where m.tenant_id = v_tenant and m.subject = s.subject and m.status = 'active'
                    and m.embedding is not null
                  offset 0) as m
              join pg_temp._pgmem_batch as x
                on x.subject = s.subject and x.rejected_rule is null and x.embedding is not null
               and (1 - (m.embedding OPERATOR(public.<=>) x.embedding))::real >= v_settings.merge_threshold
              order by x.item, m.embedding OPERATOR(public.<=>) x.embedding, m.memory_id) as n
        where n.item = b.item;

        update pg_temp._pgmem_batch as b
        set meets_batch = true
        where b.rejected_rule is null
          and (b.twins_in_batch
               -- within merge_threshold of another item (a hash join on subject)
               or b.item in (select n.item
                             from pg_temp._pgmem_batch as n
                             join pg_temp._pgmem_batch as o
                               on o.subject = n.subject and o.item <> n.item and o.rejected_rule is null
                              and o.embedding is not null
                              and (1 - (o.embedding OPERATOR(public.<=>) n.embedding))::real
                                  >= v_settings.merge_threshold
                             where n.rejected_rule is null and n.embedding is not null)
               -- its triple key is active already: reinforce or supersede
               or (b.triple_predicate is not null
                   and exists (select from pgmem.memories as m
                               where m.tenant_id = v_tenant and m.subject = b.subject and m.status = 'active'
                                 and m.triple_predicate is not null
                                 and pg_catalog.lower(m.triple_predicate) = pg_catalog.lower(b.triple_predicate)
                                 and pg_catalog.lower(m.triple_subject) = pg_catalog.lower(b.triple_subject)))
               -- its match may be superseded by a triple of the batch
               or b.exact_id in (select m.memory_id from pg_temp._pgmem_batch as t
                                 join pgmem.memories as m
                                   on m.tenant_id = v_tenant and m.subject = t.subject and m.status = 'active'
                                  and pg_catalog.lower(m.triple_predicate) = pg_catalog.lower(t.triple_predicate)
                                  and pg_catalog.lower(m.triple_subject) = pg_catalog.lower(t.triple_subject)
                                 where t.rejected_rule is null and t.triple_predicate is not null)
               or b.near_id in (select m.memory_id from pg_temp._pgmem_batch as t
                                join pgmem.memories as m
                                  on m.tenant_id = v_tenant and m.subject = t.subject and m.status = 'active'
                                 and pg_catalog.lower(m.triple_predicate) = pg_catalog.lower(t.triple_predicate)
                                 and pg_catalog.lower(m.triple_subject) = pg_catalog.lower(t.triple_subject)
                                where t.rejected_rule is null and t.triple_predicate is not null));

        -- The same decisions as _remember_decide, for the independent items.
        update pg_temp._pgmem_batch as b
        set action = d.action,
            memory_id = case d.action when 'reinforced' then b.exact_id when 'deduplicated' then b.near_id end,
            related_id = case d.action when 'merge_pending' then b.near_id end,
            similarity = case d.action when 'reinforced' then 1 when 'inserted' then null else b.near_similarity end
        from pg_temp._pgmem_batch as x
        cross join lateral (
            select case when x.exact_id is not null then 'reinforced'
                        when x.near_similarity >= v_settings.duplicate_threshold then 'deduplicated'
                        when x.near_similarity >= v_settings.merge_threshold then 'merge_pending'
                        else 'inserted' end as action) as d
        where x.item = b.item and b.rejected_rule is null and not b.meets_batch;

        update pgmem.memories as m
        set access_count = m.access_count + r.n,
            last_accessed_at = greatest(m.last_accessed_at, v_now),
            importance = greatest(m.importance, r.importance),
            embedding = coalesce(m.embedding, r.embedding),
            updated_at = v_now
        from (select b.memory_id, pg_catalog.count(*) as n, pg_catalog.max(b.importance) as importance,
                     (pg_catalog.array_agg(b.embedding order by b.item) filter (where b.embedding is not null))[1]
                         as embedding
              from pg_temp._pgmem_batch as b
              where b.action in ('reinforced', 'deduplicated')
              group by b.memory_id) as r
        where m.tenant_id = v_tenant and m.memory_id = r.memory_id;

        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                         created_at)
        select v_tenant, b.memory_id, b.subject,
               case b.action when 'deduplicated' then 'deduplicate' else 'reinforce' end,
               case b.action when 'deduplicated' then m.content end,
               case b.action when 'deduplicated' then b.content end,
               pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                   'redacted', case when pg_catalog.cardinality(b.redacted) > 0 then pg_catalog.to_jsonb(b.redacted) end,
                   'agent_id', b.agent_id,
                   'match', case b.action when 'deduplicated' then 'embedding' else 'content' end,
                   'similarity', case b.action when 'deduplicated' then b.similarity end)),
               v_now
        from pg_temp._pgmem_batch as b
        join pgmem.memories as m on m.tenant_id = v_tenant and m.memory_id = b.memory_id
        where b.action in ('reinforced', 'deduplicated')
        order by b.item;

        with inserted as (
            insert into pgmem.memories as m (tenant_id, subject, agent_id, session_id, kind, content, embedding,
                                             importance, source, triple_subject, triple_predicate, triple_object,
                                             valid_from, status_changed_at, last_accessed_at, metadata, created_at,
                                             updated_at)
            select v_tenant, b.subject, b.agent_id, b.session_id, b.kind, b.content, b.embedding, b.importance, b.source,
                   b.triple_subject, b.triple_predicate, b.triple_object, b.valid_from, v_now, v_now, b.metadata, v_now,
                   v_now
            from pg_temp._pgmem_batch as b
            where b.action in ('inserted', 'merge_pending')
            order by b.item
            returning m.memory_id, m.subject, m.content_hash
        )
        -- (subject, content_hash) is unique among these items: twins meet the batch.
        update pg_temp._pgmem_batch as b
        set memory_id = i.memory_id
        from inserted as i
        where b.subject = i.subject and b.content_hash = i.content_hash and b.action in ('inserted', 'merge_pending');

        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, new_content, details, created_at)
        select v_tenant, b.memory_id, b.subject, 'insert', b.content,
               pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                   'redacted', case when pg_catalog.cardinality(b.redacted) > 0 then pg_catalog.to_jsonb(b.redacted) end,
                   'agent_id', b.agent_id, 'action', b.action, 'related_id', b.related_id,
                   'similarity', b.similarity)),
               v_now
        from pg_temp._pgmem_batch as b
        where b.action in ('inserted', 'merge_pending')
        order by b.item;

        insert into pgmem.inbox (tenant_id, job, subject, session_id, agent_id, payload, available_at, created_at)
        select v_tenant, 'merge', b.subject, b.session_id, b.agent_id,
               pg_catalog.jsonb_build_object('memory_id', b.memory_id, 'related_id', b.related_id,
                                             'similarity', b.similarity),
               v_now, v_now
        from pg_temp._pgmem_batch as b
        where b.action = 'merge_pending'
        order by b.item;
        if found then
            perform pg_catalog.pg_notify('pgmem_inbox', v_tenant);
        end if;
    end if;

    -- Items that meet the batch, one by one in item order.
    for v_item in
        select b.* from pg_temp._pgmem_batch as b where b.meets_batch order by b.item
    loop
        update pg_temp._pgmem_batch as b
        set action = d.action, memory_id = d.memory_id, related_id = d.related_id, similarity = d.similarity
        from pgmem._remember_decide(v_tenant, v_settings, v_item.subject, v_item.content, v_item.redacted,
                                    v_item.embedding, v_item.kind, v_item.importance, v_item.triple_subject,
                                    v_item.triple_predicate, v_item.triple_object, v_item.session_id,
                                    v_item.agent_id, v_item.source, v_item.metadata, v_item.valid_from, v_now) as d
        where b.item = v_item.item;
    end loop;

    return query
        select b.item, b.action, b.memory_id, b.related_id, b.similarity
        from pg_temp._pgmem_batch as b
        order by b.item;
end
$$;

comment on function pgmem.remember_many(jsonb, text, timestamptz) is
    'Bulk pgmem.remember: p_items is a JSON array of objects with the keys subject (default p_subject), content, embedding (JSON array of numbers or a vector literal string ''[0.1,…]'', the faster form), kind, importance, triple_subject, triple_predicate, triple_object, session_id, agent_id, source, metadata, valid_from. Same decisions as remember; one result row per item (item counts from 1). Plainly new items are inserted set-based. Needs the TEMPORARY privilege on the database.';

create or replace function pgmem._memory_for_update(p_memory_id bigint, p_function text)
returns pgmem.memories
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_row pgmem.memories;
begin
    -- RLS hides other tenants' rows: their ids are unknown here, exactly
    -- like ids that never existed.
    select m.* into v_row from pgmem.memories as m where m.tenant_id = v_tenant and m.memory_id = p_memory_id;
    if not found then
        raise exception 'unknown memory id: %', coalesce(p_memory_id::text, 'NULL')
            using errcode = 'PM022',
                  hint = pg_catalog.format('%s takes a memory_id of this tenant, as returned by pgmem.remember or pgmem.recall.',
                                           p_function);
    end if;
    -- Same lock as remember: a fact cannot be forgotten while a writer is deciding about it.
    perform pgmem._lock_subjects(v_tenant, array[v_row.subject], pg_catalog.now());
    select m.* into v_row from pgmem.memories as m where m.tenant_id = v_tenant and m.memory_id = p_memory_id
    for update;
    return v_row;
end
$$;

comment on function pgmem._memory_for_update(bigint, text) is
    'The current tenant''s memory p_memory_id, locked with its subject; PM022 when the tenant has no such memory (internal).';

create or replace function pgmem.forget(p_memory_id bigint, p_now timestamptz default null)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_row pgmem.memories := pgmem._memory_for_update(p_memory_id, 'pgmem.forget');
begin
    if v_row.status = 'deleted' then
        return false;
    end if;
    update pgmem.memories as m
    set status = 'deleted', status_changed_at = v_now, updated_at = v_now
    where m.tenant_id = v_row.tenant_id and m.memory_id = v_row.memory_id;
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
    values (v_row.tenant_id, v_row.memory_id, v_row.subject, 'delete',
            pg_catalog.jsonb_build_object('previous_status', v_row.status), v_now);
    return true;
end
$$;

comment on function pgmem.forget(bigint, timestamptz) is
    'Soft-deletes a memory (status deleted; recall no longer returns it, history keeps it). Returns false if it was deleted already; PM022 for an id this tenant does not have. To remove data for good use pgmem.erase_subject.';

create or replace function pgmem.pin(p_memory_id bigint, p_pinned boolean default true, p_now timestamptz default null)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_row pgmem.memories := pgmem._memory_for_update(p_memory_id, 'pgmem.pin');
begin
    if p_pinned is null then
        raise exception 'p_pinned must be true or false'
            using errcode = 'null_value_not_allowed', hint = 'pgmem.unpin(id) unpins.';
    end if;
    if v_row.pinned = p_pinned then
        return false;
    end if;
    update pgmem.memories as m
    set pinned = p_pinned, updated_at = v_now
    where m.tenant_id = v_row.tenant_id and m.memory_id = v_row.memory_id;
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, created_at)
    values (v_row.tenant_id, v_row.memory_id, v_row.subject, case when p_pinned then 'pin' else 'unpin' end, v_now);
    return true;
end
$$;

comment on function pgmem.pin(bigint, boolean, timestamptz) is
    'Pins a memory (p_pinned => false unpins): pinned memories never decay, are never archived or evicted. Returns false if nothing changed; PM022 for an id this tenant does not have.';

create or replace function pgmem.unpin(p_memory_id bigint, p_now timestamptz default null)
returns boolean
language sql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pgmem.pin(p_memory_id, false, p_now)
$$;

comment on function pgmem.unpin(bigint, timestamptz) is
    'Unpins a memory: it decays and may be archived again. Same as pgmem.pin(id, false).';

create or replace function pgmem.erase_subject(p_subject text, p_now timestamptz default null)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_counts jsonb;
    v_memories bigint;
begin
    perform
    from pgmem.subjects as s
    where s.tenant_id = v_tenant and s.subject = p_subject
    for update;
    if not found then
        return 0;  -- nothing about this subject (any more): erasing twice is not an error
    end if;
    select pg_catalog.jsonb_build_object(
               'memories', (select pg_catalog.count(*) from pgmem.memories as m
                            where m.tenant_id = v_tenant and m.subject = p_subject),
               'events', (select pg_catalog.count(*) from pgmem.memory_events as e
                          where e.tenant_id = v_tenant and e.subject = p_subject),
               'inbox', (select pg_catalog.count(*) from pgmem.inbox as i
                         where i.tenant_id = v_tenant and i.subject = p_subject))
    into v_counts;
    v_memories := (v_counts ->> 'memories')::bigint;
    -- Every row about the subject hangs off its subjects row (foreign keys
    -- ON DELETE CASCADE): memories, their links in both directions, events
    -- and inbox jobs go with it, whatever the app role may delete itself.
    delete from pgmem.subjects as s where s.tenant_id = v_tenant and s.subject = p_subject;
    -- The tombstone names neither the subject nor any content: only that an
    -- erasure happened, when, by whom and how much it removed.
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
    values (v_tenant, null, null, 'erase', v_counts, v_now);
    return v_memories;
end
$$;

comment on function pgmem.erase_subject(text, timestamptz) is
    'Right to be forgotten: removes every row about p_subject from every pgmem table (memories, links, events, inbox jobs, the subject itself) and writes one tombstone event without subject or content. Returns how many memories went; 0 if the subject is unknown.';
