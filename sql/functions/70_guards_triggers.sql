-- Guards of the trust boundary: row triggers on the tenant tables (created
-- by alembic revision 0002) that hold whoever writes, through the pgmem
-- functions or straight into the tables with a tenant's login role.
--
-- * memories: an embedding must have a usable norm (PM017, for every
--   writer: a degenerate stored vector would match every later fact); for
--   app roles, content and the other free-text fields are size-checked
--   (PM012, PM023), content, agent, session or metadata strings carrying a
--   prompt injection are refused (PM024), and content, triple, session,
--   agent and metadata strings are redacted with the same rules as
--   pgmem.remember (pgmem.safety_rules()), which applies them itself.
-- * memory_events: an app role cannot forge history: actor is the role that
--   writes, and the content columns and details are redacted.
-- * inbox: payloads are redacted for every writer, so raw turns with
--   secrets never rest in the queue; an app role's are size-checked (PM040),
--   a consolidate job's payload.now must be a finite time, last_error is
--   bounded, and its jobs are due no earlier than now (queue order is not
--   the tenant's to set).
-- * sessions (revision 0005): agent_id redacted, 256 characters (PM023).
-- * session_messages (revision 0005): an app role's turn is checked as
--   pgmem.append_message checks it (role PM071, empty PM011, max_turn_bytes
--   PM072, metadata size PM023); for every writer its content and metadata
--   strings are redacted and its token count is computed, not taken from
--   the writer.
-- * session_summaries (revision 0020): for every writer, max_turn_bytes
--   (PM072), redaction, and lines the injection rules flag withheld.
-- * tasks, task_steps (revision 0005): goal, outcome, learned rule, plan,
--   variables, step observations and results redacted for every writer;
--   size limits for app roles (max_content_bytes PM012, 64 KB of JSON
--   PM023, max_turn_bytes PM072).
-- Redaction does not depend on who connects (the embedded quick-start
-- server connects as a superuser). Roles that bypass row-level security
-- (pgmem_admin: migrations and maintenance) are otherwise trusted with the
-- size and injection checks; pgmem's functions apply those for everyone.
-- memories_guard fires on updates of the columns it checks only (revision
-- 0006): decay, archive and reinforcement do not pay a call per row.
-- The checks and limits they share with the write path's batch inserts
-- (pgmem._store_memories) are in 70_guards.sql.

create or replace function pgmem._memories_guard()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_norm double precision;
    v_max_bytes integer;
begin
    -- vector's = lives in schema public, off the pinned search_path: call it.
    if new.embedding is not null
       and (tg_op = 'INSERT' or old.embedding is null or not public.halfvec_eq(new.embedding, old.embedding)) then
        v_norm := public.l2_norm(new.embedding);
        -- Same bounds as pgmem._check_embedding_stats (10_input.sql).
        if v_norm = 'NaN'::double precision or v_norm not between 1e-15 and 1e15 then
            raise exception 'embedding of memory % is degenerate: its norm % is outside [1e-15, 1e15]',
                            new.memory_id, v_norm
                using errcode = 'PM017',
                      hint = 'Cosine similarity of such a vector is undefined in single precision; normalize it or store NULL.';
        end if;
    end if;
    if pgmem._bypasses_rls() then
        return new;
    end if;
    -- A store item's key, value and text change together, by
    -- pgmem.put_items only: written apart, its text would stop saying its
    -- value, or a row become another key's. (Its vector may be set.)
    if (tg_op = 'INSERT' and new.source = 'store')
       or (tg_op = 'UPDATE' and 'store' in (old.source, new.source)
           and (new.content, new.session_id, new.agent_id, new.triple_subject, new.triple_predicate,
                new.triple_object, new.metadata, new.source, new.item_key, new.item_value, new.item_ttl)
               is distinct from (old.content, old.session_id, old.agent_id, old.triple_subject, old.triple_predicate,
                                 old.triple_object, old.metadata, old.source, old.item_key, old.item_value,
                                 old.item_ttl)) then
        raise exception 'store items are written by pgmem.put_items, not by %', tg_op
            using errcode = '42501', hint = 'Put or delete an item with pgmem.put_items / pgmem.delete_items.';
    end if;
    if tg_op = 'INSERT' or new.content is distinct from old.content then
        v_max_bytes := (pgmem._byte_limits(new.tenant_id)).max_content_bytes;
        -- Size first: a text over the limit is not read by the injection rules.
        perform pgmem._check_memory_content(
                    pg_catalog.octet_length(new.content), v_max_bytes,
                    case when pg_catalog.octet_length(new.content) <= v_max_bytes
                         then pgmem.detect_injection(new.content) end);
        new.content := pgmem.redact(new.content);
    end if;
    if tg_op = 'INSERT' or (new.session_id, new.agent_id, new.triple_subject, new.triple_predicate, new.triple_object, new.metadata)
                           is distinct from (old.session_id, old.agent_id, old.triple_subject, old.triple_predicate,
                                             old.triple_object, old.metadata) then
        perform pgmem._check_memory_fields(new.session_id, new.agent_id, new.triple_subject, new.triple_predicate,
                                           new.triple_object, new.metadata);
        new.session_id := pgmem.redact(new.session_id);
        new.agent_id := pgmem.redact(new.agent_id);
        new.triple_subject := pgmem.redact(new.triple_subject);
        new.triple_predicate := pgmem.redact(new.triple_predicate);
        new.triple_object := pgmem.redact(new.triple_object);
        new.metadata := pgmem._redact_jsonb(new.metadata);
    end if;
    return new;
end
$$;

comment on function pgmem._memories_guard() is
    'Row trigger on pgmem.memories: usable embedding norm (PM017) for every writer; for app roles, no write of a store item but its vector (42501: pgmem.put_items writes them), size limits (PM012, PM023), no prompt injection (PM024) and redaction of content, triple object, session, agent and metadata, as pgmem.remember applies them (internal).';

create or replace function pgmem._memory_events_guard()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_stored text;
begin
    if not pgmem._bypasses_rls() then
        -- History says who wrote it: the role itself, whatever it claims.
        new.actor := current_user;
        -- Text that is the memory's stored content (as most events carry)
        -- was redacted when the memory was stored; any other is redacted
        -- here. Redacting it again cost ~0.7 ms an event on real text.
        select m.content into v_stored
        from pgmem.memories as m
        where m.tenant_id = new.tenant_id and m.memory_id = new.memory_id;
        if new.old_content is distinct from v_stored then
            new.old_content := pgmem.redact(new.old_content);
        end if;
        if new.new_content is distinct from v_stored then
            new.new_content := pgmem.redact(new.new_content);
        end if;
        perform pgmem._check_field_length('details', new.details::text, 16384);
        new.details := pgmem._redact_jsonb(new.details);
    end if;
    return new;
end
$$;

comment on function pgmem._memory_events_guard() is
    'Row trigger on pgmem.memory_events: for app roles, actor is the writing role and content columns are redacted, unless a column holds the stored (already redacted) content of the event''s memory (internal).';

create or replace function pgmem._inbox_guard()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if tg_op = 'INSERT' or new.payload is distinct from old.payload then
        -- Raw turns never rest unredacted in the queue, whoever writes them.
        new.payload := pgmem._redact_jsonb(new.payload);
        new.session_id := pgmem.redact(new.session_id);
        new.agent_id := pgmem.redact(new.agent_id);
    end if;
    if not pgmem._bypasses_rls() and tg_op = 'UPDATE' and new.last_error is distinct from old.last_error then
        perform pgmem._check_field_length('last_error', new.last_error, 4000);
        new.last_error := pgmem.redact(new.last_error);
    end if;
    if not pgmem._bypasses_rls() and (tg_op = 'INSERT' or new.payload is distinct from old.payload) then
        if pg_catalog.octet_length(new.payload::text) > 262144 then
            raise exception 'inbox payload is % bytes; the limit is 262144', pg_catalog.octet_length(new.payload::text)
                using errcode = 'PM040', hint = 'Enqueue one turn at a time; a turn is a few messages.';
        end if;
        perform pgmem._check_field_length('session_id', new.session_id, 256),
                pgmem._check_field_length('agent_id', new.agent_id, 256);
        if tg_op = 'INSERT' then
            perform pgmem._check_field_length('last_error', new.last_error, 4000);
        end if;
        -- The consolidate job compares payload.now across a tenant's jobs.
        if new.job = 'consolidate' and new.payload ? 'now'
           and not coalesce(pg_catalog.isfinite(pgmem._timestamptz_or_null(new.payload ->> 'now')), false) then
            raise exception 'a consolidate job''s payload.now must be a finite timestamp, not %',
                            new.payload -> 'now'
                using errcode = 'PM040', hint = 'Leave consolidate jobs to the consolidate maintenance job.';
        end if;
    end if;
    -- Queue order is the server's: an app role's job is due no earlier than
    -- now, so no tenant can put its jobs ahead of another's by dating them back.
    if not pgmem._bypasses_rls() and (tg_op = 'INSERT' or new.available_at is distinct from old.available_at)
       and new.available_at < pg_catalog.now() then
        new.available_at := pg_catalog.now();
    end if;
    return new;
end
$$;

comment on function pgmem._inbox_guard() is
    'Row trigger on pgmem.inbox: for every writer, redaction of the payload, session and agent; for app roles, payload size (PM040), field lengths (PM023, last_error 4000 characters), a finite payload.now of a consolidate job (PM040), and available_at no earlier than now (internal).';

create or replace function pgmem._sessions_guard()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if tg_op = 'INSERT' or new.agent_id is distinct from old.agent_id then
        if not pgmem._bypasses_rls() then
            perform pgmem._check_field_length('agent_id', new.agent_id, 256);
        end if;
        new.agent_id := pgmem.redact(new.agent_id);
    end if;
    return new;
end
$$;

comment on function pgmem._sessions_guard() is
    'Row trigger on pgmem.sessions: agent_id redacted for every writer, within 256 characters (PM023) for app roles (internal).';

create or replace function pgmem._session_messages_guard()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_max_bytes integer;
begin
    -- The checks are for app roles; redaction and the token count are for every
    -- writer: the quick-start client connects as a superuser, and a turn is a turn.
    if not pgmem._bypasses_rls() then
        if new.role is null or new.role not in ('system', 'user', 'assistant', 'tool') then
            raise exception 'unknown role: %', coalesce(pg_catalog.quote_literal(new.role), 'NULL')
                using errcode = 'PM071', hint = 'Roles: system, user, assistant, tool.';
        end if;
        if new.content is null or pg_catalog.btrim(pgmem._safety_clean(new.content), E' \t\n\r\f\x0b\u0085') = '' then
            raise exception 'the turn is empty' using errcode = 'PM011', hint = 'Append a turn with some text.';
        end if;
        v_max_bytes := (pgmem._byte_limits(new.tenant_id)).max_turn_bytes;
        if pg_catalog.octet_length(new.content) > v_max_bytes then
            raise exception 'the turn is % bytes, over the tenant''s max_turn_bytes (%)',
                            pg_catalog.octet_length(new.content), v_max_bytes
                using errcode = 'PM072', hint = 'Append turns with pgmem.append_message; split a large one.';
        end if;
        perform pgmem._check_field_length('metadata', new.metadata::text, 16384);
    end if;
    -- Counted on the text as written, as append_message counts it for the
    -- session's unsummarized_tokens: the window's budget cannot be faked.
    new.tokens := pgmem._estimate_tokens(new.content);
    new.content := pgmem.redact(new.content);
    new.metadata := pgmem._redact_jsonb(new.metadata);
    return new;
end
$$;

comment on function pgmem._session_messages_guard() is
    'Row trigger on pgmem.session_messages: for app roles, role (PM071), empty (PM011), max_turn_bytes (PM072) and metadata size (PM023) checks; for every writer, redaction of content and metadata and the token count computed from the text (internal).';

create or replace function pgmem._tasks_guard()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_max_bytes integer;
begin
    -- Working memory is redacted like the rest, for every writer: what a
    -- task holds is shown in prompts and exported.
    new.goal := pgmem.redact(new.goal);
    new.outcome := pgmem.redact(new.outcome);
    new.learned_rule := pgmem.redact(new.learned_rule);
    new.plan := pgmem._redact_jsonb(new.plan);
    new.variables := pgmem._redact_jsonb(new.variables);
    if pgmem._bypasses_rls() then
        return new;
    end if;
    v_max_bytes := (pgmem._byte_limits(new.tenant_id)).max_content_bytes;
    if greatest(pg_catalog.octet_length(new.goal), pg_catalog.octet_length(new.outcome),
                pg_catalog.octet_length(new.learned_rule)) > v_max_bytes then
        raise exception 'a task''s goal, outcome or learned rule is over the tenant''s max_content_bytes (%)', v_max_bytes
            using errcode = 'PM012', hint = 'Keep them short; put details in the task''s variables or step results.';
    end if;
    perform pgmem._check_field_length('session_id', new.session_id, 256),
            pgmem._check_field_length('plan', new.plan::text, 65536),
            pgmem._check_field_length('variables', new.variables::text, 65536);
    return new;
end
$$;

comment on function pgmem._tasks_guard() is
    'Row trigger on pgmem.tasks: for every writer, goal, outcome, learned rule, plan and variables redacted; for app roles, goal, outcome and learned rule within max_content_bytes (PM012), session id 256 characters, plan and variables 64 KB of JSON (PM023) (internal).';

create or replace function pgmem._task_steps_guard()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_max_bytes integer;
begin
    new.observation := pgmem.redact(new.observation);
    new.result := pgmem._redact_jsonb(new.result);
    if pgmem._bypasses_rls() then
        return new;
    end if;
    v_max_bytes := (pgmem._byte_limits(new.tenant_id)).max_turn_bytes;
    if greatest(pg_catalog.octet_length(new.observation), pg_catalog.octet_length(new.result::text)) > v_max_bytes then
        raise exception 'the observation or result of step % is over the tenant''s max_turn_bytes (%)', new.step, v_max_bytes
            using errcode = 'PM072', hint = 'Store a large tool result elsewhere and record a reference.';
    end if;
    return new;
end
$$;

comment on function pgmem._task_steps_guard() is
    'Row trigger on pgmem.task_steps: observation and result redacted for every writer, within max_turn_bytes (PM072) for app roles (internal).';

-- A summary is what the prompt shows of the turns that left the window:
-- shown as the conversation so far, so it is held as a turn is, for every
-- writer (the worker's fold, save_summary, a direct insert): within
-- max_turn_bytes (PM072), redacted, and a line the injection rules flag is
-- withheld rather than refused: an extractive fold quotes the turns, and a
-- refusal would stop the session's folding for good.
create or replace function pgmem._session_summaries_guard()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_max_bytes integer := (pgmem._byte_limits(new.tenant_id)).max_turn_bytes;
    v_lines text[];
begin
    if pg_catalog.octet_length(new.summary) > v_max_bytes then
        raise exception 'the summary is % bytes, over the tenant''s max_turn_bytes (%)',
                        pg_catalog.octet_length(new.summary), v_max_bytes
            using errcode = 'PM072', hint = 'A summary stands for turns in a prompt: keep it short.';
    end if;
    v_lines := pg_catalog.string_to_array(pgmem.redact(new.summary), E'\n');
    select pg_catalog.array_agg(case when d.rule is null then l.line
                                     else pg_catalog.format('[withheld: %s]', d.rule) end
                                order by l.i)
    into v_lines
    from pg_catalog.unnest(v_lines) with ordinality as l (line, i)
    left join pgmem._detect_injection_many(v_lines) as d on d.item = l.i;
    new.summary := pg_catalog.array_to_string(v_lines, E'\n');
    new.tokens := pgmem._estimate_tokens(new.summary);
    return new;
end
$$;

comment on function pgmem._session_summaries_guard() is
    'Row trigger on pgmem.session_summaries: for every writer, the summary within max_turn_bytes (PM072), redacted, lines flagged by the injection rules withheld, tokens counted from the text (internal).';
