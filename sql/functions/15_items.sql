-- Store items: a key-value store on memories (the LangGraph store, or any app
-- that keeps state by key). An item is a memory of its own, source 'store':
-- its key (memories.item_key) is unique among the subject's active items,
-- as memories_active_content holds one active episode per content_hash and
-- an item's content_hash is its key's (pgmem._item_hash); its value
-- (memories.item_value) is returned exactly as put; its content, the text
-- recall ranks, is redacted and checked for prompt injection as any
-- memory's. Items are never deduplicated, merged, superseded or
-- contradicted (pgmem._neighbours passes them over), never decay, archive
-- or count towards the capacity (kept), and leave when deleted or, with a
-- time to live, when it passes. Every put and delete is a memory event.
--
-- Each public function passes the bound tenant to its security definer
-- body, which checks that the session may act for it and the subject first,
-- then writes or reads that tenant's rows only, with the owner's rights: a
-- batch costs one statement, not a guard trigger per row.

create or replace function pgmem.item_text(p_value jsonb)
returns text
language sql
immutable strict parallel safe
security invoker
as $$
    select coalesce(nullif(pg_catalog.btrim(
                        case when pg_catalog.jsonb_typeof(p_value -> 'content') = 'string'
                             then p_value ->> 'content' end), ''),
                    p_value::text)
$$;

comment on function pgmem.item_text(jsonb) is
    'The searchable text of a store item''s value when the put gives none: its "content" string, else the value as JSON.';

-- Bound on the parts of an item that no setting sizes: a key is a name, a
-- value the state behind it (as an inbox turn job's payload).
create or replace function pgmem._item_limits(out max_key_bytes integer, out max_value_bytes integer)
language sql
immutable parallel safe
security invoker
as $$
    select 1024, 262144
$$;

comment on function pgmem._item_limits() is
    'Largest store item key (1 KB) and value (256 KB of JSON) pgmem.put_items accepts (internal).';

create or replace function pgmem._put_items(p_tenant text, p_subject text, p_items jsonb, p_now timestamptz)
returns table(item integer, key text, memory_id bigint, action text)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
set jit = off
as $$
#variable_conflict use_column
declare
    v_tenant text := p_tenant;
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
    v_limits record := pgmem._item_limits();
    v_bad record;
    v_embeddings public.vector[];
    v_texts text[];
    v_rules text[];
    v_contents text[];
    v_ann boolean;
    v_keys constant text[] := array['key', 'value', 'content', 'embedding', 'ttl', 'index'];
begin
    perform pgmem._require_session_for(v_tenant);
    v_settings := pgmem._write_settings(v_tenant);
    if p_items is null or pg_catalog.jsonb_typeof(p_items) <> 'array' then
        raise exception 'p_items must be a JSON array of items'
            using errcode = 'PM021', hint = 'e.g. ''[{"key": "theme", "value": {"mode": "dark"}}]''.';
    end if;
    if pg_catalog.jsonb_array_length(p_items) = 0 then
        return;
    end if;
    -- The first malformed item, by number, and what is wrong with it.
    select e.i, pg_catalog.jsonb_typeof(e.v) as type, f.*
    into v_bad
    from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    cross join lateral (
        select (select pg_catalog.min(k.key) from pg_catalog.jsonb_object_keys(
                    case when pg_catalog.jsonb_typeof(e.v) = 'object' then e.v else '{}' end) as k(key)
                where k.key <> all (v_keys)) as unknown_key,
               pg_catalog.jsonb_typeof(e.v -> 'key') is distinct from 'string' as bad_key,
               pg_catalog.octet_length(e.v ->> 'key') as key_bytes,
               pg_catalog.jsonb_typeof(e.v -> 'value') as value_type,
               pg_catalog.octet_length((e.v -> 'value')::text) as value_bytes,
               pg_catalog.jsonb_typeof(e.v -> 'content') not in ('string', 'null') as bad_content,
               pg_catalog.jsonb_typeof(e.v -> 'embedding') not in ('array', 'string', 'null') as bad_embedding,
               pg_catalog.jsonb_typeof(e.v -> 'index') not in ('boolean', 'null') as bad_index,
               coalesce(pg_catalog.jsonb_typeof(e.v -> 'ttl') not in ('number', 'null')
                        or (pg_catalog.jsonb_typeof(e.v -> 'ttl') = 'number'
                            and (e.v -> 'ttl')::numeric not between 1e-6 and 5256000000), false) as bad_ttl
    ) as f
    where pg_catalog.jsonb_typeof(e.v) <> 'object' or f.unknown_key is not null or f.bad_key
       or f.key_bytes > v_limits.max_key_bytes or f.value_type is distinct from 'object'
       or f.value_bytes > v_limits.max_value_bytes or f.bad_content or f.bad_embedding or f.bad_ttl
       or f.bad_index
    order by e.i
    limit 1;
    if found then
        if v_bad.type <> 'object' then
            raise exception 'p_items[%] is a JSON %, not an object', v_bad.i, v_bad.type
                using errcode = 'PM021',
                      hint = 'Each item is an object such as {"key": "theme", "value": {"mode": "dark"}}.';
        elsif v_bad.unknown_key is not null then
            raise exception 'p_items[%] has an unknown key %', v_bad.i, pg_catalog.quote_literal(v_bad.unknown_key)
                using errcode = 'PM021', hint = 'Known keys: ' || pg_catalog.array_to_string(v_keys, ', ') || '.';
        elsif v_bad.bad_key then
            raise exception 'p_items[%].key must be a string', v_bad.i
                using errcode = 'PM021', hint = 'The key names the item within its subject.';
        elsif v_bad.key_bytes > v_limits.max_key_bytes then
            raise exception 'p_items[%].key is % bytes; the limit is %', v_bad.i, v_bad.key_bytes,
                            v_limits.max_key_bytes
                using errcode = 'PM023', hint = 'A key names the item; keep the data in its value.';
        elsif v_bad.value_type is distinct from 'object' then
            raise exception 'p_items[%].value must be a JSON object, not %', v_bad.i,
                            coalesce(v_bad.value_type, 'missing')
                using errcode = 'PM021', hint = 'e.g. {"mode": "dark"}; delete an item with pgmem.delete_items.';
        elsif v_bad.value_bytes > v_limits.max_value_bytes then
            raise exception 'p_items[%].value is % bytes of JSON; the limit is %', v_bad.i, v_bad.value_bytes,
                            v_limits.max_value_bytes
                using errcode = 'PM023', hint = 'Split the state over several keys.';
        elsif v_bad.bad_content then
            raise exception 'p_items[%].content must be a string: the text to search the item by', v_bad.i
                using errcode = 'PM021',
                      hint = 'Leave it out for the value''s "content" string, else its JSON (pgmem.item_text).';
        elsif v_bad.bad_embedding then
            raise exception 'p_items[%].embedding must be a JSON array of % numbers or a vector literal string',
                            v_bad.i, v_settings.embedding_dims
                using errcode = 'PM015', hint = 'Leave it out (or null) to store text only and let the worker embed it.';
        elsif v_bad.bad_index then
            raise exception 'p_items[%].index must be true or false', v_bad.i
                using errcode = 'PM021', hint = 'false: the item is never embedded, kept out of vector search.';
        else
            raise exception 'p_items[%].ttl must be a number of minutes, more than 0 and at most 10,000 years', v_bad.i
                using errcode = 'PM027', hint = 'Leave it out (or null) for an item that lives until deleted.';
        end if;
    end if;
    select e.v ->> 'key' as key into v_bad
    from pg_catalog.jsonb_array_elements(p_items) as e(v)
    group by e.v ->> 'key' having pg_catalog.count(*) > 1 limit 1;
    if found then
        raise exception 'p_items names key % more than once', pg_catalog.quote_literal(v_bad.key)
            using errcode = 'PM021', hint = 'Put each key once per call; the last value is the one to keep.';
    end if;

    v_embeddings := pgmem._batch_embeddings(p_items);
    v_texts := array(select coalesce(e.v ->> 'content', pgmem.item_text(e.v -> 'value'))
                     from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) order by e.i);
    -- The subject, the text (size PM012 included) and the vector as any
    -- memory's.
    perform pgmem._check_memory_input(e.i::integer, v_settings, p_subject, t.text, 'semantic', null,
                                      public.vector_dims(x.embedding), true, public.vector_norm(x.embedding),
                                      null, null, null, 'sql', '{}')
    from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    join pg_catalog.unnest(v_embeddings) with ordinality as x(embedding, i) on x.i = e.i
    join pg_catalog.unnest(v_texts) with ordinality as t(text, i) on t.i = e.i;
    -- The namespace's lock (and its row, for a new one): a put that waits
    -- for it has written nothing.
    perform pgmem._lock_subjects(v_tenant, array[p_subject], v_now);

    -- Prompt injection and redaction, as any memory's text (a store item's:
    -- no contradiction features).
    select pg_catalog.array_agg(c.rule order by c.item), pg_catalog.array_agg(c.content order by c.item)
    into v_rules, v_contents
    from pgmem._check_texts(v_texts, p_sources => pg_catalog.array_fill('store'::text,
                                                                        array[pg_catalog.cardinality(v_texts)])) as c;
    select r.i, p_items -> (r.i::integer - 1) ->> 'key' as key, r.rule into v_bad
    from pg_catalog.unnest(v_rules) with ordinality as r(rule, i)
    where r.rule is not null
    order by r.i limit 1;
    if found then
        raise exception 'the value of item % is refused: prompt injection (%)', pg_catalog.quote_literal(v_bad.key),
                        v_bad.rule
            using errcode = 'PM024',
                  detail = pg_catalog.jsonb_build_object('item', v_bad.i, 'key', v_bad.key, 'rule', v_bad.rule)::text,
                  hint = 'Store instructions as data the agent reads, not as text addressed to it.';
    end if;

    select s.ann into v_ann from pgmem.subjects as s where s.tenant_id = v_tenant and s.subject = p_subject;
    return query
    with items as materialized (
        select e.i::integer as i, e.v ->> 'key' as key, e.v -> 'value' as value, v_contents[e.i] as content,
               -- Put with index false: no vector now, and the worker gives it none.
               -- Cast to the column's type here, not by the insert: Citus plans
               -- the insert's own vector-to-halfvec cast without the cast
               -- function's other arguments ("not enough default arguments").
               case when (e.v -> 'index') = 'false'::jsonb then null
                    else v_embeddings[e.i]::public.halfvec end as embedding,
               case when (e.v -> 'index') = 'false'::jsonb then '{"item": true, "index": false}'::jsonb
                    else '{"item": true}'::jsonb end as metadata,
               pg_catalog.make_interval(secs => (e.v ->> 'ttl')::double precision * 60) as ttl
        from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    ),
    existing as (
        select m.memory_id, m.content
        from pgmem.memories as m
        where m.tenant_id = v_tenant and m.subject = p_subject and m.status = 'active'
          and m.content_hash in (select pgmem._item_hash(c.key) from items as c)
    ),
    written as (
        insert into pgmem.memories as m (tenant_id, subject, kind, content, embedding, importance, source, metadata,
                                         item_key, item_value, item_ttl, expires_at, kept, valid_from,
                                         status_changed_at, last_accessed_at, created_at, updated_at, ann)
        select v_tenant, p_subject, 'semantic', c.content, c.embedding, v_settings.default_importance, 'store',
               c.metadata, c.key, c.value, c.ttl, v_now + c.ttl, true, v_now, v_now, v_now, v_now, v_now,
               coalesce(v_ann, false)
        from items as c
        order by c.i
        on conflict (tenant_id, subject, content_hash, (source in ('turn', 'store'))) where status = 'active' do update
        set content = excluded.content,
            -- The same text keeps its vector when the put brings none.
            embedding = case when excluded.embedding is null and m.content = excluded.content
                                  and excluded.metadata = m.metadata then m.embedding
                             else excluded.embedding end,
            metadata = excluded.metadata,
            item_value = excluded.item_value, item_ttl = excluded.item_ttl, expires_at = excluded.expires_at,
            updated_at = excluded.updated_at
        returning m.memory_id, m.item_key, m.content
    ),
    logged as (
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                         created_at)
        select v_tenant, w.memory_id, p_subject, case when x.memory_id is null then 'insert' else 'update' end,
               x.content, w.content, pg_catalog.jsonb_build_object('key', w.item_key), v_now
        from written as w
        left join existing as x on x.memory_id = w.memory_id
    )
    select c.i, c.key, w.memory_id, case when x.memory_id is null then 'inserted' else 'updated' end
    from items as c
    join written as w on w.item_key = c.key
    left join existing as x on x.memory_id = w.memory_id
    order by c.i;
    perform pgmem._ann_subjects(v_tenant, v_settings, array[p_subject]);
end
$$;

create or replace function pgmem.put_items(p_subject text, p_items jsonb, p_now timestamptz default null)
returns table(item integer, key text, memory_id bigint, action text)
language sql
volatile
security invoker
as $$
    select * from pgmem._put_items(pgmem._require_tenant(), p_subject, p_items, p_now)
$$;

comment on function pgmem._put_items(text, text, jsonb, timestamptz) is
    'pgmem.put_items for p_tenant, which the session must be able to act for (internal).';

comment on function pgmem.put_items(text, jsonb, timestamptz) is
    'Puts store items in subject p_subject in one statement: p_items is a JSON array of {"key": text, "value": object, "content": the text to search it by (default pgmem.item_text(value)), "embedding": its vector or null, "ttl": minutes to live or null, "index": false to keep it out of vector search (never embedded)}. A key holds one item: a new key is inserted, a known one updated in place (its vector kept when the text is the same and none is given). The value is kept exactly; the content is redacted, and refused (PM024) when it reads as a prompt injection. Returns each item''s number, key, memory_id and action (inserted, updated). Errors PM010-PM016, PM021, PM023, PM024, PM027.';

create or replace function pgmem._delete_items(p_tenant text, p_subject text, p_keys text[], p_now timestamptz)
returns table(key text, memory_id bigint)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_tenant text := p_tenant;
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
begin
    perform pgmem._require_session_for(v_tenant);
    perform pgmem._require_subject(v_tenant, array[p_subject]);
    return query
    with gone as (
        update pgmem.memories as m
        set status = 'deleted', status_changed_at = v_now, updated_at = v_now
        where m.tenant_id = v_tenant and m.subject = p_subject and m.status = 'active'
          and m.content_hash in (select pgmem._item_hash(k) from pg_catalog.unnest(p_keys) as k)
        returning m.memory_id, m.item_key
    ),
    logged as (
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
        select v_tenant, g.memory_id, p_subject, 'delete',
               pg_catalog.jsonb_build_object('key', g.item_key, 'previous_status', 'active'), v_now
        from gone as g
    )
    select g.item_key, g.memory_id from gone as g order by g.item_key;
end
$$;

create or replace function pgmem.delete_items(p_subject text, p_keys text[], p_now timestamptz default null)
returns table(key text, memory_id bigint)
language sql
volatile
security invoker
as $$
    select * from pgmem._delete_items(pgmem._require_tenant(), p_subject, p_keys, p_now)
$$;

comment on function pgmem._delete_items(text, text, text[], timestamptz) is
    'pgmem.delete_items for p_tenant, which the session must be able to act for (internal).';

comment on function pgmem.delete_items(text, text[], timestamptz) is
    'Deletes the store items of p_subject under p_keys (status deleted, a delete event each; purge removes them for good); returns the keys found and their memory_ids. A key that holds nothing is passed over.';

create or replace function pgmem._get_items(
    p_tenant text,
    p_subject text,
    p_keys text[],
    p_memory_ids bigint[],
    p_limit integer,
    p_offset integer,
    p_refresh boolean,
    p_now timestamptz
)
returns table(key text, value jsonb, memory_id bigint, created_at timestamptz, updated_at timestamptz,
              expires_at timestamptz)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_tenant text := p_tenant;
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
begin
    perform pgmem._require_session_for(v_tenant);
    perform pgmem._require_subject(v_tenant, array[p_subject]);
    if p_limit is not null and p_limit < 0 or p_offset is null or p_offset < 0 then
        raise exception 'p_limit and p_offset must not be negative'
            using errcode = 'PM021', hint = 'p_limit null lists every item.';
    end if;
    -- An item whose time to live has passed is gone for every read at once,
    -- before the archive job sweeps it.
    -- One read of the items; with p_refresh the same rows get their expiry
    -- moved (an item without a time to live keeps none).
    return query
    with picked as (
        -- The moved expiry is computed here, not in the update: Citus refuses
        -- an UPDATE that calls a stable function (timestamptz + interval) on
        -- a column.
        select m.item_key, m.item_value, m.memory_id, m.created_at, m.updated_at, m.expires_at,
               v_now + m.item_ttl as refreshed_expiry
        from pgmem.memories as m
        where m.tenant_id = v_tenant and m.subject = p_subject and m.status = 'active' and m.source = 'store'
          and (m.expires_at is null or m.expires_at > v_now)
          and (p_keys is null
               or m.content_hash in (select pgmem._item_hash(k) from pg_catalog.unnest(p_keys) as k))
          and (p_memory_ids is null or m.memory_id = any (p_memory_ids))
        order by m.updated_at desc, m.memory_id desc
        limit p_limit offset p_offset
    ),
    refreshed as (
        update pgmem.memories as m
        set expires_at = p.refreshed_expiry
        from picked as p
        where p_refresh and p.refreshed_expiry is not null and m.tenant_id = v_tenant and m.memory_id = p.memory_id
        returning m.memory_id, m.expires_at
    )
    select p.item_key, p.item_value, p.memory_id, p.created_at, p.updated_at,
           coalesce(r.expires_at, p.expires_at)
    from picked as p
    left join refreshed as r on r.memory_id = p.memory_id
    order by p.updated_at desc, p.memory_id desc;
end
$$;

create or replace function pgmem.get_items(
    p_subject text,
    p_keys text[] default null,
    p_memory_ids bigint[] default null,
    p_limit integer default null,
    p_offset integer default 0,
    p_refresh boolean default false,
    p_now timestamptz default null
)
returns table(key text, value jsonb, memory_id bigint, created_at timestamptz, updated_at timestamptz,
              expires_at timestamptz)
language sql
volatile
security invoker
as $$
    select * from pgmem._get_items(pgmem._require_tenant(), p_subject, p_keys, p_memory_ids, p_limit, p_offset,
                                   p_refresh, p_now)
$$;

comment on function pgmem._get_items(text, text, text[], bigint[], integer, integer, boolean, timestamptz) is
    'pgmem.get_items for p_tenant, which the session must be able to act for (internal).';

comment on function pgmem.get_items(text, text[], bigint[], integer, integer, boolean, timestamptz) is
    'The live store items of p_subject (all, or those under p_keys, or of p_memory_ids), the most recently updated first, p_limit (null: all) from p_offset: key, value exactly as put, memory_id, created_at, updated_at, expires_at. An item past its time to live is not returned; p_refresh moves the returned items'' expiry to now + their ttl.';
