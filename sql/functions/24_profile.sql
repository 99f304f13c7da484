-- The core profile: the few facts about a subject every prompt carries,
-- whatever this turn's words (the always-present block MemGPT and Letta
-- call core memory). pgmem.prompt and pgmem.context render it first, under
-- its own share of the budget (settings.profile_share), and leave its rows
-- (and the turns they were extracted from) out of the recalled sections.
--
-- Members, at most settings.profile_limit, in this order:
--   1. pinned      every pinned memory (pgmem.pin, pgmem.set_profile);
--   and, selected by the engine among active facts (not episodes, not
--   stated turns), unless set_profile took them out:
--   2. health      health and safety: allergies, diets, conditions,
--                  medication (the predicate, or the words of a fact about
--                  the user);
--   3. identity    who the user is: name, age, home, work, nationality;
--   4. instruction standing instructions: procedural facts of importance
--                  at least settings.profile_min_importance, and reply
--                  language, length and format;
--   5. preference  strong preferences: importance at least
--                  profile_min_importance, or reinforced (accessed) at least
--                  three times;
-- then by importance, accesses (each reinforcement is one) and recency.

-- Plain columns, not a pgmem.memories row: on Citus each shard's rows have
-- their shard's row type, and a row-typed argument has no function there.
create or replace function pgmem._profile_reason(
    p_pinned boolean,
    p_kind text,
    p_source text,
    p_metadata jsonb,
    p_triple_subject text,
    p_triple_predicate text,
    p_content text,
    p_importance real,
    p_access_count integer,
    p_min_importance real
)
returns text
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select case
        when p_pinned then 'pinned'
        when p_kind = 'episodic' or pgmem._episode_source(p_source) or p_metadata @> '{"profile": false}' then null
        when p_triple_predicate in ('allergy', 'diet', 'medical_condition', 'medication', 'intolerance')
             or (coalesce(p_triple_subject, 'user') = 'user'
                 and p_content operator(pg_catalog.~*)
                     ('allerg|intoleran|anaphyla|diabet|asthma|epilep|c(o)?eliac|gluten|lactose|pregnan'
                      || '|vegetarian|vegan|halal|kosher|medication|inhaler|insulin|epipen'
                      || '|过敏|糖尿病|哮喘|癫痫|乳糖不耐|素食|忌口|不能吃|怀孕|胰岛素')) then 'health'
        when p_triple_subject = 'user'
             and p_triple_predicate in ('name', 'preferred_name', 'pronouns', 'age', 'birthday', 'lives_in',
                                        'hometown', 'nationality', 'employer', 'job_title', 'work_city',
                                        'field', 'marital_status', 'employment_status') then 'identity'
        when (p_kind = 'procedural' and p_importance >= p_min_importance)
             or p_triple_predicate in ('language', 'max_length', 'min_length', 'reply_format', 'tone')
             then 'instruction'
        when p_kind = 'preference'
             and (p_importance >= p_min_importance or p_access_count >= 3) then 'preference'
    end
$$;

comment on function pgmem._profile_reason(boolean, text, text, jsonb, text, text, text, real, integer, real) is
    'Why a memory belongs to its subject''s core profile (pinned, health, identity, instruction, preference), NULL when it does not (internal; the rules are at the top of sql/functions/24_profile.sql).';

create or replace function pgmem.profile(p_subject text, p_now timestamptz default null)
returns table (
    memory_id bigint,
    content text,
    kind text,
    reason text,
    importance real,
    pinned boolean,
    access_count integer,
    valid_from timestamptz
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
    v_pending record;
begin
    if p_subject is null or pg_catalog.btrim(p_subject) = '' then
        raise exception 'the profile needs a subject' using errcode = 'PM010';
    end if;
    select * into v_pending from pgmem._pending_accesses(v_tenant, array[p_subject]);
    select s.* into v_settings
    from pgmem.settings as s
    where s.tenant_id in (v_tenant, '_default')
    order by s.tenant_id = '_default'
    limit 1;
    return query
    select m.memory_id, m.content, m.kind, m.reason, m.importance, m.pinned, m.accesses, m.valid_from
    from (select m.*, pgmem._profile_reason(m.pinned, m.kind, m.source, m.metadata, m.triple_subject,
                                        m.triple_predicate, m.content, m.importance, m.accesses,
                                        v_settings.profile_min_importance) as reason
          from (select m.*, m.access_count + coalesce(a.accesses, 0) as accesses
                from pgmem.memories as m
                -- Accesses recorded and not folded yet count (pgmem._pending_accesses).
                left join unnest(v_pending.subjects, v_pending.memory_ids, v_pending.accesses,
                                 v_pending.last_accessed_at)
                    as a(subject, memory_id, accesses, last_accessed_at)
                    on a.memory_id = m.memory_id and a.subject = m.subject
                where m.tenant_id = v_tenant and m.subject = p_subject) as m
          where m.tenant_id = v_tenant and m.subject = p_subject and m.status = 'active'
            and (m.kind <> 'episodic' or m.pinned)
            and m.valid_from <= v_now and (m.valid_to is null or m.valid_to > v_now)
            and (m.expires_at is null or m.expires_at > v_now)) as m
    where m.reason is not null
    order by pg_catalog.array_position(array['pinned', 'health', 'identity', 'instruction', 'preference'], m.reason),
             m.importance desc, m.accesses desc, m.valid_from desc, m.memory_id desc
    limit v_settings.profile_limit;
end
$$;

comment on function pgmem.profile(text, timestamptz) is
    'A subject''s core profile, the facts pgmem.prompt and pgmem.context show first whatever the query: its pinned '
    'memories, then the facts the engine selects (health and safety, identity, standing instructions, strong '
    'preferences), each with its reason, at most settings.profile_limit. pgmem.set_profile adds or removes one.';

create or replace function pgmem.set_profile(p_memory_id bigint, p_member boolean default true,
                                             p_now timestamptz default null)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_row pgmem.memories := pgmem._memory_for_update(p_memory_id, 'pgmem.set_profile');
    v_metadata jsonb;
begin
    if p_member is null then
        raise exception 'p_member must be true or false' using errcode = 'null_value_not_allowed';
    end if;
    if v_row.status <> 'active' then
        raise exception 'memory % is %; only active memories belong to a profile', p_memory_id, v_row.status
            using errcode = 'PM050';
    end if;
    -- In: pinned, and no longer marked out. Out: unpinned and marked, so the
    -- engine does not select it again.
    v_metadata := case when p_member then v_row.metadata operator(pg_catalog.-) 'profile'
                       else v_row.metadata operator(pg_catalog.||) '{"profile": false}' end;
    if v_row.pinned = p_member and v_row.metadata = v_metadata then
        return false;
    end if;
    update pgmem.memories as m
    set pinned = p_member, metadata = v_metadata, updated_at = v_now
    where m.tenant_id = v_row.tenant_id and m.memory_id = v_row.memory_id;
    if v_row.pinned <> p_member then
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, created_at)
        values (v_row.tenant_id, v_row.memory_id, v_row.subject, case when p_member then 'pin' else 'unpin' end,
                v_now);
    end if;
    return true;
end
$$;

comment on function pgmem.set_profile(bigint, boolean, timestamptz) is
    'Puts a memory in its subject''s core profile (pins it) or, with p_member => false, takes it out (unpins it '
    'and marks it so the engine does not select it again). Returns false if nothing changed; PM022 for an id this '
    'tenant does not have, PM050 for one not active.';

create or replace function pgmem._profile_lines(p_subject text, p_budget integer, p_now timestamptz)
returns table (memory_id bigint, line text)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Most important first, until the next line would not fit; the heading
    -- counts against the budget too.
    return query
    select p.memory_id, p.line
    from (select p.memory_id, p.line, p.rank,
                 pgmem._estimate_tokens(E'## Core profile\n')
                     + pg_catalog.sum(pgmem._estimate_tokens(p.line || E'\n')) over (order by p.rank) as running
          from (select p.memory_id, p.rank,
                       '- [' || pg_catalog.to_char(p.valid_from, 'YYYY-MM-DD') || '] '
                           || pg_catalog.regexp_replace(p.content, '\s+', ' ', 'g') as line
                from pgmem.profile(p_subject, p_now)
                     with ordinality as p(memory_id, content, kind, reason, importance, pinned, access_count,
                                          valid_from, rank)) as p) as p
    where p.running <= p_budget
    order by p.rank;
end
$$;

comment on function pgmem._profile_lines(text, integer, timestamptz) is
    'The core profile''s lines "- [date] content" that fit p_budget estimated tokens with the section heading, in profile order (internal to pgmem.prompt and pgmem.context).';
