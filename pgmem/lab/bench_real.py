"""`pgmem bench --data locomo`: pgmem on real conversation text beside a plain pgvector baseline.

The LoCoMo dev turns (``speaker: text``) and questions are embedded once per run
with the given embedder (the local MiniLM in ``pgmem bench``); every scale point
reuses those vectors. Each point gets a database of its own in which

* one tenant ``bench`` has ``memories / per_subject`` subjects; subject s holds
  ``per_subject`` distinct consecutive turns starting where conversation
  ``s mod conversations`` starts (running into the next one), bulk-loaded
  set-wise with the indexes dropped and rebuilt, rows of all subjects
  interleaved in the heap, no effective importance precomputed;
* the **baseline** is a plain table (tenant, subject, content, embedding
  vector(384)) with a btree on (tenant, subject), filled with the same rows,
  searched by exact cosine top-10 within the subject.

Then, in this order (the later steps change the data), each for pgmem and the
baseline on the same subjects and questions of the subject's conversation:

1. bytes per memory (table + indexes; events and inbox are measured after the writes);
2. search latency server-side (``EXPLAIN ANALYZE`` execution time): hybrid
   ``pgmem.recall`` with the real question's text and vector, k = 10,
   reinforcement on, as ``pgmem_service`` with the tenant bound (RLS on),
   against the baseline's exact scan;
3. search latency client-side over the same connection kind: the statement's
   round trip on a session-bound connection, and the :class:`~pgmem.Memory`
   client's ``search`` (pooled connections, the tenant bound once per
   connection) and with ``conn=`` (a transaction and a tenant binding per call);
   client minus server is the client's own overhead per call;
4. a concurrency mix: ``clients`` threads with a connection each, 70% search /
   30% single writes with precomputed vectors, over loopback: throughput, each
   connection warmed first by one search and one write (not counted);
5. batched writes: ``pgmem.remember_many`` in batches of ``batch`` against one
   multi-row INSERT per batch, memories/s;
6. single writes, one per transaction: ``pgmem.remember`` against one INSERT,
   client-side latency;
7. episodes: turns stored as the worker stores what a user said (source
   ``turn``, in sessions of ``EPISODES_PER_SESSION``), batched through
   ``pgmem.remember_many`` against the multi-row INSERT, then one per
   transaction through ``pgmem.remember`` against one INSERT, server-side;
8. the decay pass (then archive) on the fresh import, and an hour later: the
   hourly pass is timed twice, right after the first archive pass (whose
   updates left dead row versions and unset hint bits behind) and after the
   VACUUM that autovacuum runs in the hour between (timed too); the target
   reads the second, the steady state of the hourly job.

Each pgmem figure is reported with its ratio to the baseline's, the absolute
numbers, and the load average before and after the point.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg.types.numeric import Int8

from pgmem import schema
from pgmem.client import Memory
from pgmem.embed import Embedder
from pgmem.lab import bench
from pgmem.lab.bench import BenchError, Latency, Progress, bench_database, explain_ms
from pgmem.lab.eval import (
    EvalError,
    embed_by_length,
    evaluated_questions,
    load_locomo,
    vector_text,
)
from pgmem.lab.scratch import drop_database, tenant_connection
from pgmem.queries import bench as SQ
from pgmem.queries import bench_layers as LQ
from pgmem.queries import bench_real as Q
from pgmem.queries import eval as EQ

# Relative to the working directory, as in a checkout beside the shared data.
DEFAULT_DATA = Path("../shared/data/locomo-dev.json")
TENANT = bench.TENANT
PER_SUBJECT = bench.PER_SUBJECT
SEED = 12

# Scale targets, checked at every point (they are set for 10k to 1M memories).
TARGET_RECALL_VS_BASELINE_P95 = 1.5  # pgmem recall p95 <= 1.5x the baseline's exact scan
TARGET_RECALL_P95_MS = 10.0  # server-side
TARGET_MIX_VS_BASELINE = 0.8  # concurrency mix throughput >= 0.8x the baseline's
TARGET_FACTS_PER_S = 500.0  # remember_many of facts (the decision ladder), batched
TARGET_EPISODES_PER_S = 2_000.0  # remember_many of stated turns, batched
TARGET_EPISODES_VS_BASELINE = 1.0  # ... at least the baseline's multi-row INSERT
TARGET_EPISODE_P50_MS = 5.0  # one stated turn, server-side
EPISODES_PER_SESSION = 25
TARGET_BYTES_PER_MEMORY = 3 * 1024
MIX_WARMUP = 2  # a search and a write per client before the mix's clock starts
TARGET_DECAY_FIRST_S = 30.0
TARGET_DECAY_HOURLY_S = 5.0


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Probe:
    """A question of one conversation, with its vector."""

    conversation: int
    text: str
    embedding: list[float]


@dataclass(frozen=True)
class RealText:
    """The run's text: unique turns in conversation order, where each conversation
    starts among them, and the questions; all embedded once, by ``model``."""

    model: str
    turns: list[str]
    turn_vectors: list[list[float]]
    starts: list[int]
    probes: list[Probe]
    embed_s: float

    @classmethod
    def load(cls, path: Path | str, embedder: Embedder) -> RealText:
        try:
            conversations = load_locomo(path)
        except EvalError as exc:
            raise BenchError(str(exc)) from None
        turns: list[str] = []
        seen: set[str] = set()
        starts: list[int] = []
        for conversation in conversations:
            starts.append(len(turns))
            for session in conversation.sessions:
                for turn in session.turns:
                    content = turn.content()
                    if content not in seen:
                        seen.add(content)
                        turns.append(content)
        questions = [
            (c, q.question)
            for c, conversation in enumerate(conversations)
            for q in evaluated_questions(conversation)
        ]
        if not turns or not questions:
            raise BenchError(f"{path}: no turns or no questions to benchmark with")
        started = time.perf_counter()
        vectors = embed_by_length(embedder, turns)
        asked = embed_by_length(embedder, [text for _, text in questions], query=True)
        embed_s = time.perf_counter() - started
        probes = [
            Probe(c, text, vector) for (c, text), vector in zip(questions, asked, strict=True)
        ]
        return cls(embedder.model, turns, vectors, starts, probes, embed_s)

    def subject_turn(self, subject: int, position: int) -> int:
        """Index of the turn at ``position`` of subject ``subject`` (as GENERATE_MEMORIES)."""
        return (self.starts[subject % len(self.starts)] + position) % len(self.turns)

    def vector_of(self) -> dict[str, list[float]]:
        """Text -> vector for every turn and question (the precomputed embedder's table)."""
        table = dict(zip(self.turns, self.turn_vectors, strict=True))
        table.update((p.text, p.embedding) for p in self.probes)
        return table


class PrecomputedEmbedder:
    """The run's vectors, looked up by text: the client pays no model time in the bench."""

    def __init__(self, table: dict[str, list[float]], dims: int, model: str) -> None:
        self._table = table
        self.dims = dims
        self.model = model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._table[t] for t in texts]

    def embed_one(self, text: str) -> list[float]:
        return self._table[text]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._table[text]


# ------------------------------------------------------------------------ results


@dataclass
class Side:
    """One system's figures at a point (pgmem or the baseline)."""

    search_server_ms: Latency
    search_client_ms: Latency
    mix_per_s: float
    mix_ops: int
    insert_many_per_s: float
    insert_single_ms: Latency
    episode_many_per_s: float
    episode_single_ms: Latency  # server-side
    bytes_per_memory: float


@dataclass
class RealPointResult:
    scale: int
    memories: int
    subjects: int
    per_subject: int
    embedding_model: str  # the tenant's, as recorded when the run declared it
    load_s: float
    index_s: float
    pgmem: Side
    baseline: Side
    memory_search_ms: Latency  # Memory.search, pooled (tenant bound once per connection)
    memory_search_conn_ms: Latency  # Memory.search with conn=: transaction + binding per call
    clients: int
    remembered: int
    remember_actions: dict[str, int]
    episode_actions: dict[str, int]
    # The batched episodes' links, made afterwards as the worker or the links job makes
    # them (pgmem.link_episodes): the part of a stated turn's cost that moved off its write.
    episodes_linked_per_s: float
    table_bytes_per_memory: float
    index_bytes_per_memory: float
    decay_bytes_per_memory: float  # pgmem.memory_decay after the decay passes
    event_bytes_per_event: float
    event_bytes_per_memory: float
    inbox_bytes: int
    decay_first_s: float
    archive_first_s: float
    decayed_first: int
    decay_hourly_s: float  # after the VACUUM autovacuum runs in the hour between
    archive_hourly_s: float
    decayed_hourly: int
    decay_unvacuumed_s: float  # the same hourly pass, right after the first archive pass
    vacuum_s: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    maintenance_measured: bool = True
    notes: list[str] = field(default_factory=list)

    def ratios(self) -> dict[str, float | None]:
        """pgmem / baseline for each paired figure (for throughputs, > 1 is pgmem faster)."""
        p, b = self.pgmem, self.baseline
        return {
            "search_server_p50": _ratio(p.search_server_ms.p50, b.search_server_ms.p50),
            "search_server_p95": _ratio(p.search_server_ms.p95, b.search_server_ms.p95),
            "search_server_p99": _ratio(p.search_server_ms.p99, b.search_server_ms.p99),
            "search_client_p50": _ratio(p.search_client_ms.p50, b.search_client_ms.p50),
            "search_client_p95": _ratio(p.search_client_ms.p95, b.search_client_ms.p95),
            "search_client_p99": _ratio(p.search_client_ms.p99, b.search_client_ms.p99),
            "mix_per_s": _ratio(p.mix_per_s, b.mix_per_s),
            "insert_many_per_s": _ratio(p.insert_many_per_s, b.insert_many_per_s),
            "insert_single_p50": _ratio(p.insert_single_ms.p50, b.insert_single_ms.p50),
            "insert_single_p95": _ratio(p.insert_single_ms.p95, b.insert_single_ms.p95),
            "episode_many_per_s": _ratio(p.episode_many_per_s, b.episode_many_per_s),
            "episode_single_p50": _ratio(p.episode_single_ms.p50, b.episode_single_ms.p50),
            "bytes_per_memory": _ratio(p.bytes_per_memory, b.bytes_per_memory),
        }

    def client_overhead_ms(self) -> dict[str, float]:
        """Client-side minus server-side recall at p50: what each way of calling adds."""
        server = self.pgmem.search_server_ms.p50
        return {
            "statement": self.pgmem.search_client_ms.p50 - server,
            "memory_pooled": self.memory_search_ms.p50 - server,
            "memory_conn_per_call_transaction": self.memory_search_conn_ms.p50 - server,
            "baseline_statement": self.baseline.search_client_ms.p50
            - self.baseline.search_server_ms.p50,
        }

    def targets(self) -> dict[str, bool | None]:
        """The issue's targets: met, not met, or None when not measured."""
        ratio = self.ratios()
        measured = self.maintenance_measured
        return {
            "recall p95 <= 1.5x baseline (server-side)": _at_most(
                ratio["search_server_p95"], TARGET_RECALL_VS_BASELINE_P95
            ),
            "recall p95 <= 10 ms (server-side)": self.pgmem.search_server_ms.p95
            <= TARGET_RECALL_P95_MS,
            "concurrency mix >= 0.8x baseline": (
                None if ratio["mix_per_s"] is None else ratio["mix_per_s"] >= TARGET_MIX_VS_BASELINE
            ),
            "episode ingest >= 1x baseline": (
                None
                if ratio["episode_many_per_s"] is None
                else ratio["episode_many_per_s"] >= TARGET_EPISODES_VS_BASELINE
            ),
            "episode ingest >= 2,000/s": self.pgmem.episode_many_per_s >= TARGET_EPISODES_PER_S,
            "fact writes >= 500/s": self.pgmem.insert_many_per_s >= TARGET_FACTS_PER_S,
            "single episode p50 <= 5 ms (server-side)": self.pgmem.episode_single_ms.p50
            <= TARGET_EPISODE_P50_MS,
            "bytes/memory <= 3 KB (table + indexes + decay)": self.pgmem.bytes_per_memory
            <= TARGET_BYTES_PER_MEMORY,
            "first decay pass <= 30 s": (
                self.decay_first_s <= TARGET_DECAY_FIRST_S if measured else None
            ),
            "hourly decay pass <= 5 s": (
                self.decay_hourly_s <= TARGET_DECAY_HOURLY_S if measured else None
            ),
        }

    def summary(self) -> str:
        p, b = self.pgmem, self.baseline
        ratio = self.ratios()
        return (
            f"{self.scale:,} real text: recall p95 {p.search_server_ms.p95:.1f} ms "
            f"(baseline {b.search_server_ms.p95:.1f}, x{_fmt_ratio(ratio['search_server_p95'])}), "
            f"mix {p.mix_per_s:,.0f}/s (baseline {b.mix_per_s:,.0f}), "
            f"remember_many {p.insert_many_per_s:,.0f}/s, "
            f"remember p95 {p.insert_single_ms.p95:.1f} ms, "
            f"episodes {p.episode_many_per_s:,.0f}/s (baseline {b.episode_many_per_s:,.0f}), "
            f"one episode p50 {p.episode_single_ms.p50:.1f} ms"
        )

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ratios"] = self.ratios()
        d["client_overhead_ms"] = self.client_overhead_ms()
        d["targets"] = self.targets()
        return d


def _ratio(pgmem: float, baseline: float) -> float | None:
    return pgmem / baseline if baseline > 0 else None


def _at_most(value: float | None, limit: float) -> bool | None:
    return None if value is None else value <= limit


def _fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


# ------------------------------------------------------------------------ running


def _quiet(_: str) -> None:
    return None


def run(
    server_dsn: str,
    scales: Sequence[int],
    data: RealText,
    *,
    per_subject: int = PER_SUBJECT,
    queries: int = 200,
    remember: int = 5_000,
    batch: int = 500,
    singles: int = 200,
    clients: int = 16,
    mix_ops: int = 50,
    database: str = "pgmem_bench",
    keep: bool = False,
    maintenance: bool = True,
    progress: Progress = _quiet,
) -> list[RealPointResult]:
    """Every scale point in turn, each in a fresh database named ``database``."""
    if per_subject > len(data.turns):
        raise BenchError(
            f"{per_subject:,} memories per subject need as many distinct turns; "
            f"the data has {len(data.turns):,}"
        )
    results = []
    for memories in scales:
        if memories < per_subject:
            raise BenchError(f"a scale point needs at least {per_subject:,} memories")
        with bench_database(server_dsn, database, keep=keep) as dsn:
            results.append(
                run_point(
                    dsn,
                    memories,
                    data,
                    per_subject=per_subject,
                    queries=queries,
                    remember=remember,
                    batch=batch,
                    singles=singles,
                    clients=clients,
                    mix_ops=mix_ops,
                    maintenance=maintenance,
                    progress=progress,
                )
            )
            progress(results[-1].summary())
        if keep and memories != scales[-1]:
            drop_database(server_dsn, database)
    return results


def run_point(
    dsn: str,
    memories: int,
    data: RealText,
    *,
    per_subject: int = PER_SUBJECT,
    queries: int = 200,
    remember: int = 5_000,
    batch: int = 500,
    singles: int = 200,
    clients: int = 16,
    mix_ops: int = 50,
    maintenance: bool = True,
    progress: Progress = _quiet,
) -> RealPointResult:
    """Load one point into the (empty) database at ``dsn`` and measure pgmem and the baseline."""
    say = progress
    label = f"{memories:,} real text"
    load_before = os.getloadavg()
    subjects = max(1, memories // per_subject)
    say(f"{label}: migrating")
    schema.upgrade(dsn)
    rng = random.Random(SEED)
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        say(f"{label}: loading {subjects * per_subject:,} memories and the baseline")
        load_s, index_s = _load(conn, data, subjects, per_subject)
        sizes = conn.execute(Q.SIZES).fetchone()
        assert sizes is not None
        now = conn.execute(LQ.NOW).fetchone()["now"]  # type: ignore[index]
    # The tenant's vectors are the model's, as an application's first write
    # records: its thresholds, relevance floor and similarity base apply.
    with tenant_connection(dsn, TENANT) as conn:
        declared = conn.execute(EQ.DECLARE_MODEL, {"model": data.model}).fetchone()
        assert declared is not None
        embedding_model = declared["model"]

    asks = [_ask(data, rng.randrange(subjects), rng) for _ in range(queries + 20)]
    # New memories for existing subjects: turns just past the ones each holds.
    fresh = [_fresh(data, subjects, per_subject, i, rng) for i in range(remember + singles)]
    many, single = fresh[:remember], fresh[remember:]
    # Stated turns of their own draw, so the figures above keep their inputs.
    turns_rng = random.Random(SEED + 1)
    stated = _stated(
        [
            _fresh(data, subjects, per_subject, remember + singles + i, turns_rng)
            for i in range(remember + singles)
        ]
    )
    episodes, episode_single = stated[:remember], stated[remember:]
    # Each client's plan starts with one search and one write that are not
    # timed: the mix measures connections as a pool keeps them, with their
    # plans made (a session's first remember costs several times the next).
    mix_plans = [
        [
            ("search", _ask(data, r.randrange(subjects), r)),
            ("write", _fresh(data, subjects, per_subject, r.randrange(10**6), r)),
        ]
        + [
            ("search", _ask(data, r.randrange(subjects), r))
            if r.random() < 0.7
            else ("write", _fresh(data, subjects, per_subject, r.randrange(10**6), r))
            for _ in range(mix_ops)
        ]
        for r in (random.Random(SEED + c) for c in range(clients))
    ]

    say(f"{label}: search latency, server-side ({queries} questions)")
    with tenant_connection(dsn, TENANT) as conn:
        for a in asks[:20]:  # warm plans and caches
            explain_ms(conn, Q.RECALL_EXPLAIN, a)
            explain_ms(conn, Q.BASELINE_SEARCH_EXPLAIN, a)
        pgmem_server = [explain_ms(conn, Q.RECALL_EXPLAIN, a) for a in asks[20:]]
        baseline_server = [explain_ms(conn, Q.BASELINE_SEARCH_EXPLAIN, a) for a in asks[20:]]

    say(f"{label}: search latency, client-side")
    with tenant_connection(dsn, TENANT) as conn:
        pgmem_client = [_timed(conn, Q.RECALL, a) for a in asks[20:]]
        baseline_client = [_timed(conn, Q.BASELINE_SEARCH, a) for a in asks[20:]]
    embedder = PrecomputedEmbedder(data.vector_of(), schema.DEFAULT_DIMS, data.model)
    with Memory(_service_dsn(dsn), tenant=TENANT, embedder=embedder, llm=False) as memory:
        memory_pooled = [_timed_search(memory, a) for a in asks[20:]]
    with psycopg.connect(_service_dsn(dsn), autocommit=True) as conn:
        memory = Memory(conn=conn, tenant=TENANT, embedder=embedder, llm=False)
        memory_conn = [_timed_search(memory, a) for a in asks[20:]]

    say(f"{label}: concurrency mix ({clients} clients x {mix_ops}, 70% search / 30% write)")
    pgmem_mix = _mix(dsn, mix_plans, search=Q.RECALL, write=Q.REMEMBER)
    baseline_mix = _mix(dsn, mix_plans, search=Q.BASELINE_SEARCH, write=Q.BASELINE_INSERT)

    say(f"{label}: batched writes ({len(many):,} memories, batches of {batch})")
    actions: dict[str, int] = {}
    with tenant_connection(dsn, TENANT) as conn:
        pgmem_many_s, baseline_many_s = _batched(conn, [_item(w) for w in many], batch, actions)

        say(f"{label}: single writes ({len(single)} each, one per transaction)")
        pgmem_single = [_timed(conn, Q.REMEMBER, w) for w in single]
        baseline_single = [_timed(conn, Q.BASELINE_INSERT, w) for w in single]

        say(f"{label}: episodes ({len(episodes):,} stated turns, batches of {batch})")
        episode_actions: dict[str, int] = {}
        pgmem_episodes_s, baseline_episodes_s = _batched(
            conn, [_item_of(w) for w in episodes], batch, episode_actions
        )
        say(f"{label}: linking the batched episodes afterwards")
        started = time.perf_counter()
        linked = conn.execute(Q.LINK_EPISODES).fetchone()
        link_s = time.perf_counter() - started
        assert linked is not None
        say(f"{label}: single episodes ({len(episode_single)} each, server-side)")
        pgmem_episode = [explain_ms(conn, Q.REMEMBER_EPISODE_EXPLAIN, w) for w in episode_single]
        baseline_episode = [
            explain_ms(conn, Q.BASELINE_INSERT_EXPLAIN, _wire(Q.BASELINE_INSERT, w))
            for w in episode_single
        ]

    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        after = conn.execute(Q.SIZES).fetchone()
        assert after is not None
    passes = [(0.0, 0)] * 4
    unvacuumed, vacuum_s = (0.0, 0), 0.0
    decay_bytes = 0
    if maintenance:
        with psycopg.connect(dsn, autocommit=True) as conn:  # superuser: every tenant
            say(f"{label}: decay + archive, first and hourly pass")
            conn.execute(SQ.JIT_OFF)
            later = now + timedelta(hours=1)
            first = [
                bench._timed_count(conn, SQ.DECAY, now),
                bench._timed_count(conn, SQ.ARCHIVE, now),
            ]
            unvacuumed = bench._timed_count(conn, SQ.DECAY, later)
            started = time.perf_counter()
            conn.execute(SQ.VACUUM_MEMORIES)
            vacuum_s = time.perf_counter() - started
            passes = [
                *first,
                bench._timed_count(conn, SQ.DECAY, later),
                bench._timed_count(conn, SQ.ARCHIVE, later),
            ]
            decay_bytes = int(conn.execute(Q.DECAY_SIZE).fetchone()[0])  # type: ignore[index]
    (decay_first_s, decayed_first), (archive_first_s, _) = passes[:2]
    (decay_hourly_s, _), (archive_hourly_s, _) = passes[2:]
    decayed_hourly = unvacuumed[1]  # the second pass repeats it: nothing left to write

    loaded = int(sizes["memories"])
    events = int(after["events"])
    # A memory's stored effective importance counts as part of it.
    memory_bytes = (sizes["table_bytes"] + sizes["index_bytes"] + decay_bytes) / loaded
    return RealPointResult(
        scale=memories,
        memories=loaded,
        subjects=subjects,
        per_subject=per_subject,
        embedding_model=embedding_model,
        load_s=load_s,
        index_s=index_s,
        pgmem=Side(
            search_server_ms=Latency.of(pgmem_server),
            search_client_ms=Latency.of(pgmem_client),
            mix_per_s=pgmem_mix[0],
            mix_ops=pgmem_mix[1],
            insert_many_per_s=len(many) / pgmem_many_s if pgmem_many_s else 0.0,
            insert_single_ms=Latency.of(pgmem_single),
            episode_many_per_s=len(episodes) / pgmem_episodes_s if pgmem_episodes_s else 0.0,
            episode_single_ms=Latency.of(pgmem_episode),
            bytes_per_memory=memory_bytes,
        ),
        baseline=Side(
            search_server_ms=Latency.of(baseline_server),
            search_client_ms=Latency.of(baseline_client),
            mix_per_s=baseline_mix[0],
            mix_ops=baseline_mix[1],
            insert_many_per_s=len(many) / baseline_many_s if baseline_many_s else 0.0,
            insert_single_ms=Latency.of(baseline_single),
            episode_many_per_s=len(episodes) / baseline_episodes_s if baseline_episodes_s else 0.0,
            episode_single_ms=Latency.of(baseline_episode),
            bytes_per_memory=sizes["baseline_bytes"] / int(sizes["baseline_rows"]),
        ),
        memory_search_ms=Latency.of(memory_pooled),
        memory_search_conn_ms=Latency.of(memory_conn),
        clients=clients,
        remembered=len(many),
        remember_actions=actions,
        episode_actions=episode_actions,
        episodes_linked_per_s=int(linked["episodes"]) / link_s if link_s else 0.0,
        table_bytes_per_memory=sizes["table_bytes"] / loaded,
        index_bytes_per_memory=sizes["index_bytes"] / loaded,
        decay_bytes_per_memory=decay_bytes / loaded,
        event_bytes_per_event=after["event_bytes"] / events if events else 0.0,
        event_bytes_per_memory=after["event_bytes"] / int(after["memories"]),
        inbox_bytes=int(after["inbox_bytes"]),
        decay_first_s=decay_first_s,
        archive_first_s=archive_first_s,
        decayed_first=decayed_first,
        decay_hourly_s=decay_hourly_s,
        archive_hourly_s=archive_hourly_s,
        decayed_hourly=decayed_hourly,
        decay_unvacuumed_s=unvacuumed[0],
        vacuum_s=vacuum_s,
        load_before=load_before,
        load_after=os.getloadavg(),
        maintenance_measured=maintenance,
    )


def _load(
    conn: psycopg.Connection[Any], data: RealText, subjects: int, per_subject: int
) -> tuple[float, float]:
    """Bulk-load pgmem (indexes rebuilt afterwards) and the baseline; seconds for each part."""
    params = {
        "tenant": TENANT,
        "subjects": Int8(subjects),
        "per_subject": Int8(per_subject),
        "conversations": Int8(len(data.starts)),
        "turns": Int8(len(data.turns)),
        "starts": data.starts,
    }
    conn.execute(Q.STAGE_TURNS)
    with conn.cursor().copy(Q.COPY_TURNS) as copy:
        for n, (content, vector) in enumerate(zip(data.turns, data.turn_vectors, strict=True)):
            copy.write_row((n, content, vector_text(vector)))
    conn.execute(LQ.CREATE_TENANT, params)
    conn.execute(LQ.CREATE_SUBJECTS, params)
    indexes = conn.execute(SQ.SECONDARY_INDEXES).fetchall()
    for index in indexes:
        conn.execute(SQ.DROP_INDEX.format(sql.Identifier(index["name"])))
    started = time.perf_counter()
    now = conn.execute(LQ.NOW).fetchone()["now"]  # type: ignore[index]
    conn.execute(Q.GENERATE_MEMORIES, {**params, "now": now})
    conn.execute(Q.CREATE_BASELINE)
    conn.execute(Q.GRANT_BASELINE)
    conn.execute(Q.FILL_BASELINE)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    conn.execute(SQ.RAISE_MAINTENANCE_WORK_MEM)
    for index in indexes:
        conn.execute(index["definition"])
    conn.execute(Q.INDEX_BASELINE)
    conn.execute(SQ.RESET_MAINTENANCE_WORK_MEM)
    index_s = time.perf_counter() - started
    conn.execute(SQ.VACUUM_MEMORIES)
    conn.execute(Q.VACUUM_BASELINE)
    return load_s, index_s


def _ask(data: RealText, subject: int, rng: random.Random) -> dict[str, Any]:
    """A question of the subject's own conversation."""
    conversation = subject % len(data.starts)
    own = [p for p in data.probes if p.conversation == conversation] or data.probes
    probe = rng.choice(own)
    return {
        "tenant": TENANT,
        "subject": f"user-{subject}",
        "text": probe.text,
        "embedding": vector_text(probe.embedding),
    }


def _fresh(
    data: RealText, subjects: int, per_subject: int, n: int, rng: random.Random
) -> dict[str, Any]:
    """A turn the subject does not hold yet (the ones just past its window), as a write."""
    subject = rng.randrange(subjects)
    turn = data.subject_turn(subject, per_subject + n % max(1, len(data.turns) - per_subject))
    return {
        "tenant": TENANT,
        "subject": f"user-{subject}",
        "content": data.turns[turn],
        "embedding": data.turn_vectors[turn],
    }


def _item(write: dict[str, Any]) -> dict[str, Any]:
    """A remember_many item for a write."""
    return {
        "subject": write["subject"],
        "content": write["content"],
        "embedding": write["embedding"],
        "kind": "episodic",
        "source": "import",
    }


def _item_of(turn: dict[str, Any]) -> dict[str, Any]:
    """A remember_many item for a stated turn (the tenant is the connection's)."""
    return {k: v for k, v in turn.items() if k != "tenant"}


def _stated(writes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The writes as stated turns: items of remember_many and parameters of
    pgmem.remember, each subject's turns in sessions of EPISODES_PER_SESSION."""
    said: dict[str, int] = {}
    turns = []
    for w in writes:
        n = said[w["subject"]] = said.get(w["subject"], -1) + 1
        turns.append(
            {
                **w,
                "kind": "episodic",
                "source": "turn",
                "session_id": f"session-{n // EPISODES_PER_SESSION}",
            }
        )
    return turns


def _batched(
    conn: psycopg.Connection[Any],
    items: Sequence[dict[str, Any]],
    batch: int,
    actions: dict[str, int],
) -> tuple[float, float]:
    """Seconds to store ``items`` through remember_many, then the same rows through the
    baseline's multi-row INSERT, in batches of ``batch``; remember_many's actions are
    counted into ``actions``."""
    started = time.perf_counter()
    for i in range(0, len(items), batch):
        for row in conn.execute(SQ.REMEMBER_MANY, {"items": Jsonb(list(items[i : i + batch]))}):
            actions[row["action"]] = actions.get(row["action"], 0) + int(row["n"])
    pgmem_s = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(0, len(items), batch):
        conn.execute(Q.BASELINE_INSERT_MANY, _baseline_batch(items[i : i + batch]))
    return pgmem_s, time.perf_counter() - started


def _baseline_batch(writes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "tenant": TENANT,
        "subjects": [w["subject"] for w in writes],
        "contents": [w["content"] for w in writes],
        "embeddings": [vector_text(w["embedding"]) for w in writes],
    }


def _service_dsn(dsn: str) -> str:
    """``dsn`` acting as pgmem_service from the start (as an application connects)."""
    return make_conninfo(dsn, options="-c role=pgmem_service")


def _timed(conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> float:
    """Client-side milliseconds of one statement (its own transaction), rows fetched."""
    started = time.perf_counter()
    conn.execute(statement, _wire(statement, params)).fetchall()
    return (time.perf_counter() - started) * 1000


def _timed_search(memory: Memory, ask: dict[str, Any]) -> float:
    started = time.perf_counter()
    memory.search(ask["text"], ask["subject"], k=10)
    return (time.perf_counter() - started) * 1000


def _wire(statement: str, params: dict[str, Any]) -> dict[str, Any]:
    # The baseline takes a vector literal; pgmem.remember a float array.
    if statement == Q.BASELINE_INSERT:
        return {**params, "embedding": vector_text(params["embedding"])}
    return params


def _mix(
    dsn: str,
    plans: Sequence[Sequence[tuple[str, dict[str, Any]]]],
    *,
    search: str,
    write: str,
) -> tuple[float, int]:
    """Every client runs its plan on its own connection, all started together: ops/s.

    The first ``MIX_WARMUP`` operations of each plan run before the start and
    are not counted.
    """
    with _connections(dsn, len(plans)) as conns:
        start = threading.Barrier(len(plans) + 1)
        errors: list[BaseException] = []

        def client(conn: psycopg.Connection[Any], plan: Sequence[tuple[str, dict[str, Any]]]):
            def run(ops: Sequence[tuple[str, dict[str, Any]]]) -> None:
                for op, params in ops:
                    _timed(conn, search if op == "search" else write, params)

            try:
                run(plan[:MIX_WARMUP])
            except BaseException as exc:
                errors.append(exc)
            start.wait()
            try:
                run(plan[MIX_WARMUP:])
            except BaseException as exc:  # reported below, in the caller's thread
                errors.append(exc)

        threads = [
            threading.Thread(target=client, args=(c, p)) for c, p in zip(conns, plans, strict=True)
        ]
        for t in threads:
            t.start()
        start.wait()
        started = time.perf_counter()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    ops = sum(len(p) - MIX_WARMUP for p in plans)
    return (ops / elapsed if elapsed else 0.0), ops


@contextmanager
def _connections(dsn: str, n: int) -> Iterator[list[psycopg.Connection[Any]]]:
    with ExitStack() as stack:
        yield [stack.enter_context(tenant_connection(dsn, TENANT)) for _ in range(n)]
