"""`pgmem bench`: the engine at 10k, 100k and 1M memories, on synthetic data.

Each scale point gets a database of its own (created, migrated with
pgmem.schema.upgrade, dropped at the end unless kept):

* one big tenant ``bench`` with ``memories / 1000`` subjects of 1,000
  memories each, their rows interleaved in the heap as an app writing for
  many users at once would leave them, plus 99 small tenants;
* 384-d vectors in 256 clusters (a unit centre plus two noise vectors drawn
  from a pool, so every vector is distinct), and text whose words follow the
  cluster, generated set-based in SQL with a fixed seed (deterministic);
* indexes dropped for the bulk load and rebuilt from their own definitions,
  as a DBA loading a table would.

Then, in this order (the later steps change the data):

1. table and index size per memory;
2. recall latency, server-side: ``EXPLAIN (ANALYZE)`` execution time of
   ``pgmem.recall`` (hybrid: text and embedding, k = 10) as a tenant-bound
   role, so row-level security is on, reinforcing as applications do; then
   once more without reinforcement;
3. filtered recall@10: ``pgmem.recall`` against the same scoring applied to
   every active memory of the subject (``pgmem._recall_rows`` over all of
   them: an exact scan, no candidate pool, no index);
4. remember throughput: ``pgmem.remember_many`` in batches of precomputed
   embeddings, each batch its own transaction;
5. one decay + archive pass over all tenants (``pgmem.decay`` then
   ``pgmem.archive``): first on the freshly loaded data, where every row
   is new to them, then an hour later, the steady state of an hourly job.

Beside steps 1, 2 and 4, the plain pgvector baseline of ``pgmem bench --data
locomo`` on the same rows (:mod:`pgmem.queries.bench_real`: a table of tenant,
subject, content and vector with a btree on (tenant, subject), exact cosine
top-10 within the subject, one multi-row INSERT per batch), so every figure
has its ratio.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg.types.numeric import Int8

from pgmem import schema
from pgmem.lab.scratch import drop_database, scratch_database, tenant_connection
from pgmem.queries import bench as Q
from pgmem.queries import bench_layers as LQ
from pgmem.queries import bench_real as RQ

PER_SUBJECT = 1_000
SMALL_TENANTS = 99
DEFAULT_SCALES = (10_000, 100_000)
FULL_SCALES = (10_000, 100_000, 1_000_000)
TENANT = "bench"
TOPICS = 256  # clusters of the synthetic vectors
TOPICS_PER_SUBJECT = 20
NOISE_POOL = 4096
# Each noise coordinate is uniform in ±0.045: a noise vector has norm ≈ 0.51,
# so two memories of one cluster have cosine ≈ 0.66 (below the 0.85 merge
# threshold: remember inserts them) and clusters are ≈ orthogonal.
NOISE = 0.045
SEED = 0.42

# The targets docs/benchmarks.md reports against, at every scale up to 1M memories.
TARGET_RECALL_P95_MS = 10.0
TARGET_RECALL_AT_10 = 1.0  # the same ids as scoring every active memory of the subject
TARGET_REMEMBER_PER_S = 500.0  # remember_many of facts, batched
TARGET_MAINTENANCE_S = 10.0
TARGET_RECALL_VS_BASELINE_P95 = 1.5  # recall p95 <= 1.5x the baseline's exact scan
TARGET_BYTES_PER_MEMORY = 3_072.0  # table + indexes, 384-d


class BenchError(Exception):
    """A benchmark that cannot run; the message says why."""


@dataclass(frozen=True)
class Scale:
    """One scale point: ``memories`` in the big tenant, 1,000 per subject."""

    memories: int

    @property
    def subjects(self) -> int:
        return max(1, self.memories // PER_SUBJECT)

    @property
    def small_tenant_memories(self) -> int:
        # 1% of the big tenant, at least 10 each, over two subjects.
        return max(10, self.memories // (100 * SMALL_TENANTS))

    @property
    def total(self) -> int:
        return self.subjects * PER_SUBJECT + SMALL_TENANTS * self.small_tenant_memories


@dataclass
class Latency:
    p50: float
    p95: float
    p99: float
    mean: float
    samples: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Latency:
        ordered = sorted(values)

        def pct(p: float) -> float:
            # Nearest rank: the smallest value with at least p of the samples at or below it.
            return ordered[max(0, math.ceil(p * len(ordered)) - 1)]

        return cls(pct(0.50), pct(0.95), pct(0.99), statistics.fmean(ordered), len(ordered))


@dataclass
class PointResult:
    scale: int
    memories: int
    tenants: int
    subjects: int
    load_s: float
    index_s: float
    table_bytes_per_memory: float
    index_bytes_per_memory: float
    index_bytes: dict[str, int]
    recall_ms: Latency
    recall_readonly_ms: Latency
    recall_at_10: float
    recall_at_10_queries: int
    remember_per_s: float
    remembered: int
    remember_actions: dict[str, int]
    decay_first_s: float
    archive_first_s: float
    decayed_first: int
    archived_first: int
    decay_hourly_s: float
    archive_hourly_s: float
    decayed_hourly: int
    archived_hourly: int
    maintenance_measured: bool = True
    notes: list[str] = field(default_factory=list)
    # The plain pgvector baseline on the same rows (see the module's docstring).
    baseline_search_ms: Latency | None = None
    baseline_insert_per_s: float = 0.0
    baseline_bytes_per_memory: float = 0.0

    @property
    def bytes_per_memory(self) -> float:
        return self.table_bytes_per_memory + self.index_bytes_per_memory

    def ratios(self) -> dict[str, float | None]:
        """pgmem / baseline: recall latencies, remember throughput, bytes."""
        b = self.baseline_search_ms

        def over(value: float, base: float | None) -> float | None:
            return value / base if base else None

        return {
            "recall_p50": over(self.recall_ms.p50, b.p50 if b else None),
            "recall_p95": over(self.recall_ms.p95, b.p95 if b else None),
            "recall_p99": over(self.recall_ms.p99, b.p99 if b else None),
            "remember_per_s": over(self.remember_per_s, self.baseline_insert_per_s),
            "bytes_per_memory": over(self.bytes_per_memory, self.baseline_bytes_per_memory),
        }

    @property
    def maintenance_first_s(self) -> float:
        return self.decay_first_s + self.archive_first_s

    @property
    def maintenance_hourly_s(self) -> float:
        return self.decay_hourly_s + self.archive_hourly_s

    def targets(self) -> dict[str, bool | None]:
        """Each target of docs/benchmarks.md: met, not met, or None when not measured."""
        measured = self.maintenance_measured
        vs_baseline = self.ratios()["recall_p95"]
        return {
            "recall p95 <= 10 ms": self.recall_ms.p95 <= TARGET_RECALL_P95_MS,
            "recall p95 <= 1.5x baseline": (
                None if vs_baseline is None else vs_baseline <= TARGET_RECALL_VS_BASELINE_P95
            ),
            "recall@10 = 1.000": self.recall_at_10 >= TARGET_RECALL_AT_10,
            "remember >= 500/s": self.remember_per_s >= TARGET_REMEMBER_PER_S,
            "bytes/memory <= 3 KB (table + indexes)": (
                self.bytes_per_memory <= TARGET_BYTES_PER_MEMORY
            ),
            "decay + archive <= 10 s (hourly pass)": (
                self.maintenance_hourly_s <= TARGET_MAINTENANCE_S if measured else None
            ),
            "decay + archive <= 10 s (first pass)": (
                self.maintenance_first_s <= TARGET_MAINTENANCE_S if measured else None
            ),
        }

    def summary(self) -> str:
        """One line with the headline numbers, printed as soon as a point is done."""
        r, m = self.recall_ms, self.recall_readonly_ms
        line = (
            f"{self.scale:,}: recall p50/p95/p99 {r.p50:.1f}/{r.p95:.1f}/{r.p99:.1f} ms "
            f"(read-only {m.p50:.1f}/{m.p95:.1f}/{m.p99:.1f}), recall@10 {self.recall_at_10:.3f}, "
            f"remember {self.remember_per_s:,.0f}/s"
        )
        if self.maintenance_measured:
            line += (
                f", decay + archive {self.maintenance_first_s:.1f} s first, "
                f"{self.maintenance_hourly_s:.1f} s hourly"
            )
        return line

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["maintenance_first_s"] = self.maintenance_first_s
        d["maintenance_hourly_s"] = self.maintenance_hourly_s
        d["bytes_per_memory"] = self.bytes_per_memory
        d["ratios"] = self.ratios()
        d["targets"] = self.targets()
        return d


# ---------------------------------------------------------------------- SQL, by name


# ---------------------------------------------------------------------- running


Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


@contextmanager
def bench_database(server_dsn: str, name: str, *, keep: bool = False) -> Iterator[str]:
    """A new database on the server for one scale point; dropped afterwards unless ``keep``."""
    with scratch_database(
        server_dsn, name, owner="pgmem bench", keep=keep, migrate=False, error=BenchError
    ) as dsn:
        yield dsn


def machine(server_dsn: str) -> dict[str, Any]:
    """What the numbers were measured on."""
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    with psycopg.connect(server_dsn, row_factory=dict_row) as conn:
        row = conn.execute(Q.MACHINE).fetchone() or {}
    info.update(row)
    if info.get("pgvector") is None:
        with psycopg.connect(server_dsn, row_factory=dict_row) as conn:
            available = conn.execute(Q.VECTOR_AVAILABLE).fetchone()
        info["pgvector"] = available["default_version"] if available else None
    return info


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return platform.processor() or None
    return None


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        return None
    return None


def run(
    server_dsn: str,
    scales: Sequence[int] = DEFAULT_SCALES,
    *,
    queries: int = 200,
    accuracy_queries: int = 100,
    remember: int = 5_000,
    batch: int = 500,
    database: str = "pgmem_bench",
    keep: bool = False,
    maintenance: bool = True,
    progress: Progress = _quiet,
) -> list[PointResult]:
    """Every scale point in turn, each in a fresh database named ``database``."""
    results = []
    for memories in scales:
        with bench_database(server_dsn, database, keep=keep) as dsn:
            results.append(
                run_point(
                    dsn,
                    Scale(memories),
                    queries=queries,
                    accuracy_queries=accuracy_queries,
                    remember=remember,
                    batch=batch,
                    maintenance=maintenance,
                    progress=progress,
                )
            )
            progress(results[-1].summary())
        if keep and memories != scales[-1]:
            # The next point needs the name: keeping applies to the last one.
            drop_database(server_dsn, database)
    return results


def run_point(
    dsn: str,
    scale: Scale,
    *,
    queries: int = 200,
    accuracy_queries: int = 100,
    remember: int = 5_000,
    batch: int = 500,
    maintenance: bool = True,
    progress: Progress = _quiet,
) -> PointResult:
    """Load one scale point into the (empty) database at ``dsn`` and measure it."""
    say = progress
    say(f"{scale.memories:,}: migrating")
    schema.upgrade(dsn)
    notes: list[str] = []
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        for name in ("remember_many", "decay", "archive"):
            found = conn.execute(Q.FUNCTION_EXISTS, {"name": name}).fetchone()
            if not (found and found["present"]):
                raise BenchError(f"pgmem.{name} does not exist in this schema: the bench calls it")
        load_s, index_s = _load(conn, scale, say)
        sizes = conn.execute(Q.SIZES).fetchone()
        assert sizes is not None
        baseline_size = conn.execute(Q.BASELINE_SIZE).fetchone()
        assert baseline_size is not None
        index_bytes = {r["name"]: int(r["bytes"]) for r in conn.execute(Q.INDEX_SIZES).fetchall()}
        now = conn.execute(LQ.NOW).fetchone()["now"]  # type: ignore[index]
        params = _params(scale)
        conn.execute(Q.SET_SEED, (SEED / 2,))
        asked = conn.execute(Q.QUERIES, {**params, "n": Int8(queries + 20)}).fetchall()
        conn.execute(Q.SET_SEED, (SEED / 3,))
        generated = conn.execute(Q.REMEMBER_ITEMS, {**params, "n": Int8(remember)}).fetchall()
        items = [r["item"] for r in generated]

    say(f"{scale.memories:,}: recall latency ({queries} queries)")
    with _tenant_connection(dsn) as conn:
        for q in asked[:20]:  # warm the session's plans and the caches
            _recall_ms(conn, q, reinforce=True)
        reinforcing = [_recall_ms(conn, q, reinforce=True) for q in asked[20:]]
        readonly = [_recall_ms(conn, q, reinforce=False) for q in asked[20:]]
        for q in asked[:20]:
            _baseline_ms(conn, q)
        baseline = [_baseline_ms(conn, q) for q in asked[20:]]

    say(f"{scale.memories:,}: recall@10 against an exact scan ({accuracy_queries} queries)")
    hits = 0
    sample = asked[20 : 20 + accuracy_queries]
    with _tenant_connection(dsn) as conn:
        for q in sample:
            args = {**q, "now": now, "tenant": TENANT}
            got = {r["memory_id"] for r in conn.execute(Q.RECALL_IDS, args).fetchall()}
            exact = {r["memory_id"] for r in conn.execute(Q.EXACT_IDS, args).fetchall()}
            hits += len(got & exact)
            if len(exact) < 10:
                notes.append(f"{q['subject']} has fewer than 10 visible memories")
    recall_at_10 = hits / (10 * len(sample)) if sample else 1.0

    say(f"{scale.memories:,}: remember ({remember:,} memories, batches of {batch})")
    actions: dict[str, int] = {}
    with _tenant_connection(dsn) as conn:
        started = time.perf_counter()
        for i in range(0, len(items), batch):
            for row in conn.execute(Q.REMEMBER_MANY, {"items": Jsonb(items[i : i + batch])}):
                actions[row["action"]] = actions.get(row["action"], 0) + int(row["n"])
        remember_s = time.perf_counter() - started
        started = time.perf_counter()
        for i in range(0, len(items), batch):
            conn.execute(RQ.BASELINE_INSERT_MANY, _baseline_batch(items[i : i + batch]))
        baseline_s = time.perf_counter() - started

    passes = [(0.0, 0)] * 4
    if maintenance:
        say(f"{scale.memories:,}: decay + archive")
        with psycopg.connect(dsn, autocommit=True) as conn:  # superuser: every tenant
            conn.execute(Q.JIT_OFF)
            later = now + timedelta(hours=1)
            passes = [
                _timed_count(conn, Q.DECAY, now),
                _timed_count(conn, Q.ARCHIVE, now),
                _timed_count(conn, Q.DECAY, later),
                _timed_count(conn, Q.ARCHIVE, later),
            ]
    (decay_first_s, decayed_first), (archive_first_s, archived_first) = passes[:2]
    (decay_hourly_s, decayed_hourly), (archive_hourly_s, archived_hourly) = passes[2:]

    memories = int(sizes["memories"])
    return PointResult(
        scale=scale.memories,
        memories=memories,
        tenants=int(sizes["tenants"]),
        subjects=int(sizes["subjects"]),
        load_s=load_s,
        index_s=index_s,
        table_bytes_per_memory=sizes["table_bytes"] / memories,
        index_bytes_per_memory=sizes["index_bytes"] / memories,
        index_bytes=index_bytes,
        recall_ms=Latency.of(reinforcing),
        recall_readonly_ms=Latency.of(readonly),
        recall_at_10=recall_at_10,
        recall_at_10_queries=len(sample),
        remember_per_s=len(items) / remember_s if remember_s else 0.0,
        remembered=len(items),
        remember_actions=actions,
        decay_first_s=decay_first_s,
        archive_first_s=archive_first_s,
        decayed_first=decayed_first,
        archived_first=archived_first,
        decay_hourly_s=decay_hourly_s,
        archive_hourly_s=archive_hourly_s,
        decayed_hourly=decayed_hourly,
        archived_hourly=archived_hourly,
        maintenance_measured=maintenance,
        notes=sorted(set(notes)),
        baseline_search_ms=Latency.of(baseline),
        baseline_insert_per_s=len(items) / baseline_s if baseline_s else 0.0,
        baseline_bytes_per_memory=(
            baseline_size["bytes"] / baseline_size["rows"] if baseline_size["rows"] else 0.0
        ),
    )


def _params(scale: Scale) -> dict[str, Any]:
    # Int8: psycopg sends a small Python int as smallint, and products such
    # as subjects * per_subject would overflow it in SQL.
    return {
        "tenant": TENANT,
        "subjects": Int8(scale.subjects),
        "per_subject": Int8(PER_SUBJECT),
        "small_tenants": Int8(SMALL_TENANTS),
        "small_size": Int8(scale.small_tenant_memories),
        "topics": Int8(TOPICS),
        "topics_per_subject": Int8(TOPICS_PER_SUBJECT),
        "pool": Int8(NOISE_POOL),
        "noise": NOISE,
        "dims": Int8(schema.DEFAULT_DIMS),
    }


def _load(conn: psycopg.Connection[Any], scale: Scale, say: Progress) -> tuple[float, float]:
    params = _params(scale)
    conn.execute(Q.SET_SEED, (SEED,))
    conn.execute(Q.SETUP_TOPICS, params)
    conn.execute(Q.SETUP_NOISE, params)
    conn.execute(Q.CREATE_TENANTS, params)
    conn.execute(Q.CREATE_SUBJECTS, params)
    indexes = conn.execute(Q.SECONDARY_INDEXES).fetchall()
    for index in indexes:
        conn.execute(Q.DROP_INDEX.format(sql.Identifier(index["name"])))
    say(f"{scale.memories:,}: generating {scale.total:,} memories")
    started = time.perf_counter()
    now = conn.execute(LQ.NOW).fetchone()["now"]  # type: ignore[index]
    conn.execute(Q.GENERATE_MEMORIES, {**params, "now": now})
    conn.execute(Q.GENERATE_DECAY, {"now": now})
    load_s = time.perf_counter() - started
    say(f"{scale.memories:,}: building {len(indexes)} indexes")
    started = time.perf_counter()
    # Session settings for the build only: the HNSW graph fits in memory.
    conn.execute(Q.RAISE_MAINTENANCE_WORK_MEM)
    for index in indexes:
        conn.execute(index["definition"])
    conn.execute(Q.RESET_MAINTENANCE_WORK_MEM)
    index_s = time.perf_counter() - started
    conn.execute(Q.VACUUM_MEMORIES)
    say(f"{scale.memories:,}: the pgvector baseline on the same rows")
    for statement in (RQ.CREATE_BASELINE, RQ.GRANT_BASELINE, RQ.FILL_BASELINE):
        conn.execute(statement)
    conn.execute(RQ.INDEX_BASELINE)
    conn.execute(RQ.VACUUM_BASELINE)
    return load_s, index_s


@contextmanager
def _tenant_connection(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """A session as the app would have: pgmem_service bound to the bench tenant (RLS on)."""
    with tenant_connection(dsn, TENANT) as conn:
        yield conn


def explain_ms(conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> float:
    """The server-side ``Execution Time`` of an ``EXPLAIN (ANALYZE, FORMAT JSON)`` statement."""
    row = conn.execute(statement, params).fetchone()
    assert row is not None
    plan = next(iter(row.values()))
    return float(plan[0]["Execution Time"])


def _recall_ms(conn: psycopg.Connection[Any], query: dict[str, Any], *, reinforce: bool) -> float:
    return explain_ms(conn, Q.RECALL, {**query, "reinforce": reinforce})


def _baseline_ms(conn: psycopg.Connection[Any], query: dict[str, Any]) -> float:
    """The baseline's exact cosine top-10 for the same subject and vector, server-side."""
    args = {"tenant": TENANT, "subject": query["subject"], "embedding": query["embedding"]}
    return explain_ms(conn, RQ.BASELINE_SEARCH_EXPLAIN, args)


def _baseline_batch(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """remember_many items as the baseline's one multi-row INSERT."""
    return {
        "tenant": TENANT,
        "subjects": [i["subject"] for i in items],
        "contents": [i["content"] for i in items],
        "embeddings": [i["embedding"] for i in items],
    }


def _timed_count(conn: psycopg.Connection[Any], statement: str, now: datetime) -> tuple[float, int]:
    started = time.perf_counter()
    row = conn.execute(statement, {"now": now}).fetchone()
    elapsed = time.perf_counter() - started
    return elapsed, int(row[0]) if row and row[0] is not None else 0


def unique_database(prefix: str = "pgmem_bench") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"
