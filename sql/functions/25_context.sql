-- pgmem.context: a subject's recall packed into a prompt block, one section
-- per kind, within a token budget.

create or replace function pgmem._estimate_tokens(p_text text)
returns integer
language sql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Tokenizers spend about one token per CJK character and one per four
    -- characters of English (OpenAI's rule of thumb); the CJK ranges are
    -- those pgmem._tsv splits into bigrams.
    select c.cjk + ((pg_catalog.length(p_text) - c.cjk + 3) / 4)
    from (select pg_catalog.length(pg_catalog.regexp_replace(p_text, '[^㐀-䶿一-鿿豈-﫿぀-ヿ가-힯]+', '', 'g')) as cjk) as c
$$;

comment on function pgmem._estimate_tokens(text) is
    'Rough token count of a text: 1 per CJK character plus 1 per 4 other characters (rounded up).';

-- Revision 0011 added the time window and the scope (agent, shared subjects).
drop function if exists pgmem.context(text, text, public.vector, integer, integer, text[], text, timestamptz,
                                      double precision, integer, boolean, timestamptz);

create or replace function pgmem.context(
    p_subject text,
    p_query text default null,
    p_embedding public.vector default null,
    p_token_budget integer default 500,
    p_k integer default 50,
    p_kinds text[] default null,
    p_session_id text default null,
    p_as_of timestamptz default null,
    p_min_score double precision default 0,
    p_hops integer default 0,
    p_reinforce boolean default true,
    p_now timestamptz default null,
    p_since timestamptz default null,
    p_until timestamptz default null,
    p_agent_id text default null,
    p_shared_subjects text[] default null
)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_block text;
    v_packed bigint[];
    v_profile text;
    v_profile_ids bigint[];
    v_budget integer := p_token_budget;
    v_share real;
begin
    if p_token_budget is null or p_token_budget < 0 then
        raise exception 'the token budget must be zero or more, not %', coalesce(p_token_budget::text, 'NULL')
            using errcode = '22023';
    end if;
    -- The core profile first, whatever the query (not for a past time: it
    -- is who the user is now), under its share of the budget.
    if p_as_of is null then
        select s.profile_share into v_share
        from pgmem.settings as s
        where s.tenant_id in (v_tenant, '_default')
        order by s.tenant_id = '_default'
        limit 1;
        select '## Core profile' || E'\n' || pg_catalog.string_agg(p.line, E'\n' order by p.ord),
               pg_catalog.array_agg(p.memory_id)
        into v_profile, v_profile_ids
        from pgmem._profile_lines(p_subject, pg_catalog.floor(p_token_budget * v_share)::integer, p_now)
             with ordinality as p(memory_id, line, ord);
        v_budget := p_token_budget - coalesce(pgmem._estimate_tokens(v_profile || E'\n\n'), 0);
    end if;
    with recalled as (
        -- Ripple rows (hops > 0, at most settings.ripple_limit) get their own
        -- section after the kinds' (pgmem.kinds().section counts from 1):
        -- linked to a hit, not hits themselves.
        select r.memory_id, r.content, r.kind, r.score, r.valid_from, r.valid_to, r.subject,
               case when r.hops > 0 then 1000 else k.section end as section,
               case when r.hops > 0 then 'Related (linked to the memories above)' else k.heading end as heading
        from pgmem._recall(p_subject, p_query, p_embedding, p_k, p_kinds, p_session_id, p_since, p_until, p_as_of,
                           null, p_min_score, null, p_hops, p_now, p_agent_id, p_shared_subjects) as r
        join pgmem.kinds() as k on k.kind = r.kind
        -- The profile said it already, or the turn it was extracted from did.
        where r.memory_id <> all(coalesce(v_profile_ids, '{}'))
          and not exists (select from pgmem._provenance_kin(v_tenant, v_profile_ids) as k
                          where k.kin_id = r.memory_id)
    ),
    lines as (
        select c.*,
               '- [' || pg_catalog.to_char(c.valid_from, 'YYYY-MM-DD')
                   || coalesce(' to ' || pg_catalog.to_char(c.valid_to, 'YYYY-MM-DD'), '') || '] '
                   -- A shared subject's memory says whose it is.
                   || case when c.subject <> p_subject then '(' || c.subject || ') ' else '' end
                   || pg_catalog.regexp_replace(c.content, '\s+', ' ', 'g') as line
        from recalled as c
    ),
    costed as (
        -- A line costs itself and its newline; the first line of a section
        -- also pays for the heading and the blank line before it. The sum of
        -- the parts bounds the estimate of the whole block from above.
        select l.*,
               pgmem._estimate_tokens(l.line || E'\n')
                   + case when pg_catalog.row_number() over (partition by l.section
                                                                order by l.score desc, l.memory_id desc) = 1
                          then pgmem._estimate_tokens(E'\n## ' || l.heading || E'\n') else 0 end as cost
        from lines as l
    ),
    packed as (
        -- Most relevant first, until the next one would not fit.
        select c.*
        from (select c.*, pg_catalog.sum(c.cost) over (order by c.score desc, c.memory_id desc) as running
              from costed as c) as c
        where c.running <= v_budget
    ),
    sections as (
        select p.section,
               '## ' || pg_catalog.min(p.heading) || E'\n'
                   || pg_catalog.string_agg(p.line, E'\n' order by p.score desc, p.memory_id desc) as body
        from packed as p
        group by p.section
    )
    select pg_catalog.string_agg(s.body, E'\n\n' order by s.section),
           (select pg_catalog.array_agg(p.memory_id) from packed as p)
    into v_block, v_packed
    from sections as s;
    v_block := coalesce(pg_catalog.concat_ws(E'\n\n', v_profile, v_block), '');

    if coalesce(p_reinforce, true) and v_packed is not null then
        perform pgmem._reinforce(v_packed, p_now);
    end if;
    return v_block;
end
$$;

comment on function pgmem.context(text, text, public.vector, integer, integer, text[], text, timestamptz, double precision,
                                  integer, boolean, timestamptz, timestamptz, timestamptz, text, text[]) is
    'A prompt block of a subject''s memories for a query: first ## Core profile (pgmem.profile, whatever the query, '
    '≤ settings.profile_share of the budget; not with p_as_of), then sections Preferences, Facts, Episodes, Procedures, each '
    'line "- [valid-from date] content", most relevant first (pgmem.recall''s ranking), cut to p_token_budget '
    '(estimated: 1 token per CJK character, 1 per 4 other characters). With p_hops > 0 the memories linked to '
    'those (at most settings.ripple_limit) follow in their own section, "Related (linked to the memories above)". '
    'Only the memories in the block are reinforced. '
    'p_since/p_until (a valid_from window: the event time), p_agent_id and p_shared_subjects as in pgmem.recall; a shared subject''s '
    'line reads "- [date] (subject) content".';
