"""Rolling session summaries: previous summary + turns that left the window → new summary.

The database decides what to fold (``pgmem.claim_folds``: the turns older than the
recency window, system and protected turns excepted) and keeps every version with
its turn range (``pgmem.save_summary``); this module only writes the text:

- with an LLM (an OpenAI-compatible endpoint, as configured for extraction), the model
  rewrites the previous summary to take in the new turns (:data:`SUMMARY_PROMPT`);
- without one, or when the call fails, an *extractive* fallback, labelled as such in
  its first line: the facts the rule extractor finds in the user's turns, and the
  first sentence of every folded turn, appended to the previous lines and cut from
  the oldest end to :data:`EXTRACTIVE_MAX_CHARS`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pgmem.extract import LLMExtractor, extract
from pgmem.extract.llm import LLMError
from pgmem.extract.text import split_sentences

__all__ = ["EXTRACTIVE_LABEL", "Folded", "fold"]

log = logging.getLogger(__name__)

EXTRACTIVE_LABEL = "[extractive summary: no LLM; key facts and the first sentence of each turn]"
# pgmem.prompt gives the summary 15% of its budget (600 tokens of the default 4000);
# 2400 characters of English are about that many tokens (4 characters a token).
EXTRACTIVE_MAX_CHARS = 2400
# A first sentence longer than this is cut: one rambling turn must not crowd out the rest.
SENTENCE_MAX_CHARS = 200

SUMMARY_PROMPT = (
    "You maintain the running summary of a conversation between a user and an assistant. "
    "You get the current summary (possibly empty) and the turns that just left the "
    "assistant's view. Write the new summary: keep every fact, decision, number, date, "
    "name and open question that may matter later, drop small talk, prefer the newer "
    "statement when two disagree, at most 200 words, plain prose, no preamble."
)


@dataclass(frozen=True, slots=True)
class Folded:
    summary: str
    method: str  # 'llm' or 'extractive' (pgmem.session_summaries.method)
    model: str | None


def _turn_lines(turns: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for turn in turns:
        text = " ".join(str(turn["content"]).split())
        sentences = split_sentences(text)
        first = sentences[0] if sentences else text
        if len(first) > SENTENCE_MAX_CHARS:
            first = first[: SENTENCE_MAX_CHARS - 1] + "…"
        lines.append(f"- {turn['role']} (turn {turn['seq']}): {first}")
    return lines


def _extractive(previous: str | None, turns: Sequence[Mapping[str, Any]]) -> str:
    kept = [] if previous is None else previous.splitlines()
    if kept and kept[0] == EXTRACTIVE_LABEL:
        kept = kept[1:]
    elif previous:
        kept = [f"- earlier: {' '.join(previous.split())}"]  # an LLM summary from before
    facts = extract([{"role": t["role"], "content": str(t["content"])} for t in turns]).facts
    new = [f"- fact: {f.content}" for f in facts] + _turn_lines(turns)
    lines = kept + new
    # Oldest lines go first when the summary outgrows its share of the prompt.
    while lines and len("\n".join([EXTRACTIVE_LABEL, *lines])) > EXTRACTIVE_MAX_CHARS:
        lines.pop(0)
    return "\n".join([EXTRACTIVE_LABEL, *lines])


def fold(
    previous: str | None, turns: Sequence[Mapping[str, Any]], llm: LLMExtractor | None
) -> Folded:
    """The next summary of a session from the previous one and the turns that left the
    window (``{"seq", "role", "content"}``, oldest first)."""
    if llm is not None:
        conversation = "\n".join(f"{t['role']} (turn {t['seq']}): {t['content']}" for t in turns)
        chat = [
            {"role": "system", "content": SUMMARY_PROMPT},
            {
                "role": "user",
                "content": (
                    f"Current summary:\n{previous or '(none)'}\n\nNew turns:\n{conversation}"
                ),
            },
        ]
        try:
            answer = llm.complete(chat).strip()
        except LLMError as exc:
            log.warning("summary by LLM failed, using the extractive fallback: %s", exc)
        else:
            if answer:
                return Folded(answer, "llm", llm.model)
            log.warning("the LLM returned an empty summary, using the extractive fallback")
    return Folded(_extractive(previous, turns), "extractive", None)
