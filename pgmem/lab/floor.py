"""What the relevance floor does to a prompt: ``pgmem eval floor`` on LoCoMo.

A prompt (``pgmem.prompt``, ``pgmem.context``) shows the first rows ``pgmem.recall``
returns; without a floor it is filled to its budget whatever the question. This module
measures, on LoCoMo conversations stored as ``pgmem eval locomo`` stores them (every
turn an episodic memory of its conversation, :func:`pgmem.lab.eval.ingest`), each
question asked hybrid (text and vector, ``k = 50``, the first :data:`PROMPT_ROWS` rows
standing for a prompt), twice: with the floor off (``min_similarity = -1``,
``min_text_match = 0``: every candidate answers) and on (the floor given, by default
the embedding model's ``pgmem.model_relevance_floor`` and the default text floor):

* **on-topic**, the question of its own conversation: R@10, and the noise lines of
  the prompt (rows holding none of the question's evidence turns);
* **off-topic**, the same question asked of the next conversation's subject, as of
  that conversation's own "now" (the right answer there is nothing): the share of
  prompts that show any memory, and the lines per prompt.

The questions of each conversation are split in two halves, in their order: the
first (``dev``) is where a floor is chosen, the second (``test``) is frozen and only
measured, so a floor tuned on one half is checked on text it was not tuned on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgmem.embed import Embedder
from pgmem.lab import eval as ev
from pgmem.queries import admin as AQ
from pgmem.queries import eval as Q

__all__ = ["FloorReport", "HalfResult", "evaluate_floor", "run_floor"]

PROMPT_ROWS = 25  # rows of a prompt's long-term section at the default budget
RECALL_K = 50
HALVES = ("dev", "test")
# Every candidate answers: the floor off.
NO_FLOOR = {"min_similarity": -1, "min_text_match": 0}


@dataclass
class Side:
    """One half's figures with the floor off or on."""

    recall_at_10: float = 0.0
    noise_lines: float = 0.0  # on-topic: prompt rows holding no evidence, per question
    off_any: float = 0.0  # off-topic: share of prompts with any row
    off_lines: float = 0.0  # off-topic: rows per prompt

    def as_dict(self) -> dict[str, float]:
        return {
            "recall_at_10": self.recall_at_10,
            "noise_lines": self.noise_lines,
            "off_topic_any": self.off_any,
            "off_topic_lines": self.off_lines,
        }


@dataclass
class HalfResult:
    half: str
    questions: int
    off: Side
    on: Side

    def as_dict(self) -> dict[str, Any]:
        return {
            "half": self.half,
            "questions": self.questions,
            "off": self.off.as_dict(),
            "on": self.on.as_dict(),
        }


@dataclass
class FloorReport:
    path: str
    conversations: int
    embedder: str
    min_similarity: float | None
    min_text_match: float
    halves: list[HalfResult] = field(default_factory=list)
    total_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "conversations": self.conversations,
            "embedder": self.embedder,
            "min_similarity": self.min_similarity,
            "min_text_match": self.min_text_match,
            "prompt_rows": PROMPT_ROWS,
            "halves": [h.as_dict() for h in self.halves],
            "total_seconds": round(self.total_seconds, 1),
        }


def _halves(probes: Sequence[ev.Probe]) -> dict[str, list[ev.Probe]]:
    """Each conversation's questions, first half and second half, in their order."""
    split: dict[str, list[ev.Probe]] = {h: [] for h in HALVES}
    by_subject: dict[str, list[ev.Probe]] = {}
    for probe in probes:
        by_subject.setdefault(probe.subject, []).append(probe)
    for asked in by_subject.values():
        middle = (len(asked) + 1) // 2
        split["dev"].extend(asked[:middle])
        split["test"].extend(asked[middle:])
    return split


def _prompt(conn: psycopg.Connection[dict[str, Any]], probe: ev.Probe) -> list[list[str]]:
    """The dia_ids of each row recall returns for ``probe`` (hybrid, no time window)."""
    rows = conn.execute(
        Q.RECALL,
        {
            "subject": probe.subject,
            "query": probe.question.question,
            "embedding": probe.embedding,
            "k": RECALL_K,
            "since": None,
            "until": None,
            "hops": 0,
            "now": probe.now,
        },
    ).fetchall()
    return [ev.memory_dia_ids(row["metadata"]) for row in rows]


def _side(
    conn: psycopg.Connection[dict[str, Any]],
    probes: Sequence[ev.Probe],
    elsewhere_of: dict[str, tuple[str, datetime]],
) -> Side:
    side = Side()
    if not probes:
        return side
    for probe in probes:
        evidence = set(probe.question.evidence)
        rows = _prompt(conn, probe)
        side.recall_at_10 += ev.recall_at(rows, probe.question.evidence, 10)
        side.noise_lines += sum(1 for ids in rows[:PROMPT_ROWS] if not evidence & set(ids))
        # Asked in the other conversation's own time: as of this one's "now" the
        # other's later sessions have not happened yet.
        subject, now = elsewhere_of[probe.subject]
        elsewhere = _prompt(conn, replace(probe, subject=subject, now=now))
        side.off_any += 1.0 if elsewhere else 0.0
        side.off_lines += len(elsewhere[:PROMPT_ROWS])
    n = len(probes)
    return Side(side.recall_at_10 / n, side.noise_lines / n, side.off_any / n, side.off_lines / n)


def evaluate_floor(
    dsn: str,
    conversations: Sequence[ev.Conversation],
    embedder: Embedder,
    *,
    min_similarity: float | None = None,
    min_text_match: float | None = None,
    tenant: str = ev.TENANT,
    path: str = "",
    progress: Callable[[str], None] | None = None,
) -> FloorReport:
    """Store ``conversations`` in the migrated database ``dsn`` and measure the floor.

    ``min_similarity`` / ``min_text_match``: the floor measured; by default the embedding
    model's calibrated floor (``pgmem.model_relevance_floor``, none for a model not
    measured) and the default ``settings.min_text_match``."""
    if len(conversations) < 2:
        raise ev.EvalError("the floor is measured off-topic too: give two conversations or more")
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(AQ.CREATE_TENANT, {"tenant": tenant, "display_name": "pgmem eval (floor)"})
        floor = (
            admin.cursor(row_factory=dict_row)
            .execute(Q.RELEVANCE_FLOOR, {"model": embedder.model, "tenant": tenant})
            .fetchone()
        )
        assert floor is not None
        similarity = floor["model_floor"] if min_similarity is None else min_similarity
        text = floor["text_floor"] if min_text_match is None else min_text_match
        with ev.tenant_connection(dsn, tenant) as conn:
            say(f"embedding and storing {sum(c.turns for c in conversations)} turns")
            ev.ingest(conn, conversations, embedder)
            admin.execute(Q.ANALYZE_MEMORIES_AND_LINKS)
            say("embedding the questions")
            halves = _halves(ev.probes(conversations, embedder))
            # Each conversation's questions are asked off-topic of the next one.
            elsewhere_of = {
                c.sample_id: (other.sample_id, other.last_date + timedelta(days=1))
                for c, other in zip(
                    conversations, [*conversations[1:], conversations[0]], strict=True
                )
            }
            sides: dict[str, dict[str, Side]] = {h: {} for h in HALVES}
            on = {"min_similarity": -1 if similarity is None else similarity}
            for name, values in (("off", NO_FLOOR), ("on", on | {"min_text_match": text})):
                ev.set_tenant_settings(admin, tenant, values)
                for half in HALVES:
                    say(f"floor {name}, {half} half: {len(halves[half])} questions")
                    sides[half][name] = _side(conn, halves[half], elsewhere_of)
    return FloorReport(
        path=path,
        conversations=len(conversations),
        embedder=f"{embedder.model} ({embedder.dims} dims)",
        min_similarity=similarity,
        min_text_match=float(text),
        halves=[HalfResult(h, len(halves[h]), sides[h]["off"], sides[h]["on"]) for h in HALVES],
        total_seconds=time.perf_counter() - started,
    )


def run_floor(server_dsn: str, path: Path | str, embedder: Embedder, **options: Any) -> FloorReport:
    """Load ``path``, measure it in a scratch database on ``server_dsn``'s server, drop it
    (``database``, ``keep``, ``limit_conversations``: :func:`pgmem.lab.eval.run_in_scratch`)."""
    return ev.run_in_scratch(evaluate_floor, server_dsn, path, embedder, **options)
