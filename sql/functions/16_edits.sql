-- Editing a stored memory in place: what the Python client's
-- Memory.update() and any SQL app call when a fact was stored wrong.
-- pgmem.remember decides about new facts; this changes one existing fact
-- and keeps its id, its history and its place in the links.
--
-- Error codes (PM022 and PM010-PM020 are the write path's, 10_input.sql):
--   PM022  unknown memory id: this tenant has no memory with that id
--   PM050  the memory is not active (superseded, merged, archived, deleted)
--   PM051  the new content is the same fact as another active memory
--   PM052  the new content matches a prompt-injection rule

create or replace function pgmem.update_memory(
    p_memory_id bigint,
    p_content text default null,
    p_embedding real[] default null,
    p_importance real default null,
    p_kind text default null,
    p_metadata jsonb default null,
    p_triple_subject text default null,
    p_triple_predicate text default null,
    p_triple_object text default null,
    p_now timestamptz default null
)
returns pgmem.memories
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    -- Locked with its subject, as remember and forget lock: PM022 when unknown.
    v_old pgmem.memories := pgmem._memory_for_update(p_memory_id, 'pgmem.update_memory');
    v_settings pgmem.settings;
    v_triple_given boolean := pg_catalog.num_nonnulls(p_triple_subject, p_triple_predicate, p_triple_object) > 0;
    v_dims integer;
    v_finite boolean;
    v_norm double precision;
    v_rule text;
    v_content text;
    v_redacted text[] := '{}';
    v_content_changed boolean := false;
    v_duplicate bigint;
    v_changed text[];
    v_new pgmem.memories;
begin
    if v_old.status <> 'active' then
        raise exception 'memory % is %; only active memories can be updated', p_memory_id, v_old.status
            using errcode = 'PM050',
                  hint = case v_old.status
                      when 'archived' then 'Restore it first with pgmem.restore(' || p_memory_id || ').'
                      when 'deleted' then 'It was forgotten; remember the corrected fact with pgmem.remember.'
                      else 'Superseded and merged memories are history; update the memory that replaced them.'
                  end;
    end if;
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_old.tenant_id;
    if p_embedding is not null then
        -- Measured as pgmem.remember measures it; _check_memory_input refuses it.
        select e.dims, e.finite, e.norm into v_dims, v_finite, v_norm from pgmem._embedding_stats(p_embedding) as e;
    end if;
    perform pgmem._check_memory_input(
        null, v_settings, v_old.subject, coalesce(p_content, v_old.content), coalesce(p_kind, v_old.kind),
        p_importance, v_dims, v_finite, v_norm,
        case when v_triple_given then p_triple_subject else v_old.triple_subject end,
        case when v_triple_given then p_triple_predicate else v_old.triple_predicate end,
        case when v_triple_given then p_triple_object else v_old.triple_object end,
        v_old.source, coalesce(p_metadata, '{}'));

    if p_content is not null then
        v_rule := pgmem.detect_injection(p_content);
        if v_rule is not null then
            raise exception 'the new content of memory % matches the prompt-injection rule %', p_memory_id, v_rule
                using errcode = 'PM052',
                      hint = 'Memories are replayed into prompts; text that steers the model is never stored.';
        end if;
        -- Secrets are redacted exactly as pgmem.remember redacts them.
        select r.content, r.kinds into v_content, v_redacted from pgmem._redact_many(array[p_content]) as r;
        v_content_changed := v_content is distinct from v_old.content;
    end if;
    if v_content_changed and pgmem._content_hash(v_content) <> v_old.content_hash then
        select m.memory_id into v_duplicate
        from pgmem.memories as m
        where m.tenant_id = v_old.tenant_id and m.subject = v_old.subject and m.status = 'active'
          and m.content_hash = pgmem._content_hash(v_content) and m.memory_id <> v_old.memory_id
          and pgmem._episode_source(m.source) = pgmem._episode_source(v_old.source);
        if found then
            raise exception 'memory % already says this (updating memory %)', v_duplicate, p_memory_id
                using errcode = 'PM051',
                      hint = pg_catalog.format('Forget memory %s instead: pgmem.forget(%s).', p_memory_id, p_memory_id);
        end if;
    end if;

    v_changed := pg_catalog.array_remove(array[
        case when v_content_changed then 'content' end,
        case when v_content_changed
                  -- compared as stored: in half precision (halfvec)
                  or (p_embedding is not null
                      and p_embedding::public.halfvec::real[] is distinct from v_old.embedding::real[])
             then 'embedding' end,
        case when p_importance is not null and p_importance <> v_old.importance then 'importance' end,
        case when p_kind is not null and p_kind <> v_old.kind then 'kind' end,
        case when p_metadata is not null and v_old.metadata || p_metadata <> v_old.metadata then 'metadata' end,
        -- New content without a new triple: the old triple described the old
        -- text, and a stale slot would make remember reinforce or supersede
        -- the wrong fact, so it is cleared.
        case when (v_triple_given or (v_content_changed and v_old.triple_predicate is not null))
                  and (pg_catalog.btrim(p_triple_subject), pg_catalog.btrim(p_triple_predicate),
                       pg_catalog.btrim(p_triple_object))
                      is distinct from (v_old.triple_subject, v_old.triple_predicate, v_old.triple_object)
             then 'triple' end
    ], null);
    if pg_catalog.cardinality(v_changed) = 0 then
        return v_old;  -- nothing to change: no event either
    end if;

    -- New content without a vector loses its old one: the worker re-embeds
    -- memories whose embedding is NULL (pgmem.claim_unembedded).
    update pgmem.memories as m
    set content = coalesce(v_content, m.content),
        embedding = case when p_embedding is not null then p_embedding::public.vector
                         when v_content_changed then null
                         else m.embedding end,
        importance = coalesce(p_importance, m.importance),
        kind = coalesce(p_kind, m.kind),
        metadata = case when p_metadata is null then m.metadata else m.metadata || p_metadata end,
        triple_subject = case when 'triple' = any (v_changed) then pg_catalog.btrim(p_triple_subject)
                              else m.triple_subject end,
        triple_predicate = case when 'triple' = any (v_changed) then pg_catalog.btrim(p_triple_predicate)
                                else m.triple_predicate end,
        triple_object = case when 'triple' = any (v_changed) then pg_catalog.btrim(p_triple_object)
                             else m.triple_object end,
        updated_at = v_now
    where m.tenant_id = v_old.tenant_id and m.memory_id = v_old.memory_id
    returning m.* into v_new;
    if p_importance is not null then  -- a new importance starts undecayed
        perform pgmem._set_effective_importance(v_new.tenant_id, v_new.memory_id, p_importance, v_now);
    end if;

    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                     created_at)
    values (v_old.tenant_id, v_old.memory_id, v_old.subject, 'update',
            case when v_content_changed then v_old.content end,
            case when v_content_changed then v_new.content end,
            pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                'changed', pg_catalog.to_jsonb(v_changed),
                'importance', case when 'importance' = any (v_changed)
                                   then pg_catalog.jsonb_build_array(v_old.importance, v_new.importance) end,
                'kind', case when 'kind' = any (v_changed)
                             then pg_catalog.jsonb_build_array(v_old.kind, v_new.kind) end,
                'embedded', case when 'embedding' = any (v_changed) then v_new.embedding is not null end,
                'redacted', case when pg_catalog.cardinality(v_redacted) > 0 then pg_catalog.to_jsonb(v_redacted) end)),
            v_now);
    return v_new;
end
$$;

comment on function pgmem.update_memory(bigint, text, real[], real, text, jsonb, text, text, text, timestamptz) is
    'Edits an active memory in place and records an update event with the old and new content. NULL arguments keep '
    'their value; p_metadata is merged into the stored object (||). New content is checked and redacted like '
    'pgmem.remember''s; pass its p_embedding, or the embedding is cleared for the worker to recompute. New content '
    'without a new triple clears the old triple. Returns the row. Errors: PM022 unknown id, PM050 not active, '
    'PM051 same as another active memory, PM052 prompt injection, PM010-PM020 invalid input.';

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
    v_ids bigint[];
begin
    if v_row.status = 'deleted' then
        return false;
    end if;
    -- A fact and the stated turn it came from say the same: forgetting one
    -- forgets the other too (pgmem._provenance_kin), or the turn would
    -- still tell what the user asked to forget.
    v_ids := array[v_row.memory_id]
             || array(select k.kin_id from pgmem._provenance_kin(v_row.tenant_id, array[v_row.memory_id]) as k);
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
    select m.tenant_id, m.memory_id, m.subject, 'delete',
           pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'previous_status', m.status,
               'with', case when m.memory_id <> v_row.memory_id then v_row.memory_id end)),
           v_now
    from pgmem.memories as m
    where m.tenant_id = v_row.tenant_id and m.memory_id = any (v_ids) and m.status <> 'deleted';
    update pgmem.memories as m
    set status = 'deleted', status_changed_at = v_now, updated_at = v_now
    where m.tenant_id = v_row.tenant_id and m.memory_id = any (v_ids) and m.status <> 'deleted';
    -- Nor may a copy of the text tell it: the session's turns, its
    -- summaries and the queue are scrubbed too.
    perform pgmem._scrub_forgotten(v_row.tenant_id, v_row.subject,
                                   array(select m.content from pgmem.memories as m
                                         where m.tenant_id = v_row.tenant_id and m.memory_id = any (v_ids)));
    return true;
end
$$;

comment on function pgmem.forget(bigint, timestamptz) is
    'Soft-deletes a memory (status deleted; recall no longer returns it, history keeps it until purge scrubs it), and with it the stated turn it was extracted from or the facts extracted from it (derived_from links), each with its own delete event; their texts'' copies in the subject''s session turns, extractive summaries and inbox turn jobs become [forgotten]. Returns false if it was deleted already; PM022 for an id this tenant does not have. To remove data for good use pgmem.erase_subject.';

-- Pinning and keeping are one flag each on the memory, set the same way.
create or replace function pgmem._mark(p_memory_id bigint, p_mark text, p_on boolean, p_now timestamptz)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_row pgmem.memories := pgmem._memory_for_update(p_memory_id, 'pgmem.' || p_mark);
begin
    if p_on is null then
        raise exception '% must be true or false', case p_mark when 'pin' then 'p_pinned' else 'p_kept' end
            using errcode = 'null_value_not_allowed',
                  hint = case p_mark when 'pin' then 'pgmem.unpin(id) unpins.'
                         else 'pgmem.keep(id, false) lets maintenance have it again.' end;
    end if;
    if (case p_mark when 'pin' then v_row.pinned else v_row.kept end) = p_on then
        return false;
    end if;
    update pgmem.memories as m
    set pinned = case when p_mark = 'pin' then p_on else m.pinned end,
        kept = case when p_mark = 'keep' then p_on else m.kept end,
        updated_at = v_now
    where m.tenant_id = v_row.tenant_id and m.memory_id = v_row.memory_id;
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, created_at)
    values (v_row.tenant_id, v_row.memory_id, v_row.subject, case when p_on then p_mark else 'un' || p_mark end,
            v_now);
    return true;
end
$$;

comment on function pgmem._mark(bigint, text, boolean, timestamptz) is
    'Sets a memory''s pin (p_mark pin) or kept flag (keep) with its pin/unpin or keep/unkeep event; false if it was so already (internal: pgmem.pin, pgmem.keep).';

create or replace function pgmem.pin(p_memory_id bigint, p_pinned boolean default true, p_now timestamptz default null)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return pgmem._mark(p_memory_id, 'pin', p_pinned, p_now);
end
$$;

comment on function pgmem.pin(bigint, boolean, timestamptz) is
    'Pins a memory (p_pinned => false unpins): pinned memories never decay, are never archived or evicted. Returns false if nothing changed; PM022 for an id this tenant does not have.';

create or replace function pgmem.keep(p_memory_id bigint, p_kept boolean default true, p_now timestamptz default null)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return pgmem._mark(p_memory_id, 'keep', p_kept, p_now);
end
$$;

comment on function pgmem.keep(bigint, boolean, timestamptz) is
    'Keeps a memory as application state (p_kept => false lets it go): a kept memory never decays, is never archived, expired or evicted, and does not count towards capacity_per_subject; unlike a pinned one it is not in the core profile. The LangGraph store keeps its items. Returns false if nothing changed; PM022 for an id this tenant does not have.';

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
    -- With the owner's rights: app roles hold no DELETE privilege (71_owner_writes.sql).
    v_counts := pgmem._erase_subject_rows(v_tenant, p_subject, v_now);
    if v_counts is null then
        return 0;  -- nothing about this subject (any more): erasing twice is not an error
    end if;
    v_memories := (v_counts ->> 'memories')::bigint;
    return v_memories;
end
$$;

comment on function pgmem.erase_subject(text, timestamptz) is
    'Right to be forgotten: removes every row about p_subject from every pgmem table (memories, links, events, inbox jobs, the subject itself) and writes one tombstone event without subject or content. Returns how many memories went; 0 if the subject is unknown.';
