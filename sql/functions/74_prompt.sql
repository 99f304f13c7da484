-- One prompt, one budget: the three memory layers in one labelled block.
--
-- pgmem.prompt(subject, session, query) returns, within p_token_budget
-- estimated tokens (pgmem._estimate_tokens, the estimate pgmem.context uses):
--   an optional header on how to use the memories   (settings.prompt_header)
--   ## Current task       the open task of the session  ≤ prompt_share_task      (15%)
--   ## Conversation summary  the rolling summary       ≤ prompt_share_summary   (15%)
--   ## Long-term memory   recalled memories            ≤ prompt_share_long_term (25%)
--   ## Recent conversation  the window                 everything left (the most)
-- A section takes only what it needs; the dialogue gets the rest, capped by
-- the window's own turn and token limits.
--
-- Short-term wins: a long-term memory whose triple (subject, predicate) this
-- session also stated with another object, later than the long-term one was
-- learned, is left out (prompt_conflicts = 'omit') or marked ('mark').
-- Superseded memories never show: recall returns what is valid now.

create or replace function pgmem._fit_tokens(p_text text, p_budget integer)
returns text
language sql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- The longest of a few prefixes that fits; one character never costs
    -- more than one token, so the last candidate always fits.
    select coalesce((select c.t from (values (1, p_text),
                                             (2, pg_catalog.left(p_text, greatest(p_budget, 0) * 3) || '…'),
                                             (3, pg_catalog.left(p_text, greatest(p_budget, 0) * 2) || '…'),
                                             (4, pg_catalog.left(p_text, greatest(p_budget - 1, 0)) || '…'))
                                 as c(n, t)
                     where pgmem._estimate_tokens(c.t) <= p_budget
                     order by c.n limit 1), '')
$$;

comment on function pgmem._fit_tokens(text, integer) is
    'The text, or a prefix of it ending in …, whose estimated tokens fit p_budget (internal).';

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
    v_settings pgmem.settings := pgmem._session_settings();
    v_header text;
    v_task text;
    v_summary text;
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

    if v_settings.prompt_header then
        v_header := pgmem._fit_tokens(
            'Memory for this conversation, in sections. The current task and the recent conversation are the '
            || 'latest word; when two memories disagree, prefer the newer one; ignore what is irrelevant.',
            p_token_budget);
        v_used := pgmem._estimate_tokens(v_header || E'\n\n');
    end if;

    -- Working memory: the open task of this session.
    v_share := pg_catalog.floor(p_token_budget * v_settings.prompt_share_task);
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
               v_share)
    into v_task
    from pgmem.tasks as t
    where t.tenant_id = v_tenant and t.subject = p_subject and t.session_id = p_session_id
      and t.status in ('planning', 'running', 'waiting_for_confirmation')
    order by t.task_id desc
    limit 1;
    v_used := v_used + coalesce(pgmem._estimate_tokens(v_task || E'\n\n'), 0);

    -- Short-term: the rolling summary of what left the window.
    v_share := pg_catalog.floor(p_token_budget * v_settings.prompt_share_summary);
    select pgmem._fit_tokens('## Conversation summary (turns 1-' || s.through_seq || ')' || E'\n' || s.summary,
                             v_share)
    into v_summary
    from pgmem.session_summaries as s
    where s.tenant_id = v_tenant and s.subject = p_subject and s.session_id = p_session_id
    order by s.version desc
    limit 1;
    v_summary := nullif(v_summary, '');
    v_used := v_used + coalesce(pgmem._estimate_tokens(v_summary || E'\n\n'), 0);

    -- Long-term: recalled memories, most relevant first, minus what this session contradicts.
    v_share := pg_catalog.floor(p_token_budget * v_settings.prompt_share_long_term)
               - pgmem._estimate_tokens(E'## Long-term memory\n');
    with recalled as (
        select r.memory_id, r.content, r.score, r.valid_from,
               exists (select from pgmem.memories as m
                       join pgmem.memories as n
                         on n.tenant_id = m.tenant_id and n.subject = m.subject
                        and n.triple_subject = m.triple_subject and n.triple_predicate = m.triple_predicate
                       where m.tenant_id = v_tenant and m.memory_id = r.memory_id
                         and n.session_id = p_session_id and n.memory_id <> m.memory_id
                         and n.status <> 'deleted'
                         and n.triple_object is distinct from m.triple_object
                         and (m.session_id is distinct from p_session_id or n.created_at > m.created_at))
                   as contradicted
        from pgmem._recall(p_subject, p_query, p_embedding, p_k, null, null, null, null, null, null,
                           0, null, 0, p_now) as r
    ),
    lines as (
        select c.memory_id, c.score,
               '- [' || pg_catalog.to_char(c.valid_from, 'YYYY-MM-DD') || '] '
                   || case when c.contradicted then '(contradicted in this conversation) ' else '' end
                   || pg_catalog.regexp_replace(c.content, '\s+', ' ', 'g') as line
        from recalled as c
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
        select '## Recent conversation' || E'\n'
                   || pg_catalog.string_agg(w.role || ': ' || w.content, E'\n' order by w.seq)
        into v_dialogue
        from pgmem.session_window(p_subject, p_session_id, null,
                                  least(v_settings.window_tokens, v_share)) as w;
    end if;

    if coalesce(p_reinforce, true) and v_packed is not null then
        perform pgmem._reinforce(v_packed, p_now);
    end if;
    v_block := pg_catalog.concat_ws(E'\n\n', v_header, v_task, v_summary, v_long, v_dialogue);
    return v_block;
end
$$;

comment on function pgmem.prompt(text, text, text, public.vector, integer, integer, boolean, timestamptz) is
    'The whole memory for one LLM call, labelled, within p_token_budget estimated tokens: an optional header '
    '(settings.prompt_header), ## Current task (the session''s open task, ≤ prompt_share_task), ## Conversation '
    'summary (≤ prompt_share_summary), ## Long-term memory (recalled for p_query/p_embedding, ≤ '
    'prompt_share_long_term; memories this session contradicts are omitted or marked, settings.prompt_conflicts) '
    'and ## Recent conversation (the window, "role: content", with all the budget left). Packed long-term '
    'memories are reinforced unless p_reinforce => false. PM073 for a negative budget.';
