"""Statements of the safety measurement (:mod:`pgmem.safety_eval`, `pgmem eval safety`)."""

from __future__ import annotations

from typing import Final

__all__ = ["SAFETY_RULES_EXPORT", "SAFETY_VERDICTS"]

# What the Python pre-filter needs: every rule but the secret patterns.
SAFETY_RULES_EXPORT: Final = """
select rule_order, rule, category, kind, pattern, replacement, flags
from pgmem.safety_rules()
where category in ('prefilter', 'fold', 'injection')
order by rule_order
"""

# One row per text, in order: the injection rule it matches (or NULL), the
# text redacted, the kinds redacted, the text folded as stored, the secret folded.
SAFETY_VERDICTS: Final = """
select t.i::integer as item,
       d.rule,
       r.content as redacted,
       r.kinds,
       pgmem._safety_clean(t.text) as cleaned,
       pgmem._safety_clean(s.secret) as cleaned_secret
from unnest(%(texts)s::text[]) with ordinality as t(text, i)
join unnest(%(secrets)s::text[]) with ordinality as s(secret, i) using (i)
join pgmem._redact_many(%(texts)s::text[]) as r on r.item = t.i
left join pgmem._detect_injection_many(%(texts)s::text[]) as d on d.item = t.i
order by t.i
"""
