-- Input checks of the write path: what pgmem.remember, pgmem.remember_many,
-- pgmem.update_memory and pgmem.set_embedding refuse before anything is
-- decided or stored. Each check raises one PM code with a hint.
--
-- Error codes (SQLSTATE class PM; PM001-PM003 are tenancy's, PM04x the queue's):
--   PM010  p_subject is NULL, blank or longer than 256 characters
--   PM011  p_content is NULL, empty or only white space
--   PM012  p_content is larger than settings.max_content_bytes (UTF-8 bytes)
--   PM013  p_kind is not a memory kind (pgmem.kinds(), 08_kinds.sql)
--   PM014  p_importance is outside 0..1
--   PM015  p_embedding has the wrong number of dimensions (settings.embedding_dims)
--   PM016  p_embedding holds NaN, an infinite or a NULL element
--   PM017  p_embedding is the zero vector or degenerate: its norm is outside
--          [1e-15, 1e15], where pgvector's single-precision cosine under- or
--          overflows to NaN (a subnormal vector, components near 3e38)
--   PM018  the triple is incomplete: give subject, predicate and object, or none
--   PM019  p_source is not rule, llm, manual, sql or import
--   PM020  p_metadata is not a JSON object
--   PM021  p_items is not a JSON array of objects with known keys (remember_many)
--   PM022  unknown memory id: this tenant has no memory with that id
-- In remember_many the argument is named p_items[<n>].<field>, n counting from 1
-- like the item column of its result.

create or replace function pgmem._embedding_stats(
    p_embedding real[],
    out dims integer,
    out finite boolean,
    out norm double precision
)
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Embeddings arrive as real[] rather than vector: a vector cannot even
    -- hold NaN, so the caller would get pgvector's cast error, not PM016.
    dims := case when pg_catalog.array_ndims(p_embedding) = 1 then pg_catalog.cardinality(p_embedding) else -1 end;
    -- The usual case in C: array searches for what a vector cannot hold,
    -- then pgvector's norm (~30 us, against ~220 us element by element).
    if dims between 1 and 16000
       and not ('NaN'::real = any (p_embedding) or 'Infinity'::real = any (p_embedding)
                or '-Infinity'::real = any (p_embedding))
       and pg_catalog.array_position(p_embedding, null) is null then
        finite := true;
        norm := public.vector_norm(p_embedding::public.vector);
        return;
    end if;
    select pg_catalog.count(*) filter (where x.v is null or x.v in ('NaN', 'Infinity', '-Infinity')) = 0,
           pg_catalog.sqrt(pg_catalog.sum(x.v::double precision * x.v::double precision))
    into finite, norm
    from pg_catalog.unnest(p_embedding) as x(v);
end
$$;

comment on function pgmem._embedding_stats(real[]) is
    'Dimensions (-1 for a nested array), whether every element is finite, and the Euclidean norm of an embedding (internal; see pgmem._check_embedding_stats).';

create or replace function pgmem._check_embedding_stats(
    p_settings pgmem.settings,
    p_arg text,
    p_dims integer,
    p_finite boolean,
    p_norm double precision
)
returns void
language plpgsql
stable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- The one place an embedding is refused: PM025 another model than the
    -- tenant's (66_models.sql), PM015 size, PM016 NaN/∞/NULL, PM017 zero
    -- vector. p_arg names the argument ('p_' or 'p_items[3].').
    perform pgmem._check_embedding_model(p_settings);
    if p_dims is distinct from p_settings.embedding_dims then
        raise exception '%embedding has %; this tenant stores %-dimensional vectors', p_arg,
                        case when p_dims < 0 then 'more than one array dimension'
                             else coalesce(p_dims, 0) || ' dimensions' end,
                        p_settings.embedding_dims
            using errcode = 'PM015',
                  hint = pg_catalog.format('Embed with the tenant''s model (%s, a one-dimensional array of %s numbers), '
                                           'or pass NULL and let the worker embed it.',
                                           p_settings.embedding_model, p_settings.embedding_dims);
    end if;
    if not p_finite then
        raise exception '%embedding holds NaN, an infinite value or a NULL', p_arg
            using errcode = 'PM016', hint = 'Every element must be a finite number; check the embedding model''s output.';
    end if;
    -- pgvector sums squares in single precision: below a norm of 1e-15 they
    -- underflow (a subnormal vector has norm 0 there), above 1e15 they
    -- overflow, and cosine similarity becomes NaN, which would compare as
    -- greater than every threshold. Real embeddings have norms near 1.
    if p_norm = 0 then
        raise exception '%embedding is the zero vector', p_arg
            using errcode = 'PM017',
                  hint = 'A zero vector has no direction for cosine similarity; pass NULL to store text only.';
    elsif p_norm not between 1e-15 and 1e15 then
        raise exception '%embedding is degenerate: its norm % is outside [1e-15, 1e15]', p_arg, p_norm
            using errcode = 'PM017',
                  hint = 'Cosine similarity of such a vector is undefined in single precision; normalize it or pass NULL.';
    end if;
end
$$;

comment on function pgmem._check_embedding_stats(pgmem.settings, text, integer, boolean, double precision) is
    'Raises PM025 (a vector of another model than the tenant''s, when the transaction declared one), PM015 (dimension), PM016 (NaN, infinite or NULL element) or PM017 (zero or degenerate vector, norm outside [1e-15, 1e15]) for an embedding measured by pgmem._embedding_stats or set-based (internal).';

create or replace function pgmem._check_embedding(p_settings pgmem.settings, p_embedding real[])
returns void
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pgmem._check_embedding_stats(p_settings, 'p_', s.dims, s.finite, s.norm)
    from pgmem._embedding_stats(p_embedding) as s
$$;

comment on function pgmem._check_embedding(pgmem.settings, real[]) is
    'Raises PM015, PM016 or PM017 for an unusable embedding, as pgmem.remember does (internal).';

create or replace function pgmem._check_memory_input(
    p_item integer,
    p_settings pgmem.settings,
    p_subject text,
    p_content text,
    p_kind text,
    p_importance double precision,
    p_dims integer,
    p_finite boolean,
    p_norm double precision,
    p_triple_subject text,
    p_triple_predicate text,
    p_triple_object text,
    p_source text,
    p_metadata jsonb
)
returns void
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- Argument names as the caller wrote them: p_content, or p_items[3].content.
    v_arg text := case when p_item is null then 'p_' else pg_catalog.format('p_items[%s].', p_item) end;
begin
    if p_subject is null or pg_catalog.btrim(p_subject) = '' or pg_catalog.length(p_subject) > 256 then
        raise exception '%subject must be 1 to 256 characters, not blank', v_arg
            using errcode = 'PM010',
                  hint = 'The subject is whom the memory is about, usually the user id.';
    end if;
    -- Folded as stored first: no-break, ideographic and other exotic spaces
    -- become spaces and zero-width characters vanish (05_safety.sql).
    if p_content is null or pg_catalog.btrim(pgmem._safety_clean(p_content), E' \t\n\r\f\x0b\u0085') = '' then
        raise exception '%content is empty', v_arg
            using errcode = 'PM011', hint = 'Pass the fact as text, e.g. ''User prefers dark mode''.';
    end if;
    if pg_catalog.octet_length(p_content) > p_settings.max_content_bytes then
        raise exception '%content is % bytes; this tenant stores at most % bytes per memory',
                        v_arg, pg_catalog.octet_length(p_content), p_settings.max_content_bytes
            using errcode = 'PM012',
                  hint = 'Split it into smaller facts, or raise max_content_bytes in the tenant''s pgmem.settings row.';
    end if;
    -- pgmem.kinds(), which tests/test_kinds.py holds equal to the CHECK on pgmem.memories.kind.
    if p_kind is null or not exists (select from pgmem.kinds() as k where k.kind = p_kind) then
        raise exception '%kind % is not a memory kind', v_arg, coalesce(pg_catalog.quote_literal(p_kind), 'NULL')
            using errcode = 'PM013', hint = 'Use one of: ' || pgmem._kind_list() || '.';
    end if;
    if p_importance is not null and not (p_importance between 0 and 1) then
        raise exception '%importance % is outside 0..1', v_arg, p_importance
            using errcode = 'PM014',
                  hint = 'Pass a value between 0 and 1, or NULL for the tenant''s default_importance.';
    end if;
    if p_dims is not null then
        perform pgmem._check_embedding_stats(p_settings, v_arg, p_dims, p_finite, p_norm);
    end if;
    if pg_catalog.num_nulls(p_triple_subject, p_triple_predicate, p_triple_object) not in (0, 3)
       or pg_catalog.btrim(p_triple_subject) = '' or pg_catalog.btrim(p_triple_predicate) = ''
       or pg_catalog.btrim(p_triple_object) = '' then
        raise exception '%triple_subject, %triple_predicate and %triple_object must be given together', v_arg, v_arg, v_arg
            using errcode = 'PM018',
                  hint = 'A triple is (subject, predicate, object), e.g. (''user'', ''theme'', ''dark''); pass all three, non-blank, or none.';
    end if;
    -- The CHECK constraint's list on pgmem.memories.source but store, whose
    -- rows pgmem.put_items alone writes.
    if p_source is null or p_source not in ('rule', 'llm', 'manual', 'sql', 'import', 'turn') then
        raise exception '%source % is not a memory source', v_arg, coalesce(pg_catalog.quote_literal(p_source), 'NULL')
            using errcode = 'PM019', hint = 'Use one of: rule, llm, manual, sql, import, turn.';
    end if;
    if p_metadata is null or pg_catalog.jsonb_typeof(p_metadata) <> 'object' then
        raise exception '%metadata must be a JSON object', v_arg
            using errcode = 'PM020', hint = 'Pass ''{}'' for none.';
    end if;
end
$$;

comment on function pgmem._check_memory_input(integer, pgmem.settings, text, text, text, double precision, integer, boolean,
                                               double precision, text, text, text, text, jsonb) is
    'Raises PM010-PM020 (see sql/functions/10_input.sql) for a memory that must not be stored; p_item numbers the item of a batch (internal).';


-- Values a call site cannot even cast: pgmem's own statements pass
-- query vectors and importances as double precision and convert them here, so
-- NaN (pgvector's cast: 22000) or a number beyond real (22003) is a PM code.

create or replace function pgmem.query_vector(p_embedding double precision[])
returns public.vector
language plpgsql
stable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_settings pgmem.settings;
    -- The largest finite real: beyond it the cast to real[] overflows (22003).
    v_real_max constant double precision := 3.4028234663852886e38;
begin
    if p_embedding is null then
        return null;
    end if;
    select s.* into v_settings from pgmem.settings as s where s.tenant_id = pgmem._require_tenant();
    perform pgmem._check_embedding_stats(
                v_settings, 'p_',
                case when pg_catalog.array_ndims(p_embedding) = 1 then pg_catalog.cardinality(p_embedding) else -1 end,
                pg_catalog.count(*) filter (where x.v is null or x.v in ('NaN', 'Infinity', '-Infinity')
                                                  or pg_catalog.abs(x.v) > v_real_max) = 0,
                pg_catalog.sqrt(pg_catalog.sum(x.v * x.v) filter (where pg_catalog.abs(x.v) <= v_real_max)))
    from pg_catalog.unnest(p_embedding) as x(v);
    return p_embedding::real[]::public.vector;
end
$$;

comment on function pgmem.query_vector(double precision[]) is
    'The query vector for pgmem.recall, pgmem.context and pgmem.prompt from a float8 array, checked first: PM015 (dimension), PM016 (NaN, infinite, NULL or beyond single precision) or PM017 (zero or degenerate) instead of pgvector''s cast error. NULL stays NULL.';

create or replace function pgmem._importance_arg(p_importance double precision)
returns real
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- NaN sorts above every number in PostgreSQL, so it fails the range test too.
    if p_importance is not null and not (p_importance between 0 and 1) then
        raise exception 'p_importance % is outside 0..1', p_importance
            using errcode = 'PM014',
                  hint = 'Pass a value between 0 and 1, or NULL for the tenant''s default_importance.';
    end if;
    return p_importance::real;
end
$$;

comment on function pgmem._importance_arg(double precision) is
    'An importance from a float8 parameter as real, or PM014 when it is outside 0..1, before a cast to real could overflow (internal; pgmem''s update statement uses it).';

-- Confidence and expiry of a fact: pgmem.remember's p_confidence
-- and p_expires_at, remember_many's confidence and expires_at keys.
--   PM026  confidence outside 0..1 (NaN included)
--   PM027  expires_at not later than the fact's valid_from
create or replace function pgmem._check_truth_input(
    p_item integer,
    p_confidence double precision,
    p_expires_at timestamptz,
    p_valid_from timestamptz
)
returns void
language plpgsql
stable parallel safe  -- the message prints timestamps in the session's TimeZone
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_arg text := case when p_item is null then 'p_' else pg_catalog.format('p_items[%s].', p_item) end;
begin
    -- NaN sorts above every number, so it fails the range test too.
    if p_confidence is not null and not (p_confidence between 0 and 1) then
        raise exception '%confidence % is outside 0..1', v_arg, p_confidence
            using errcode = 'PM026',
                  hint = 'Pass how sure the source is, between 0 and 1, or NULL for the source''s default '
                         '(settings.confidence_rule for rule, confidence_llm for llm, 1 otherwise).';
    end if;
    if p_expires_at is not null and p_expires_at <= p_valid_from then
        raise exception '%expires_at % is not later than the fact''s valid_from %', v_arg, p_expires_at, p_valid_from
            using errcode = 'PM027',
                  hint = 'An expiry ends the fact''s validity: give a later time, or NULL for the kind''s default TTL '
                         '(settings.ttl_<kind>; none for preferences).';
    end if;
end
$$;

comment on function pgmem._check_truth_input(integer, double precision, timestamptz, timestamptz) is
    'Raises PM026 (confidence outside 0..1) or PM027 (expires_at not after valid_from) for a fact about to be remembered; p_item numbers the item of a batch (internal).';

create or replace function pgmem._timestamptz_or_null(p_text text)
returns timestamptz
language plpgsql
stable parallel safe  -- the text is read in the session's TimeZone and DateStyle
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return p_text::timestamptz;
exception when others then
    return null;
end
$$;

comment on function pgmem._timestamptz_or_null(text) is
    'p_text as a timestamptz, NULL when it is not one: remember_many finds the item whose expires_at is not a timestamp and names it (PM027) (internal).';
