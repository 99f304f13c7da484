"""The write decisions on a labelled pair corpus, per embedding model: ``pgmem eval pairs``.

Each pair of ``data/pairs.jsonl`` is two statements about one person (``a`` said first,
``b`` a day later) and the decision a careful reader makes about ``b``: ``duplicate``
(nothing new), ``merge`` (one fact, told better), ``supersede`` (an update or a
contradiction of ``a``) or ``keep_both`` (two facts). Each pair gets its own subject on
a tenant of a scratch database; ``a`` and then ``b`` go through ``pgmem.remember`` as
the rules extract them (their triple, source ``rule``), under the thresholds
``pgmem.model_thresholds`` gives the model, and ``b``'s action is read as a decision
(:data:`DECISIONS`).

The thresholds enter only the last rungs of the ladder (``pgmem._write_action``): a
pair whose ``b`` was neither reinforced nor superseded keeps its similarity and its
coverage (``pgmem._coverage``), so one query replays the decision for a grid of
thresholds with the database's own function. The grid's best point on the ``dev``
half (the most pairs decided right while duplicate precision stays at least
:data:`DUPLICATE_PRECISION_FLOOR`) is reported with its ``test`` half, which chose
nothing.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgmem.embed import Embedder
from pgmem.extract.rules import extract_with_rules
from pgmem.lab import eval as ev
from pgmem.queries import admin as AQ
from pgmem.queries import eval as Q

__all__ = [
    "DECISIONS",
    "LABELS",
    "PAIRS_FILE",
    "Outcome",
    "Pair",
    "PairsReport",
    "Scores",
    "load_pairs",
    "run_pairs",
    "scores",
]

PAIRS_FILE = Path(__file__).parent / "data" / "pairs.jsonl"
LABELS = ("duplicate", "merge", "supersede", "keep_both")
SPLITS = ("dev", "test")
# What remember's action for the second statement decided.
DECISIONS: Mapping[str, str] = {
    "reinforced": "duplicate",
    "deduplicated": "duplicate",
    "merge_pending": "merge",
    "superseded": "supersede",
    "outdated": "supersede",
    "disputed": "supersede",
    "inserted": "keep_both",
}
# Actions the similarity thresholds decide (pgmem._write_action's last rungs).
THRESHOLD_ACTIONS = frozenset({"deduplicated", "merge_pending", "inserted"})
# A false duplicate is a fact lost: the sweep keeps duplicate precision above this on dev.
DUPLICATE_PRECISION_FLOOR = 0.99
GRID = [round(0.60 + 0.01 * i, 2) for i in range(40)]  # 0.60 .. 0.99
DAY = timedelta(days=1)
T0 = datetime(2026, 1, 5, 12, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Pair:
    id: str
    lang: str
    a: str
    b: str
    label: str
    category: str
    split: str


def load_pairs(path: Path | str = PAIRS_FILE) -> list[Pair]:
    """The corpus, each line checked: known label and split, two non-empty statements."""
    pairs = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            pair = Pair(**{k: str(raw[k]) for k in Pair.__dataclass_fields__})
        except (ValueError, KeyError, TypeError) as exc:
            raise ev.EvalError(f"{path}:{n}: not a pair ({exc})") from None
        if pair.label not in LABELS or pair.split not in SPLITS or not pair.a or not pair.b:
            raise ev.EvalError(f"{path}:{n}: label must be one of {LABELS}, split dev or test")
        pairs.append(pair)
    if not pairs:
        raise ev.EvalError(f"{path}: no pairs")
    return pairs


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the write path did with a pair's second statement."""

    pair: Pair
    action: str
    similarity: float | None  # cosine of the two statements
    covered: str | None  # pgmem._coverage(b, a): 'both', 'old', 'new' or None


@dataclass
class Scores:
    """Precision and recall of each decision over some outcomes."""

    pairs: int
    correct: int
    confusion: dict[str, dict[str, int]]  # label -> decision -> pairs

    def precision(self, decision: str) -> float | None:
        decided = sum(row.get(decision, 0) for row in self.confusion.values())
        return self.confusion.get(decision, {}).get(decision, 0) / decided if decided else None

    def recall(self, label: str) -> float | None:
        labelled = sum(self.confusion.get(label, {}).values())
        return self.confusion[label].get(label, 0) / labelled if labelled else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs,
            "accuracy": round(self.correct / self.pairs, 4) if self.pairs else None,
            "precision": {d: _round(self.precision(d)) for d in LABELS},
            "recall": {d: _round(self.recall(d)) for d in LABELS},
            "confusion": self.confusion,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def scores(pairs: Sequence[Pair], decided: Sequence[str]) -> Scores:
    confusion: dict[str, Counter[str]] = {label: Counter() for label in LABELS}
    for pair, decision in zip(pairs, decided, strict=True):
        confusion[pair.label][decision] += 1
    return Scores(
        pairs=len(pairs),
        correct=sum(confusion[label][label] for label in LABELS),
        confusion={label: dict(row) for label, row in confusion.items()},
    )


@dataclass
class ModelResult:
    model: str
    thresholds: tuple[float, float]  # pgmem.model_thresholds: what ships
    shipped: dict[str, Scores]  # split -> scores
    best: tuple[float, float]  # the sweep's point on dev
    best_scores: dict[str, Scores]
    errors: list[dict[str, Any]] = field(default_factory=list)  # shipped, wrong, by pair

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "thresholds": {"duplicate": self.thresholds[0], "merge": self.thresholds[1]},
            "shipped": {s: v.as_dict() for s, v in self.shipped.items()},
            "best_on_dev": {"duplicate": self.best[0], "merge": self.best[1]},
            "best": {s: v.as_dict() for s, v in self.best_scores.items()},
            "errors": self.errors,
        }


@dataclass
class PairsReport:
    path: str
    pairs: int
    by_label: dict[str, int]
    models: list[ModelResult]

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.path,
            "pairs": self.pairs,
            "by_label": self.by_label,
            "duplicate_precision_floor": DUPLICATE_PRECISION_FLOOR,
            "models": [m.as_dict() for m in self.models],
        }


def _as_fact(text: str) -> tuple[str, tuple[str | None, str | None, str | None]]:
    """The kind and triple the rules give the statement (its first fact with a triple,
    else its first fact; semantic and no triple when none extracts)."""
    facts = extract_with_rules([{"role": "user", "content": text}]).facts
    fact = next((f for f in facts if f.triple is not None), facts[0] if facts else None)
    if fact is None:
        return "semantic", (None, None, None)
    return fact.kind, fact.triple or (None, None, None)


def store_pairs(
    conn: psycopg.Connection[dict[str, Any]], pairs: Sequence[Pair], embedder: Embedder
) -> list[Outcome]:
    """Each pair's ``a`` then ``b`` through ``pgmem.remember`` on its own subject (the
    tenant bound and its embedding model declared by ``conn``); ``b``'s outcome."""
    vectors = embedder.embed([p.a for p in pairs] + [p.b for p in pairs])
    outcomes = []
    for n, pair in enumerate(pairs):
        subject = f"pair-{pair.id}"
        va, vb = vectors[n], vectors[len(pairs) + n]
        action = ""
        for text, vector, at in ((pair.a, va, T0), (pair.b, vb, T0 + DAY)):
            kind, triple = _as_fact(text)
            row = conn.execute(
                Q.PAIR_REMEMBER,
                {
                    "subject": subject,
                    "content": text,
                    "embedding": vector,
                    "kind": kind,
                    "ts": triple[0],
                    "tp": triple[1],
                    "to": triple[2],
                    "at": at,
                },
            ).fetchone()
            assert row is not None
            action = str(row["action"])  # the second statement's is the outcome
        evidence = conn.execute(Q.PAIR_EVIDENCE, {"a": pair.a, "b": pair.b}).fetchone()
        assert evidence is not None
        outcomes.append(Outcome(pair, action, _cosine(va, vb), evidence["covered"]))
    return outcomes


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = (sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5
    return dot / norm if norm else 0.0


def replay(
    admin: psycopg.Connection[Any], tenant: str, outcomes: Sequence[Outcome]
) -> dict[tuple[float, float], list[str]]:
    """The decision of every outcome at every (duplicate, merge) point of the grid
    (merge at most duplicate), from ``pgmem._write_action`` over ``tenant``'s settings
    (``admin`` the owner: the function is internal)."""
    open_ = [n for n, o in enumerate(outcomes) if o.action in THRESHOLD_ACTIONS]
    fixed = [DECISIONS[o.action] for o in outcomes]
    rows = admin.execute(
        Q.PAIR_REPLAY,
        {
            "tenant": tenant,
            "grid": GRID,
            "similarity": [outcomes[n].similarity for n in open_],
            "covered": [outcomes[n].covered for n in open_],
        },
    ).fetchall()
    grid: dict[tuple[float, float], list[str]] = {}
    for row in rows:
        decided = list(fixed)
        for n, action in zip(open_, row["actions"], strict=True):
            decided[n] = DECISIONS[action]
        grid[(round(row["dup"], 2), round(row["merge"], 2))] = decided
    return grid


def _best(
    pairs: Sequence[Pair], grid: Mapping[tuple[float, float], list[str]]
) -> tuple[float, float]:
    """The point deciding the most dev pairs right with duplicate precision at the floor;
    of equals, the highest thresholds (the more careful)."""
    dev = [n for n, p in enumerate(pairs) if p.split == "dev"]
    ranked = []
    for point, decided in grid.items():
        s = scores([pairs[n] for n in dev], [decided[n] for n in dev])
        precision = s.precision("duplicate")
        if precision is None or precision >= DUPLICATE_PRECISION_FLOOR:
            ranked.append((s.correct, point))
    if not ranked:
        return max(grid)
    return max(ranked)[1]


def _by_split(pairs: Sequence[Pair], decided: Sequence[str]) -> dict[str, Scores]:
    return {
        split: scores(
            [p for p in pairs if p.split == split],
            [d for p, d in zip(pairs, decided, strict=True) if p.split == split],
        )
        for split in SPLITS
    }


def evaluate_model(
    dsn: str, pairs: Sequence[Pair], embedder: Embedder, *, say: Callable[[str], None]
) -> ModelResult:
    tenant = "pairs-" + re.sub(r"[^a-z0-9]+", "-", embedder.model.lower()).strip("-")[:50]
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as admin:
        admin.execute(AQ.CREATE_TENANT, {"tenant": tenant, "display_name": "pgmem eval pairs"})
        with ev.tenant_connection(dsn, tenant) as conn:
            conn.execute(Q.DECLARE_MODEL, {"model": embedder.model})
            shipped_row = conn.execute(Q.MODEL_THRESHOLDS, {"model": embedder.model}).fetchone()
            assert shipped_row is not None
            thresholds = (round(shipped_row["dup"], 2), round(shipped_row["merge"], 2))
            say(f"{embedder.model}: {len(pairs)} pairs through pgmem.remember")
            outcomes = store_pairs(conn, pairs, embedder)
        say(f"{embedder.model}: decisions replayed over {len(GRID)} thresholds")
        grid = replay(admin, tenant, outcomes)
    shipped = [DECISIONS[o.action] for o in outcomes]
    best = _best(pairs, grid)
    errors = [
        {
            "id": o.pair.id,
            "category": o.pair.category,
            "label": o.pair.label,
            "decision": d,
            "similarity": round(o.similarity or 0.0, 3),
            "covered": o.covered,
            "a": o.pair.a,
            "b": o.pair.b,
        }
        for o, d in zip(outcomes, shipped, strict=True)
        if d != o.pair.label
    ]
    return ModelResult(
        model=embedder.model,
        thresholds=thresholds,
        shipped=_by_split(pairs, shipped),
        best=best,
        best_scores=_by_split(pairs, grid[best]),
        errors=errors,
    )


def run_pairs(
    server_dsn: str,
    embedders: Sequence[Embedder],
    *,
    path: Path | str = PAIRS_FILE,
    database: str = ev.DEFAULT_DATABASE,
    keep: bool = False,
    progress: Callable[[str], None] | None = None,
) -> PairsReport:
    """Every embedder's decisions on the corpus, in a scratch database dropped afterwards."""
    say = progress or (lambda _message: None)
    pairs = load_pairs(path)
    with ev.scratch_database(server_dsn, database, keep=keep) as dsn:
        models = [evaluate_model(dsn, pairs, e, say=say) for e in embedders]
    return PairsReport(
        path=str(path),
        pairs=len(pairs),
        by_label=dict(Counter(p.label for p in pairs)),
        models=models,
    )
