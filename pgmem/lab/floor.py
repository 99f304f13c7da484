"""What the relevance floor does to a prompt: ``pgmem eval floor`` on LoCoMo.

A prompt (``pgmem.prompt``, ``pgmem.context``) shows the first rows ``pgmem.recall``
returns; without a floor it is filled to its budget whatever the question. This module
measures, on LoCoMo conversations stored as ``pgmem eval locomo`` stores them (every
turn an episodic memory of its conversation, :func:`pgmem.lab.eval.ingest`), each
question asked hybrid (text and vector, ``k = 50``, the first :data:`PROMPT_ROWS` rows
standing for a prompt), twice: with the floor off (``min_similarity = -1``,
``min_text_match = 0``, ``relative_floor = 0``: every candidate answers) and on (the
floor given, by default the embedding model's ``pgmem.model_relevance_floor`` and the
tenant's default text and relative floors):

* **on-topic**, the question of its own conversation: R@10, the share of prompts
  holding any evidence turn and the share holding any row without one (noise), and
  the noise lines of the prompt (rows holding none of the question's evidence turns);
* **off-topic**, the same question asked of the next conversation's subject, as of
  that conversation's own "now" (the right answer there is nothing): the share of
  prompts that show any memory, and the lines per prompt;
* **the core profile**: two facts about each conversation's first speaker (its name
  and an allergy) written through :meth:`pgmem.Memory.add`, the path an app takes;
  the share of ``pgmem.context`` blocks, on-topic and off-topic, that show both as the
  subject's ``pgmem.profile`` holds them.

``--write-path`` stores the turns through ``Memory.add`` and the worker
(:func:`pgmem.lab.write_path.send_turns`) instead of one memory per turn.

The questions of each conversation are split in two halves, in their order: the
first (``dev``) is where a floor is chosen, the second (``test``) is frozen and only
measured, so a floor tuned on one half is checked on text it was not tuned on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgmem.client import Memory
from pgmem.embed import Embedder
from pgmem.lab import eval as ev
from pgmem.lab.write_path import drain_inbox, send_turns
from pgmem.queries import admin as AQ
from pgmem.queries import eval as Q

__all__ = ["FloorReport", "HalfResult", "evaluate_floor", "run_floor"]

PROMPT_ROWS = 25  # rows of a prompt's long-term section at the default budget
RECALL_K = 50
HALVES = ("dev", "test")
# Every candidate answers: the floor off.
NO_FLOOR = {"min_similarity": -1, "min_text_match": 0, "relative_floor": 0}
# What each conversation's first speaker says of themself: facts the core profile holds.
PROFILE_FACTS = ("My name is {name}.", "I am allergic to peanuts.")
PROFILE_FACTS_ZH = ("我叫{name}。", "我对花生过敏。")
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass
class Side:
    """One half's figures with the floor off or on."""

    recall_at_10: float = 0.0
    evidence_prompts: float = 0.0  # on-topic: share of prompts holding any evidence
    noisy_prompts: float = 0.0  # on-topic: share of prompts holding any row without
    noise_lines: float = 0.0  # on-topic: prompt rows holding no evidence, per question
    off_any: float = 0.0  # off-topic: share of prompts with any row
    off_lines: float = 0.0  # off-topic: rows per prompt
    profile_prompts: float = 0.0  # context blocks, on- and off-topic, showing the profile

    def as_dict(self) -> dict[str, float]:
        return {
            "recall_at_10": self.recall_at_10,
            "evidence_prompts": self.evidence_prompts,
            "noisy_prompts": self.noisy_prompts,
            "noise_lines": self.noise_lines,
            "off_topic_any": self.off_any,
            "off_topic_lines": self.off_lines,
            "profile_prompts": self.profile_prompts,
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
    relative_floor: float
    store: str = "direct"  # how the turns were stored: "direct" or "write path"
    profile_facts: int = 0  # facts in the conversations' profiles, all together
    halves: list[HalfResult] = field(default_factory=list)
    total_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "conversations": self.conversations,
            "embedder": self.embedder,
            "min_similarity": self.min_similarity,
            "min_text_match": self.min_text_match,
            "relative_floor": self.relative_floor,
            "store": self.store,
            "profile_facts": self.profile_facts,
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


def _shows_profile(
    conn: psycopg.Connection[dict[str, Any]], probe: ev.Probe, profiles: dict[str, list[str]]
) -> bool:
    """Whether ``pgmem.context`` for ``probe`` (the default budget) shows every core
    profile fact its subject's first speaker stated."""
    row = conn.execute(
        Q.CONTEXT,
        {
            "subject": probe.subject,
            "query": probe.question.question,
            "embedding": probe.embedding,
            "now": probe.now,
        },
    ).fetchone()
    block = (row or {}).get("block") or ""
    return all(fact in block for fact in profiles[probe.subject])


def _side(
    conn: psycopg.Connection[dict[str, Any]],
    probes: Sequence[ev.Probe],
    elsewhere_of: dict[str, tuple[str, datetime]],
    profiles: dict[str, list[str]],
) -> Side:
    side = Side()
    if not probes:
        return side
    for probe in probes:
        evidence = set(probe.question.evidence)
        rows = _prompt(conn, probe)
        side.recall_at_10 += ev.recall_at(rows, probe.question.evidence, 10)
        noise = sum(1 for ids in rows[:PROMPT_ROWS] if not evidence & set(ids))
        side.evidence_prompts += 1.0 if len(rows[:PROMPT_ROWS]) > noise else 0.0
        side.noisy_prompts += 1.0 if noise else 0.0
        side.noise_lines += noise
        # Asked in the other conversation's own time: as of this one's "now" the
        # other's later sessions have not happened yet.
        subject, now = elsewhere_of[probe.subject]
        off_topic = replace(probe, subject=subject, now=now)
        elsewhere = _prompt(conn, off_topic)
        side.off_any += 1.0 if elsewhere else 0.0
        side.off_lines += len(elsewhere[:PROMPT_ROWS])
        side.profile_prompts += (
            _shows_profile(conn, probe, profiles) + _shows_profile(conn, off_topic, profiles)
        ) / 2
    n = len(probes)
    return Side(
        side.recall_at_10 / n,
        side.evidence_prompts / n,
        side.noisy_prompts / n,
        side.noise_lines / n,
        side.off_any / n,
        side.off_lines / n,
        side.profile_prompts / n,
    )


def _write_profiles(
    conn: psycopg.Connection[dict[str, Any]],
    conversations: Sequence[ev.Conversation],
    embedder: Embedder,
    tenant: str,
) -> dict[str, list[str]]:
    """Each conversation's first speaker states its name and an allergy, through
    ``Memory.add`` as of the first session; returns, per subject, the core-profile
    facts those statements became (their text, as ``pgmem.profile`` holds them at the
    conversation's "now"). A profile may hold more (facts the write path took from the
    conversation itself); these two are the ones every prompt must show."""
    profiles: dict[str, list[str]] = {}
    with Memory(conn=conn, tenant=tenant, embedder=embedder, llm=False) as memory:
        for conversation in conversations:
            name = conversation.speakers[0]
            facts = PROFILE_FACTS_ZH if _CJK.search(name) else PROFILE_FACTS
            first = min(s.date for s in conversation.sessions)
            stated = {
                result["memory_id"]
                for fact in facts
                for result in memory.add(
                    fact.format(name=name), conversation.sample_id, occurred_at=first
                )
            }
            rows = conn.execute(
                Q.PROFILE_OF, {"subject": conversation.sample_id, "now": conversation.last_date}
            ).fetchall()
            held = [row["content"] for row in rows if row["memory_id"] in stated]
            if len(held) < len(facts):
                raise ev.EvalError(
                    f"{conversation.sample_id}: the core profile holds {len(held)} of the "
                    f"{len(facts)} facts its first speaker stated"
                )
            profiles[conversation.sample_id] = held
    return profiles


def evaluate_floor(
    dsn: str,
    conversations: Sequence[ev.Conversation],
    embedder: Embedder,
    *,
    min_similarity: float | None = None,
    min_text_match: float | None = None,
    relative_floor: float | None = None,
    write_path: bool = False,
    tenant: str = ev.TENANT,
    path: str = "",
    progress: Callable[[str], None] | None = None,
) -> FloorReport:
    """Store ``conversations`` in the migrated database ``dsn`` and measure the floor.

    ``write_path``: the turns go through ``Memory.add`` (facts extracted by the rules,
    small talk left out) and the worker, as an application's do
    (:func:`pgmem.lab.write_path.send_turns`), instead of the direct store.

    ``min_similarity`` / ``min_text_match`` / ``relative_floor``: the floor measured; by
    default the embedding model's calibrated floor (``pgmem.model_relevance_floor``,
    none for a model not measured) and the default ``settings.min_text_match`` and
    ``settings.relative_floor``."""
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
        relative = floor["relative_floor"] if relative_floor is None else relative_floor
        with ev.tenant_connection(dsn, tenant) as conn:
            say(f"embedding and storing {sum(c.turns for c in conversations)} turns")
            if write_path:
                with Memory(conn=conn, tenant=tenant, embedder=embedder, llm=False) as memory:
                    send_turns(memory, ev.turn_rows(conversations), infer=True, progress=say)
                drain_inbox(dsn, tenant, embedder, conn)
            else:
                ev.ingest(conn, conversations, embedder)
            say("writing each first speaker's name and allergy through Memory.add")
            profiles = _write_profiles(conn, conversations, embedder, tenant)
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
            on |= {"min_text_match": text, "relative_floor": relative}
            for name, values in (("off", NO_FLOOR), ("on", on)):
                ev.set_tenant_settings(admin, tenant, values)
                for half in HALVES:
                    say(f"floor {name}, {half} half: {len(halves[half])} questions")
                    sides[half][name] = _side(conn, halves[half], elsewhere_of, profiles)
    return FloorReport(
        path=path,
        conversations=len(conversations),
        embedder=f"{embedder.model} ({embedder.dims} dims)",
        min_similarity=similarity,
        min_text_match=float(text),
        relative_floor=float(relative),
        store="write path" if write_path else "direct",
        profile_facts=sum(len(facts) for facts in profiles.values()),
        halves=[HalfResult(h, len(halves[h]), sides[h]["off"], sides[h]["on"]) for h in HALVES],
        total_seconds=time.perf_counter() - started,
    )


def run_floor(server_dsn: str, path: Path | str, embedder: Embedder, **options: Any) -> FloorReport:
    """Load ``path``, measure it in a scratch database on ``server_dsn``'s server, drop it
    (``database``, ``keep``, ``limit_conversations``: :func:`pgmem.lab.eval.run_in_scratch`)."""
    return ev.run_in_scratch(evaluate_floor, server_dsn, path, embedder, **options)
