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
--   3b. an active fact it contradicts (13_conflict.sql: pgmem.contradiction
--       on its close neighbours), checked before duplicates:
--        older and no more sure than the new one   → 'superseded' (as in 3)
--        newer than the new fact                    → 'outdated' (as in 3)
--        surer, and the new fact not sure enough
--        (pgmem._may_supersede)                     → 'disputed' (stored as
--                                                    history, superseded by it)
--      (and with settings.judge_conflicts, a 'judge' job for the worker's
--      LLM when neighbours within conflict_threshold are left undecided)
--   4. cosine similarity ≥ duplicate_threshold, and the stored fact says
--      all the new one does (pgmem._covers: its terms, polarity, change)
--                                                   → 'deduplicated'
--   5. cosine similarity ≥ merge_threshold, and one of the two says all the
--      other does                                   → 'merge_pending'
--      (inserted, and a 'merge' job for the worker in pgmem.inbox)
--   6. otherwise                                    → 'inserted': two
--      facts that merely look alike are both kept
-- The thresholds are the embedding model's (pgmem.model_thresholds) unless
-- the tenant's settings name its own. A stated turn (source 'turn', the
-- episode facts are derived from) skips 3b-5: only the same content
-- (step 2) matches it, and no fact is ever decided against it. Steps 3b-5
-- compare a fact with the subject's facts and an episode (kind episodic)
-- with its episodes: an episode that shares a fact's words records a
-- moment, it is not the fact's duplicate or contradiction.
-- Secrets and personal data are redacted (pgmem.redact) before any of this,
-- so two facts that differ only in a phone number are the same fact.
-- Every change writes a pgmem.memory_events row. Similarity is checked by
-- an exact scan over the subject's active memories, not the HNSW index: a
-- subject holds at most settings.capacity_per_subject rows, and an ANN
-- index filtered to one subject can miss its nearest neighbour.
-- Input checks (PM010-PM022) are in 10_input.sql; the subject lock and the
-- HNSW flag in 11_subjects.sql; pgmem.remember itself, which locks the
-- subject and checks and redacts the text before it asks
-- pgmem._remember_decide, in 12_remember_one.sql; remember_many, the bulk
-- form, in 14_remember_many.sql.

-- The decision ladder, once: both remember forms ask it. p_triple is what
-- the fact's triple key (subject, predicate) finds among the active rows:
-- 'same' object, an active fact that is 'newer', an 'other' object, or NULL
-- (no triple, or no active row for its key).
-- Before the evidence of pgmem._covers it had no p_covered.
drop function if exists pgmem._write_action(pgmem.settings, boolean, text, real);

create or replace function pgmem._write_action(
    p_settings pgmem.settings,
    p_same_content boolean,
    p_triple text,
    p_similarity real,
    -- pgmem._coverage of the new fact and its nearest row
    p_covered text
)
returns text
language sql
immutable parallel safe
security invoker
as $$
    -- No SET clause and qualified operators: inlined where it is called.
    select case when p_same_content then 'reinforced'
                when p_triple operator(pg_catalog.=) 'same' then 'reinforced'
                when p_triple operator(pg_catalog.=) 'newer' then 'outdated'
                when p_triple operator(pg_catalog.=) 'other' then 'superseded'
                when p_similarity operator(pg_catalog.>=) p_settings.duplicate_threshold
                     and p_covered operator(pg_catalog.=) any (array['old', 'both']) then 'deduplicated'
                when p_similarity operator(pg_catalog.>=) p_settings.merge_threshold
                     and p_covered is not null then 'merge_pending'
                else 'inserted'
           end
$$;

comment on function pgmem._write_action(pgmem.settings, boolean, text, real, text) is
    'The write decision for a fact: reinforced, outdated, superseded, deduplicated, merge_pending or inserted, from what matched it (same content, its triple key, the nearest similarity and which of the two covers the other) and the thresholds of p_settings (internal; steps 2-6 above).';

-- What every write event of a fact says besides its own details.
create or replace function pgmem._write_details(p_redacted text[], p_agent_id text)
returns jsonb
language sql
immutable parallel safe
security invoker
as $$
    -- No SET clause and qualified operators: inlined where it is called.
    select pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
               'redacted', case when pg_catalog.cardinality(p_redacted) operator(pg_catalog.>) 0
                                then pg_catalog.to_jsonb(p_redacted) end,
               'agent_id', p_agent_id))
$$;

comment on function pgmem._write_details(text[], text) is
    'The details every write event of a fact carries: the kinds of redacted data and the agent (internal).';

-- Its older signatures: before facts carried a confidence and an expiry
-- (13_confidence.sql) it had neither, then no p_check_conflicts, then no
-- p_terms and p_marks.
drop function if exists pgmem._remember_decide(text, pgmem.settings, text, text, text[], public.vector, text, real,
                                               text, text, text, text, text, text, jsonb, timestamptz, timestamptz);
drop function if exists pgmem._remember_decide(text, pgmem.settings, text, text, text[], public.vector, text, real,
                                               text, text, text, text, text, text, jsonb, timestamptz, timestamptz,
                                               real, timestamptz);
drop function if exists pgmem._remember_decide(text, pgmem.settings, text, text, text[], public.vector, text, real,
                                               text, text, text, text, text, text, jsonb, timestamptz, timestamptz,
                                               real, timestamptz, boolean);
drop function if exists pgmem._remember_decide(text, pgmem.settings, text, text, text[], public.vector, text, real,
                                               text, text, text, text, text, text, jsonb, timestamptz, timestamptz,
                                               real, timestamptz, boolean, text[], text[]);

-- What every checked write of one fact does first (pgmem.remember,
-- pgmem.consolidate): the tenant's write settings, the input checks
-- (PM010-PM020, PM026, PM027), then the subject's lock: a call that waits
-- for it has written nothing.
create or replace function pgmem._begin_write(
    p_tenant text,
    p_subject text,
    p_content text,
    p_kind text,
    p_importance double precision,
    p_embedding real[],
    p_triple_subject text,
    p_triple_predicate text,
    p_triple_object text,
    p_source text,
    p_metadata jsonb,
    p_confidence double precision,
    p_expires_at timestamptz,
    p_valid_from timestamptz,
    p_now timestamptz
)
returns pgmem.settings
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_settings pgmem.settings := pgmem._write_settings(p_tenant);
    v_dims integer;
    v_finite boolean;
    v_norm double precision;
begin
    if p_embedding is not null then
        select e.dims, e.finite, e.norm into v_dims, v_finite, v_norm from pgmem._embedding_stats(p_embedding) as e;
    end if;
    perform pgmem._check_memory_input(null, v_settings, p_subject, p_content, p_kind, p_importance, v_dims, v_finite,
                                      v_norm, p_triple_subject, p_triple_predicate, p_triple_object, p_source,
                                      p_metadata);
    perform pgmem._check_truth_input(null, p_confidence, p_expires_at, p_valid_from);
    perform pgmem._lock_subjects(p_tenant, array[p_subject], p_now);
    return v_settings;
end
$$;

comment on function pgmem._begin_write(text, text, text, text, double precision, real[], text, text, text, text,
                                       jsonb, double precision, timestamptz, timestamptz, timestamptz) is
    'The start of a checked write of one fact: the tenant''s write settings (returned), the input checks, the subject''s lock (internal; pgmem.remember, pgmem.consolidate).';

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
    p_now timestamptz,
    p_confidence real,
    p_expires_at timestamptz,
    -- false: an explicit key-value write (remember_many's check_conflicts key)
    p_check_conflicts boolean default true,
    -- p_content's pgmem._conflict_terms and _conflict_marks, when the caller
    -- has them (pgmem._vouch); NULL: computed here
    p_terms text[] default null,
    p_marks text[] default null,
    -- rows this fact may not be decided a duplicate or merge of: an insight's
    -- own sources (pgmem.consolidate)
    p_not_near bigint[] default '{}'
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
    v_details jsonb := pgmem._write_details(p_redacted, p_agent_id);
    v_id bigint;
    v_old_content text;
    v_old_embedding public.vector;
    v_sim real;
    v_superseded bigint[];
    v_new_id bigint;
    v_newer_id bigint;
    v_newer_from timestamptz;
    -- Triple keys compare case-insensitively, without surrounding space.
    v_ann boolean;
    v_links_from bigint;
    v_row pgmem.memory_row;
    v_subject_key text := pg_catalog.lower(pg_catalog.btrim(p_triple_subject));
    v_predicate_key text := pg_catalog.lower(pg_catalog.btrim(p_triple_predicate));
    v_conflict record;
    v_near_id bigint;
    v_near_content text;
    v_near_sim real;
    v_subject_rows integer;  -- the subject's active rows as pgmem._neighbours read them
    v_replace bigint[] := '{}';
    v_rules jsonb := '{}';
    v_judge bigint[] := '{}';
    v_covered text;
    v_key_same boolean;  -- the row holding the new fact's triple key has its object too
    v_refines text;      -- 'within': the new object is part of that row's; 'around': it holds it
begin
    -- 2. The same fact in other words is the same fact: reinforce it. A
    -- turn meets only turns and a fact only facts: a fact said word for
    -- word by its turn is still a fact, with its kind and triple.
    select m.memory_id into v_id
    from pgmem.memories as m
    where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active' and m.content_hash = v_hash
      and pgmem._episode_source(m.source) = pgmem._episode_source(p_source);
    if found then
        action := pgmem._write_action(p_settings, true, null, null, null);
        similarity := 1;
    end if;

    -- 3. Triples: the same (subject, predicate) with another object replaces
    -- the old fact; with the same object it is the old fact again, when the
    -- old text says all the new one does. A new text that says more ("works
    -- at Google" then "works at Google as a data engineer in Zurich") is
    -- decided below on the evidence, never absorbed, and so is a value that
    -- refines the old one (pgmem._value_within: London, then "Hackney, East
    -- London"); a new object the old text or value already holds ("Dishoom
    -- in Covent Garden" then "Dishoom") is the old fact again, not its
    -- replacement.
    if v_id is null and p_triple_predicate is not null then
        select m.memory_id, m.content,
               pgmem._coverage(coalesce(p_terms, pgmem._conflict_terms(p_content)),
                               coalesce(p_marks, pgmem._conflict_marks(p_content)),
                               coalesce(m.conflict_terms, pgmem._conflict_terms(m.content)),
                               coalesce(m.conflict_marks, pgmem._conflict_marks(m.content))),
               pgmem._normalize(m.triple_object) = pgmem._normalize(p_triple_object),
               case when pgmem._value_within(p_triple_object, m.triple_object) then 'within'
                    when pgmem._value_within(m.triple_object, p_triple_object) then 'around' end
        into v_id, v_old_content, v_covered, v_key_same, v_refines
        from pgmem.memories as m
        where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active'
          and m.triple_predicate is not null
          and pg_catalog.lower(m.triple_predicate) = v_predicate_key
          and pg_catalog.lower(m.triple_subject) = v_subject_key
        order by pgmem._normalize(m.triple_object) = pgmem._normalize(p_triple_object) desc,
                 m.valid_from desc, m.memory_id desc
        limit 1;
        if found and (v_covered in ('old', 'both') or v_refines = 'within') then
            action := pgmem._write_action(p_settings, false, 'same', null, null);
        elsif found and (v_key_same or v_refines = 'around') then
            -- Says more than the fact its key holds (or other things beside
            -- it), or refines its value (London, then Hackney, East London):
            -- decided on the evidence below, the old fact kept.
            v_id := null;
            v_old_content := null;
        else
            v_id := null;
            v_old_content := null;
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
                action := pgmem._write_action(p_settings, false, 'newer', null, null);
                related_id := v_newer_id;
                similarity := (1 - (v_old_embedding OPERATOR(public.<=>) p_embedding))::real;
            end if;
        end if;
        if v_id is null and action is null and not coalesce(v_key_same or v_refines = 'around', false) then
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
                action := pgmem._write_action(p_settings, false, 'other', null, null);
                related_id := v_superseded[1];
                similarity := (1 - (v_old_embedding OPERATOR(public.<=>) p_embedding))::real;
            end if;
        end if;
        v_covered := null;
    end if;

    -- 3b. Contradictions (13_conflict.sql), before duplicates: a near-duplicate
    -- that contradicts an active fact is never absorbed by it.
    -- One scan of the subject (pgmem._neighbours) gives the contradiction
    -- candidates and the nearest row of step 4, which reads the subject as
    -- step 3b left it: step 4 runs only when 3b changed nothing.
    if v_id is null and p_source <> 'turn' and (action is null or action = 'superseded')
       and (p_check_conflicts or (action is null and p_embedding is not null)) then
        for v_conflict in
            select c.*
            from pgmem._neighbours(
                     p_tenant, p_settings, p_subject,
                     array[row(1, p_content, p_embedding, p_valid_from,
                               case when p_check_conflicts then coalesce(p_terms, pgmem._conflict_terms(p_content)) end,
                               case when p_check_conflicts then coalesce(p_marks, pgmem._conflict_marks(p_content)) end,
                               p_check_conflicts, p_kind = 'episodic')::pgmem.write_probe]) as c
        loop
            v_subject_rows := v_conflict.subject_rows;
            if v_conflict.nearest then
                v_near_id := v_conflict.memory_id;
                v_near_content := v_conflict.content;
                v_near_sim := v_conflict.similarity;
            elsif v_conflict.rule is null then
                -- Undecided by the rules; above merge_threshold the merge job reads both.
                if v_conflict.similarity < p_settings.merge_threshold then
                    v_judge := v_judge || v_conflict.memory_id;
                end if;
            elsif action is not null then
                -- Its triple superseded already: the other facts it contradicts go too.
                if v_conflict.valid_from <= p_valid_from
                   and pgmem._may_supersede(p_settings, v_conflict.confidence, p_confidence) then
                    v_replace := v_replace || v_conflict.memory_id;
                end if;
            elsif v_conflict.valid_from > p_valid_from then
                if v_newer_id is null or v_conflict.valid_from < v_newer_from then
                    v_newer_id := v_conflict.memory_id;
                    v_newer_from := v_conflict.valid_from;
                    related_id := v_conflict.memory_id;
                    similarity := v_conflict.similarity;
                end if;
            elsif not pgmem._may_supersede(p_settings, v_conflict.confidence, p_confidence) then
                if v_newer_id is null then
                    v_newer_id := v_conflict.memory_id;
                    v_newer_from := p_valid_from;  -- history from the start: never believed
                    related_id := v_conflict.memory_id;
                    similarity := v_conflict.similarity;
                end if;
            else
                v_replace := v_replace || v_conflict.memory_id;
            end if;
            if v_conflict.rule is not null then
                v_rules := v_rules || pg_catalog.jsonb_build_object(v_conflict.memory_id::text, v_conflict.rule);
            end if;
            if action is null and v_conflict.rule is not null and v_newer_id is null and related_id is null then
                related_id := v_conflict.memory_id;
                similarity := v_conflict.similarity;
            end if;
        end loop;
        if action is null and v_newer_id is not null then
            -- A newer contradicting fact makes the new one history; a surer
            -- one makes it disputed history. Either way nothing is replaced.
            action := case when v_newer_from > p_valid_from then 'outdated' else 'disputed' end;
        elsif pg_catalog.cardinality(v_replace) > 0 then
            with closed as (
                update pgmem.memories as m
                set status = 'superseded',
                    valid_to = greatest(m.valid_from, p_valid_from),
                    status_changed_at = p_now,
                    updated_at = p_now
                where m.tenant_id = p_tenant and m.memory_id = any (v_replace) and m.status = 'active'
                returning m.memory_id
            )
            select coalesce(v_superseded, '{}') || pg_catalog.array_agg(c.memory_id order by c.memory_id desc)
            into v_superseded
            from closed as c;
            action := pgmem._write_action(p_settings, false, 'other', null, null);
        elsif action is null then
            related_id := null;
            similarity := null;
        end if;
    end if;

    -- 4./5. Nearest active memory of the subject by cosine similarity (exact,
    -- from the scan above; a degenerate NaN distance is no match).
    if v_id is null and action is null and p_embedding is not null and p_source <> 'turn'
       and not coalesce(v_near_id = any (p_not_near), false) then
        v_id := v_near_id;
        v_old_content := v_near_content;
        v_sim := v_near_sim;
        if v_sim >= p_settings.merge_threshold then
            -- The evidence beside similarity (pgmem._covers), for a close row only.
            select pgmem._coverage(coalesce(p_terms, pgmem._conflict_terms(p_content)),
                                   coalesce(p_marks, pgmem._conflict_marks(p_content)),
                                   coalesce(m.conflict_terms, pgmem._conflict_terms(m.content)),
                                   coalesce(m.conflict_marks, pgmem._conflict_marks(m.content)))
            into v_covered
            from pgmem.memories as m
            where m.tenant_id = p_tenant and m.memory_id = v_near_id;
        end if;
        action := pgmem._write_action(p_settings, false, null, v_sim, v_covered);
        if action = 'deduplicated' then
            similarity := v_sim;
        else
            if action = 'merge_pending' then
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
            -- Said again: as sure as the surer of the two sayings.
            confidence = greatest(m.confidence, p_confidence),
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

    -- In the HNSW index when its subject is (pgmem._ann_subjects); read
    -- first: Citus plans no subquery inside INSERT … VALUES.
    select s.ann, s.links_pending_from into v_ann, v_links_from
    from pgmem.subjects as s where s.tenant_id = p_tenant and s.subject = p_subject;
    v_row := row(p_subject, p_agent_id, p_session_id, p_kind, p_content, p_embedding, p_importance, p_confidence,
                 p_source, pg_catalog.btrim(p_triple_subject), pg_catalog.btrim(p_triple_predicate),
                 pg_catalog.btrim(p_triple_object), p_valid_from, v_newer_from,
                 case when v_newer_id is null then 'active' else 'superseded' end, p_expires_at, p_metadata, v_ann);
    if pgmem._distributed() then
        -- On Citus every statement of the write runs as the caller: a
        -- transaction may not touch a shard as two roles (docs/scaling.md).
        insert into pgmem.memories as m (tenant_id, subject, agent_id, session_id, kind, content, embedding,
                                         importance, confidence, source, triple_subject, triple_predicate,
                                         triple_object, valid_from, valid_to, status, status_changed_at,
                                         last_accessed_at, expires_at, metadata, created_at, updated_at, ann)
        values (p_tenant, v_row.subject, v_row.agent_id, v_row.session_id, v_row.kind, v_row.content,
                v_row.embedding, v_row.importance, v_row.confidence, v_row.source, v_row.triple_subject,
                v_row.triple_predicate, v_row.triple_object, v_row.valid_from, v_row.valid_to, v_row.status,
                p_now, p_now, v_row.expires_at, v_row.metadata, p_now, p_now, v_row.ann)
        returning m.memory_id into v_new_id;
    else
        select s.memory_id into v_new_id from pgmem._store_memories(p_tenant, array[v_row], p_now) as s;
    end if;
    action := coalesce(action, 'inserted');
    memory_id := v_new_id;
    -- Association links (same_session, same_entity), 32_consolidate.sql: a
    -- fact's now; an episode's later, by pgmem.link_episodes, from the
    -- subject's oldest one waiting. (Ids rise within a subject on one server;
    -- on Citus each node draws from a range of its own, hence the comparison.)
    if not pgmem._episode_source(p_source) then
        perform pgmem._link_at_write(p_tenant, array[v_new_id], p_now);
    elsif (v_links_from is null or v_links_from > v_new_id)
          and pgmem._linkable(p_session_id, v_row.triple_predicate) then
        update pgmem.subjects as s set links_pending_from = v_new_id
        where s.tenant_id = p_tenant and s.subject = p_subject;
    end if;

    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, new_content, details, created_at)
    values (p_tenant, v_new_id, p_subject, 'insert', p_content,
            v_details || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                'action', action, 'related_id', related_id, 'similarity', similarity,
                'supersedes', pg_catalog.to_jsonb(v_superseded), 'conflicts', nullif(v_rules, '{}'))),
            p_now);

    if action in ('outdated', 'disputed') then
        insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, created_at)
        values (p_tenant, v_newer_id, v_new_id, 'supersedes', p_now);
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                         created_at)
        values (p_tenant, v_new_id, p_subject, case when action = 'outdated' then 'supersede' else 'conflict' end,
                p_content, null,
                v_details || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                    'superseded_by', v_newer_id, 'late', case when action = 'outdated' then true end,
                    'reason', case when action = 'disputed' then 'low_confidence' end,
                    'rule', v_rules ->> v_newer_id::text)),
                p_now);
    elsif action = 'superseded' then
        insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, created_at)
        select p_tenant, v_new_id, o.id, 'supersedes', p_now from pg_catalog.unnest(v_superseded) as o(id);
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                         created_at)
        select p_tenant, m.memory_id, p_subject, 'supersede', m.content, p_content,
               v_details || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                   'superseded_by', v_new_id, 'rule', v_rules ->> m.memory_id::text)),
               p_now
        from pgmem.memories as m
        where m.tenant_id = p_tenant and m.memory_id = any (v_superseded);
    elsif action = 'merge_pending' then
        insert into pgmem.inbox (tenant_id, job, subject, session_id, agent_id, payload, available_at, created_at)
        values (p_tenant, 'merge', p_subject, p_session_id, p_agent_id,
                pg_catalog.jsonb_build_object('memory_id', v_new_id, 'related_id', related_id,
                                              'similarity', similarity),
                p_now, p_now);
        -- Wakes the worker at commit, like pgmem.enqueue.
        perform pg_catalog.pg_notify('pgmem_inbox', '');  -- no tenant: any role may LISTEN
    end if;
    if action in ('inserted', 'merge_pending')
       and (v_subject_rows is null or v_subject_rows + 1 > p_settings.exact_scan_limit) then
        -- One more active row: the subject may have crossed exact_scan_limit.
        -- Not when the subject's read above (under its lock) left room for
        -- it: counting ~1,000 rows again cost ~0.7 ms of a write.
        perform pgmem._ann_subjects(p_tenant, p_settings, array[p_subject]);
    end if;
    if action in ('inserted', 'superseded') and p_settings.judge_conflicts and pg_catalog.cardinality(v_judge) > 0 then
        perform pgmem._queue_judge(p_tenant, p_subject, p_session_id, p_agent_id, v_new_id, v_judge, p_now);
    end if;
    return next;
end
$$;

comment on function pgmem._remember_decide(text, pgmem.settings, text, text, text[], public.vector, text, real, text,
                                            text, text, text, text, text, jsonb, timestamptz, timestamptz, real,
                                            timestamptz, boolean, text[], text[], bigint[]) is
    'Core of pgmem.remember for checked, redacted input whose subject is locked: reinforce, supersede, deduplicate, insert for merge or insert, with events; p_terms and p_marks are the content''s contradiction features when the caller has them; p_not_near rows are never its duplicate or merge (internal).';

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
