-- pgmem.remember: one fact through the write path. It checks the input
-- (10_input.sql), takes the subject's lock (11_subjects.sql), checks the
-- text against the injection rules and redacts it once (pgmem._vouch,
-- 70_guards.sql) and leaves the decision to pgmem._remember_decide
-- (12_remember.sql, whose opening comment lists the outcomes in order); a
-- rejected text leaves only its reject event (pgmem._reject).

-- Its older signature: before facts carried a confidence and an expiry
-- (13_confidence.sql) it had no p_confidence and p_expires_at.
drop function if exists pgmem.remember(text, text, real[], text, double precision, text, text, text, text, text, text,
                                       jsonb, timestamptz, timestamptz);

create or replace function pgmem.remember(
    p_subject text,
    p_content text,
    p_embedding real[] default null,
    p_kind text default 'semantic',
    -- double precision, not real: a float parameter from a client (float8) must match without a cast.
    p_importance double precision default null,
    p_triple_subject text default null,
    p_triple_predicate text default null,
    p_triple_object text default null,
    p_session_id text default null,
    p_agent_id text default null,
    p_source text default 'sql',
    p_metadata jsonb default '{}',
    p_valid_from timestamptz default null,
    p_now timestamptz default null,
    p_confidence double precision default null,
    p_expires_at timestamptz default null
)
returns table(action text, memory_id bigint, related_id bigint, similarity real)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
-- JIT compiles a query in ~100 ms; these queries run in milliseconds but
-- their cost estimates (nested scans over vectors) cross jit_above_cost.
set jit = off
as $$
#variable_conflict use_column
declare
    v_tenant text := pgmem._require_tenant();
    v_now timestamptz := coalesce(p_now, pg_catalog.now());
    v_settings pgmem.settings;
    v_rule text;
    v_content text;
    v_redacted text[];
    v_object text;
    v_object_redacted text[];
    v_terms text[];
    v_marks text[];
begin
    -- A vector argument works too (pgvector casts vector to real[]).
    v_settings := pgmem._begin_write(v_tenant, p_subject, p_content, p_kind, p_importance, p_embedding,
                                     p_triple_subject, p_triple_predicate, p_triple_object, p_source, p_metadata,
                                     p_confidence, p_expires_at, coalesce(p_valid_from, v_now), v_now);
    -- Checked and redacted once (pgmem._vouch, 70_guards.sql).
    select v.rule, v.content, v.kinds, v.terms, v.marks into v_rule, v_content, v_redacted, v_terms, v_marks
    from pgmem._vouch(array[p_content], array[p_embedding::public.vector], pgmem._write_model(v_settings),
                      array[p_source]) as v;
    if v_rule is not null then
        perform pgmem._reject(v_tenant, p_subject, array[p_content], array[v_rule], p_agent_id, v_now);
        action := 'rejected';
        return next;
        return;
    end if;
    select r.object, r.kinds into v_object, v_object_redacted
    from pgmem._redact_objects(array[p_triple_predicate], array[p_triple_object]) as r;
    v_redacted := v_redacted || array(select k from pg_catalog.unnest(v_object_redacted) as k
                                      where not k = any (v_redacted));
    return query
        select d.action, d.memory_id, d.related_id, d.similarity
        from pgmem._remember_decide(v_tenant, v_settings, p_subject, v_content, v_redacted,
                                    p_embedding::public.vector, p_kind,
                                    coalesce(p_importance::real, v_settings.default_importance),
                                    p_triple_subject, p_triple_predicate, v_object, p_session_id, p_agent_id,
                                    p_source, p_metadata, coalesce(p_valid_from, v_now), v_now,
                                    coalesce(p_confidence::real, pgmem._default_confidence(v_settings, p_source)),
                                    coalesce(p_expires_at,
                                             pgmem._default_expiry(v_settings, p_kind, coalesce(p_valid_from, v_now))),
                                    true, v_terms, v_marks)
                 as d;
end
$$;

comment on function pgmem.remember(text, text, real[], text, double precision, text, text, text, text, text, text,
                                   jsonb, timestamptz, timestamptz, double precision, timestamptz) is
    'Stores a fact about p_subject and says what it did: rejected (prompt injection), reinforced (already known), superseded (same subject+predicate, new object; old row kept for history), outdated (an older fact for a key whose current fact is newer: stored as history), deduplicated (cosine >= settings.duplicate_threshold), merge_pending (>= merge_threshold: inserted, merge job queued) or inserted. Secrets are redacted first. p_embedding: real[] or vector of settings.embedding_dims, NULL for text only. p_confidence (0..1) defaults by source (rule settings.confidence_rule, llm confidence_llm, else 1); p_expires_at defaults to valid_from + settings.ttl_<kind> (none for preferences). Errors PM010-PM020, PM026, PM027.';
