"""Retrieval quality on LoCoMo: how well ``pgmem.recall`` finds the turns that answer a question.

LoCoMo (Maharana et al. 2024, "Evaluating Very Long-Term Conversational Memory of LLM
Agents") has long two-person conversations split into dated sessions, and questions whose
``evidence`` names the turns (``dia_id`` such as ``D3:12``: session 3, turn 12) that
answer them. This module

1. loads the file (:func:`load_locomo`), repairing malformed evidence ids;
2. creates a scratch database, migrates it and stores every turn as a real pgmem memory
   (:func:`ingest`): episodic, of the conversation's subject, dated with its session,
   ``metadata.dia_id`` set, and linked (``same_session``) to the turns before and after it;
3. asks every question (category 5, adversarial, is skipped: its "evidence" points at
   distractors) through ``pgmem.recall`` in several modes, and, for reference, through
   plain SQL baselines (ts_rank, cosine, their reciprocal-rank fusion);
4. reports recall@k: the fraction of a question's evidence turns among the first k
   memories returned, averaged per category and over all questions.

Python only loads, embeds, stores and counts. Ranking is the engine's: a mode is a set of
``pgmem.recall`` arguments under the run's tenant settings, never a Python re-ranking.
Results and what each engine feature adds: docs/eval.md.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from pgmem import timeexpr
from pgmem.embed import Embedder
from pgmem.lab import scratch
from pgmem.queries import admin as AQ
from pgmem.queries import eval as Q
from pgmem.timeexpr import MONTHS, WINDOW_AFTER, WINDOW_BEFORE

__all__ = [
    "CATEGORY_NAMES",
    "DEFAULT_DATABASE",
    "KS",
    "MODES",
    "TENANT",
    "WINDOW_AFTER",
    "WINDOW_BEFORE",
    "ZH_SET",
    "Conversation",
    "EvalError",
    "Mode",
    "ModeResult",
    "Probe",
    "Question",
    "Report",
    "Session",
    "Turn",
    "TurnRow",
    "embed_by_length",
    "evaluate",
    "evaluated_questions",
    "hit_at",
    "ingest",
    "load_locomo",
    "memory_dia_ids",
    "ndcg_at",
    "normalize_evidence",
    "parse_session_date",
    "probes",
    "question_counts",
    "question_metrics",
    "question_period",
    "question_window",
    "recall_at",
    "reciprocal_rank",
    "run_locomo",
    "scratch_database",
    "session_id",
    "set_tenant_settings",
    "tenant_connection",
    "turn_rows",
    "turn_vectors",
    "vector_text",
]

# LoCoMo's question categories, as numbered in the released data.
CATEGORY_NAMES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
    # The Chinese set shipped with pgmem (ZH_SET): questions in Chinese, and questions
    # mixing Chinese and English (or English questions about Chinese memories).
    6: "chinese",
    7: "mixed-zh-en",
}
# Adversarial questions are unanswerable by design, so retrieving the turns they
# cite is no success; the baselines this is compared with skip them as well.
SKIPPED_CATEGORIES = frozenset({5})
KS = (5, 10)

DEFAULT_DATABASE = "pgmem_eval"
# Five synthetic personas' memories in Chinese (some mixed with English), 300 memories
# and 129 questions with evidence ids, in LoCoMo's format: `pgmem eval zh`.
ZH_SET = Path(__file__).resolve().parent / "data" / "zh_personas.json"
TENANT = "locomo"


class EvalError(RuntimeError):
    """The evaluation cannot run as asked; the message says why."""


# ------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None = None  # BLIP caption of a shared image, when the turn has one

    def content(self, *, captions: bool = False) -> str:
        """The memory's text: ``speaker: text`` (the form the published baselines embed)."""
        body = self.text.strip()
        if captions and self.caption:
            body = f"{body} [shares {self.caption.strip()}]"
        return f"{self.speaker}: {body}"


@dataclass(frozen=True)
class Session:
    number: int
    date: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str | None = None


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)

    @property
    def last_date(self) -> datetime:
        return max(s.date for s in self.sessions)


# D<session>:<turn>, tolerating the annotation slips found in the data:
# "D8:6; D9:17" (two ids in one string), "D:11:26" (stray colon), spaces.
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def normalize_evidence(raw: Iterable[object]) -> tuple[str, ...]:
    """Canonical ``D<s>:<t>`` ids, in order, without duplicates; unparsable items dropped.

    >>> normalize_evidence(["D8:6; D9:17", "D", "D:11:26", "D8:6"])
    ('D8:6', 'D9:17', 'D11:26')
    """
    ids: dict[str, None] = {}
    for item in raw:
        for match in _DIA_ID.finditer(str(item)):
            ids[f"D{int(match[1])}:{int(match[2])}"] = None
    return tuple(ids)


_SESSION_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*$",
    re.IGNORECASE,
)


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime (locale-independent).

    >>> parse_session_date("12:19 am on 4 January, 2024").isoformat()
    '2024-01-04T00:19:00+00:00'
    """
    match = _SESSION_DATE.match(text)
    month = MONTHS.get(match[5].lower()) if match else None
    if match is None or month is None:
        raise EvalError(
            f"unrecognized session date {text!r} (expected like '1:56 pm on 8 May, 2023')"
        )
    hour = int(match[1]) % 12 + (12 if match[3].lower() == "p" else 0)
    return datetime(int(match[6]), month, int(match[4]), hour, int(match[2]), tzinfo=UTC)


def question_period(question: str) -> tuple[datetime, datetime] | None:
    """The period an explicit date in ``question`` names, as [start, end) in UTC, or None
    (:func:`pgmem.timeexpr.explicit_period`: LoCoMo's dates are read as UTC)."""
    return timeexpr.explicit_period(question)


def question_window(question: str) -> tuple[datetime, datetime] | None:
    """``pgmem.recall``'s p_since/p_until for a question: its period, widened
    (:func:`pgmem.timeexpr.widen`)."""
    return timeexpr.widen(question_period(question))


_SESSION_KEY = re.compile(r"^session_(\d+)$")


def _conversation(sample: Mapping[str, Any], position: int) -> Conversation:
    sample_id = str(sample.get("sample_id") or f"conv-{position}")
    raw = sample.get("conversation")
    if not isinstance(raw, Mapping):
        raise EvalError(f"{sample_id}: no 'conversation' object")
    sessions = []
    for key, turns in raw.items():
        match = _SESSION_KEY.match(key)
        if match is None or not isinstance(turns, list) or not turns:
            continue
        number = int(match[1])
        date_text = raw.get(f"{key}_date_time")
        if not isinstance(date_text, str):
            raise EvalError(f"{sample_id}: {key} has no {key}_date_time")
        sessions.append(
            Session(
                number=number,
                date=parse_session_date(date_text),
                turns=tuple(
                    Turn(
                        dia_id=(normalize_evidence([t["dia_id"]]) or (str(t["dia_id"]),))[0],
                        speaker=str(t["speaker"]),
                        text=str(t["text"]),
                        caption=t.get("blip_caption"),
                    )
                    for t in turns
                ),
            )
        )
    if not sessions:
        raise EvalError(f"{sample_id}: no sessions with turns")
    sessions.sort(key=lambda s: s.number)
    questions = tuple(
        Question(
            question=str(q["question"]),
            category=int(q["category"]),
            evidence=normalize_evidence(q.get("evidence") or ()),
            answer=None if q.get("answer") is None else str(q["answer"]),
        )
        for q in sample.get("qa") or ()
    )
    return Conversation(
        sample_id=sample_id,
        speakers=(str(raw.get("speaker_a", "")), str(raw.get("speaker_b", ""))),
        sessions=tuple(sessions),
        questions=questions,
    )


def load_locomo(path: Path | str, *, limit: int | None = None) -> list[Conversation]:
    """The conversations of a LoCoMo JSON file (a list of samples), the first ``limit`` ones."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvalError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, list):
        raise EvalError(f"{path}: expected a JSON list of LoCoMo samples")
    samples = data if limit is None else data[:limit]
    return [_conversation(sample, i) for i, sample in enumerate(samples, start=1)]


def evaluated_questions(conversation: Conversation) -> list[Question]:
    """Questions that count: not adversarial, and with at least one well-formed evidence id."""
    return [
        q for q in conversation.questions if q.category not in SKIPPED_CATEGORIES and q.evidence
    ]


# ---------------------------------------------------------------------- metrics


def memory_dia_ids(metadata: Mapping[str, Any] | None) -> list[str]:
    """The turns a memory holds, from its metadata: ``dia_ids`` (what this module stores,
    and what consolidation credits an insight with), then ``dia_id`` (the one id a turn
    sent through the write path carries), each once.

    >>> memory_dia_ids({"dia_id": "D1:3", "dia_ids": ["D1:3", "D2:5"]})
    ['D1:3', 'D2:5']
    """
    if not metadata:
        return []
    listed = metadata.get("dia_ids")
    ids = [str(i) for i in listed] if isinstance(listed, list) else []
    if isinstance(metadata.get("dia_id"), str):
        ids.append(metadata["dia_id"])
    return list(dict.fromkeys(ids))


def recall_at(retrieved: Sequence[Iterable[str]], evidence: Sequence[str], k: int) -> float:
    """Fraction of ``evidence`` among the dia_ids of the first ``k`` retrieved memories.

    Each retrieved memory carries a list of dia_ids (one, unless identical turns were
    stored as one memory). Evidence ids that name no turn of the conversation (annotation
    slips) stay in the denominator: no retriever can find them, for every mode alike.
    """
    if not evidence:
        raise ValueError("recall of a question without evidence is undefined")
    found: set[str] = set()
    for ids in retrieved[:k]:
        found.update(ids)
    return sum(1 for e in evidence if e in found) / len(evidence)


def hit_at(retrieved: Sequence[Iterable[str]], evidence: Sequence[str], k: int) -> float:
    """1.0 when any evidence id is among the first ``k`` retrieved memories, else 0.0."""
    if not evidence:
        raise ValueError("hit of a question without evidence is undefined")
    wanted = set(evidence)
    return 1.0 if any(wanted.intersection(ids) for ids in retrieved[:k]) else 0.0


def reciprocal_rank(retrieved: Sequence[Iterable[str]], evidence: Sequence[str]) -> float:
    """1/rank of the first retrieved memory holding an evidence id (0.0 when none does);
    averaged over questions, the mean reciprocal rank (MRR) of the list given."""
    if not evidence:
        raise ValueError("reciprocal rank of a question without evidence is undefined")
    wanted = set(evidence)
    for rank, ids in enumerate(retrieved, start=1):
        if wanted.intersection(ids):
            return 1.0 / rank
    return 0.0


def ndcg_at(retrieved: Sequence[Iterable[str]], evidence: Sequence[str], k: int) -> float:
    """Normalized discounted cumulative gain of the first ``k`` memories, binary gains.

    A memory gains 1 when it holds an evidence id not found higher up (a memory carrying
    two identical turns counts once); DCG = sum of gain / log2(rank + 1). The ideal list
    puts min(len(evidence), k) evidence turns first; as for recall, evidence ids that name
    no turn stay in that ideal, so no retriever reaches 1.0 on such a question.
    """
    if not evidence:
        raise ValueError("nDCG of a question without evidence is undefined")
    wanted = set(evidence)
    found: set[str] = set()
    dcg = 0.0
    for rank, ids in enumerate(retrieved[:k], start=1):
        new = wanted.intersection(ids) - found
        if new:
            found |= new
            dcg += 1.0 / math.log2(rank + 1)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


# Rank cut of nDCG; MRR reads the same top list.
NDCG_K = 10


def question_metrics(
    by_k: Mapping[int, Sequence[Iterable[str]]], evidence: Sequence[str]
) -> dict[str, float]:
    """Every metric of one question: R@k and Hit@k for each k of ``by_k`` (the answer
    asked with that k), and MRR and nDCG@10 of the longest answer."""
    top = by_k[max(by_k)]
    metrics: dict[str, float] = {}
    for k, retrieved in sorted(by_k.items()):
        metrics[f"R@{k}"] = recall_at(retrieved, evidence, k)
    for k, retrieved in sorted(by_k.items()):
        metrics[f"Hit@{k}"] = hit_at(retrieved, evidence, k)
    metrics["MRR"] = reciprocal_rank(top, evidence)
    metrics[f"nDCG@{NDCG_K}"] = ndcg_at(top, evidence, NDCG_K)
    return metrics


# ------------------------------------------------------------------- statements
#
# Every statement this module runs is in pgmem.queries.eval, by name. The
# reciprocal rank fusion baseline (Q.BASELINE_RRF) takes these two:
BASELINE_POOL = 100  # as settings.candidate_pool's default
BASELINE_RRF_K = 60  # Cormack et al.'s constant


# --------------------------------------------------------------------- database


@contextmanager
def scratch_database(
    server_dsn: str, name: str = DEFAULT_DATABASE, *, keep: bool = False
) -> Iterator[str]:
    """A freshly created and migrated database on ``server_dsn``'s server; dropped afterwards.

    A database of that name left by an earlier run (``keep``) is dropped and recreated; one
    this module did not create is never touched.
    """
    with scratch.scratch_database(
        server_dsn, name, owner="pgmem eval", keep=keep, replace=True, error=EvalError
    ) as dsn:
        yield dsn


tenant_connection = scratch.tenant_connection


def vector_text(values: Sequence[float]) -> str:
    """A vector in pgvector's text form, for ``%s::public.vector``."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def embed_by_length(
    embedder: Embedder, texts: Sequence[str], *, query: bool = False
) -> list[list[float]]:
    """``embedder.embed(texts)`` (``embed_queries`` with ``query``), sent shortest first
    so each batch pads little.

    The embedder batches in the order given and pads a batch to its longest text;
    LoCoMo turns run from 3 to 100+ words, so in dialogue order most of a batch is padding.
    Sorted, the 4,124 dev turns embed about 2.5 times faster with all-MiniLM-L6-v2 on CPU.
    """
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    ordered = [texts[i] for i in order]
    vectors = embedder.embed_queries(ordered) if query else embedder.embed(ordered)
    out: list[list[float]] = [[] for _ in texts]
    for position, vector in zip(order, vectors, strict=True):
        out[position] = vector
    return out


@dataclass
class IngestStats:
    turns: int = 0
    memories: int = 0
    links: int = 0
    embed_seconds: float = 0.0
    store_seconds: float = 0.0


def session_id(conversation: Conversation, session: Session) -> str:
    return f"{conversation.sample_id}:session_{session.number}"


class TurnRow(NamedTuple):
    """One turn as it is stored: the staging row :func:`ingest` copies, and what
    :mod:`pgmem.lab.write_path` sends through ``Memory.add``."""

    subject: str  # the conversation's sample_id
    session_id: str
    session_no: int
    seq: int
    dia_id: str
    speaker: str
    content: str
    at: datetime  # the session's date


def turn_rows(conversations: Sequence[Conversation], *, captions: bool = False) -> list[TurnRow]:
    """Every turn, in conversation, session and turn order."""
    return [
        TurnRow(
            conversation.sample_id,
            session_id(conversation, session),
            session.number,
            seq,
            turn.dia_id,
            turn.speaker,
            turn.content(captions=captions),
            session.date,
        )
        for conversation in conversations
        for session in conversation.sessions
        for seq, turn in enumerate(session.turns)
    ]


def turn_vectors(
    conversations: Sequence[Conversation], embedder: Embedder, *, captions: bool = False
) -> list[list[float]]:
    """The passage vectors of every turn, in :func:`ingest`'s order: embedded once, they
    can be stored for several tenants (``ingest(..., vectors=...)``)."""
    texts = [row.content for row in turn_rows(conversations, captions=captions)]
    return embed_by_length(embedder, texts)


def ingest(
    conn: psycopg.Connection[dict[str, Any]],
    conversations: Sequence[Conversation],
    embedder: Embedder,
    *,
    captions: bool = False,
    vectors: Sequence[Sequence[float]] | None = None,
    links: str = "neighbours",
) -> IngestStats:
    """Store every turn as an episodic memory of its conversation (subject = sample_id).

    ``links``: ``neighbours`` links each turn to the turns before and after it (the
    eval's own links); ``write`` makes the links pgmem's write path makes
    (``pgmem._link_at_write``: same_session by similarity, bounded per memory).

    ``conn`` must have a tenant bound (see :func:`tenant_connection`). Rows are inserted
    set-wise, not through ``pgmem.remember``: its near-duplicate merging would fold short
    turns ("Thanks!") together, and the evaluation needs every turn findable by its id.
    What that path keeps of the turns is :mod:`pgmem.lab.write_path`'s measurement.
    The embedder's model is declared, and so recorded as the tenant's, as an
    application's first write records it: recall then reads its calibrated floor and
    similarity base as it would for that application.
    """
    stats = IngestStats()
    conn.execute(Q.DECLARE_MODEL, {"model": embedder.model})
    rows = turn_rows(conversations, captions=captions)
    stats.turns = len(rows)
    started = time.perf_counter()
    if vectors is None:  # given: the turns' vectors, from turn_vectors()
        vectors = turn_vectors(conversations, embedder, captions=captions)
    stats.embed_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with conn.transaction():
        conn.execute(Q.STAGE_TURNS)
        with conn.cursor().copy(Q.COPY_TURNS) as copy:
            for row, vector in zip(rows, vectors, strict=True):
                copy.write_row((*row, vector_text(vector)))
        conn.execute(Q.ANALYZE_TURNS)
        for statement in (
            Q.INSERT_SUBJECTS,
            Q.INSERT_MEMORIES,
            Q.MAP_TURNS,
            Q.LINK_AT_WRITE if links == "write" else Q.INSERT_LINKS,
            Q.INSERT_EVENTS,
        ):
            conn.execute(statement)
        counts = conn.execute(Q.COUNT_INGESTED).fetchone()
    stats.store_seconds = time.perf_counter() - started
    assert counts is not None
    stats.memories, stats.links = counts["memories"], counts["links"]
    return stats


# ------------------------------------------------------------------------ modes

# What ripple follows: the eval's neighbour links, or the write path's (ingest).
LINK_SOURCES = ("neighbours", "write")


@dataclass(frozen=True)
class Mode:
    """One way of asking: a statement (pgmem.recall or a baseline) and what it is given."""

    name: str
    description: str
    statement: str
    text: bool = True
    vector: bool = True
    hops: int = 0
    # Questions naming a date recall only memories created in its window
    # (p_since/p_until, see question_window); the others recall everything.
    time_window: bool = False
    # Relative times too ("last week", "two days ago"), read as of the probe's now
    # (pgmem.timeexpr.window), as Memory.search does.
    relative_time: bool = False


MODES: Mapping[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(
            "ts-rank",
            "baseline: PostgreSQL ts_rank over an OR of the question's terms",
            Q.BASELINE_TEXT,
            vector=False,
        ),
        Mode(
            "cosine",
            "baseline: exact cosine similarity to the question",
            Q.BASELINE_VECTOR,
            text=False,
        ),
        Mode(
            "rrf", "baseline: reciprocal rank fusion (k = 60) of ts-rank and cosine", Q.BASELINE_RRF
        ),
        Mode("text", "pgmem.recall, query text only (no embedding)", Q.RECALL, vector=False),
        Mode("vector", "pgmem.recall, embedding only (no query text)", Q.RECALL, text=False),
        Mode("hybrid", "pgmem.recall, query text and embedding", Q.RECALL),
        Mode(
            "hybrid-time",
            "hybrid; a question naming a date recalls within its window (p_since/p_until)",
            Q.RECALL,
            time_window=True,
        ),
        Mode(
            "hybrid-time-relative",
            "hybrid-time, relative times included (last week, two days ago) as of the probe's now",
            Q.RECALL,
            time_window=True,
            relative_time=True,
        ),
        Mode(
            "hybrid-ripple",
            "hybrid with ripple over session neighbours (p_hops => 1)",
            Q.RECALL,
            hops=1,
        ),
        Mode(
            "hybrid-ripple-time",
            "hybrid-ripple with the date windows of hybrid-time",
            Q.RECALL,
            hops=1,
            time_window=True,
        ),
    )
}


def settings_columns(conn: psycopg.Connection[Any]) -> list[str]:
    """Tunable columns of pgmem.settings."""
    return [r[0] for r in conn.execute(Q.SETTINGS_COLUMNS)]


def set_tenant_settings(
    admin: psycopg.Connection[Any], tenant: str, values: Mapping[str, object]
) -> None:
    """Set tenant settings (as the owner: applications cannot change their own).

    Names are checked against pgmem.settings' columns; values go as text for the server to
    read as the column's type, and its CHECK constraints reject what the engine would not.
    """
    if not values:
        return
    columns = settings_columns(admin)
    unknown = sorted(set(values) - set(columns))
    if unknown:
        raise EvalError(f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(columns)}")
    assignments = sql.SQL(", ").join(
        sql.SQL("{} = {}").format(sql.Identifier(name), sql.Placeholder(name)) for name in values
    )
    try:
        admin.execute(
            Q.UPDATE_SETTINGS.format(assignments, sql.Placeholder("tenant_id")),
            {**{k: str(v) for k, v in values.items()}, "tenant_id": tenant},
        )
    except (psycopg.errors.CheckViolation, psycopg.DataError) as exc:
        raise EvalError(f"settings {dict(values)} rejected: {exc.diag.message_primary}") from exc


# ----------------------------------------------------------------------- report


@dataclass
class ModeResult:
    mode: str
    description: str
    # category -> k -> mean recall@k; "overall" averages every question.
    recall: dict[str, dict[int, float]]
    questions: dict[str, int]
    seconds: float
    queries: int
    # Share of the memories in the first max(k) rows that ripple reached (hops > 0).
    ripple_share: float = 0.0
    # category -> metric name (R@k, Hit@k, MRR, nDCG@10) -> mean over its questions.
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "description": self.description,
            "recall": {
                cat: {f"R@{k}": round(v, 4) for k, v in by_k.items()}
                for cat, by_k in self.recall.items()
            },
            "metrics": {
                cat: {name: round(v, 4) for name, v in by_metric.items()}
                for cat, by_metric in self.metrics.items()
            },
            "questions": self.questions,
            "seconds": round(self.seconds, 2),
            "queries": self.queries,
            "ripple_share": round(self.ripple_share, 4),
        }


@dataclass
class Report:
    path: str
    conversations: int
    turns: int
    memories: int
    links: int
    questions: dict[str, int]
    skipped: dict[str, int]
    ks: tuple[int, ...]
    embedder: str
    embed_seconds: float
    store_seconds: float
    total_seconds: float
    settings: dict[str, object]
    results: list[ModeResult]
    # Who made the links ripple follows: "neighbours" (the eval) or "write" (pgmem).
    links_from: str = "neighbours"

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.path,
            "conversations": self.conversations,
            "turns": self.turns,
            "memories": self.memories,
            "links": self.links,
            "links_from": self.links_from,
            "questions": self.questions,
            "skipped": self.skipped,
            "ks": list(self.ks),
            "embedder": self.embedder,
            "seconds": {
                "embed": round(self.embed_seconds, 2),
                "store": round(self.store_seconds, 2),
                "total": round(self.total_seconds, 2),
            },
            "settings": {k: _jsonable(v) for k, v in self.settings.items()},
            "modes": [r.as_dict() for r in self.results],
        }


def setting_text(value: object) -> str:
    """A setting as a person writes it: ``7 days``, ``0.6``."""
    if isinstance(value, timedelta) and not value.seconds and not value.microseconds:
        return f"{value.days} day" + ("" if value.days == 1 else "s")
    return str(value)


def _jsonable(value: object) -> object:
    if isinstance(value, timedelta):
        return setting_text(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def category_label(category: int) -> str:
    return CATEGORY_NAMES.get(category, f"category-{category}")


# ------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class Probe:
    subject: str
    question: Question
    embedding: str  # pgvector text form
    now: datetime


def probes(conversations: Sequence[Conversation], embedder: Embedder) -> list[Probe]:
    """Every evaluated question with its query vector and its conversation's "now"."""
    asked = [(c, q) for c in conversations for q in evaluated_questions(c)]
    vectors = embed_by_length(embedder, [q.question for _, q in asked], query=True)
    # The day after the last session: the conversation's "now", so recency
    # is measured in its own time, not against today's date.
    return [
        Probe(c.sample_id, q, vector_text(v), c.last_date + timedelta(days=1))
        for (c, q), v in zip(asked, vectors, strict=True)
    ]


def _ask(
    conn: psycopg.Connection[dict[str, Any]], mode: Mode, probe: Probe, k: int
) -> list[tuple[list[str], int]]:
    """The first k memories' dia_ids and ripple hops (0 for a direct hit)."""
    window = _window(mode, probe)
    params = {
        "subject": probe.subject,
        "since": window[0] if window else None,
        "until": window[1] if window else None,
        "query": probe.question.question if mode.text else None,
        "embedding": probe.embedding if mode.vector else None,
        "k": k,
        "hops": mode.hops,
        "now": probe.now,
        "pool": BASELINE_POOL,
        "rrf_k": BASELINE_RRF_K,
    }
    rows = conn.execute(mode.statement, params).fetchall()
    return [(memory_dia_ids(row["metadata"]), row.get("hops") or 0) for row in rows[:k]]


def _window(mode: Mode, probe: Probe) -> tuple[datetime, datetime] | None:
    """The mode's p_since/p_until for a probe (None: no window)."""
    if not mode.time_window:
        return None
    if mode.relative_time:
        return timeexpr.window(probe.question.question, probe.now)
    return question_window(probe.question.question)


def run_mode(
    conn: psycopg.Connection[dict[str, Any]],
    mode: Mode,
    probes: Sequence[Probe],
    ks: Sequence[int] = KS,
) -> ModeResult:
    """Ask every probe in one mode and average each metric per category and overall.

    The ranking metrics (MRR, nDCG@10) read the longest answer, asked with at least
    k = 10 rows."""
    sums: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    queries = 0
    rippled = returned = 0
    started = time.perf_counter()
    asked = sorted(set(ks) | {max(max(ks), NDCG_K)})
    top = max(asked)
    for probe in probes:
        # Without ripple the first k rows of a top-K answer are the top-k answer
        # (same candidates, same order); ripple expands from the k hits, so it is
        # asked once per k.
        by_k: dict[int, list[tuple[list[str], int]]] = {}
        if mode.hops == 0:
            rows = _ask(conn, mode, probe, top)
            queries += 1
            by_k = {k: rows[:k] for k in asked}
        else:
            for k in asked:
                by_k[k] = _ask(conn, mode, probe, k)
                queries += 1
        returned += len(by_k[max(ks)])
        rippled += sum(1 for _, hops in by_k[max(ks)] if hops > 0)
        metrics = question_metrics(
            {k: [ids for ids, _ in rows] for k, rows in by_k.items()}, probe.question.evidence
        )
        # Only the k asked for are reported (a k = 10 answer asked for nDCG@10 is not).
        metrics = {
            name: value
            for name, value in metrics.items()
            if not name.startswith(("R@", "Hit@")) or int(name.partition("@")[2]) in ks
        }
        for label in (category_label(probe.question.category), "overall"):
            counts[label] = counts.get(label, 0) + 1
            bucket = sums.setdefault(label, dict.fromkeys(metrics, 0.0))
            for name, value in metrics.items():
                bucket[name] += value
    seconds = time.perf_counter() - started
    order = [category_label(c) for c in sorted(CATEGORY_NAMES)] + ["overall"]
    means = {
        label: {name: total / counts[label] for name, total in sums[label].items()}
        for label in order
        if label in sums
    }
    return ModeResult(
        mode=mode.name,
        description=mode.description,
        recall={label: {k: m[f"R@{k}"] for k in ks} for label, m in means.items()},
        questions={label: counts[label] for label in means},
        seconds=seconds,
        queries=queries,
        ripple_share=rippled / returned if returned else 0.0,
        metrics=means,
    )


def question_counts(
    conversations: Sequence[Conversation],
) -> tuple[dict[str, int], dict[str, int]]:
    """Questions asked, and questions skipped (adversarial, no evidence), per category."""
    asked: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for conversation in conversations:
        for q in conversation.questions:
            label = category_label(q.category)
            if q.category in SKIPPED_CATEGORIES:
                skipped[label] = skipped.get(label, 0) + 1
            elif not q.evidence:
                skipped["no-evidence"] = skipped.get("no-evidence", 0) + 1
            else:
                asked[label] = asked.get(label, 0) + 1
    return asked, skipped


def evaluate(
    dsn: str,
    conversations: Sequence[Conversation],
    embedder: Embedder,
    *,
    modes: Sequence[str] | None = None,
    settings: Mapping[str, object] | None = None,
    ks: Sequence[int] = KS,
    captions: bool = False,
    tenant: str = TENANT,
    path: str = "",
    links: str = "neighbours",
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Ingest ``conversations`` into the migrated database ``dsn`` and measure ``modes``.

    ``dsn`` must be a superuser (or pgmem_admin member able to SET ROLE pgmem_service):
    it creates the tenant and sets its ``settings``; everything else runs as the tenant.
    """
    modes = list(MODES) if modes is None else list(modes)
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise EvalError(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(MODES)}")
    if not ks or any(k < 1 or k > 1000 for k in ks):
        raise EvalError("k must be between 1 and 1000")
    if links not in LINK_SOURCES:
        raise EvalError(f"unknown link source {links!r}; known: {', '.join(LINK_SOURCES)}")
    ks = tuple(sorted(set(ks)))
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(AQ.CREATE_TENANT, {"tenant": tenant, "display_name": "pgmem eval (LoCoMo)"})
        set_tenant_settings(admin, tenant, settings or {})
        with tenant_connection(dsn, tenant) as conn:
            say(f"embedding and storing {sum(c.turns for c in conversations)} turns")
            stats = ingest(conn, conversations, embedder, captions=captions, links=links)
            admin.execute(Q.ANALYZE_MEMORIES_AND_LINKS)
            say("embedding the questions")
            embed_started = time.perf_counter()
            asked_probes = probes(conversations, embedder)
            stats.embed_seconds += time.perf_counter() - embed_started
            effective = (
                admin.cursor(row_factory=dict_row)
                .execute(Q.SETTINGS_OF_TENANT, {"tenant": tenant})
                .fetchone()
                or {}
            )
            results = []
            for name in modes:
                mode = MODES[name]
                say(f"mode {name}: {len(asked_probes)} questions")
                results.append(run_mode(conn, mode, asked_probes, ks))
    asked, skipped = question_counts(conversations)
    columns = (
        "w_relevance",
        "w_importance",
        "w_recency",
        "w_access",
        "half_life_episodic",
        "ripple_damping",
        "ripple_limit",
        "max_links_per_memory",
        "candidate_pool",
        "exact_scan_limit",
    )
    return Report(
        path=path,
        conversations=len(conversations),
        turns=stats.turns,
        memories=stats.memories,
        links=stats.links,
        questions=asked,
        skipped=skipped,
        ks=ks,
        embedder=f"{embedder.model} ({embedder.dims} dims)",
        embed_seconds=stats.embed_seconds,
        store_seconds=stats.store_seconds,
        total_seconds=time.perf_counter() - started,
        settings={c: effective.get(c) for c in columns if c in effective},
        results=results,
        links_from=links,
    )


class _Timed(Protocol):
    total_seconds: float


_R = TypeVar("_R", bound=_Timed)


def run_in_scratch(
    evaluate_fn: Callable[..., _R],
    server_dsn: str,
    path: Path | str,
    embedder: Embedder,
    *,
    database: str = DEFAULT_DATABASE,
    keep: bool = False,
    limit_conversations: int | None = None,
    **options: Any,
) -> _R:
    """Load ``path`` and run ``evaluate_fn(dsn, conversations, embedder, path=…, **options)``
    in a scratch database on ``server_dsn``'s server, dropped afterwards (unless ``keep``);
    the report's ``total_seconds`` counts the database's creation too."""
    conversations = load_locomo(path, limit=limit_conversations)
    started = time.perf_counter()
    with scratch_database(server_dsn, database, keep=keep) as dsn:
        report = evaluate_fn(dsn, conversations, embedder, path=str(path), **options)
    report.total_seconds = time.perf_counter() - started
    return report


def run_locomo(server_dsn: str, path: Path | str, embedder: Embedder, **options: Any) -> Report:
    """Load ``path``, evaluate it in a scratch database on ``server_dsn``'s server, drop it
    (``database``, ``keep``, ``limit_conversations``: :func:`run_in_scratch`)."""
    return run_in_scratch(evaluate, server_dsn, path, embedder, **options)
