-- Checks of the trust boundary, once for every channel that writes: the
-- limits and the checks of a memory's text and fields, which the row
-- triggers of 70_guards_triggers.sql apply row by row, and the write path's
-- batch form of them: pgmem._vouch checks and redacts the texts of
-- pgmem.remember and remember_many in one call, and pgmem._store_memories
-- inserts their rows with the memories guard's checks applied to the whole
-- batch at once.
--
-- Limits, by field: session_id and agent_id 256 characters (as subjects),
-- triple parts 1024, metadata 16 KB of JSON, inbox payload 256 KB (16 turns
-- of the default 16 KB max_content_bytes).

create or replace function pgmem._byte_limits(
    p_tenant text,
    out max_content_bytes integer,
    out max_turn_bytes integer
)
-- plpgsql for its cached plan: as a SQL function with a SET clause it was
-- planned again at every call (every write's guard triggers).
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- The tenant's own row, else the defaults (a row may be written for a
    -- tenant whose settings row does not exist yet). Two scalars rather than
    -- the settings row: on Citus the guards run on a worker, where a
    -- reference table's row type is its shard's.
    select s.max_content_bytes, s.max_turn_bytes
    into max_content_bytes, max_turn_bytes
    from pgmem.settings as s
    where s.tenant_id in (p_tenant, '_default')
    order by s.tenant_id = '_default'
    limit 1;
end
$$;

comment on function pgmem._byte_limits(text) is
    'The tenant''s max_content_bytes and max_turn_bytes (the _default row''s when it has none), for the guard triggers (internal).';

create or replace function pgmem._redact_jsonb(p_value jsonb)
returns jsonb
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Every string leaf redacted (pgmem.redact); keys, numbers and shape stay,
    -- and so does a leaf that is wholly an ISO timestamp: its fraction of a
    -- second ("…44.001994") would otherwise read as a phone number, and a turn's
    -- time is no one's personal data.
    return case pg_catalog.jsonb_typeof(p_value)
        when 'string' then
            case when (p_value #>> '{}') ~ '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?$'
                 then p_value
                 else pg_catalog.to_jsonb(pgmem.redact(p_value #>> '{}')) end
        when 'object' then coalesce((select pg_catalog.jsonb_object_agg(e.key, pgmem._redact_jsonb(e.value))
                                     from pg_catalog.jsonb_each(p_value) as e), '{}'::jsonb)
        when 'array' then coalesce((select pg_catalog.jsonb_agg(pgmem._redact_jsonb(e.value) order by e.n)
                                    from pg_catalog.jsonb_array_elements(p_value) with ordinality as e(value, n)),
                                   '[]'::jsonb)
        else p_value end;
end
$$;

comment on function pgmem._redact_jsonb(jsonb) is
    'The JSON value with every string redacted by pgmem.redact except ISO timestamps (internal; metadata and inbox payloads).';

create or replace function pgmem._check_field_length(p_field text, p_value text, p_max integer)
returns void
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if pg_catalog.length(p_value) > p_max then
        raise exception '% is % characters long; the limit is %', p_field, pg_catalog.length(p_value), p_max
            using errcode = 'PM023', hint = 'Identifiers and triple parts are short labels; put long text in content.';
    end if;
end
$$;

comment on function pgmem._check_field_length(text, text, integer) is
    'Raises PM023 when a field is longer than its limit (internal).';

-- The checks of a memory's text and fields, once: the memories_guard
-- trigger asks them row by row, pgmem._store_memories for a batch.
create or replace function pgmem._check_memory_content(p_bytes integer, p_max_bytes integer, p_rule text)
returns void
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_bytes > p_max_bytes then
        raise exception 'content is % bytes; this tenant stores at most %', p_bytes, p_max_bytes
            using errcode = 'PM012', hint = 'Split the text into facts, or raise settings.max_content_bytes.';
    end if;
    if p_rule is not null then
        raise exception 'content looks like a prompt injection (%): not stored', p_rule
            using errcode = 'PM024', hint = 'Write memories through pgmem.remember, which records a rejection instead.';
    end if;
end
$$;

comment on function pgmem._check_memory_content(integer, integer, text) is
    'Refuses a memory''s content of p_bytes over the tenant''s p_max_bytes (PM012) or matching the injection rule p_rule (PM024) (internal; the guard trigger and pgmem._store_memories).';

create or replace function pgmem._check_memory_fields(
    p_session_id text,
    p_agent_id text,
    p_triple_subject text,
    p_triple_predicate text,
    p_triple_object text,
    p_metadata jsonb
)
returns void
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_rule text;
begin
    perform pgmem._check_field_length('session_id', p_session_id, 256),
            pgmem._check_field_length('agent_id', p_agent_id, 256),
            pgmem._check_field_length('triple_subject', p_triple_subject, 1024),
            pgmem._check_field_length('triple_predicate', p_triple_predicate, 1024),
            pgmem._check_field_length('triple_object', p_triple_object, 1024),
            pgmem._check_field_length('metadata', p_metadata::text, 16384);
    -- The agent and the metadata reach prompts and tools beside the content.
    v_rule := coalesce(pgmem.detect_injection(p_agent_id), pgmem.detect_injection(p_session_id));
    if v_rule is null and p_metadata is not null and p_metadata <> '{}' then
        v_rule := (select d.rule from pgmem._detect_injection_many(array(
                       select v.value from pg_catalog.jsonb_path_query(p_metadata, 'strict $.**') as j (value)
                       cross join lateral (select j.value #>> '{}' as value) as v
                       where pg_catalog.jsonb_typeof(j.value) = 'string')) as d
                   order by d.item limit 1);
    end if;
    if v_rule is not null then
        raise exception 'the agent, session or metadata of a memory looks like a prompt injection (%): not stored', v_rule
            using errcode = 'PM024', hint = 'Name agents and sessions with identifiers; keep instructions out of metadata.';
    end if;
end
$$;

comment on function pgmem._check_memory_fields(text, text, text, text, text, jsonb) is
    'Refuses a memory''s session, agent, triple or metadata over its length limit (PM023) (internal; the guard trigger and pgmem._store_memories).';

-- The embeddings, when the caller has them, go to the injection probe of
-- their model (pgmem._detect_injection_probe), after the rules. The
-- contradiction features only for the texts that will be facts (p_sources:
-- each text's source, NULL a fact's): a stated turn or a store item is never
-- compared by the contradiction rules (pgmem._episode_source), and its
-- features cost ~0.2 ms a text.
drop function if exists pgmem._check_texts(text[]);
drop function if exists pgmem._check_texts(text[], public.vector[], text);
drop function if exists pgmem._check_texts(text[], public.vector[], text, boolean[]);
create or replace function pgmem._check_texts(
    p_contents text[],
    p_embeddings public.vector[] default null,
    p_model text default null,
    p_sources text[] default null
)
returns table(item integer, rule text, content text, kinds text[], terms text[], marks text[])
-- plpgsql for its cached plan: a SQL function with a SET clause is not
-- inlined, and its statement was planned again at every write (~0.1 ms).
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select r.item, x.rule, r.content, r.kinds,
           case when x.rule is null and not coalesce(pgmem._episode_source(p_sources[r.item]), false)
                then pgmem._conflict_terms(r.content) end,
           case when x.rule is null and not coalesce(pgmem._episode_source(p_sources[r.item]), false)
                then pgmem._conflict_marks(r.content) end
    from pgmem._redact_many(p_contents) as r
    left join pgmem._detect_injection_many(p_contents) as d on d.item = r.item
    left join pgmem._detect_injection_probe(p_model, p_embeddings, p_contents) as q on q.item = r.item
    cross join lateral (select coalesce(d.rule, q.rule) as rule) as x;
end
$$;

comment on function pgmem._check_texts(text[], public.vector[], text, text[]) is
    'pgmem._vouch''s checks of each text, vouching for nothing: item, the injection rule it breaks (NULL: clean; embedding_probe: the probe of p_model on its embedding in p_embeddings), its redacted form and kinds of redacted data, and for a clean text whose source in p_sources is a fact''s (pgmem._episode_source) its pgmem._conflict_terms and _conflict_marks (internal).';

-- What pgmem.remember and remember_many check of a text before anything
-- else: the injection rules and redaction, in one call for a batch, and what
-- the contradiction rules read of a clean text (pgmem._conflict_terms,
-- _conflict_marks). A text that passes is vouched for until the transaction
-- ends: its redacted form and those features go into pg_temp._pgmem_vouched,
-- a temporary table of the owner's (this function is security definer),
-- which the caller's role can neither write nor replace, so
-- pgmem._store_memories need not check it again, nor the memories_text
-- trigger compute its features again. Whoever calls it directly only has
-- clean, redacted text vouched for. Each row names its transaction, and
-- rows of an earlier one are deleted here: a table ON COMMIT DELETE ROWS
-- (pg_temp._pgmem_checked until then) was truncated, with its TOAST table
-- and index, at the commit of every write (~0.8 ms, perf).
-- (Its result gained terms and marks, then its arguments p_sources: each a
-- new function.)
drop function if exists pgmem._vouch(text[]);
drop function if exists pgmem._vouch(text[], public.vector[], text);
drop function if exists pgmem._vouch(text[], public.vector[], text, boolean[]);
create or replace function pgmem._vouch(
    p_contents text[],
    p_embeddings public.vector[] default null,
    p_model text default null,
    p_sources text[] default null
)
returns table(item integer, rule text, content text, kinds text[], terms text[], marks text[])
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if pgmem._vouched_table() then
        delete from pg_temp._pgmem_vouched as v where v.xact <> pg_catalog.pg_current_xact_id();
    else
        begin
            create temporary table _pgmem_vouched (xact xid8 not null, content text not null, terms text[],
                                                   marks text[]);
        exception when insufficient_privilege then
            -- The owner may not create temporary tables in this database:
            -- nothing is vouched for, and pgmem._store_memories checks again.
            return query select c.* from pgmem._check_texts(p_contents, p_embeddings, p_model, p_sources) as c
                         order by c.item;
            return;
        end;
    end if;
    return query
    with checked as materialized (
        select c.* from pgmem._check_texts(p_contents, p_embeddings, p_model, p_sources) as c
    ),
    vouched as (
        insert into pg_temp._pgmem_vouched (xact, content, terms, marks)
        select pg_catalog.pg_current_xact_id(), c.content, c.terms, c.marks
        from checked as c where c.rule is null and c.content is not null
    )
    select c.item, c.rule, c.content, c.kinds, c.terms, c.marks from checked as c order by c.item;
end
$$;

comment on function pgmem._vouch(text[], public.vector[], text, text[]) is
    'Checks each text against the injection rules, and its embedding (p_embeddings, of model p_model) against the injection probe, and redacts it (pgmem._detect_injection_many, _detect_injection_probe, _redact_many): item, the rule it breaks (NULL: clean), its redacted form, and for a clean text whose source in p_sources is a fact''s (not a stated turn or store item: pgmem._episode_source) its pgmem._conflict_terms and _conflict_marks; clean redacted forms are vouched for until the transaction ends, so pgmem._store_memories does not check them again (internal).';

create or replace function pgmem._vouched_table()
returns boolean
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_owner name;
begin
    -- Whether this session has pg_temp._pgmem_vouched and the owner made it
    -- (called from the owner's definer functions: current_user is the owner).
    select c.relowner::regrole::name into v_owner
    from pg_catalog.pg_class as c
    where c.oid = pg_catalog.to_regclass('pg_temp._pgmem_vouched');
    if v_owner is null then
        return false;
    elsif v_owner <> current_user then
        raise exception 'pg_temp._pgmem_vouched belongs to %, not to %', v_owner, current_user
            using errcode = '42501', hint = 'Drop that temporary table: pgmem keeps its own under this name.';
    end if;
    return true;
end
$$;

comment on function pgmem._vouched_table() is
    'True when this session holds pg_temp._pgmem_vouched made by the current user (the owner, inside pgmem._vouch and _store_memories); 42501 when another role made a table of that name (internal).';

-- The guard's checks for a whole batch at once, for pgmem.remember and
-- remember_many. Row by row (the trigger), the checks' regular expressions
-- and those of the text columns (00_text.sql, 13_conflict.sql) outnumber
-- the 32 a backend keeps compiled, so every row compiled them all again:
-- 2-9 ms a row on real conversation text. Here each expression runs over
-- the whole batch before the next (~0.4 ms a row), and text that
-- pgmem._vouch checked in this transaction is not checked again. security definer: the
-- rows are inserted with the owner's rights, which the trigger does not
-- check again; whoever calls it gets the same checks, for a tenant its
-- session may act for (pgmem._require_session_for), as a direct INSERT.
create or replace function pgmem._store_memories(p_tenant text, p_rows pgmem.memory_row[], p_now timestamptz)
returns table(n integer, memory_id bigint)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_max_bytes integer := (pgmem._byte_limits(p_tenant)).max_content_bytes;
    v_oversized integer;
    v_vouched jsonb := '{}';  -- vouched text -> [terms, marks]
    v_unchecked text[];
    -- The redacted text columns, in row order.
    v_contents text[];
    v_sessions text[];
    v_agents text[];
    v_objects text[];
    v_triple_subjects text[];
    v_predicates text[];
begin
    perform pgmem._require_session_for(p_tenant);
    perform pgmem._require_subject(p_tenant, array(select distinct r.subject from pg_catalog.unnest(p_rows) as r));
    if pgmem._vouched_table() then
        -- Read only once pgmem._vouch made the table (the statement is
        -- planned at its first run).
        select coalesce(pg_catalog.jsonb_object_agg(v.content, pg_catalog.jsonb_build_array(v.terms, v.marks)), '{}')
        into v_vouched
        from pg_temp._pgmem_vouched as v
        where v.xact = pg_catalog.pg_current_xact_id();
    end if;
    -- What pgmem._vouch checked in this transaction is not checked again.
    v_unchecked := array(select case when v_vouched OPERATOR(pg_catalog.?) r.content then null else r.content end
                         from pg_catalog.unnest(p_rows) with ordinality as r order by r.ordinality);
    -- The trigger's checks, in its order: size (the first row over the
    -- limit; then no text is read by the injection rules), injection,
    -- fields; redaction below.
    v_oversized := (select pg_catalog.octet_length(r.content) from pg_catalog.unnest(p_rows) with ordinality as r
                    where pg_catalog.octet_length(r.content) > v_max_bytes order by r.ordinality limit 1);
    perform pgmem._check_memory_content(
                v_oversized, v_max_bytes,
                case when v_oversized is null
                     then (select d.rule from pgmem._detect_injection_many(v_unchecked) as d
                           order by d.item limit 1) end);
    -- Once for each distinct set of fields: a batch's rows share their
    -- session and agent, and each row's took the injection rules ~0.1 ms.
    perform pgmem._check_memory_fields(r.session_id, r.agent_id, r.triple_subject, r.triple_predicate,
                                       r.triple_object, r.metadata)
    from (select distinct x.session_id, x.agent_id, x.triple_subject, x.triple_predicate, x.triple_object,
                          x.metadata
          from pg_catalog.unnest(p_rows) as x) as r;
    -- Redaction, a column at a time, into arrays the insert reads by row
    -- number: joined to the insert as four function scans they made it
    -- ~0.6-0.9 ms to plan, and PostgreSQL planned it again at every write.
    v_contents := pgmem._redacted(v_unchecked);
    v_sessions := pgmem._redacted(array(select x.session_id from pg_catalog.unnest(p_rows) as x));
    v_agents := pgmem._redacted(array(select x.agent_id from pg_catalog.unnest(p_rows) as x));
    v_objects := pgmem._redacted(array(select x.triple_object from pg_catalog.unnest(p_rows) as x));
    v_triple_subjects := pgmem._redacted(array(select x.triple_subject from pg_catalog.unnest(p_rows) as x));
    v_predicates := pgmem._redacted(array(select x.triple_predicate from pg_catalog.unnest(p_rows) as x));

    return query
    with inserted as (
        insert into pgmem.memories as m (tenant_id, subject, agent_id, session_id, kind, content, embedding,
                                         importance, confidence, source, triple_subject, triple_predicate,
                                         triple_object, valid_from, valid_to, status, status_changed_at,
                                         last_accessed_at, expires_at, metadata, created_at, updated_at, ann,
                                         conflict_terms, conflict_marks)
        select p_tenant, r.subject, v_agents[r.ordinality], v_sessions[r.ordinality], r.kind,
               coalesce(v_contents[r.ordinality], r.content), r.embedding,
               r.importance, r.confidence, r.source, v_triple_subjects[r.ordinality], v_predicates[r.ordinality],
               v_objects[r.ordinality], r.valid_from, r.valid_to, coalesce(r.status, 'active'), p_now,
               p_now, r.expires_at, pgmem._redact_jsonb(coalesce(r.metadata, '{}')), p_now, p_now,
               coalesce(r.ann, false),
               -- A vouched text's features (the trigger keeps what the owner
               -- gives); NULL: the memories_text trigger computes them.
               case when pg_catalog.jsonb_typeof(f.features -> 0) = 'array'
                    then array(select pg_catalog.jsonb_array_elements_text(f.features -> 0)) end,
               case when pg_catalog.jsonb_typeof(f.features -> 1) = 'array'
                    then array(select pg_catalog.jsonb_array_elements_text(f.features -> 1)) end
        from pg_catalog.unnest(p_rows) with ordinality as r
        cross join lateral (select v_vouched -> r.content as features) as f
        order by r.ordinality
        returning m.memory_id
    )
    -- Identities are drawn in insert order: the k-th smallest is row k.
    select (pg_catalog.row_number() over (order by i.memory_id))::integer, i.memory_id from inserted as i;
end
$$;

comment on function pgmem._store_memories(text, pgmem.memory_row[], timestamptz) is
    'Inserts new memories of p_tenant for pgmem.remember and remember_many with the checks of the memories_guard trigger applied to the whole batch at once (size PM012, prompt injection PM024, field lengths PM023, redaction); returns each row''s position in p_rows and its memory_id (internal).';
