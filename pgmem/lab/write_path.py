"""What the write path keeps of a conversation: LoCoMo told through ``Memory.add``.

``pgmem eval locomo`` (:mod:`pgmem.lab.eval`) stores every turn directly with SQL, so
it measures recall over a store that holds every word. An application's turns take
another road: ``Memory.add`` (extraction, then ``pgmem.remember_many``'s dedup, merge
and supersession), then the worker (the merges that queued). This module measures that
road, for each of two passes on a fresh tenant of the same scratch database:

* ``infer``: ``Memory.add(..., infer=True)``, facts extracted by the rules (no LLM);
* ``as-is``: ``Memory.add(..., infer=False)``, each turn's text stored as it is.

Each turn is one ``add`` call (``Memory`` has no batch form, and each turn has its own
session, date and id): one user message ``"speaker: text"`` (both speakers' turns are
the user's words about the conversation's subject), ``user_id`` the conversation's
``sample_id``, the direct store's ``session_id``, ``occurred_at`` the session's date and
``metadata = {"dia_id": …}``, default settings and embedder. The worker then runs until
the inbox holds nothing pending. The questions are asked as the direct eval asks them
(:func:`pgmem.lab.eval.run_mode`, mode ``hybrid``), a returned memory answering for the
turns its metadata names (:func:`pgmem.lab.eval.memory_dia_ids`).

A turn is **lost** when no active memory holds it: none names its ``dia_id`` (directly,
or in a ``dia_ids`` list such as a merge may carry over), and none has its text
(``pgmem._normalize`` equal: an exact re-send reinforced into the memory that said it
first). A turn deduplicated into a memory of other words is lost. The direct store is
accounted the same way beside the two passes (it holds every turn by construction),
with every decision ``Memory.add`` returned and every outcome of the worker's jobs
counted as they come, whatever their names.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from pgmem.client import Memory
from pgmem.embed import Embedder
from pgmem.lab import eval as ev
from pgmem.queries import admin as AQ
from pgmem.queries import eval as Q
from pgmem.worker import Worker

__all__ = [
    "MODE",
    "PASSES",
    "PassResult",
    "WritePathReport",
    "drain_inbox",
    "evaluate_write_path",
    "lost_sources",
    "run_write_path",
    "send_turns",
]

# The mode every store is asked in: the engine's plain ranking, no date windows (the
# write path dates a memory's valid time, not its created_at, which windows read).
MODE = "hybrid"
# The two passes: name -> Memory.add's infer.
PASSES: Mapping[str, bool] = {"infer": True, "as-is": False}
# Turns between two progress messages.
PROGRESS_EVERY = 500
# Longest sleep while a failed job waits out its backoff (pgmem.fail_job doubles it
# from 2 s; the worker's default five attempts wait 30 s in all).
BACKOFF_WAIT_MAX = 5.0
# Label of a turn whose add returned no decision at all.
NOTHING = "(nothing returned)"


@dataclass
class PassResult:
    """One store of the conversations and what it kept: the direct one or a write pass."""

    name: str  # "direct", or a key of PASSES
    tenant: str
    result: ev.ModeResult
    sources: int
    # The turns no active memory holds, each with what Memory.add said of it.
    lost: list[tuple[ev.TurnRow, list[str]]]
    decisions: dict[str, int] = field(default_factory=dict)  # actions Memory.add returned
    worker: dict[str, Any] = field(default_factory=dict)
    inbox: dict[str, int] = field(default_factory=dict)  # "<job> <status>" -> jobs
    statuses: dict[str, int] = field(default_factory=dict)
    memory_sources: dict[str, int] = field(default_factory=dict)
    write_seconds: float = 0.0
    worker_seconds: float = 0.0

    @property
    def lost_share(self) -> float:
        return len(self.lost) / self.sources if self.sources else 0.0

    @property
    def lost_by_decision(self) -> dict[str, int]:
        """Lost turns by the decisions their add returned (``+``-joined when several)."""
        counts = Counter("+".join(sorted(set(actions))) or NOTHING for _, actions in self.lost)
        return dict(counts.most_common())

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tenant": self.tenant,
            "result": self.result.as_dict(),
            "sources": self.sources,
            "lost": len(self.lost),
            "lost_share": round(self.lost_share, 4),
            "lost_by_decision": self.lost_by_decision,
            "decisions": self.decisions,
            "worker": self.worker,
            "inbox": self.inbox,
            "memories_by_status": self.statuses,
            "memories_by_source": self.memory_sources,
            "seconds": {
                "write": round(self.write_seconds, 2),
                "worker": round(self.worker_seconds, 2),
            },
            "lost_turns": [
                {"subject": row.subject, "dia_id": row.dia_id, "content": row.content, "actions": a}
                for row, a in self.lost
            ],
        }


@dataclass
class WritePathReport:
    path: str
    conversations: int
    turns: int
    questions: dict[str, int]
    skipped: dict[str, int]
    embedder: str
    settings: dict[str, object]  # overrides applied to every store; empty: the defaults
    passes: list[PassResult]
    total_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.path,
            "conversations": self.conversations,
            "turns": self.turns,
            "questions": self.questions,
            "skipped": self.skipped,
            "mode": MODE,
            "embedder": self.embedder,
            "settings": self.settings,
            "passes": [p.as_dict() for p in self.passes],
            "seconds": round(self.total_seconds, 2),
        }


# ------------------------------------------------------------------- the passes


def send_turns(
    memory: Memory,
    rows: Sequence[ev.TurnRow],
    *,
    infer: bool,
    progress: Callable[[str], None] | None = None,
) -> list[list[str]]:
    """Every turn through ``memory.add``, in dialogue order; each turn's actions."""
    actions = []
    for n, row in enumerate(rows, start=1):
        added = memory.add(
            [{"role": "user", "content": row.content}],
            row.subject,
            session_id=row.session_id,
            metadata={"dia_id": row.dia_id},
            occurred_at=row.at,
            infer=infer,
        )
        actions.append([str(a["action"]) for a in added])
        if progress is not None and n % PROGRESS_EVERY == 0:
            progress(f"{n} of {len(rows)} turns added")
    return actions


def drain_inbox(
    dsn: str, tenant: str, embedder: Embedder, conn: psycopg.Connection[dict[str, Any]]
) -> dict[str, Any]:
    """Run the worker (no LLM) on ``tenant`` until its inbox has nothing pending; its
    totals. ``conn`` acts for the tenant (it reads the inbox)."""
    worker = Worker(dsn, tenant=tenant, embedder=embedder, llm=None)
    totals: dict[str, Any] = {"jobs": 0, "done": 0, "failed": 0, "embedded": 0}
    actions: Counter[str] = Counter()
    while True:
        stats = worker.run(once=True)
        for name in totals:
            totals[name] += getattr(stats, name)
        actions.update(stats.actions)
        pending = conn.execute(Q.INBOX_PENDING).fetchone()
        assert pending is not None
        if not pending["pending"]:
            return {**totals, "actions": dict(sorted(actions.items()))}
        # Not due yet: a failed attempt waiting out its backoff.
        time.sleep(min(max(float(pending["due_in"] or 0.0), 0.0), BACKOFF_WAIT_MAX))


def lost_sources(conn: psycopg.Connection[dict[str, Any]], rows: Sequence[ev.TurnRow]) -> list[int]:
    """Positions in ``rows`` of the turns no active memory of their subject holds, by id
    (:func:`pgmem.lab.eval.memory_dia_ids`) or by text (``pgmem._normalize``)."""
    ids: set[tuple[str, str]] = set()
    texts: set[tuple[str, str]] = set()
    for memory in conn.execute(Q.ACTIVE_HOLDINGS):
        ids.update((memory["subject"], i) for i in ev.memory_dia_ids(memory["metadata"]))
        texts.add((memory["subject"], memory["normalized"]))
    normalized = [
        r["normalized"]
        for r in conn.execute(Q.NORMALIZE_TEXTS, {"texts": [row.content for row in rows]})
    ]
    return [
        n
        for n, (row, text) in enumerate(zip(rows, normalized, strict=True))
        if (row.subject, row.dia_id) not in ids and (row.subject, text) not in texts
    ]


def _counts(conn: psycopg.Connection[dict[str, Any]], statement: str) -> dict[str, int]:
    return {str(r["key"]): int(r["n"]) for r in conn.execute(statement)}


def _holding(
    conn: psycopg.Connection[dict[str, Any]],
    rows: Sequence[ev.TurnRow],
    actions: Sequence[list[str]] | None = None,
) -> dict[str, Any]:
    """What a store holds of ``rows``: the lost turns (with their actions), and its
    memories by status and by source."""
    return {
        "sources": len(rows),
        "lost": [(rows[n], list(actions[n]) if actions else []) for n in lost_sources(conn, rows)],
        "statuses": _counts(conn, Q.MEMORIES_BY_STATUS),
        "memory_sources": _counts(conn, Q.MEMORIES_BY_SOURCE),
    }


def _write_pass(
    dsn: str,
    name: str,
    rows: Sequence[ev.TurnRow],
    embedder: Embedder,
    asked: Sequence[ev.Probe],
    *,
    settings: Mapping[str, object],
    say: Callable[[str], None],
) -> PassResult:
    tenant = f"{ev.TENANT}-write-{name}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        display = f"pgmem eval (LoCoMo, write path, {name})"
        admin.execute(AQ.CREATE_TENANT, {"tenant": tenant, "display_name": display})
        ev.set_tenant_settings(admin, tenant, settings)
        with ev.tenant_connection(dsn, tenant) as conn:
            say(f"write path ({name}): {len(rows)} turns through Memory.add")
            started = time.perf_counter()
            with Memory(conn=conn, tenant=tenant, embedder=embedder, llm=False) as memory:
                actions = send_turns(memory, rows, infer=PASSES[name], progress=say)
            write_seconds = time.perf_counter() - started
            say(f"write path ({name}): the worker drains the inbox")
            started = time.perf_counter()
            worker = drain_inbox(dsn, tenant, embedder, conn)
            worker_seconds = time.perf_counter() - started
            admin.execute(Q.ANALYZE_MEMORIES_AND_LINKS)
            say(f"write path ({name}): mode {MODE}, {len(asked)} questions")
            result = ev.run_mode(conn, ev.MODES[MODE], asked)
            decisions = Counter(a for turn in actions for a in turn)
            decisions[NOTHING] = sum(1 for turn in actions if not turn)
            return PassResult(
                name=name,
                tenant=tenant,
                result=result,
                decisions={a: n for a, n in decisions.most_common() if n},
                worker=worker,
                inbox=_counts(conn, Q.INBOX_BY_JOB),
                write_seconds=write_seconds,
                worker_seconds=worker_seconds,
                **_holding(conn, rows, actions),
            )


def evaluate_write_path(
    dsn: str,
    conversations: Sequence[ev.Conversation],
    embedder: Embedder,
    *,
    settings: Mapping[str, object] | None = None,
    path: str = "",
    progress: Callable[[str], None] | None = None,
) -> WritePathReport:
    """The direct store (:func:`pgmem.lab.eval.evaluate`, mode hybrid) and the two write
    passes, each on its own tenant of the migrated database ``dsn`` (a superuser's)."""
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    settings = dict(settings or {})
    rows = ev.turn_rows(conversations)
    direct = ev.evaluate(
        dsn,
        conversations,
        embedder,
        modes=[MODE],
        settings=settings,
        tenant=ev.TENANT,
        path=path,
        progress=say,
    )
    with ev.tenant_connection(dsn, ev.TENANT) as conn:
        holding = _holding(conn, rows)
    passes = [
        PassResult(
            name="direct",
            tenant=ev.TENANT,
            result=direct.results[0],
            write_seconds=direct.store_seconds,
            **holding,
        )
    ]
    # The same questions, their vectors from the embedder's cache.
    asked = ev.probes(conversations, embedder)
    for name in PASSES:
        passes.append(_write_pass(dsn, name, rows, embedder, asked, settings=settings, say=say))
    asked_counts, skipped = ev.question_counts(conversations)
    return WritePathReport(
        path=path,
        conversations=len(conversations),
        turns=len(rows),
        questions=asked_counts,
        skipped=skipped,
        embedder=f"{embedder.model} ({embedder.dims} dims)",
        settings=settings,
        passes=passes,
        total_seconds=time.perf_counter() - started,
    )


def run_write_path(
    server_dsn: str, path: Path | str, embedder: Embedder, **options: Any
) -> WritePathReport:
    """Load ``path``, measure it in a scratch database on ``server_dsn``'s server, drop it
    (``database``, ``keep``, ``limit_conversations``: :func:`pgmem.lab.eval.run_in_scratch`)."""
    return ev.run_in_scratch(evaluate_write_path, server_dsn, path, embedder, **options)
