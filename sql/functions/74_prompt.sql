-- One prompt, one budget: the three memory layers in one labelled block.
--
-- pgmem.prompt(subject, session, query) returns, within p_token_budget
-- estimated tokens (pgmem._estimate_tokens, the estimate pgmem.context uses):
--   an optional header on how to use the memories   (settings.prompt_header;
--                         only when it costs at most a tenth of the budget)
--   ## Core profile       the subject's core facts    ≤ profile_share          (20%)
--                         (pgmem.profile: whatever the query)
--   ## Current task       the open task of the session  ≤ prompt_share_task      (15%)
--   ## Conversation summary  the rolling summary       ≤ prompt_share_summary   (15%)
--   ## Long-term memory   recalled memories            ≤ prompt_share_long_term (25%)
--   ## Recent conversation  the window                 everything left (the most)
-- A section takes only what it needs; the dialogue gets the rest, capped by
-- the window's own turn and token limits.
--
-- Short-term wins: a long-term memory (core profile included) is left out
-- (prompt_conflicts = 'omit') or marked ('mark') when this session stated its
-- triple (subject, predicate) with another object later than it was learned,
-- or when a user turn of the window, newer than it, contradicts it by the
-- offline rules (pgmem.contradiction on the turn read as a statement,
-- pgmem._turn_statement) — before any worker has extracted that turn.
-- Superseded memories never show: recall returns what is valid now.

create or replace function pgmem._fit_tokens(p_text text, p_budget integer)
returns text
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_cut text;
begin
    if pgmem._estimate_tokens(p_text) <= p_budget then
        return p_text;
    end if;
    -- The longest of a few prefixes that fits: 3 and 2 characters a token
    -- suit English, and since one character never costs more than one
    -- token the last one always fits.
    foreach v_cut in array array[pg_catalog.left(p_text, greatest(p_budget, 0) * 3) || '…',
                                 pg_catalog.left(p_text, greatest(p_budget, 0) * 2) || '…',
                                 pg_catalog.left(p_text, greatest(p_budget - 1, 0)) || '…'] loop
        if pgmem._estimate_tokens(v_cut) <= p_budget then
            return v_cut;
        end if;
    end loop;
    return '';
end
$$;

comment on function pgmem._fit_tokens(text, integer) is
    'The text, or a prefix of it ending in …, whose estimated tokens fit p_budget (internal).';

create or replace function pgmem._turn_statement(p_text text)
returns text
language sql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- A request read as the statement the rules compare: "Use the light theme
    -- today, please" as "like the light theme", 今天改用浅色主题吧 as
    -- 改成浅色主题: the words scoping it to now, politeness and filler go,
    -- asking for something is liking it, 改用 is a change.
    select pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
               pg_catalog.regexp_replace(pg_catalog.lower(p_text), pgmem._now_scope_pattern(), ' ', 'g'),
               '\m(please|let''s|lets|can you|could you|would you|just|a bit|a little)\M|请|麻烦|一点|一些|一下', ' ', 'g'),
               '\m(use|using|give me|switch to|go with|i want|i''d like|i need|make it|reply in|answer in)\M'
               '|给我|我要|我想要', ' like ', 'g'),
               '改用|换用', '改成', 'g')
$$;

comment on function pgmem._turn_statement(text) is
    'A user turn as the statement the contradiction rules read against a long-term fact: words scoping it to now, politeness and filler removed, a request read as liking (internal).';

create or replace function pgmem._window_contradicted(
    p_tenant text,
    p_subject text,
    p_session_id text,
    p_turns integer,
    p_memory_ids bigint[]
)
returns table (memory_id bigint)
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Of p_memory_ids, those a user turn among the session's last p_turns
    -- turns contradicts, the turn being newer than the memory.
    select m.memory_id
    from pgmem.memories as m
    where m.tenant_id = p_tenant and m.memory_id = any (p_memory_ids)
      and exists (select
                  from (select w.content, w.created_at, w.role
                        from pgmem.session_messages as w
                        where w.tenant_id = p_tenant and w.subject = p_subject and w.session_id = p_session_id
                        order by w.seq desc
                        limit p_turns) as w
                  where w.role = 'user' and w.created_at > m.created_at
                    and pgmem.contradiction(m.content, pgmem._turn_statement(w.content)) is not null)
$$;

comment on function pgmem._window_contradicted(text, text, text, integer, bigint[]) is
    'The memories of p_memory_ids that a newer user turn among a session''s last p_turns turns contradicts by the offline rules (pgmem._turn_statement, pgmem.contradiction): what pgmem.prompt omits or marks before any worker has run (internal).';

create or replace function pgmem.prompt(
    p_subject text,
    p_session_id text,
    p_query text default null,
    p_embedding public.vector default null,
    p_token_budget integer default 4000,
    p_k integer default 50,
    p_reinforce boolean default true,
    p_now timestamptz default null
)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
set jit = off
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_settings pgmem.settings := pgmem._session_settings(v_tenant);
    v_header text;
    v_task text;
    v_summary text;
    v_profile text;
    v_profile_ids bigint[];
    v_long text;
    v_dialogue text;
    v_used integer := 0;
    v_share integer;
    v_packed bigint[];
    v_block text;
begin
    perform pgmem._check_session_key(p_subject, p_session_id);
    if p_token_budget is null or p_token_budget < 0 then
        raise exception 'the token budget must be zero or more, not %', coalesce(p_token_budget::text, 'NULL')
            using errcode = 'PM073', hint = 'e.g. p_token_budget => 4000.';
    end if;

    v_header := 'Memory for this conversation, in sections. The current task and the recent conversation are the '
                || 'latest word; when two memories disagree, prefer the newer one; ignore what is irrelevant.';
    -- Whole or not at all, and never more than a tenth of a small budget.
    if v_settings.prompt_header and pgmem._estimate_tokens(v_header || E'\n\n') <= p_token_budget / 10 then
        v_used := pgmem._estimate_tokens(v_header || E'\n\n');
    else
        v_header := null;
    end if;

    -- Who the user is, whatever this turn is about.
    v_share := least(pg_catalog.floor(p_token_budget * v_settings.profile_share), p_token_budget - v_used) - 1;
    -- The window has the latest word on the profile too.
    with p as (
        select * from pgmem._profile_lines(p_subject, v_share, p_now) with ordinality as p(memory_id, line, ord)
    ),
    contradicted as (
        select c.memory_id
        from pgmem._window_contradicted(v_tenant, p_subject, p_session_id, v_settings.window_turns,
                                        (select pg_catalog.array_agg(p.memory_id) from p)) as c
    )
    select '## Core profile' || E'\n'
               || pg_catalog.string_agg(case when p.memory_id in (select c.memory_id from contradicted as c)
                                             then pg_catalog.regexp_replace(p.line, '^(- \[[^]]*\] )',
                                                                            '\1(contradicted in this conversation) ')
                                             else p.line end,
                                        E'\n' order by p.ord)
                   filter (where v_settings.prompt_conflicts <> 'omit'
                                 or p.memory_id not in (select c.memory_id from contradicted as c)),
           pg_catalog.array_agg(p.memory_id)
    into v_profile, v_profile_ids
    from p;
    v_used := v_used + coalesce(pgmem._estimate_tokens(v_profile || E'\n\n'), 0);

    -- Working memory: the open task of this session.
    v_share := least(pg_catalog.floor(p_token_budget * v_settings.prompt_share_task), p_token_budget - v_used);
    select pgmem._fit_tokens(
               '## Current task' || E'\n' || 'Goal: ' || t.goal || E'\n'
               || pg_catalog.format('Status: %s, step %s of %s%s', t.status,
                                    least(t.current_step, pg_catalog.jsonb_array_length(t.plan)),
                                    pg_catalog.jsonb_array_length(t.plan),
                                    case when t.retries > 0 then pg_catalog.format(', retry %s of %s', t.retries,
                                                                                   t.max_retries) end)
               || E'\n' || (select pg_catalog.string_agg(
                                pg_catalog.format('%s %s. %s%s',
                                                  case when s.step is not null then '[x]'
                                                       when p.n = t.current_step then '[>]' else '[ ]' end,
                                                  p.n, p.step #>> '{}',
                                                  ' → ' || pg_catalog.regexp_replace(s.observation, '\s+', ' ', 'g')),
                                E'\n' order by p.n)
                            from pg_catalog.jsonb_array_elements(t.plan) with ordinality as p(step, n)
                            left join pgmem.task_steps as s
                              on s.tenant_id = v_tenant and s.task_id = t.task_id and s.step = p.n
                             and s.status = 'done')
               || case when t.variables <> '{}' then E'\nVariables: ' || t.variables::text else '' end,
               v_share - 1)  -- 1: the blank line after the section
    into v_task
    from pgmem.tasks as t
    where t.tenant_id = v_tenant and t.subject = p_subject and t.session_id = p_session_id
      and t.status in ('planning', 'running', 'waiting_for_confirmation')
    order by t.task_id desc
    limit 1;
    v_task := nullif(v_task, '');
    v_used := v_used + coalesce(pgmem._estimate_tokens(v_task || E'\n\n'), 0);

    -- Short-term: the rolling summary of what left the window.
    v_share := least(pg_catalog.floor(p_token_budget * v_settings.prompt_share_summary), p_token_budget - v_used);
    select pgmem._fit_tokens('## Conversation summary (turns 1-' || s.through_seq || ')' || E'\n' || s.summary,
                             v_share - 1)
    into v_summary
    from pgmem.session_summaries as s
    where s.tenant_id = v_tenant and s.subject = p_subject and s.session_id = p_session_id
    order by s.version desc
    limit 1;
    v_summary := nullif(v_summary, '');
    v_used := v_used + coalesce(pgmem._estimate_tokens(v_summary || E'\n\n'), 0);

    -- Long-term: recalled memories, most relevant first, minus what this session contradicts.
    v_share := least(pg_catalog.floor(p_token_budget * v_settings.prompt_share_long_term), p_token_budget - v_used)
               - pgmem._estimate_tokens(E'## Long-term memory\n\n\n');
    with said as materialized (
        -- What this session stated as facts (one scan of the subject's rows).
        select n.memory_id, n.triple_subject, n.triple_predicate, n.triple_object, n.created_at
        from pgmem.memories as n
        where n.tenant_id = v_tenant and n.subject = p_subject and n.session_id = p_session_id
          and n.triple_predicate is not null and n.status <> 'deleted'
    ),
    recalled as (
        select r.memory_id, r.content, r.score, r.valid_from,
               exists (select from said as n
                       join pgmem.memories as m
                         on m.tenant_id = v_tenant and m.memory_id = r.memory_id
                        and n.triple_subject = m.triple_subject and n.triple_predicate = m.triple_predicate
                       where n.memory_id <> m.memory_id
                         and n.triple_object is distinct from m.triple_object
                         and (m.session_id is distinct from p_session_id or n.created_at > m.created_at))
                   as contradicted
        from pgmem._recall(p_subject, p_query, p_embedding, p_k, null, null, null, null, null, null,
                           0, null, 0, p_now, null, null) as r
        -- The profile said it already, or the turn it was extracted from did.
        where r.memory_id <> all(coalesce(v_profile_ids, '{}'))
          and not exists (select from pgmem._provenance_kin(v_tenant, v_profile_ids) as k
                          where k.kin_id = r.memory_id)
    ),
    -- What a user turn still in the window contradicts, before the worker read it.
    window_contradicted as (
        select w.memory_id
        from pgmem._window_contradicted(v_tenant, p_subject, p_session_id, v_settings.window_turns,
                                        (select pg_catalog.array_agg(r.memory_id) from recalled as r)) as w
    ),
    judged as (
        select c.memory_id, c.content, c.score, c.valid_from,
               c.contradicted or c.memory_id in (select w.memory_id from window_contradicted as w) as contradicted
        from recalled as c
    ),
    lines as (
        select c.memory_id, c.score,
               '- [' || pg_catalog.to_char(c.valid_from, 'YYYY-MM-DD') || '] '
                   || case when c.contradicted then '(contradicted in this conversation) ' else '' end
                   || pg_catalog.regexp_replace(c.content, '\s+', ' ', 'g') as line
        from judged as c
        where not (c.contradicted and v_settings.prompt_conflicts = 'omit')
    ),
    packed as (
        select l.*
        from (select l.*, pg_catalog.sum(pgmem._estimate_tokens(l.line || E'\n'))
                              over (order by l.score desc, l.memory_id desc) as running
              from lines as l) as l
        where l.running <= v_share
    )
    select '## Long-term memory' || E'\n' || pg_catalog.string_agg(p.line, E'\n' order by p.score desc, p.memory_id desc),
           pg_catalog.array_agg(p.memory_id)
    into v_long, v_packed
    from packed as p;
    v_used := v_used + coalesce(pgmem._estimate_tokens(v_long || E'\n\n'), 0);

    -- The dialogue: whatever is left, within the window's own caps.
    v_share := p_token_budget - v_used - pgmem._estimate_tokens(E'## Recent conversation\n');
    if v_share > 0 then
        -- The window never cuts system and protected turns, but the budget is a
        -- hard cap: when they alone overflow it, the oldest lines give way.
        select '## Recent conversation' || E'\n'
                   || pg_catalog.string_agg(l.line, E'\n' order by l.seq)
        into v_dialogue
        from (select w.seq, w.line,
                     pg_catalog.sum(pgmem._estimate_tokens(w.line || E'\n')) over (order by w.seq desc) as running
              from (select m.seq, m.role || ': ' || m.content as line
                    from pgmem._window_units(v_tenant, p_subject, p_session_id, v_settings.window_turns,
                                             least(v_settings.window_tokens, v_share),
                                             v_settings.window_strategy) as u
                    join pgmem.session_messages as m
                      on m.tenant_id = v_tenant and m.subject = p_subject and m.session_id = p_session_id
                     and m.unit_seq = u.unit_seq
                    where u.chosen) as w) as l
        where l.running <= v_share;
    end if;

    if coalesce(p_reinforce, true) and v_packed is not null then
        perform pgmem._reinforce(v_packed, p_now);
    end if;
    v_block := pg_catalog.concat_ws(E'\n\n', v_header, v_profile, v_task, v_summary, v_long, v_dialogue);
    return v_block;
end
$$;

comment on function pgmem.prompt(text, text, text, public.vector, integer, integer, boolean, timestamptz) is
    'The whole memory for one LLM call, labelled, within p_token_budget estimated tokens: an optional header '
    '(settings.prompt_header), ## Core profile (pgmem.profile, whatever the query, ≤ profile_share), ## Current task (the session''s open task, ≤ prompt_share_task), ## Conversation '
    'summary (≤ prompt_share_summary), ## Long-term memory (recalled for p_query/p_embedding, ≤ '
    'prompt_share_long_term; memories this session contradicts are omitted or marked, settings.prompt_conflicts) '
    'and ## Recent conversation (the window, "role: content", with all the budget left). Packed long-term '
    'memories are reinforced unless p_reinforce => false. PM073 for a negative budget.';
