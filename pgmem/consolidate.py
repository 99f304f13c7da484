"""Consolidation: a subject's related episodes become one insight each.

The database does the deciding (``sql/functions/32_consolidate.sql``): pg_cron's
``consolidate`` job queues subjects that are due, ``pgmem.consolidation_clusters``
says which episodes belong together, and ``pgmem.consolidate`` stores an insight, links
it ``derived_from`` its sources and lowers or archives them. This module only writes
each insight's text:

- with an LLM (the OpenAI-compatible endpoint configured for extraction), the model
  states what the episodes show in one or two sentences (:data:`INSIGHT_PROMPT`);
- without one, or when the call fails, the cluster's *extractive digest* from SQL: the
  episodes' own words, dated, under a label that says no language model wrote it. So
  offline nothing is generalised: the episodes are gathered into one memory, which
  is what consolidation can do without a model. The job's result says which
  (``method``: ``llm`` or ``extractive``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from pgmem.embed import Embedder
from pgmem.extract import LLMExtractor
from pgmem.extract.llm import LLMError
from pgmem.queries import worker as wq

__all__ = ["INSIGHT_PROMPT", "consolidate_subject", "insight_text"]

log = logging.getLogger(__name__)

INSIGHT_PROMPT = (
    "You consolidate an assistant's long-term memory about one user. You get several "
    "dated episodes that belong together. Write the insight they support: one or two "
    "sentences stating the lasting pattern, preference or fact, keeping names, places, "
    "numbers and dates that matter, in the language of the episodes, no preamble."
)


def insight_text(contents: Sequence[str], digest: str, llm: LLMExtractor | None) -> tuple[str, str]:
    """The insight for one cluster and how it was written (``llm`` or ``extractive``)."""
    if llm is not None:
        episodes = "\n".join(f"- {' '.join(text.split())}" for text in contents)
        chat = [
            {"role": "system", "content": INSIGHT_PROMPT},
            {"role": "user", "content": f"Episodes:\n{episodes}"},
        ]
        try:
            answer = llm.complete(chat).strip()
        except LLMError as exc:
            log.warning("insight by LLM failed, using the extractive digest: %s", exc)
        else:
            if answer:
                return answer, "llm"
            log.warning("the LLM returned an empty insight, using the extractive digest")
    return digest, "extractive"


def consolidate_subject(
    conn: psycopg.Connection[Any],
    subject: str,
    *,
    embedder: Embedder,
    llm: LLMExtractor | None,
    now: datetime | str | None = None,
) -> dict[str, Any]:
    """Write one insight per cluster of ``subject``'s episodes (the tenant bound on
    ``conn``), as of ``now``; returns what was done, for the job's result."""
    clusters = conn.execute(wq.CONSOLIDATION_CLUSTERS, {"subject": subject, "now": now}).fetchall()
    written = [insight_text(c["contents"], c["digest"], llm) for c in clusters]
    vectors = embedder.embed([text for text, _ in written]) if written else []
    actions: list[dict[str, Any]] = []
    for cluster, (text, method), vector in zip(clusters, written, vectors, strict=True):
        row = conn.execute(
            wq.CONSOLIDATE,
            {
                "subject": subject,
                "source_ids": cluster["memory_ids"],
                "content": text,
                "embedding": vector,
                "method": method,
                "now": now,
            },
        ).fetchone()
        assert row is not None
        actions.append({**dict(row), "method": method})
    methods = sorted({a["method"] for a in actions})
    result: dict[str, Any] = {
        "clusters": len(clusters),
        # New insight rows; an insight remember found known already (deduplicated,
        # reinforced) links that row to its sources instead.
        "insights": sum(1 for a in actions if a["action"] in ("inserted", "merge_pending")),
        "known": sum(1 for a in actions if a["action"] in ("deduplicated", "reinforced")),
        "sources": sum(int(a["sources"] or 0) for a in actions if a["action"] != "skipped"),
        "actions": actions,
    }
    if methods:
        result["method"] = methods[0] if len(methods) == 1 else "mixed"
    if "extractive" in methods:
        result["fallback_reason"] = (
            "no language model: insights are extractive digests of their episodes"
            if llm is None
            else "the language model failed: some insights are extractive digests"
        )
    return result
