"""Consolidation on LoCoMo (``pgmem eval consolidation``, docs/eval.md).

Every conversation is ingested as :mod:`pgmem.lab.eval` ingests it (one episodic memory
per turn, dated with its session). The retrieval questions are asked (mode ``hybrid``)
before and after consolidating every conversation as of the day after its last session,
with the worker's own code (:func:`pgmem.consolidate.consolidate_subject`): the
engine's clusters, an insight per cluster (the LLM's text when one is configured,
otherwise the extractive digest), sources archived (``consolidate_sources =
'archive'``, the default here, so that compression shows) or lowered.

- compression = active memories after / before (lower is more compact);
- information retained = recall@k after / before, where an insight counts as
  retrieving its sources' turns (its ``dia_ids`` are theirs: the text in the prompt
  carries what they said, verbatim for an extractive digest).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgmem.consolidate import consolidate_subject
from pgmem.embed import Embedder
from pgmem.extract import LLMExtractor
from pgmem.lab import eval as locomo
from pgmem.queries import admin as AQ
from pgmem.queries import eval as Q

__all__ = ["ConsolidationReport", "evaluate_consolidation", "run_consolidation"]

TENANT = "locomo_consolidation"
MODE = "hybrid"


@dataclass
class ConsolidationReport:
    path: str
    conversations: int
    turns: int
    before: int  # active memories
    after: int
    clusters: int
    insights: int  # new rows; known: insights remember found known already
    known: int
    sources: int
    method: str  # llm, extractive, mixed or none
    embedder: str
    settings: dict[str, object]
    recall_before: locomo.ModeResult
    recall_after: locomo.ModeResult
    seconds: float

    @property
    def compression(self) -> float:
        return self.after / self.before if self.before else 1.0

    def retained(self, k: int) -> float:
        before = self.recall_before.recall["overall"][k]
        return self.recall_after.recall["overall"][k] / before if before else 1.0

    def as_dict(self) -> dict[str, Any]:
        ks = sorted(self.recall_before.recall["overall"])
        return {
            "dataset": self.path,
            "conversations": self.conversations,
            "turns": self.turns,
            "active_before": self.before,
            "active_after": self.after,
            "compression": round(self.compression, 4),
            "clusters": self.clusters,
            "insights": self.insights,
            "known": self.known,
            "sources": self.sources,
            "method": self.method,
            "embedder": self.embedder,
            "settings": {k: locomo.setting_text(v) for k, v in self.settings.items()},
            "mode": MODE,
            "recall_before": {
                cat: {f"R@{k}": round(v, 4) for k, v in by_k.items()}
                for cat, by_k in self.recall_before.recall.items()
            },
            "recall_after": {
                cat: {f"R@{k}": round(v, 4) for k, v in by_k.items()}
                for cat, by_k in self.recall_after.recall.items()
            },
            "retained": {f"R@{k}": round(self.retained(k), 4) for k in ks},
            "seconds": round(self.seconds, 2),
        }


def evaluate_consolidation(
    dsn: str,
    conversations: Sequence[locomo.Conversation],
    embedder: Embedder,
    *,
    llm: LLMExtractor | None = None,
    settings: Mapping[str, object] | None = None,
    ks: Sequence[int] = locomo.KS,
    path: str = "",
    progress: Callable[[str], None] | None = None,
) -> ConsolidationReport:
    """Recall before and after consolidating ``conversations`` in the migrated ``dsn``."""
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    ks = tuple(sorted(set(ks)))
    chosen = {"consolidate_sources": "archive", **(settings or {})}
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(AQ.CREATE_TENANT, {"tenant": TENANT, "display_name": "pgmem eval"})
        locomo.set_tenant_settings(admin, TENANT, chosen)
        effective = (
            admin.cursor(row_factory=dict_row)
            .execute(Q.SETTINGS_OF_TENANT, {"tenant": TENANT})
            .fetchone()
            or {}
        )
        with locomo.tenant_connection(dsn, TENANT) as conn:
            say(f"embedding and storing {sum(c.turns for c in conversations)} turns")
            stats = locomo.ingest(conn, conversations, embedder)
            admin.execute(Q.ANALYZE_MEMORIES_AND_LINKS)
            probes = locomo.probes(conversations, embedder)
            mode = locomo.MODES[MODE]
            say(f"before: {len(probes)} questions")
            recall_before = locomo.run_mode(conn, mode, probes, ks)
            before = _active(conn)
            results = []
            for conversation in conversations:
                say(f"consolidating {conversation.sample_id}")
                with conn.transaction():
                    results.append(
                        consolidate_subject(
                            conn,
                            conversation.sample_id,
                            embedder=embedder,
                            llm=llm,
                            # The day after the last session, as the questions are asked.
                            now=conversation.last_date + timedelta(days=1),
                        )
                    )
            conn.execute(Q.CREDIT_INSIGHTS)
            admin.execute(Q.ANALYZE_MEMORIES_AND_LINKS)
            say(f"after: {len(probes)} questions")
            recall_after = locomo.run_mode(conn, mode, probes, ks)
            after = _active(conn)
    methods = sorted({r["method"] for r in results if "method" in r})
    columns = (
        "consolidate_after",
        "consolidate_similarity",
        "consolidate_window",
        "consolidate_min_sources",
        "consolidate_max_sources",
        "consolidate_sources",
        "consolidate_importance",
    )
    return ConsolidationReport(
        path=path,
        conversations=len(conversations),
        turns=stats.turns,
        before=before,
        after=after,
        clusters=sum(int(r["clusters"]) for r in results),
        insights=sum(int(r["insights"]) for r in results),
        known=sum(int(r["known"]) for r in results),
        sources=sum(int(r["sources"]) for r in results),
        method=(methods[0] if len(methods) == 1 else "mixed") if methods else "none",
        embedder=f"{embedder.model} ({embedder.dims} dims)",
        settings={c: effective.get(c) for c in columns},
        recall_before=recall_before,
        recall_after=recall_after,
        seconds=time.perf_counter() - started,
    )


def _active(conn: psycopg.Connection[dict[str, Any]]) -> int:
    row = conn.execute(Q.COUNT_ACTIVE).fetchone()
    assert row is not None
    return int(row["active"])


def run_consolidation(
    server_dsn: str,
    path: Path | str,
    embedder: Embedder,
    *,
    database: str = locomo.DEFAULT_DATABASE,
    keep: bool = False,
    limit_conversations: int | None = None,
    **options: Any,
) -> ConsolidationReport:
    """Load ``path``, measure consolidation in a scratch database, drop it."""
    conversations = locomo.load_locomo(path, limit=limit_conversations)
    with locomo.scratch_database(server_dsn, database, keep=keep) as dsn:
        return evaluate_consolidation(dsn, conversations, embedder, path=str(path), **options)
