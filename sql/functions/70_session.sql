-- Short-term memory: the turns of a conversation, the window of recent
-- turns a prompt shows verbatim, and the rolling summary of what left it.
--
-- Ordering: every append updates its pgmem.sessions row (next_seq), so
-- concurrent appends to one session queue on that row lock and get
-- consecutive sequence numbers in commit order; nothing is lost or reordered.
--
-- Window (pgmem.session_window): a tool turn belongs to the turn that called
-- it (unit_seq), and a unit is kept or dropped whole. Units holding a system
-- turn or a protected turn are always kept. The other units are counted as
-- turns: at most window_turns of them, and the tokens of everything shown
-- at most window_tokens, whichever binds first. With window_strategy
-- 'recency' the newest units are taken; with 'importance' units are taken
-- by salience (pgmem._session_salience: +1 user turn, +1 numbers, dates or
-- amounts, +1 decision words; +2 for the first and the last unit; plus
-- 1/rank of recency as a tie-breaker), then shown in conversation order.
--
-- The rolling summary of the turns that left the window, and session
-- expiry, are in 70_session_maintenance.sql.

create or replace function pgmem._session_salience(p_role text, p_content text)
returns real
language sql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- What a user says, and numbers, dates, amounts and decisions, are what
    -- a later turn most often refers back to.
    select ((p_role = 'user')::integer
            + (p_content ~ '[0-9０-９]|[$€£¥]|年|月|日')::integer
            + (p_content ~* '\m(decide[ds]?|decision|agreed?|confirm(ed)?|approved?|must|deadline|will|chose|choose|plan)\M|决定|同意|确认|必须|计划')::integer)::real
$$;

comment on function pgmem._session_salience(text, text) is
    'Salience of a turn for importance-based window selection: +1 user turn, +1 numbers/dates/amounts, +1 decision words (internal).';

create or replace function pgmem._window_units(
    p_tenant text,
    p_subject text,
    p_session_id text,
    p_turns integer,
    p_tokens integer,
    p_strategy text
)
returns table (unit_seq bigint, mandatory boolean, chosen boolean)
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    with kept as (
        -- System and protected turns (a partial index holds them).
        select m.seq, m.unit_seq
        from pgmem.session_messages as m
        where m.tenant_id = p_tenant and m.subject = p_subject and m.session_id = p_session_id
          and (m.role = 'system' or m.protected)
    ),
    scope as (
        -- Recency needs only the newest p_turns countable units: a unit starts
        -- at a non-tool turn, and each kept turn can take at most one of the
        -- newest heads out of the count. Importance looks at every turn.
        select case when p_strategy = 'importance' then 0
                    else coalesce((select pg_catalog.min(h.seq)
                                   from (select m.seq from pgmem.session_messages as m
                                         where m.tenant_id = p_tenant and m.subject = p_subject
                                           and m.session_id = p_session_id
                                           and (m.role <> 'tool' or m.unit_seq = m.seq)
                                         order by m.seq desc
                                         limit p_turns + (select pg_catalog.count(*) from kept)) as h), 0)
               end as low
    ),
    units as (
        select m.unit_seq, pg_catalog.sum(m.tokens) as tokens,
               pg_catalog.bool_or(m.role = 'system' or m.protected) as mandatory,
               -- Only importance selection reads it: computed then, never on append.
               pg_catalog.max(case when p_strategy = 'importance'
                                   then pgmem._session_salience(m.role, m.content) end) as salience
        from pgmem.session_messages as m, scope as s
        where m.tenant_id = p_tenant and m.subject = p_subject and m.session_id = p_session_id
          and (m.unit_seq >= s.low or m.unit_seq in (select k.unit_seq from kept as k))
        group by m.unit_seq
    ),
    fixed as (
        select coalesce(pg_catalog.sum(u.tokens), 0) as tokens from units as u where u.mandatory
    ),
    optional as (
        select u.*, pg_catalog.row_number() over (order by u.unit_seq desc) as age_rank,
               pg_catalog.row_number() over (order by u.unit_seq) as first_rank
        from units as u
        where not u.mandatory
    ),
    scored as (
        select o.*,
               case when p_strategy = 'importance'
                    then o.salience + 2 * ((o.age_rank = 1 or o.first_rank = 1)::integer) + 1.0 / o.age_rank
                    else 1.0 / o.age_rank end as score
        from optional as o
    ),
    taken as (
        -- Best first, until the next unit would break the turn or token cap.
        select s.unit_seq,
               pg_catalog.row_number() over w as n,
               pg_catalog.sum(s.tokens) over w as running
        from scored as s
        window w as (order by s.score desc, s.unit_seq desc)
    )
    select u.unit_seq, u.mandatory,
           u.mandatory or coalesce(t.n <= p_turns and t.running + f.tokens <= p_tokens, false)
    from units as u
    cross join fixed as f
    left join taken as t on t.unit_seq = u.unit_seq
$$;

comment on function pgmem._window_units(text, text, text, integer, integer, text) is
    'Units (a turn and the tool results it called for) of a session with whether the window keeps them: system/protected units always, the others best-first under the turn and token caps (internal).';

create or replace function pgmem._session_settings(p_tenant text)
returns pgmem.settings
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_settings pgmem.settings;
begin
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = p_tenant;
    if not found then
        raise exception 'unknown pgmem tenant: %', p_tenant
            using errcode = 'PM002', hint = 'Create it first: select pgmem.create_tenant(''<tenant>'').';
    end if;
    return v_settings;
end
$$;

comment on function pgmem._session_settings(text) is
    'The settings row of p_tenant (the bound tenant, from pgmem._require_tenant()); PM002 when it has none (internal).';

create or replace function pgmem._check_session_key(p_subject text, p_session_id text)
returns void
language plpgsql
immutable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_subject is null or pg_catalog.btrim(p_subject) = '' or pg_catalog.length(p_subject) > 256 then
        raise exception 'p_subject must be a non-blank text of at most 256 characters'
            using errcode = 'PM010', hint = 'Pass the user (or other subject) the conversation is about.';
    end if;
    if p_session_id is null or pg_catalog.btrim(p_session_id) = '' or pg_catalog.length(p_session_id) > 256 then
        raise exception 'p_session_id must be a non-blank text of at most 256 characters'
            using errcode = 'PM070', hint = 'Pass the id your app gives the conversation, e.g. a UUID.';
    end if;
end
$$;

comment on function pgmem._check_session_key(text, text) is
    'PM010 for a bad subject, PM070 for a bad session id (internal).';

create or replace function pgmem.append_message(
    p_subject text,
    p_session_id text,
    p_role text,
    p_content text,
    p_protected boolean default false,
    p_metadata jsonb default '{}',
    p_extract boolean default true,
    p_agent_id text default null,
    p_now timestamptz default null
)
returns table (seq bigint, inbox_id bigint)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_tenant text := pgmem._require_tenant();
    v_settings pgmem.settings := pgmem._session_settings(v_tenant);
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_tokens integer;
    v_counts boolean;
    v_seq bigint;
    v_unit bigint;
    v_inbox bigint;
    v_due boolean;
begin
    perform pgmem._check_session_key(p_subject, p_session_id);
    if p_role is null or p_role not in ('system', 'user', 'assistant', 'tool') then
        raise exception 'unknown role: p_role = %', coalesce(pg_catalog.quote_literal(p_role), 'NULL')
            using errcode = 'PM071', hint = 'Roles: system, user, assistant, tool.';
    end if;
    if p_content is null or pg_catalog.btrim(p_content) = '' then
        raise exception 'p_content is empty' using errcode = 'PM011', hint = 'Append a turn with some text.';
    end if;
    if pg_catalog.octet_length(p_content) > v_settings.max_turn_bytes then
        raise exception 'p_content is % bytes, over the tenant''s max_turn_bytes (%)',
                        pg_catalog.octet_length(p_content), v_settings.max_turn_bytes
            using errcode = 'PM072',
                  hint = 'Split the turn, store a large tool result elsewhere and append a reference, '
                         'or raise pgmem.settings.max_turn_bytes.';
    end if;
    if p_metadata is null or pg_catalog.jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'p_metadata must be a JSON object' using errcode = 'PM020', hint = 'Pass ''{}'' for none.';
    end if;

    v_tokens := pgmem._estimate_tokens(p_content);
    -- Turns the window caps by count: not system, not protected, not a tool result.
    v_counts := p_role in ('user', 'assistant') and not coalesce(p_protected, false);
    -- The session row is the per-session lock: appends queue here. Most
    -- appends go to a session that exists, so update first.
    update pgmem.sessions as s
    set next_seq = s.next_seq + 1,
        unsummarized_turns = s.unsummarized_turns + v_counts::integer,
        unsummarized_tokens = s.unsummarized_tokens + v_tokens,
        last_active_at = greatest(s.last_active_at, v_now),
        status = 'open', closed_at = null
    where s.tenant_id = v_tenant and s.subject = p_subject and s.session_id = p_session_id
    returning s.next_seq - 1,
              -- Wake a worker once, when the session crosses its window.
              (s.unsummarized_turns = v_settings.window_turns + 1 and v_counts)
              or (s.unsummarized_tokens > v_settings.window_tokens
                  and s.unsummarized_tokens - v_tokens <= v_settings.window_tokens)
    into v_seq, v_due;
    if not found then
        perform pgmem._require_subject(v_tenant, array[p_subject]);
        insert into pgmem.subjects (tenant_id, subject) values (v_tenant, p_subject) on conflict do nothing;
        -- ON CONFLICT: another session's first append got there in between.
        insert into pgmem.sessions as s (tenant_id, subject, session_id, agent_id, next_seq, unsummarized_turns,
                                         unsummarized_tokens, created_at, last_active_at)
        values (v_tenant, p_subject, p_session_id, p_agent_id, 2, v_counts::integer, v_tokens, v_now, v_now)
        on conflict (tenant_id, subject, session_id) do update
            set next_seq = s.next_seq + 1,
                unsummarized_turns = s.unsummarized_turns + v_counts::integer,
                unsummarized_tokens = s.unsummarized_tokens + v_tokens,
                last_active_at = greatest(s.last_active_at, v_now),
                status = 'open', closed_at = null
        returning s.next_seq - 1, s.unsummarized_tokens > v_settings.window_tokens
        into v_seq, v_due;
    end if;

    v_unit := v_seq;
    if p_role = 'tool' then
        select m.unit_seq into v_unit
        from pgmem.session_messages as m
        where m.tenant_id = v_tenant and m.subject = p_subject and m.session_id = p_session_id
          and m.seq = v_seq - 1;
        v_unit := coalesce(v_unit, v_seq);
    end if;
    insert into pgmem.session_messages (tenant_id, subject, session_id, seq, unit_seq, role, content, tokens,
                                        protected, metadata, created_at)
    values (v_tenant, p_subject, p_session_id, v_seq, v_unit, p_role, p_content, v_tokens,
            coalesce(p_protected, false), p_metadata, v_now);

    -- One call per turn: what the user says also goes to long-term memory,
    -- after what the assistant said since the user's previous turn (at most
    -- two turns, as stored): "German" is an answer only beside its question.
    if p_role = 'user' and coalesce(p_extract, true) then
        v_inbox := pgmem.enqueue(
            p_subject,
            coalesce((select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('role', a.role, 'content', a.content)
                                                  order by a.seq)
                      from (select m.seq, m.role, m.content
                            from pgmem.session_messages as m
                            where m.tenant_id = v_tenant and m.subject = p_subject and m.session_id = p_session_id
                              and m.seq < v_seq and m.role = 'assistant'
                              and m.seq > coalesce((select max(u.seq) from pgmem.session_messages as u
                                                    where u.tenant_id = v_tenant and u.subject = p_subject
                                                      and u.session_id = p_session_id and u.seq < v_seq
                                                      and u.role = 'user'), 0)
                            order by m.seq desc
                            limit 2) as a), '[]'::jsonb)
                || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('role', 'user', 'content', p_content)),
            p_session_id, p_agent_id,
            p_metadata || pg_catalog.jsonb_build_object('session_seq', v_seq), v_now);
    elsif v_due then
        -- Turns left the window: wake a worker to fold them (enqueue notifies itself).
        perform pg_catalog.pg_notify('pgmem_inbox', '');  -- no tenant: any role may LISTEN
    end if;
    return query select v_seq, v_inbox;
end
$$;

comment on function pgmem.append_message(text, text, text, text, boolean, jsonb, boolean, text, timestamptz) is
    'Appends one turn (role system, user, assistant or tool) to a session, creating or reopening it; returns its '
    'sequence number and, for a user turn (unless p_extract => false), the inbox id of the extraction job queued '
    'for long-term memory. A tool turn stays with the turn before it in the window. Protected turns are never cut '
    'from the window. Errors: PM010 subject, PM070 session id, PM071 role, PM011 empty, PM072 over max_turn_bytes, '
    'PM020 metadata.';

create or replace function pgmem.session_window(
    p_subject text,
    p_session_id text,
    p_turns integer default null,
    p_tokens integer default null,
    p_strategy text default null
)
returns table (
    seq bigint, role text, content text, tokens integer, protected boolean, unit_seq bigint,
    metadata jsonb, created_at timestamptz
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_settings pgmem.settings := pgmem._session_settings(v_tenant);
    v_turns integer := coalesce(p_turns, v_settings.window_turns);
    v_tokens integer := coalesce(p_tokens, v_settings.window_tokens);
    v_strategy text := coalesce(p_strategy, v_settings.window_strategy);
begin
    perform pgmem._check_session_key(p_subject, p_session_id);
    if v_turns < 0 or v_tokens < 0 or v_strategy not in ('recency', 'importance') then
        raise exception 'bad window: p_turns = %, p_tokens = %, p_strategy = %', v_turns, v_tokens, v_strategy
            using errcode = 'PM073', hint = 'Turns and tokens are zero or more; strategies: recency, importance.';
    end if;
    return query
    select m.seq, m.role, m.content, m.tokens, m.protected, m.unit_seq, m.metadata, m.created_at
    from pgmem._window_units(v_tenant, p_subject, p_session_id, v_turns, v_tokens, v_strategy) as u
    join pgmem.session_messages as m
      on m.tenant_id = v_tenant and m.subject = p_subject and m.session_id = p_session_id
     and m.unit_seq = u.unit_seq
    where u.chosen
    order by m.seq;
end
$$;

comment on function pgmem.session_window(text, text, integer, integer, text) is
    'The turns of a session a prompt shows verbatim, in order: system and protected turns always, then the newest '
    'turns (or, with strategy importance, the most salient) up to p_turns turns (tool results ride with their call) '
    'and p_tokens estimated tokens in all, whichever binds first. Defaults: the tenant''s window_turns (10), '
    'window_tokens (8000), window_strategy (recency). PM073 for a bad cap or strategy.';

create or replace function pgmem.session_summary(p_subject text, p_session_id text, p_version integer default null)
returns table (
    version integer, from_seq bigint, through_seq bigint, summary text, method text, model text, tokens integer,
    created_at timestamptz
)
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
begin
    perform pgmem._check_session_key(p_subject, p_session_id);
    return query
    select s.version, s.from_seq, s.through_seq, s.summary, s.method, s.model, s.tokens, s.created_at
    from pgmem.session_summaries as s
    where s.tenant_id = v_tenant and s.subject = p_subject and s.session_id = p_session_id
      and (p_version is null or s.version = p_version)
    order by s.version desc
    limit 1;
end
$$;

comment on function pgmem.session_summary(text, text, integer) is
    'The rolling summary of a session: the latest version (or p_version), the turns it covers (1..through_seq; '
    'from_seq is where the last fold started), how it was made (llm or extractive) and its token estimate. '
    'No row before the first fold.';

create or replace function pgmem.close_session(p_subject text, p_session_id text, p_now timestamptz default null)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
begin
    perform pgmem._check_session_key(p_subject, p_session_id);
    update pgmem.sessions as s
    set status = 'closed', closed_at = coalesce(p_now, pg_catalog.now())
    where s.tenant_id = v_tenant and s.subject = p_subject and s.session_id = p_session_id and s.status = 'open';
    return found;
end
$$;

comment on function pgmem.close_session(text, text, timestamptz) is
    'Closes a session (its turns are purged session_retention after closing; the next append reopens it). '
    'True if it was open.';
