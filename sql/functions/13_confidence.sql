-- Memory that stays true: a fact is stored with how sure its source was and
-- how long it holds, so that a hesitant statement cannot overturn a sure one
-- and a fact past its lifetime stops being recalled. Here are the default
-- confidence, the default expiry and the supersession rule; the
-- contradiction check pgmem.remember runs on a new fact's close neighbours
-- before it looks for duplicates (12_remember.sql) is in 13_conflict.sql.
--
-- Confidence. A caller may say how sure its source is (p_confidence, the
-- confidence key of remember_many and enqueue); without one, rule
-- extraction gets settings.confidence_rule (0.85), an LLM fact without its
-- own rating settings.confidence_llm (0.7), and sql, manual and import
-- writes 1. The supersession rule (pgmem._may_supersede): a newer fact that
-- contradicts an active one replaces it when it is at least as confident as
-- the old fact, or confident in itself (>= settings.supersede_confidence,
-- 0.7). Otherwise the hesitant fact is kept as history ('disputed': stored
-- superseded by the fact it contradicts, a 'conflict' event says why), so a
-- low-confidence fact never overturns a high-confidence one until a newer,
-- confident statement does.
--
-- Expiry. p_expires_at, or valid_from + settings.ttl_<kind> (NULL by
-- default: nothing expires). Preferences have no TTL setting: a preference
-- never expires unless the caller says so. The archive job archives expired
-- facts (30_lifecycle.sql) and recall ignores them already.

create or replace function pgmem._default_confidence(p_settings pgmem.settings, p_source text)
returns real
language sql
immutable parallel safe
security invoker
as $$
    -- No SET clause and qualified operators: inlined where it is called.
    select case when p_source operator(pg_catalog.=) 'rule' then p_settings.confidence_rule
                when p_source operator(pg_catalog.=) 'llm' then p_settings.confidence_llm
                else 1::real end
$$;

comment on function pgmem._default_confidence(pgmem.settings, text) is
    'The confidence of a fact whose writer gave none: settings.confidence_rule for rule extraction, confidence_llm for an LLM fact without a self-rating, 1 for sql, manual, import and turn (the user''s own words) (internal).';

create or replace function pgmem._default_expiry(p_settings pgmem.settings, p_kind text, p_valid_from timestamptz)
returns timestamptz
language sql
stable parallel safe
security invoker
as $$
    -- The settings column ttl_<kind>; there is none for preferences, so
    -- they never expire by default. Stable, not immutable: interval text
    -- depends on IntervalStyle (as pgmem._half_lives). No SET clause and
    -- qualified operators: inlined where it is called.
    select p_valid_from operator(pg_catalog.+)
           (pg_catalog.to_jsonb(p_settings) operator(pg_catalog.->>) ('ttl_' operator(pg_catalog.||) p_kind))::pg_catalog.interval
$$;

comment on function pgmem._default_expiry(pgmem.settings, text, timestamptz) is
    'When a fact of p_kind that became true at p_valid_from expires if its writer gave no expiry: valid_from + settings.ttl_<kind>, NULL when that setting is NULL or absent (preferences) (internal).';

create or replace function pgmem._may_supersede(p_settings pgmem.settings, p_old_confidence real, p_new_confidence real)
returns boolean
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- The confidence rule: as sure as the old fact, or sure enough by itself.
    select p_new_confidence >= least(p_old_confidence, p_settings.supersede_confidence)
$$;

comment on function pgmem._may_supersede(pgmem.settings, real, real) is
    'Whether a newer fact with confidence p_new_confidence may replace a contradicting active fact with p_old_confidence: new >= least(old, settings.supersede_confidence) (internal; the rule of 13_confidence.sql).';
