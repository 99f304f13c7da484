-- pgmem.remember_many: the bulk form of pgmem.remember (12_remember_one.sql),
-- with the same decisions, as if its items were remembered one by one.

-- The vectors of a batch's items (remember_many, put_items), in item order:
-- one cast for the whole batch; only if it fails, find the item (PM016).
create or replace function pgmem._batch_embeddings(p_items jsonb)
returns public.vector[]
language plpgsql
immutable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_item record;
begin
    return array(
        select case pg_catalog.jsonb_typeof(e.v -> 'embedding')
                    when 'string' then (e.v ->> 'embedding')::public.vector
                    when 'array' then ((e.v -> 'embedding')::text)::public.vector
               end
        from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
        order by e.i);
exception when others then
    for v_item in
        select e.i, case pg_catalog.jsonb_typeof(e.v -> 'embedding')
                         when 'string' then e.v ->> 'embedding' else (e.v -> 'embedding')::text end as embedding
        from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
        where pg_catalog.jsonb_typeof(e.v -> 'embedding') in ('array', 'string')
        order by e.i
    loop
        begin
            perform v_item.embedding::public.vector;
        exception when others then
            raise exception 'p_items[%].embedding holds a value that is not a finite number', v_item.i
                using errcode = 'PM016',
                      hint = 'Every element must be a finite number, as a JSON array or a vector literal ''[0.1, …]''.';
        end;
    end loop;
    raise;
end
$$;

comment on function pgmem._batch_embeddings(jsonb) is
    'The embedding of each item of a JSON batch as vectors, in item order (NULL where none); PM016 naming the first item whose embedding is not finite numbers (internal: remember_many, put_items).';

create or replace function pgmem.remember_many(
    p_items jsonb,
    p_subject text default null,
    p_now timestamptz default null
)
returns table(item integer, action text, memory_id bigint, related_id bigint, similarity real)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
-- JIT compiles a query in ~100 ms; these queries run in milliseconds but
-- their cost estimates (nested scans over vectors) cross jit_above_cost.
set jit = off
as $$
#variable_conflict use_column
-- Bulk form of pgmem.remember with the same decisions, as if its items
-- were remembered one by one in order. Items independent of the rest of
-- the batch are decided and written set-based (a few statements for the
-- whole batch); the rest go through remember's own path one by one.
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
    v_n integer;
    v_bad record;
    v_embeddings public.vector[];
    v_rejected integer[];
    v_rules text[];
    v_contents text[];
    v_redacted text[];
    v_objects text[];
    v_terms text[];
    v_marks text[];
    v_item record;
    v_link_from bigint[];
    v_link_to bigint[];
    v_keys constant text[] := array['subject', 'content', 'embedding', 'kind', 'importance', 'triple_subject',
                                    'triple_predicate', 'triple_object', 'session_id', 'agent_id', 'source',
                                    'metadata', 'valid_from', 'rejected', 'confidence', 'expires_at',
                                    'check_conflicts', 'derived_from'];
    -- How far a cosine between two items' vectors may be from the one between
    -- the same vectors once stored in half precision (the decision reads
    -- that one): the tests below that an item cannot affect another hold
    -- with this much to spare.
    v_margin constant real := 0.01;
begin
    v_settings := pgmem._write_settings(v_tenant);
    if p_items is null or pg_catalog.jsonb_typeof(p_items) <> 'array' then
        raise exception 'p_items must be a JSON array of objects'
            using errcode = 'PM021',
                  hint = 'e.g. ''[{"subject": "alice", "content": "likes tea", "embedding": [0.1, …]}]''.';
    end if;
    v_n := pg_catalog.jsonb_array_length(p_items);
    if v_n = 0 then
        return;
    end if;
    select e.i, pg_catalog.jsonb_typeof(e.v) as type,
           (select pg_catalog.min(k.key) from pg_catalog.jsonb_object_keys(
                case when pg_catalog.jsonb_typeof(e.v) = 'object' then e.v else '{}' end) as k(key)
            where k.key <> all (v_keys)) as unknown_key,
           pg_catalog.jsonb_typeof(e.v -> 'embedding') as embedding_type,
           pg_catalog.jsonb_typeof(e.v -> 'importance') as importance_type,
           pg_catalog.jsonb_typeof(e.v -> 'rejected') as rejected_type,
           t.bad_confidence, t.bad_expiry,
           pg_catalog.jsonb_typeof(e.v -> 'check_conflicts') as check_type,
           t.bad_derived
    into v_bad
    from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    cross join lateral (
        select coalesce(pg_catalog.jsonb_typeof(e.v -> 'confidence') not in ('number', 'null')
                        or (pg_catalog.jsonb_typeof(e.v -> 'confidence') = 'number'
                            and pg_catalog.abs((e.v -> 'confidence')::numeric) > 1.7976931348623157e308),
                        false) as bad_confidence,
               coalesce(pg_catalog.jsonb_typeof(e.v -> 'expires_at') not in ('string', 'null')
                        or (pg_catalog.jsonb_typeof(e.v -> 'expires_at') = 'string'
                            and pgmem._timestamptz_or_null(e.v ->> 'expires_at') is null),
                        false) as bad_expiry,
               -- derived_from: the items of this batch it was extracted from
               coalesce(pg_catalog.jsonb_typeof(e.v -> 'derived_from') not in ('array', 'null')
                        or (pg_catalog.jsonb_typeof(e.v -> 'derived_from') = 'array'
                            and exists (select from pg_catalog.jsonb_array_elements(e.v -> 'derived_from') as d(v)
                                        where pg_catalog.jsonb_typeof(d.v) <> 'number'
                                           or d.v::text !~ '^[0-9]+$'
                                           or d.v::text::numeric not between 1 and v_n
                                           or d.v::text::numeric = e.i)),
                        false) as bad_derived) as t
    where pg_catalog.jsonb_typeof(e.v) <> 'object'
       or exists (select from pg_catalog.jsonb_object_keys(e.v) as k(key) where k.key <> all (v_keys))
       or pg_catalog.jsonb_typeof(e.v -> 'embedding') not in ('array', 'string', 'null')
       or pg_catalog.jsonb_typeof(e.v -> 'importance') not in ('number', 'null')
       -- Compared as numeric: 1e400 is a JSON number that no float type holds, so the
       -- cast to double precision below would fail with a raw 22003.
       or (pg_catalog.jsonb_typeof(e.v -> 'importance') = 'number'
           and pg_catalog.abs((e.v -> 'importance')::numeric) > 1.7976931348623157e308)
       or pg_catalog.jsonb_typeof(e.v -> 'rejected') not in ('string', 'null')
       or t.bad_confidence or t.bad_expiry
       or pg_catalog.jsonb_typeof(e.v -> 'check_conflicts') not in ('boolean', 'null')
       or t.bad_derived
    order by e.i
    limit 1;
    if found then
        if v_bad.type <> 'object' then
            raise exception 'p_items[%] is a JSON %, not an object', v_bad.i, v_bad.type
                using errcode = 'PM021', hint = 'Each item is an object such as {"content": "likes tea"}.';
        elsif v_bad.unknown_key is not null then
            raise exception 'p_items[%] has an unknown key %', v_bad.i, pg_catalog.quote_literal(v_bad.unknown_key)
                using errcode = 'PM021', hint = 'Known keys: ' || pg_catalog.array_to_string(v_keys, ', ') || '.';
        elsif v_bad.embedding_type not in ('array', 'string', 'null') then
            raise exception 'p_items[%].embedding must be a JSON array of % numbers or a vector literal string',
                            v_bad.i, v_settings.embedding_dims
                using errcode = 'PM015', hint = 'Leave it out (or null) to store text only and let the worker embed it.';
        elsif v_bad.bad_confidence then
            raise exception 'p_items[%].confidence must be a number between 0 and 1', v_bad.i
                using errcode = 'PM026', hint = 'Leave it out (or null) for the source''s default confidence.';
        elsif v_bad.bad_expiry then
            raise exception 'p_items[%].expires_at must be a timestamp such as "2026-12-24T18:00:00Z"', v_bad.i
                using errcode = 'PM027', hint = 'Leave it out (or null) for the kind''s default TTL.';
        elsif v_bad.check_type not in ('boolean', 'null') then
            raise exception 'p_items[%].check_conflicts must be true or false', v_bad.i
                using errcode = 'PM021', hint = 'Leave it out (or null) to check contradictions, as remember does.';
        elsif v_bad.bad_derived then
            raise exception 'p_items[%].derived_from must be a JSON array of other item numbers (1 to %)', v_bad.i, v_n
                using errcode = 'PM021',
                      hint = 'e.g. [1]: this fact was extracted from item 1, the turn it was said in.';
        elsif v_bad.rejected_type not in ('string', 'null') then
            raise exception 'p_items[%].rejected must be a string: the reason the caller refused the text', v_bad.i
                using errcode = 'PM021', hint = 'Leave it out (or null) to let pgmem''s own rules decide.';
        else
            raise exception 'p_items[%].importance must be a number between 0 and 1', v_bad.i
                using errcode = 'PM014', hint = 'Leave it out (or null) for the tenant''s default_importance.';
        end if;
    end if;

    v_embeddings := pgmem._batch_embeddings(p_items);

    perform pgmem._check_memory_input(
                e.i::integer, v_settings, coalesce(e.v ->> 'subject', p_subject), e.v ->> 'content',
                coalesce(e.v ->> 'kind', 'semantic'), (e.v ->> 'importance')::double precision,
                public.vector_dims(x.embedding), true, public.vector_norm(x.embedding),
                e.v ->> 'triple_subject', e.v ->> 'triple_predicate', e.v ->> 'triple_object',
                coalesce(e.v ->> 'source', 'sql'), coalesce(e.v -> 'metadata', '{}')),
            pgmem._check_truth_input(e.i::integer, (e.v ->> 'confidence')::double precision,
                                     (e.v ->> 'expires_at')::timestamptz,
                                     coalesce((e.v ->> 'valid_from')::timestamptz, v_now))
    from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    join pg_catalog.unnest(v_embeddings) with ordinality as x(embedding, i) on x.i = e.i;

    v_contents := array(select e.v ->> 'content'
                        from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) order by e.i);
    -- The subjects' locks first: a batch that waits for one has written nothing.
    perform pgmem._lock_subjects(v_tenant,
                                 array(select coalesce(e.v ->> 'subject', p_subject)
                                       from pg_catalog.jsonb_array_elements(p_items) as e(v)),
                                 v_now);

    -- Checked and redacted once (pgmem._vouch, 70_guards.sql), the triple
    -- objects with them. The injection probe reads what was said: the
    -- vectors of the items no other item of the batch was extracted from
    -- (a fact derived_from its stated turn is the extractor's rewording,
    -- judged with that turn below).
    select pg_catalog.array_agg(r.item order by r.item) filter (where r.rule is not null),
           pg_catalog.array_agg(r.rule order by r.item) filter (where r.rule is not null),
           pg_catalog.array_agg(r.content order by r.item),
           -- the contradiction features as text (arrays of ragged arrays do not exist)
           pg_catalog.array_agg(r.terms::text order by r.item),
           pg_catalog.array_agg(r.marks::text order by r.item),
           pg_catalog.array_agg(pg_catalog.array_to_string(r.kinds || array(
               select k from pg_catalog.unnest(o.kinds) as k where not k = any (r.kinds)), ',') order by r.item),
           pg_catalog.array_agg(o.object order by r.item)
    into v_rejected, v_rules, v_contents, v_terms, v_marks, v_redacted, v_objects
    from pgmem._vouch(v_contents,
                      array(select case when pg_catalog.jsonb_typeof(e.v -> 'derived_from') = 'array'
                                             and pg_catalog.jsonb_array_length(e.v -> 'derived_from') > 0
                                        then null else x.embedding end
                            from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
                            join pg_catalog.unnest(v_embeddings) with ordinality as x(embedding, i) on x.i = e.i
                            order by e.i),
                      pgmem._write_model(v_settings),
                      array(select coalesce(e.v ->> 'source', 'sql')
                            from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
                            order by e.i)) as r
    join pgmem._redact_objects(
             array(select e.v ->> 'triple_predicate'
                   from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) order by e.i),
             array(select e.v ->> 'triple_object'
                   from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) order by e.i)) as o
      on o.item = r.item;
    v_rejected := coalesce(v_rejected, '{}');
    -- A fact extracted from a text the probe rejected is that text's, whatever
    -- its own wording: rejected with it. (A rule names the clause it matched;
    -- the facts of the text's other clauses meet the rules on their own.)
    select v_rejected || pg_catalog.array_agg(e.i::integer order by e.i),
           v_rules || pg_catalog.array_agg('embedding_probe'::text order by e.i)
    into v_rejected, v_rules
    from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    where not e.i::integer = any (v_rejected)
      and exists (select from pg_catalog.jsonb_array_elements_text(
                                 case when pg_catalog.jsonb_typeof(e.v -> 'derived_from') = 'array'
                                      then e.v -> 'derived_from' else '[]' end) as s(item)
                  where v_rules[pg_catalog.array_position(v_rejected, s.item::integer)] = 'embedding_probe');
    v_rejected := coalesce(v_rejected, '{}');

    -- The batch as rows. Items whose decision nothing else of the batch can
    -- change (no twin, no triple key in play, no earlier item near enough to
    -- be merged with or to displace the stored row they meet, no
    -- contradiction) are decided and written set-based; the others
    -- (meets_batch) go through pgmem._remember_decide one by one, in item
    -- order, after them. Both orders give the same result: such independent
    -- items only reinforce rows or add rows no other item's decision reads.
    create temporary table if not exists _pgmem_batch (
        item integer primary key,
        subject text not null,
        content text not null,
        content_hash text not null,
        redacted text[] not null,
        embedding public.vector,
        kind text not null,
        importance real not null,
        triple_subject text,
        triple_predicate text,
        triple_object text,
        session_id text,
        agent_id text,
        source text not null,
        metadata jsonb not null,
        valid_from timestamptz not null,
        confidence real not null,
        expires_at timestamptz,
        check_conflicts boolean not null,
        conflict_terms text[],             -- pgmem._conflict_terms, _conflict_marks (pgmem._vouch)
        conflict_marks text[],
        rejected_rule text,
        twins_in_batch boolean not null,   -- same content or triple key as another item
        exact_id bigint,                   -- active row with the same content
        near_id bigint,                    -- nearest active row within merge_threshold
        near_similarity real,
        near_covered text,                 -- pgmem._coverage of the item and its near row
        conflicted boolean not null default false,  -- pgmem._neighbours found a contradiction or a question
        subject_rows integer,              -- the subject's active rows as pgmem._neighbours read them
        meets_batch boolean not null default false,
        action text,
        memory_id bigint,
        related_id bigint,
        similarity real
    ) on commit drop;
    create index if not exists _pgmem_batch_content on pg_temp._pgmem_batch (subject, content_hash);
    truncate pg_temp._pgmem_batch;
    insert into pg_temp._pgmem_batch (item, subject, content, content_hash, redacted, embedding, kind, importance,
                                      triple_subject, triple_predicate, triple_object, session_id, agent_id, source,
                                      metadata, valid_from, confidence, expires_at, check_conflicts, conflict_terms,
                                      conflict_marks, rejected_rule, twins_in_batch, action)
    select x.i, x.subject, x.content, x.content_hash, x.redacted, x.embedding, x.kind, x.importance,
           x.triple_subject, x.triple_predicate, x.triple_object, x.session_id, x.agent_id, x.source, x.metadata,
           x.valid_from,
           coalesce(x.confidence, pgmem._default_confidence(v_settings, x.source)),
           coalesce(x.expires_at, pgmem._default_expiry(v_settings, x.kind, x.valid_from)),
           x.check_conflicts, x.terms, x.marks,
           x.rule,
           pg_catalog.count(*) over (partition by x.subject, x.content_hash, pgmem._episode_source(x.source)) > 1
           or (x.triple_predicate is not null
               and pg_catalog.count(*) over (partition by x.subject, pg_catalog.lower(x.triple_subject),
                                                          pg_catalog.lower(x.triple_predicate)) > 1),
           case when x.rule is not null then 'rejected' end
    from (select e.i, coalesce(e.v ->> 'subject', p_subject) as subject, c.content,
                 pgmem._content_hash(c.content) as content_hash,
                 coalesce(pg_catalog.string_to_array(nullif(c.redacted, ''), ','), '{}') as redacted, c.embedding,
                 coalesce(e.v ->> 'kind', 'semantic') as kind,
                 coalesce((e.v ->> 'importance')::real, v_settings.default_importance) as importance,
                 pg_catalog.btrim(e.v ->> 'triple_subject') as triple_subject,
                 pg_catalog.btrim(e.v ->> 'triple_predicate') as triple_predicate,
                 pg_catalog.btrim(c.object) as triple_object,
                 e.v ->> 'session_id' as session_id, e.v ->> 'agent_id' as agent_id,
                 coalesce(e.v ->> 'source', 'sql') as source, coalesce(e.v -> 'metadata', '{}') as metadata,
                 coalesce((e.v ->> 'valid_from')::timestamptz, v_now) as valid_from,
                 (e.v ->> 'confidence')::real as confidence,
                 (e.v ->> 'expires_at')::timestamptz as expires_at,
                 coalesce((e.v ->> 'check_conflicts')::boolean, true) as check_conflicts,
                 c.terms::text[] as terms, c.marks::text[] as marks,
                 -- pgmem's own rule names the rejection; the caller's reason when only it refused.
                 coalesce(j.rule, nullif(e.v ->> 'rejected', '')) as rule
          from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
          join rows from (pg_catalog.unnest(v_contents), pg_catalog.unnest(v_redacted),
                          pg_catalog.unnest(v_embeddings), pg_catalog.unnest(v_objects),
                          pg_catalog.unnest(v_terms), pg_catalog.unnest(v_marks))
               with ordinality as c(content, redacted, embedding, object, terms, marks, i) on c.i = e.i
          left join rows from (pg_catalog.unnest(v_rejected), pg_catalog.unnest(v_rules)) as j(i, rule)
               on j.i = e.i) as x;
    analyze pg_temp._pgmem_batch;

    perform pgmem._reject(v_tenant, b.subject, array[e.v ->> 'content'], array[b.rejected_rule], b.agent_id, v_now)
    from pg_temp._pgmem_batch as b
    join pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i) on e.i = b.item
    where b.rejected_rule is not null;

    -- On a Citus cluster every item goes the one-by-one way: the set-based
    -- statements join this session's temporary table with distributed tables,
    -- which Citus cannot plan (docs/scaling.md). Same decisions, by the above.
    if pgmem._distributed() then
        update pg_temp._pgmem_batch as b set meets_batch = true where b.rejected_rule is null;
    else
        update pg_temp._pgmem_batch as b
        set exact_id = m.memory_id
        from pgmem.memories as m
        where b.rejected_rule is null
          and m.tenant_id = v_tenant and m.subject = b.subject and m.status = 'active' and m.content_hash = b.content_hash
          and pgmem._episode_source(m.source) = pgmem._episode_source(b.source);

        -- Each subject's active rows read once for all its items
        -- (pgmem._neighbours): the nearest row within merge_threshold, and
        -- whether an item contradicts an active fact or has a neighbour for
        -- the judge (13_conflict.sql).
        update pg_temp._pgmem_batch as b
        set near_id = n.near_id, near_similarity = n.near_similarity, conflicted = n.conflicted,
            subject_rows = n.subject_rows
        from (select n.item, pg_catalog.max(n.subject_rows) as subject_rows,
                     pg_catalog.min(n.memory_id) filter (where n.nearest and n.similarity >= v_settings.merge_threshold)
                         as near_id,
                     pg_catalog.min(n.similarity) filter (where n.nearest and n.similarity >= v_settings.merge_threshold)
                         as near_similarity,
                     coalesce(pg_catalog.bool_or(not n.nearest
                                                 and (n.rule is not null
                                                      or (v_settings.judge_conflicts
                                                          and n.similarity >= v_settings.conflict_threshold))),
                              false) as conflicted
              from (select distinct c.subject from pg_temp._pgmem_batch as c
                    where c.rejected_rule is null and c.source <> 'turn') as s
              cross join lateral pgmem._neighbours(
                  v_tenant, v_settings, s.subject,
                  array(select row(x.item, x.content, x.embedding, x.valid_from, x.conflict_terms, x.conflict_marks,
                                   x.check_conflicts, x.kind = 'episodic')::pgmem.write_probe
                        from pg_temp._pgmem_batch as x
                        where x.subject = s.subject and x.rejected_rule is null and x.source <> 'turn'
                        order by x.item)) as n
              group by n.item) as n
        where n.item = b.item;

        -- The evidence beside similarity (pgmem._covers), for close rows only.
        update pg_temp._pgmem_batch as b
        set near_covered = pgmem._coverage(coalesce(b.conflict_terms, pgmem._conflict_terms(b.content)),
                                           coalesce(b.conflict_marks, pgmem._conflict_marks(b.content)),
                                           coalesce(m.conflict_terms, pgmem._conflict_terms(m.content)),
                                           coalesce(m.conflict_marks, pgmem._conflict_marks(m.content)))
        from pgmem.memories as m
        where b.near_id is not null and m.tenant_id = v_tenant and m.memory_id = b.near_id;

        -- Two items can only contradict if they share a term or an attribute,
        -- and one is negated or says "now", or both name an antonym pair, or
        -- both hold numbers of a quantity (the change rule's markers are
        -- among the negation and change ones).
        with profiles as materialized (
            select x.item, x.subject, x.content, x.embedding, x.conflict_terms as terms, x.conflict_marks as marks,
                   array(select k from pg_catalog.unnest(x.conflict_marks) as k where k like 'attribute:%')
                       as attributes,
                   x.conflict_marks && array['negative', 'change'] as marked,
                   array(select k from pg_catalog.unnest(x.conflict_marks) as k where k like 'antonym:%')
                       as antonyms,
                   'digits' = any (x.conflict_marks) and x.conflict_marks && array['quantity', 'change'] as digits
            from pg_temp._pgmem_batch as x
            where x.rejected_rule is null and x.check_conflicts and x.source <> 'turn'
        )
        update pg_temp._pgmem_batch as b
        set meets_batch = true
        where b.rejected_rule is null
          and (b.twins_in_batch
               -- an earlier item within merge_threshold (a hash join on
               -- subject) may be its nearest row when it is decided, and
               -- change the decision if either of the two says all the other
               -- does, or if it is at least as near as the stored row the item
               -- is deduplicated into or merged with. Otherwise the item is
               -- inserted whichever is nearest; an item with a stored row's
               -- content is reinforced whatever is near it. (The stored rows'
               -- vectors are half precision: v_margin.)
               or b.item in (select n.item
                             from pg_temp._pgmem_batch as n
                             join pg_temp._pgmem_batch as o
                               on o.subject = n.subject and o.item < n.item and o.rejected_rule is null
                              and o.embedding is not null and o.source <> 'turn'
                              and pgmem._similarity(o.embedding OPERATOR(public.<=>) n.embedding)
                                  >= v_settings.merge_threshold - v_margin
                             where n.rejected_rule is null and n.embedding is not null and n.source <> 'turn'
                               and n.exact_id is null
                               and (n.near_id is null
                                    or pgmem._similarity(o.embedding OPERATOR(public.<=>) n.embedding)
                                       >= n.near_similarity - v_margin)
                               and (n.near_covered is not null
                                    or pgmem._coverage(coalesce(n.conflict_terms, pgmem._conflict_terms(n.content)),
                                                       coalesce(n.conflict_marks, pgmem._conflict_marks(n.content)),
                                                       coalesce(o.conflict_terms, pgmem._conflict_terms(o.content)),
                                                       coalesce(o.conflict_marks, pgmem._conflict_marks(o.content)))
                                       is not null))
               -- its triple key is active already: reinforce or supersede
               or (b.triple_predicate is not null
                   and exists (select from pgmem.memories as m
                               where m.tenant_id = v_tenant and m.subject = b.subject and m.status = 'active'
                                 and m.triple_predicate is not null
                                 and pg_catalog.lower(m.triple_predicate) = pg_catalog.lower(b.triple_predicate)
                                 and pg_catalog.lower(m.triple_subject) = pg_catalog.lower(b.triple_subject)))
               -- its match may be superseded by a triple of the batch
               or b.exact_id in (select m.memory_id from pg_temp._pgmem_batch as t
                                 join pgmem.memories as m
                                   on m.tenant_id = v_tenant and m.subject = t.subject and m.status = 'active'
                                  and pg_catalog.lower(m.triple_predicate) = pg_catalog.lower(t.triple_predicate)
                                  and pg_catalog.lower(m.triple_subject) = pg_catalog.lower(t.triple_subject)
                                 where t.rejected_rule is null and t.triple_predicate is not null)
               or b.near_id in (select m.memory_id from pg_temp._pgmem_batch as t
                                join pgmem.memories as m
                                  on m.tenant_id = v_tenant and m.subject = t.subject and m.status = 'active'
                                 and pg_catalog.lower(m.triple_predicate) = pg_catalog.lower(t.triple_predicate)
                                 and pg_catalog.lower(m.triple_subject) = pg_catalog.lower(t.triple_subject)
                                where t.rejected_rule is null and t.triple_predicate is not null)
               -- it contradicts an active fact, or has a neighbour for the judge
               or b.conflicted
               -- it and another item of the batch contradict each other: only
               -- pairs that share a term or attribute and carry a marker are
               -- asked, and of those an item's nearest few (as pgmem._neighbours
               -- asks of stored facts: on real text a shared term alone pairs
               -- an item with a good part of its batch); both are marked
               or b.item in (select pg_catalog.unnest(array[y.item, z.item])
                             from profiles as y
                             cross join lateral (
                                 select z.item, z.content, z.terms, z.marks
                                 from profiles as z
                                 where z.subject = y.subject and z.item <> y.item
                                   and (y.terms && z.terms or y.attributes && z.attributes)
                                   and (y.marked or z.marked or y.antonyms && z.antonyms or (y.digits and z.digits))
                                 order by z.embedding OPERATOR(public.<=>) y.embedding nulls last, z.item
                                 limit pgmem._contradiction_candidates()) as z
                             -- (CASE, not AND: the cheap test surely first)
                             where case when y.item < z.item and pgmem._may_contradict(y.marks, z.marks)
                                        then pgmem._contradiction(y.content, y.terms, y.marks,
                                                                  z.content, z.terms, z.marks) is not null
                                        when y.item > z.item and pgmem._may_contradict(z.marks, y.marks)
                                        then pgmem._contradiction(z.content, z.terms, z.marks,
                                                                  y.content, y.terms, y.marks) is not null
                                        else false
                                   end));

        -- An item decided one by one sees every item written set-based, the
        -- later ones too, which must not be near enough to change its
        -- decision: the later items within merge_threshold of one decided one
        -- by one are decided one by one too, and theirs in turn.
        update pg_temp._pgmem_batch as b
        set meets_batch = true
        where not b.meets_batch
          and b.item in (with recursive after (item) as (
                             select x.item from pg_temp._pgmem_batch as x where x.meets_batch
                             union
                             select n.item
                             from after as a
                             join pg_temp._pgmem_batch as o on o.item = a.item
                             join pg_temp._pgmem_batch as n
                               on n.subject = o.subject and n.item > o.item and n.rejected_rule is null
                              and n.embedding is not null and n.source <> 'turn'
                              and o.embedding is not null and o.source <> 'turn'
                              and pgmem._similarity(o.embedding OPERATOR(public.<=>) n.embedding)
                                  >= v_settings.merge_threshold - v_margin)
                         select a.item from after as a);

        -- The same decision as _remember_decide (pgmem._write_action), for the
        -- independent items: no triple key of theirs is active.
        update pg_temp._pgmem_batch as b
        set action = d.action,
            memory_id = case d.action when 'reinforced' then b.exact_id when 'deduplicated' then b.near_id end,
            related_id = case d.action when 'merge_pending' then b.near_id end,
            similarity = case d.action when 'reinforced' then 1 when 'inserted' then null else b.near_similarity end
        from pg_temp._pgmem_batch as x
        cross join lateral (
            select pgmem._write_action(v_settings, x.exact_id is not null, null, x.near_similarity, x.near_covered)
                       as action) as d
        where x.item = b.item and b.rejected_rule is null and not b.meets_batch;

        update pgmem.memories as m
        set access_count = m.access_count + r.n,
            last_accessed_at = greatest(m.last_accessed_at, v_now),
            importance = greatest(m.importance, r.importance),
            confidence = greatest(m.confidence, r.confidence),
            embedding = coalesce(m.embedding, r.embedding),
            updated_at = v_now
        from (select b.memory_id, pg_catalog.count(*) as n, pg_catalog.max(b.importance) as importance,
                     pg_catalog.max(b.confidence) as confidence,
                     (pg_catalog.array_agg(b.embedding order by b.item) filter (where b.embedding is not null))[1]
                         as embedding
              from pg_temp._pgmem_batch as b
              where b.action in ('reinforced', 'deduplicated')
              group by b.memory_id) as r
        where m.tenant_id = v_tenant and m.memory_id = r.memory_id;

        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, old_content, new_content, details,
                                         created_at)
        select v_tenant, b.memory_id, b.subject,
               case b.action when 'deduplicated' then 'deduplicate' else 'reinforce' end,
               case b.action when 'deduplicated' then m.content end,
               case b.action when 'deduplicated' then b.content end,
               pgmem._write_details(b.redacted, b.agent_id) || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                   'match', case b.action when 'deduplicated' then 'embedding' else 'content' end,
                   'similarity', case b.action when 'deduplicated' then b.similarity end)),
               v_now
        from pg_temp._pgmem_batch as b
        join pgmem.memories as m on m.tenant_id = v_tenant and m.memory_id = b.memory_id
        where b.action in ('reinforced', 'deduplicated')
        order by b.item;

        -- Checked and inserted in one batch (pgmem._store_memories, 70_guards.sql).
        update pg_temp._pgmem_batch as b
        set memory_id = i.memory_id
        from (select w.item, pg_catalog.row_number() over (order by w.item) as n
              from pg_temp._pgmem_batch as w where w.action in ('inserted', 'merge_pending')) as w
        join pgmem._store_memories(
                 v_tenant,
                 array(select row(b.subject, b.agent_id, b.session_id, b.kind, b.content, b.embedding, b.importance,
                                  b.confidence, b.source, b.triple_subject, b.triple_predicate, b.triple_object,
                                  b.valid_from, null, 'active', b.expires_at, b.metadata,
                                  s.ann  -- in the HNSW index when its subject is (pgmem._ann_subjects)
                                 )::pgmem.memory_row
                       from pg_temp._pgmem_batch as b
                       join pgmem.subjects as s on s.tenant_id = v_tenant and s.subject = b.subject
                       where b.action in ('inserted', 'merge_pending')
                       order by b.item),
                 v_now) as i on i.n = w.n
        where b.item = w.item;

        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, new_content, details, created_at)
        select v_tenant, b.memory_id, b.subject, 'insert', b.content,
               pgmem._write_details(b.redacted, b.agent_id) || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                   'action', b.action, 'related_id', b.related_id,
                   'similarity', b.similarity)),
               v_now
        from pg_temp._pgmem_batch as b
        where b.action in ('inserted', 'merge_pending')
        order by b.item;

        -- Association links, 32_consolidate.sql: the new facts' now, in item
        -- order; the new episodes' later, by pgmem.link_episodes, once their
        -- subjects record that they have some waiting.
        perform pgmem._link_at_write(v_tenant, array(select b.memory_id from pg_temp._pgmem_batch as b
                                                     where b.action in ('inserted', 'merge_pending')
                                                       and not pgmem._episode_source(b.source)
                                                     order by b.item), v_now);
        update pgmem.subjects as s
        set links_pending_from = e.first_id
        from (select b.subject, pg_catalog.min(b.memory_id) as first_id
              from pg_temp._pgmem_batch as b
              where b.action in ('inserted', 'merge_pending') and pgmem._episode_source(b.source)
                and pgmem._linkable(b.session_id, b.triple_predicate)
              group by b.subject) as e
        where s.tenant_id = v_tenant and s.subject = e.subject
          and (s.links_pending_from is null or s.links_pending_from > e.first_id);

        insert into pgmem.inbox (tenant_id, job, subject, session_id, agent_id, payload, available_at, created_at)
        select v_tenant, 'merge', b.subject, b.session_id, b.agent_id,
               pg_catalog.jsonb_build_object('memory_id', b.memory_id, 'related_id', b.related_id,
                                             'similarity', b.similarity),
               v_now, v_now
        from pg_temp._pgmem_batch as b
        where b.action = 'merge_pending'
        order by b.item;
        if found then
            perform pg_catalog.pg_notify('pgmem_inbox', '');  -- no tenant: any role may LISTEN
        end if;

        -- Subjects that grew may have crossed exact_scan_limit: one count each,
        -- but for those whose read above (under their locks) left room for
        -- the new rows.
        perform pgmem._ann_subjects(v_tenant, v_settings,
                                    array(select b.subject from pg_temp._pgmem_batch as b
                                          where b.action in ('inserted', 'merge_pending')
                                          group by b.subject
                                          having pg_catalog.bool_or(b.subject_rows is null)
                                              or pg_catalog.max(b.subject_rows) + pg_catalog.count(*)
                                                 > v_settings.exact_scan_limit));
    end if;

    -- Items that meet the batch, one by one in item order.
    for v_item in
        select b.* from pg_temp._pgmem_batch as b where b.meets_batch order by b.item
    loop
        update pg_temp._pgmem_batch as b
        set action = d.action, memory_id = d.memory_id, related_id = d.related_id, similarity = d.similarity
        from pgmem._remember_decide(v_tenant, v_settings, v_item.subject, v_item.content, v_item.redacted,
                                    v_item.embedding, v_item.kind, v_item.importance, v_item.triple_subject,
                                    v_item.triple_predicate, v_item.triple_object, v_item.session_id,
                                    v_item.agent_id, v_item.source, v_item.metadata, v_item.valid_from, v_now,
                                    v_item.confidence, v_item.expires_at, v_item.check_conflicts,
                                    v_item.conflict_terms, v_item.conflict_marks) as d
        where b.item = v_item.item;
    end loop;

    -- Provenance: each stored fact derived_from the items (its stated turn)
    -- it was extracted from, whatever each was decided to be. The pairs are
    -- read from the batch first: Citus plans no INSERT that reads this
    -- session's temporary table (docs/scaling.md).
    select pg_catalog.array_agg(f.memory_id), pg_catalog.array_agg(t.memory_id)
    into v_link_from, v_link_to
    from pg_catalog.jsonb_array_elements(p_items) with ordinality as e(v, i)
    cross join lateral pg_catalog.jsonb_array_elements_text(e.v -> 'derived_from') as d(item)
    join pg_temp._pgmem_batch as f on f.item = e.i
    join pg_temp._pgmem_batch as t on t.item = d.item::integer
    where pg_catalog.jsonb_typeof(e.v -> 'derived_from') = 'array'
      and f.memory_id is not null and t.memory_id is not null and f.memory_id <> t.memory_id;
    if v_link_from is not null then
        insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type, created_at)
        select distinct v_tenant, l.from_id, l.to_id, 'derived_from', v_now
        from rows from (pg_catalog.unnest(v_link_from), pg_catalog.unnest(v_link_to)) as l(from_id, to_id)
        on conflict do nothing;
    end if;

    return query
        select b.item, b.action, b.memory_id, b.related_id, b.similarity
        from pg_temp._pgmem_batch as b
        order by b.item;
end
$$;

comment on function pgmem.remember_many(jsonb, text, timestamptz) is
    'Bulk pgmem.remember: p_items is a JSON array of objects with the keys subject (default p_subject), content, embedding (JSON array of numbers or a vector literal string ''[0.1,…]'', the faster form), kind, importance, triple_subject, triple_predicate, triple_object, session_id, agent_id, source, metadata, valid_from, confidence (0..1; default by source), expires_at (default valid_from + settings.ttl_<kind>), check_conflicts (default true; false for an explicit key-value write that must not retire other facts), derived_from (item numbers of this batch the fact was extracted from, usually its stated turn: a derived_from link each), rejected (a caller''s reason to refuse the text: recorded as a content-free reject event, like text pgmem''s own rules reject). Same decisions as remember; one result row per item (item counts from 1). Plainly new items are inserted set-based. Needs the TEMPORARY privilege on the database.';

