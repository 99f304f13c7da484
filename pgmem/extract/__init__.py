"""Turn conversations into facts for ``pgmem.remember``: rules, an LLM, or both.

Entry point: :func:`extract`. The rules (:mod:`.rules`, with :mod:`.setting_rules`,
:mod:`.identity_rules`, :mod:`.text` and :mod:`.lexicon`) work offline in Chinese and
English; an :class:`LLMExtractor` (:mod:`.llm`, configured by
:meth:`LLMExtractor.from_env`) reads what the rules cannot. Text that looks like
prompt injection (:mod:`.safety`) is never turned into facts; it comes back in
:attr:`ExtractionResult.rejected` so the caller can record a rejected event, and it is
withheld from the LLM. :func:`merge_facts` (:mod:`.merge`) serves the worker when the
database reports a near-duplicate.

Modes, when an LLM is given:

- ``hybrid`` (the default): rules first; the LLM is asked only when some clause of
  the user's was left unrecognised, is shown the facts already found, and its facts
  are added unless they repeat a rule fact (same normalised content, same triple, or
  a slot the rules already filled; see :func:`.facts.merge_sources`).
- ``llm``: the LLM's facts alone.
- ``rules``: the LLM is not used.

If the LLM fails (transport error after retries, or malformed JSON twice), the result
holds the rules' facts and says why in ``fallback_reason``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pgmem.extract.facts import (
    KINDS,
    STABLE_PREDICATES,
    ExtractionResult,
    Fact,
    Kind,
    Message,
    Rejected,
    Triple,
    as_messages,
    dedupe,
    merge_sources,
)
from pgmem.extract.llm import LLMError, LLMExtractor
from pgmem.extract.merge import merge_facts
from pgmem.extract.rules import extract_with_rules, is_small_talk
from pgmem.extract.safety import INJECTION_PATTERNS, injection_reason, looks_like_injection

__all__ = [
    "INJECTION_PATTERNS",
    "KINDS",
    "STABLE_PREDICATES",
    "ExtractionResult",
    "Fact",
    "Kind",
    "LLMError",
    "LLMExtractor",
    "Message",
    "Mode",
    "Rejected",
    "Triple",
    "extract",
    "injection_reason",
    "is_small_talk",
    "looks_like_injection",
    "merge_facts",
]

Mode = Literal["hybrid", "llm", "rules"]

# Stands in for a rejected message in the LLM's copy of the conversation, so the
# model still sees that a turn happened but never reads the injected text.
_REDACTED = "[message withheld: flagged as possible prompt injection]"


def extract(
    messages_or_text: str | Iterable[Mapping[str, object] | str],
    *,
    llm: LLMExtractor | None = None,
    mode: Mode | None = None,
    roles: Iterable[str] = ("user",),
) -> ExtractionResult:
    """Facts in a conversation (a list of ``{"role", "content"}`` messages) or a text.

    Facts come from messages whose role is in ``roles`` (the user's, by default);
    other messages are context. ``mode`` defaults to ``hybrid`` with an ``llm`` and
    ``rules`` without one.
    """
    messages = as_messages(messages_or_text)
    roles = tuple(r.lower() for r in roles)
    if mode is None:
        mode = "rules" if llm is None else "hybrid"
    if mode not in ("hybrid", "llm", "rules"):
        raise ValueError(f"mode must be 'hybrid', 'llm' or 'rules', not {mode!r}")
    if mode != "rules" and llm is None:
        raise ValueError(f"mode {mode!r} needs an llm")

    outcome = extract_with_rules(messages, roles=roles)
    result = ExtractionResult(facts=list(outcome.facts), rejected=list(outcome.rejected))
    if llm is None or mode == "rules":
        return result
    if not outcome.leftovers and (mode == "hybrid" or not outcome.facts):
        return result  # nothing the rules left over (or nothing at all) to ask about

    visible = [
        {"role": m["role"], "content": _REDACTED if i in outcome.rejected_indexes else m["content"]}
        for i, m in enumerate(messages)
    ]
    try:
        answer = llm.extract(visible, known=outcome.facts if mode == "hybrid" else ())
    except LLMError as exc:
        result.fallback_reason = str(exc)
        return result

    llm_facts: list[Fact] = []
    for fact in answer:
        reason = injection_reason(fact.content)
        if reason is not None:
            result.rejected.append(
                Rejected(fact.content, f"prompt injection in LLM output: {reason}")
            )
        else:
            llm_facts.append(fact)
    if mode == "llm":
        result.facts = dedupe(llm_facts)
    else:
        result.facts = merge_sources(outcome.facts, llm_facts)
    return result
