"""Defaults from measurement: a sweep of pgmem.settings on LoCoMo, ingesting once.

``pgmem eval sweep PATH`` stores the conversations once (as ``pgmem eval locomo`` does),
embeds the questions once, and then only changes the tenant's settings between runs of
one mode (default ``hybrid-ripple-time``, the engine with everything on). The search is
a coordinate descent from the current ``_default`` settings: each parameter in turn
takes every value of its grid with the others at their best so far, and keeps the
value with the best overall recall@5 (recall@10 breaks ties; a value must beat the
current one by more than :data:`MIN_GAIN` to replace it, so noise does not move a
default). Every trial is reported, so the curve around each default is visible.

The ranking is always the engine's (``pgmem.recall`` under the tenant's settings);
this module only changes settings and counts. Results: docs/eval.md, "Defaults".
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgmem.embed import Embedder
from pgmem.lab import eval as ev
from pgmem.queries import admin as AQ
from pgmem.queries import eval as Q

__all__ = [
    "DEFAULT_GRID",
    "DEFAULT_PARALLEL",
    "MIN_GAIN",
    "SweepReport",
    "Trial",
    "run_sweep",
    "sweep",
]

# Values tried per setting, in the order the descent visits the settings: the ones
# LoCoMo moves most first (docs/eval.md). Weights are relative to w_relevance, which
# stays at 0.6: scaling every weight together changes no ranking.
DEFAULT_GRID: Mapping[str, Sequence[object]] = {
    "w_recency": (0.0, 0.02, 0.05, 0.1),
    "half_life_episodic": ("7 days", "30 days", "90 days", "365 days"),
    "ripple_damping": (0.5, 0.7, 0.8, 0.9),
    "w_vector": (0.3, 0.4, 0.5, 0.6),
    "candidate_pool": (50, 100, 200),
    "w_importance": (0.1, 0.2, 0.3),
    "w_access": (0.0, 0.05),
}
# Tenants (each a copy of the conversations) measured at the same time: the machine's
# two cores. Each trial is one session asking every question in turn.
DEFAULT_PARALLEL = 2
# A new value replaces the current one only when it gains more than this in R@5 (or,
# with R@5 within it, in R@10).
MIN_GAIN = 0.002


@dataclass
class Trial:
    settings: dict[str, str]  # every swept setting, as text
    changed: str | None  # the setting this trial varied (None: the starting point)
    metrics: dict[str, float]  # overall R@k, Hit@k, MRR, nDCG@10
    by_category: dict[str, dict[str, float]]
    seconds: float


@dataclass
class SweepReport:
    path: str
    mode: str
    embedder: str
    questions: int
    ingest_seconds: float
    total_seconds: float
    start: Trial
    best: Trial
    trials: list[Trial] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        def trial(t: Trial) -> dict[str, Any]:
            return {
                "settings": t.settings,
                "changed": t.changed,
                "metrics": {k: round(v, 4) for k, v in t.metrics.items()},
                "by_category": {
                    c: {k: round(v, 4) for k, v in m.items()} for c, m in t.by_category.items()
                },
                "seconds": round(t.seconds, 2),
            }

        return {
            "dataset": self.path,
            "mode": self.mode,
            "embedder": self.embedder,
            "questions": self.questions,
            "seconds": {
                "ingest": round(self.ingest_seconds, 2),
                "total": round(self.total_seconds, 2),
            },
            "start": trial(self.start),
            "best": trial(self.best),
            "trials": [trial(t) for t in self.trials],
        }


def _text(value: object) -> str:
    return ev.setting_text(value) if isinstance(value, timedelta) else str(value)


def sweep(
    dsn: str,
    conversations: Sequence[ev.Conversation],
    embedder: Embedder,
    *,
    grid: Mapping[str, Sequence[object]] = DEFAULT_GRID,
    mode: str = "hybrid-ripple-time",
    parallel: int = DEFAULT_PARALLEL,
    path: str = "",
    progress: Callable[[str], None] | None = None,
) -> SweepReport:
    """Ingest ``conversations`` into the migrated database ``dsn`` once and descend ``grid``.

    The turns are embedded once and stored for ``parallel`` tenants, so that the values
    of one setting are measured side by side, one tenant (and session) each."""
    if mode not in ev.MODES:
        raise ev.EvalError(f"unknown mode {mode}; known: {', '.join(ev.MODES)}")
    if parallel < 1:
        raise ev.EvalError("parallel must be at least 1")
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    tenants = [ev.TENANT] + [f"{ev.TENANT}-{i}" for i in range(2, parallel + 1)]
    with contextlib.ExitStack() as stack:
        admin = stack.enter_context(psycopg.connect(dsn, autocommit=True))
        for tenant in tenants:
            admin.execute(AQ.CREATE_TENANT, {"tenant": tenant, "display_name": "pgmem eval sweep"})
        unknown = sorted(set(grid) - set(ev.settings_columns(admin)))
        if unknown:
            raise ev.EvalError(f"unknown setting(s) in the grid: {', '.join(unknown)}")
        defaults = (
            admin.cursor(row_factory=dict_row)
            .execute(Q.SETTINGS_OF_TENANT, {"tenant": ev.TENANT})
            .fetchone()
        )
        assert defaults is not None
        current = {name: _text(defaults[name]) for name in grid}
        say(f"embedding {sum(c.turns for c in conversations)} turns")
        vectors = ev.turn_vectors(conversations, embedder)
        lanes = []
        for tenant in tenants:
            say(f"storing them for tenant {tenant}")
            conn = stack.enter_context(ev.tenant_connection(dsn, tenant))
            ev.ingest(conn, conversations, embedder, vectors=vectors)
            owner = stack.enter_context(psycopg.connect(dsn, autocommit=True))
            lanes.append((tenant, owner, conn))
        admin.execute(Q.ANALYZE_MEMORIES_AND_LINKS)
        say("embedding the questions")
        asked = ev.probes(conversations, embedder)
        ingest_seconds = time.perf_counter() - started
        tried: dict[tuple[tuple[str, str], ...], Trial] = {}
        trials: list[Trial] = []

        def run(lane: int, settings: dict[str, str], changed: str | None) -> Trial:
            tenant, owner, conn = lanes[lane]
            ev.set_tenant_settings(owner, tenant, settings)
            result = ev.run_mode(conn, ev.MODES[mode], asked)
            return Trial(
                settings=dict(settings),
                changed=changed,
                metrics=result.metrics["overall"],
                by_category={c: m for c, m in result.metrics.items() if c != "overall"},
                seconds=result.seconds,
            )

        def measure(candidates: list[dict[str, str]], changed: str | None) -> list[Trial]:
            """Every candidate's trial, the new ones run side by side, one per lane."""
            todo = [c for c in candidates if tuple(sorted(c.items())) not in tried]
            for first in range(0, len(todo), len(lanes)):
                chunk = todo[first : first + len(lanes)]
                say(
                    f"{changed or 'defaults'}: "
                    + ", ".join(c[changed] if changed else "" for c in chunk)
                )
                with ThreadPoolExecutor(len(chunk)) as pool:
                    done = list(pool.map(lambda a: run(a[0], a[1], changed), enumerate(chunk)))
                for trial in done:
                    tried[tuple(sorted(trial.settings.items()))] = trial
                    trials.append(trial)
            return [tried[tuple(sorted(c.items()))] for c in candidates]

        [start] = measure([current], None)
        best = start
        for name, values in grid.items():
            base = best
            for trial in measure([{**base.settings, name: _text(v)} for v in values], name):
                gain = trial.metrics["R@5"] - best.metrics["R@5"]
                gain10 = trial.metrics["R@10"] - best.metrics["R@10"]
                if gain > MIN_GAIN or (abs(gain) <= MIN_GAIN and gain10 > MIN_GAIN):
                    best = trial
    return SweepReport(
        path=path,
        mode=mode,
        embedder=f"{embedder.model} ({embedder.dims} dims)",
        questions=len(asked),
        ingest_seconds=ingest_seconds,
        total_seconds=time.perf_counter() - started,
        start=start,
        best=best,
        trials=trials,
    )


def run_sweep(
    server_dsn: str,
    path: Path | str,
    embedder: Embedder,
    *,
    database: str = ev.DEFAULT_DATABASE,
    keep: bool = False,
    limit_conversations: int | None = None,
    **options: Any,
) -> SweepReport:
    """Load ``path`` and sweep it in a scratch database on ``server_dsn``'s server."""
    conversations = ev.load_locomo(path, limit=limit_conversations)
    with ev.scratch_database(server_dsn, database, keep=keep) as dsn:
        return sweep(dsn, conversations, embedder, path=str(path), **options)
