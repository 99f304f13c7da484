"""Statements of the safety measurement (:mod:`pgmem.safety_eval`, `pgmem eval safety`)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "INJECTION_PROBE_FUNCTION",
    "INJECTION_PROBE_ROWS",
    "NO_INJECTION_PROBE",
    "SAFETY_RULES_EXPORT",
    "SAFETY_VERDICTS",
]

# What the Python pre-filter needs: every rule but the secret patterns.
SAFETY_RULES_EXPORT: Final = """
select rule_order, rule, category, kind, pattern, replacement, flags
from pgmem.safety_rules()
where category in ('prefilter', 'fold', 'injection')
order by rule_order
"""

# One row per text, in order: the injection rule it breaks (or NULL) by the rules and,
# given embeddings of a model, the model's injection probe (pgmem._check_texts, as the
# write path checks it), the text redacted, the kinds redacted, the text folded as
# stored, the secret folded.
SAFETY_VERDICTS: Final = """
select t.i::integer as item,
       c.rule,
       c.content as redacted,
       c.kinds,
       pgmem._safety_clean(t.text) as cleaned,
       pgmem._safety_clean(s.secret) as cleaned_secret
from unnest(%(texts)s::text[]) with ordinality as t(text, i)
join unnest(%(secrets)s::text[]) with ordinality as s(secret, i) using (i)
join pgmem._check_texts(%(texts)s::text[], %(embeddings)s::public.vector[], %(model)s) as c
  on c.item = t.i
order by t.i
"""

# sql/functions/05_safety_probe.sql as `pgmem eval probe` writes it
# (pgmem.lab.probe.render_sql): the function, then its body with the probes'
# constants, or the body of none.
INJECTION_PROBE_FUNCTION: Final = """
drop function if exists pgmem._injection_probe(text);  -- a result type is not replaced in place
create or replace function pgmem._injection_probe(p_model text)
returns table(weights public.vector, bias double precision, cutoff double precision,
              min_length integer)
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
{probed}
$$;

comment on function pgmem._injection_probe(text) is
    '{comment}';
"""
INJECTION_PROBE_ROWS: Final = """    select p.weights::public.vector, p.bias, p.cutoff, p.min_length
    from (values
{rows}
    ) as p(model, weights, bias, cutoff, min_length)
    where p.model = p_model"""
NO_INJECTION_PROBE: Final = (
    "    select null::public.vector, null::double precision, null::double precision, null::integer"
    " where false"
)
