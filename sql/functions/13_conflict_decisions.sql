-- Contradiction decisions: what the write path does with a new fact's
-- close neighbours once the rules of 13_conflict.sql have read them.
-- pgmem._neighbours reads the subject's active memories once for a whole
-- batch: each new fact's nearest row (the duplicate and merge check) and
-- its close neighbours, each with the rule it breaks. Neighbours no rule
-- decides go to the worker's LLM judge (pgmem._queue_judge), whose answer
-- pgmem.resolve_conflict applies under the subject's lock; and
-- pgmem.merge_keeper says which of two near-duplicates a merge without an
-- LLM keeps. The confidence rule they apply is pgmem._may_supersede
-- (13_confidence.sql).

-- Before it read the pair in time order it had no p_valid_from; before
-- stored features, no p_terms and p_marks; before it served a whole batch
-- and the duplicate check with one scan (alembic 0013), it was _conflicts.
drop function if exists pgmem._conflicts(text, pgmem.settings, text, text, public.vector);
drop function if exists pgmem._conflicts(text, pgmem.settings, text, text, public.vector, timestamptz);
drop function if exists pgmem._conflicts(text, pgmem.settings, text, text, public.vector, timestamptz, text[], text[]);

create or replace function pgmem._contradiction_candidates()
returns integer
language sql
immutable parallel safe
security invoker
as $$
    -- On real text a shared term alone admits dozens of a subject's rows;
    -- the rules read the nearest few.
    select 16
$$;

comment on function pgmem._contradiction_candidates() is
    'How many close neighbours of a new fact the contradiction rules read, nearest first: of its subject''s rows (pgmem._neighbours) and of the other items of a remember_many batch (internal).';

-- (Its result gained subject_rows: a new result type is a new function.)
drop function if exists pgmem._neighbours(text, pgmem.settings, text, pgmem.write_probe[]);
create or replace function pgmem._neighbours(
    p_tenant text,
    p_settings pgmem.settings,
    p_subject text,
    p_probes pgmem.write_probe[]
)
returns table(item integer, memory_id bigint, nearest boolean, rule text, similarity real, valid_from timestamptz,
              confidence real, content text, subject_rows integer)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
set jit = off
-- One plan per session, the subject read through memories_subject: as in
-- pgmem._recall (20_recall.sql), which says why. Planning the statement
-- below cost ~1.4 ms of every write.
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
as $$
#variable_conflict use_column
declare
    -- The first new fact's vector, and whether there are others: the read
    -- of the subject measures every row against the first, and keeps the
    -- rows' own vectors (~800 bytes each) only for the others to use.
    v_first public.halfvec := (p_probes[1]).embedding;
    v_others boolean := pg_catalog.cardinality(p_probes) > 1;
begin
    perform pgmem._plan_per_call_on_citus();
    -- What a write must know of its subject's active memories (but the
    -- stated turns, source 'turn', which only an exact re-send matches),
    -- for each new fact (probe) at once, from one read of the subject (an exact scan, as
    -- a subject holds at most capacity_per_subject rows):
    --  * nearest: its nearest row by cosine (the duplicate and merge check;
    --    a degenerate NaN distance is no match), whatever the similarity;
    --  * otherwise (probes with check_conflicts): its close neighbours, each
    --    with the contradiction rule it breaks (NULL: none, a question for
    --    the judge): within conflict_threshold by cosine, sharing a term
    --    ("likes dark mode" and "prefers light mode" share "mode"), or of the
    --    same one-valued attribute ("lives in Hangzhou", "moved to
    --    Shanghai"); the nearest few (pgmem._contradiction_candidates()).
    -- The neighbour test runs on the rows in similarity order and stops when
    -- enough pass: on real text a shared term admits half of a
    -- subject, so it runs on a few dozen rows, not on all (an overlap of two
    -- text arrays costs ~6 us). The rules read the two statements in the
    -- order they became true, for those only; only those rows' text is read.
    -- Every row also says how many active rows the subject holds, which
    -- spares the caller counting them again (pgmem._ann_subjects).
    return query
        with probes as materialized (
            select p.item, p.content, p.embedding, p.valid_from, p.terms, p.marks, p.check_conflicts,
                   array(select k from pg_catalog.unnest(p.marks) as k where k like 'attribute:%') as attributes,
                   coalesce(p.episodic, false) as episodic, p.ordinal
            from pg_catalog.unnest(p_probes) with ordinality as p(item, content, embedding, valid_from, terms, marks,
                                                                  check_conflicts, episodic, ordinal)
        ),
        -- The subject, read once. Rows stored before alembic 0012 hold no
        -- features: their text is read (but a stated turn's or a store
        -- item's, which hold none and meet no fact). A single write's rows
        -- carry their distance to it, not their vectors: ~0.6 ms less to
        -- keep and read back at 1,000 rows.
        subject_rows as materialized (
            select m.memory_id, e.episode, m.kind = 'episodic' as episodic,
                   m.embedding OPERATOR(public.<=>) v_first as first_distance,
                   case when v_others then m.embedding end as embedding,
                   case when not e.episode then coalesce(m.conflict_terms, pgmem._conflict_terms(m.content)) end
                       as terms,
                   case when not e.episode then coalesce(m.conflict_marks, pgmem._conflict_marks(m.content)) end
                       as marks
            from pgmem.memories as m
            cross join lateral (select pgmem._episode_source(m.source) as episode) as e
            where m.tenant_id = p_tenant and m.subject = p_subject and m.status = 'active'
        ),
        counted as (
            select pg_catalog.count(*)::integer as subject_rows from subject_rows
        ),
        -- Each probe's pass over the subject's rows, nearest first (distance,
        -- then the oldest; rows without a vector last, the newest first),
        -- each distance computed once: the first row is its nearest when its
        -- distance is a number (a degenerate NaN distance is no match); the
        -- neighbour test runs on the rows in that order, only on rows pulled,
        -- until enough pass. (The nearest row and the candidates were two
        -- passes, each computing every distance: ~0.9 ms more a probe.)
        ranked as (
            select p.item, d.memory_id, d.distance, d.terms, d.marks, d.rn, d.passes,
                   pg_catalog.count(*) filter (where d.passes) over (partition by p.item order by d.rn) as pass_rank
            from probes as p
            cross join lateral (
                select s.memory_id, s.distance, s.terms, s.marks, s.rn, s.passes
                from (select o.memory_id, o.distance, o.terms, o.marks,
                             -- Numbers the rows as they come: already in order.
                             pg_catalog.row_number() over () as rn,
                             p.check_conflicts
                             and (((1 - o.distance)::real >= p_settings.conflict_threshold
                                   and o.distance <> 'NaN'::double precision)
                                  or o.terms && p.terms
                                  or (p.attributes <> '{}' and o.marks && p.attributes)) as passes
                      -- OFFSET 0: each distance computed once, then every row sorted.
                      from (select x.memory_id, x.distance, x.terms, x.marks
                            from (select r.memory_id,
                                         case when p.ordinal = 1 then r.first_distance
                                              else r.embedding OPERATOR(public.<=>) p.embedding end as distance,
                                         r.terms, r.marks
                                  from subject_rows as r
                                  -- A stated turn is the record, a store item an
                                  -- app's state: no fact is their duplicate,
                                  -- merge or contradiction. Facts meet facts
                                  -- and episodes episodes: an episode that
                                  -- shares a fact's words ("Audrey: What is his
                                  -- name?") records a moment, it does not say
                                  -- the fact ("User's name is Audrey").
                                  where not r.episode and r.episodic = p.episodic
                                  offset 0) as x
                            order by x.distance, case when x.distance is null then -x.memory_id else x.memory_id end
                            offset 0) as o) as s
                where s.rn = 1 or s.passes
                -- The first row and enough passing ones (the first may be one).
                limit case when p.check_conflicts then 1 + pgmem._contradiction_candidates() else 1 end) as d
        )
        select n.item, n.memory_id, true as nearest, null::text as rule, (1 - n.distance)::real as similarity,
               m.valid_from, m.confidence, m.content, (select k.subject_rows from counted as k)
        from ranked as n
        join pgmem.memories as m on m.tenant_id = p_tenant and m.memory_id = n.memory_id
        where n.rn = 1 and n.distance <> 'NaN'::double precision
        union all
        select c.item, c.memory_id, false,
               case when m.valid_from > p.valid_from
                    then case when pgmem._may_contradict(p.marks, c.marks)
                              then pgmem._contradiction(p.content, p.terms, p.marks, m.content, c.terms, c.marks) end
                    when pgmem._may_contradict(c.marks, p.marks)
                    then pgmem._contradiction(m.content, c.terms, c.marks, p.content, p.terms, p.marks) end,
               (1 - c.distance)::real, m.valid_from, m.confidence, m.content, (select k.subject_rows from counted as k)
        from ranked as c
        join probes as p on p.item = c.item
        join pgmem.memories as m on m.tenant_id = p_tenant and m.memory_id = c.memory_id
        where c.passes and c.pass_rank <= pgmem._contradiction_candidates()
        order by item, nearest desc, similarity desc nulls last, memory_id desc;
end
$$;

comment on function pgmem._neighbours(text, pgmem.settings, text, pgmem.write_probe[]) is
    'For each new fact of p_probes, from one scan of the subject''s active memories but its stated turns (source turn), facts for a fact and episodes (kind episodic) for an episode: its nearest row by cosine (nearest = true, any similarity), and for probes with check_conflicts its close neighbours (cosine >= conflict_threshold, a shared term, or the same one-valued attribute; at most pgmem._contradiction_candidates(), nearest first) with the contradiction rule each breaks, NULL for none; every row also gives the subject''s count of active rows (internal; the caller holds the subject''s lock).';

create or replace function pgmem._queue_judge(
    p_tenant text,
    p_subject text,
    p_session_id text,
    p_agent_id text,
    p_memory_id bigint,
    p_related_ids bigint[],
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
    insert into pgmem.inbox (tenant_id, job, subject, session_id, agent_id, payload, available_at, created_at)
    values (p_tenant, 'judge', p_subject, p_session_id, p_agent_id,
            pg_catalog.jsonb_build_object('memory_id', p_memory_id, 'related_ids', pg_catalog.to_jsonb(p_related_ids)),
            p_now, p_now);
    perform pg_catalog.pg_notify('pgmem_inbox', '');  -- no tenant: any role may LISTEN
end
$$;

comment on function pgmem._queue_judge(text, text, text, text, bigint, bigint[], timestamptz) is
    'Queues a judge job: the worker''s LLM decides whether p_memory_id contradicts each of p_related_ids (close neighbours no rule decided) and pgmem.resolve_conflict applies it (internal).';

-- Error codes of the conflict decisions:
--   PM061  pgmem.resolve_conflict given an unknown decision
-- (PM022 unknown memory id and PM060 one id twice or two subjects, as pgmem.merge.)
create or replace function pgmem.resolve_conflict(
    p_memory_id bigint,
    p_other_id bigint,
    p_decision text,
    p_content text default null,
    p_embedding real[] default null,
    p_labels jsonb default null,
    p_now timestamptz default null
)
returns table(action text, memory_id bigint, other_id bigint)
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
    v_subject text;
    v_new pgmem.memories;
    v_old pgmem.memories;
    v_winner pgmem.memories;
    v_loser pgmem.memories;
    v_details jsonb;
begin
    memory_id := p_memory_id;
    other_id := p_other_id;
    if p_decision is null or p_decision not in ('replace', 'coexist', 'merge', 'keep') then
        raise exception 'unknown conflict decision %', coalesce(pg_catalog.quote_literal(p_decision), 'NULL')
            using errcode = 'PM061', hint = 'Use one of: replace, coexist, merge, keep.';
    end if;
    if p_memory_id is null or p_other_id is null or p_memory_id = p_other_id then
        raise exception 'a conflict needs two different memory ids, not % and %',
                        coalesce(p_memory_id::text, 'NULL'), coalesce(p_other_id::text, 'NULL')
            using errcode = 'PM060';
    end if;
    if p_labels is not null and pg_catalog.jsonb_typeof(p_labels) <> 'object' then
        raise exception 'p_labels must be a JSON object such as {"new": "since 2024", "old": "until 2024"}'
            using errcode = 'PM061', hint = 'Pass NULL for no time labels.';
    end if;
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant;

    -- The subject's lock first, as every write about a subject takes it: a
    -- remember racing this decision waits, or is waited for, and then sees
    -- the other's result (it never leaves two contradicting facts active).
    select m.subject into v_subject from pgmem.memories as m
    where m.tenant_id = v_tenant and m.memory_id = p_memory_id;
    if not found then
        raise exception 'tenant % has no memory %', v_tenant, p_memory_id using errcode = 'PM022';
    end if;
    perform pgmem._lock_subjects(v_tenant, array[v_subject], v_now);
    select m.* into v_new from pgmem.memories as m
    where m.tenant_id = v_tenant and m.memory_id = p_memory_id for no key update;
    select m.* into v_old from pgmem.memories as m
    where m.tenant_id = v_tenant and m.memory_id = p_other_id for no key update;
    if v_old.memory_id is null then
        raise exception 'tenant % has no memory %', v_tenant, p_other_id using errcode = 'PM022';
    end if;
    if v_old.subject <> v_new.subject then
        raise exception 'memories % and % are about different subjects (% and %)',
                        p_memory_id, p_other_id, v_new.subject, v_old.subject
            using errcode = 'PM060', hint = 'Only facts about the same subject can contradict each other.';
    end if;
    -- Superseded, merged or archived since the job was queued: the question is moot.
    if v_new.status <> 'active' or v_old.status <> 'active' then
        action := 'skipped';
        return next;
        return;
    end if;

    if p_decision = 'merge' then
        -- The newer fact is kept and takes the merged text (pgmem.merge).
        if v_new.valid_from >= v_old.valid_from then
            return query select r.action, r.keep_id, r.other_id
                         from pgmem.merge(p_memory_id, p_other_id, p_content, p_embedding, v_now) as r;
        else
            return query select r.action, r.keep_id, r.other_id
                         from pgmem.merge(p_other_id, p_memory_id, p_content, p_embedding, v_now) as r;
        end if;
        return;
    end if;

    if p_decision = 'coexist' then
        -- Both stay true, each with its time label ("until 2024", "since 2024").
        update pgmem.memories as m
        set metadata = m.metadata || pg_catalog.jsonb_build_object('time_label', l.label),
            updated_at = v_now
        from (values (p_memory_id, p_labels ->> 'new'), (p_other_id, p_labels ->> 'old')) as l(id, label)
        where m.tenant_id = v_tenant and m.memory_id = l.id and l.label is not null;
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
        values (v_tenant, p_memory_id, v_subject, 'conflict',
                pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                    'decision', 'coexist', 'with', p_other_id, 'by', 'judge', 'time_label', p_labels ->> 'new')),
                v_now),
               (v_tenant, p_other_id, v_subject, 'conflict',
                pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                    'decision', 'coexist', 'with', p_memory_id, 'by', 'judge', 'time_label', p_labels ->> 'old')),
                v_now);
        action := 'coexisted';
        return next;
        return;
    end if;

    -- replace: the newer fact wins if the confidence rule lets it; keep: the
    -- older one stays the truth. The loser becomes history, valid until the
    -- winner's valid_from, with a supersedes link from the winner.
    if p_decision = 'replace' and v_new.valid_from >= v_old.valid_from
       and pgmem._may_supersede(v_settings, v_old.confidence, v_new.confidence) then
        v_winner := v_new;
        v_loser := v_old;
        action := 'superseded';
    else
        v_winner := v_old;
        v_loser := v_new;
        action := case when p_decision = 'keep' then 'kept'
                       when v_new.valid_from < v_old.valid_from then 'outdated'
                       else 'disputed' end;
    end if;
    update pgmem.memories as m
    set status = 'superseded',
        valid_to = greatest(m.valid_from, v_winner.valid_from),
        status_changed_at = v_now,
        updated_at = v_now
    where m.tenant_id = v_tenant and m.memory_id = v_loser.memory_id;
    insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, created_at)
    values (v_tenant, v_winner.memory_id, v_loser.memory_id, 'supersedes', v_now)
    on conflict do nothing;
    v_details := pg_catalog.jsonb_build_object('decision', p_decision, 'by', 'judge',
                                               'superseded_by', v_winner.memory_id);
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                     created_at)
    values (v_tenant, v_loser.memory_id, v_subject, 'supersede', v_loser.content, v_winner.content,
            v_details || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                'reason', case when action = 'disputed' then 'low_confidence' end)),
            v_now);
    return next;
end
$$;

comment on function pgmem.resolve_conflict(bigint, bigint, text, text, real[], jsonb, timestamptz) is
    'Applies a judge''s decision on new fact p_memory_id against active fact p_other_id, under the subject''s lock: replace (the newer one supersedes the other if pgmem._may_supersede allows, else the new one is kept as disputed history), keep (the other stays, the new one becomes history), coexist (both active; p_labels {"new": …, "old": …} become metadata.time_label, conflict events) or merge (pgmem.merge, the newer kept, p_content/p_embedding its text). Returns superseded, kept, outdated, disputed, coexisted, merged, already_merged or skipped (either no longer active). PM022, PM060, PM061.';

-- Replaced by the stored features (pgmem._conflict_marks).
drop function if exists pgmem._conflict_profile(text);

create or replace function pgmem.merge_keeper(p_stored_id bigint, p_new_id bigint)
returns bigint
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_settings pgmem.settings;
    v_stored pgmem.memories;
    v_new pgmem.memories;
begin
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = v_tenant;
    select m.* into v_stored from pgmem.memories as m where m.tenant_id = v_tenant and m.memory_id = p_stored_id;
    select m.* into v_new from pgmem.memories as m where m.tenant_id = v_tenant and m.memory_id = p_new_id;
    if v_stored.memory_id is null or v_new.memory_id is null then
        raise exception 'no memory % or %', p_stored_id, p_new_id using errcode = 'PM022';
    end if;
    -- Without a model to write one text for both, only a statement that
    -- says all the other does may stand for it (pgmem._covers); when
    -- neither does, both stay (NULL).
    case pgmem._coverage(coalesce(v_new.conflict_terms, pgmem._conflict_terms(v_new.content)),
                         coalesce(v_new.conflict_marks, pgmem._conflict_marks(v_new.content)),
                         coalesce(v_stored.conflict_terms, pgmem._conflict_terms(v_stored.content)),
                         coalesce(v_stored.conflict_marks, pgmem._conflict_marks(v_stored.content)))
        when 'new' then return p_new_id;
        when 'old' then return p_stored_id;
        when 'both' then null;
        else return null;
    end case;
    -- Each says all the other does: the newer statement (valid time, then
    -- write order) wins, as a supersession would, unless the confidence rule
    -- holds it back.
    if (v_new.valid_from, v_new.memory_id) > (v_stored.valid_from, v_stored.memory_id)
       and pgmem._may_supersede(v_settings, v_stored.confidence, v_new.confidence) then
        return p_new_id;
    end if;
    if (v_stored.valid_from, v_stored.memory_id) > (v_new.valid_from, v_new.memory_id)
       and pgmem._may_supersede(v_settings, v_new.confidence, v_stored.confidence) then
        return p_stored_id;
    end if;
    -- Newer but not sure enough: the surer one.
    return case when v_new.confidence > v_stored.confidence then p_new_id else p_stored_id end;
end
$$;

comment on function pgmem.merge_keeper(bigint, bigint) is
    'Which of two near-duplicates a merge without an LLM keeps as it is: the one that says all the other does (pgmem._covers); when each covers the other, the newer one (valid_from, then id) if pgmem._may_supersede lets it replace the other, else the surer one; NULL when neither covers the other (keep both). PM022 for an unknown id.';
