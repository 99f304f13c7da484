"""`pgmem bench --citus`: pgmem on a Citus coordinator next to one plain server.

The same synthetic data goes to two places on the same machine and in the
same run:

* the Citus cluster: the coordinator's pgmem database (tenants `cb0001`…,
  removed at the end), distributed by tenant over the workers;
* one plain PostgreSQL database (no Citus) on the coordinator's server,
  created, migrated and dropped by the run: the single-node baseline.

Per tenant: `per_tenant` memories over 10 subjects, 384-d random unit-ish
vectors and text drawn from a small vocabulary, generated set-based in SQL.
Then: correctness (every tenant has exactly its rows, through the
coordinator and through row-level security), bytes per memory, recall latency
end to end (client-side, a pgmem_service role binding a random tenant per
call, text + embedding, k = 10) on both, and the routing of a single-tenant
query (EXPLAIN: one task, on one worker). On one machine the workers share
its cores, so the Citus numbers are an overhead measurement, not a speed-up.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgmem.lab.scratch import scratch_database
from pgmem.queries import citus as Q

PREFIX = "cb"
SUBJECTS = 10
DIMS = 384
WORDS = [
    *("tea", "coffee", "chess", "hiking", "piano", "garden", "paris", "tokyo", "lyon", "porto"),
    *("python", "rust", "cooking", "running", "cycling", "books", "movies", "jazz", "painting"),
    "sailing",
]

Progress = Callable[[str], None]


@dataclass
class CitusBenchResult:
    tenants: int
    memories: int
    workers: int
    load_s: dict[str, float]
    bytes_per_memory: dict[str, float]
    recall_ms: dict[str, dict[str, float]]
    correctness: dict[str, Any]
    explain: str
    tenant_node: str


def _tenant(i: int) -> str:
    return f"{PREFIX}{i:05d}"


def _create_tenants(conn: psycopg.Connection[Any], tenants: int) -> None:
    conn.execute(Q.BENCH_CREATE_TENANTS, (tenants,))


def _load(dsn: str, tenants: int, per_tenant: int) -> float:
    started = time.perf_counter()
    with psycopg.connect(dsn) as conn:
        _create_tenants(conn, tenants)
        conn.commit()
        params = {
            "subjects": SUBJECTS,
            "words": WORDS,
            "nwords": len(WORDS),
            "dims": DIMS,
            "per_tenant": per_tenant,
        }
        conn.execute(Q.BENCH_LOAD_SUBJECTS, params)
        conn.execute(Q.BENCH_LOAD_MEMORIES, params)
        conn.commit()
        conn.execute(Q.BENCH_ANALYZE)
    return time.perf_counter() - started


def _bytes_per_memory(dsn: str, distributed: bool) -> float:
    size = "citus_total_relation_size" if distributed else "pg_total_relation_size"
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            sql.SQL(Q.BENCH_BYTES_PER_MEMORY).format(sql.Identifier(size))
        ).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0


@contextmanager
def _service(dsn: str) -> Iterator[str]:
    """A throwaway pgmem_service login over TCP; its DSN."""
    role, password = f"pgmem_cbench_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    params = conninfo_to_dict(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL(Q.BENCH_CREATE_SERVICE).format(sql.Identifier(role), sql.Literal(password))
        )
    try:
        yield make_conninfo(
            host="127.0.0.1",
            port=params.get("port", "5432"),
            dbname=params.get("dbname", "pgmem"),
            user=role,
            password=password,
        )
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL(Q.BENCH_DROP_ROLE).format(sql.Identifier(role)))


def _recall_latency(service_dsn: str, tenants: int, queries: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    times = []
    with psycopg.connect(service_dsn) as conn:
        for index in range(queries + 10):
            tenant = _tenant(rng.randint(1, tenants))
            vector = "[" + ",".join(f"{rng.random() - 0.5:.4f}" for _ in range(DIMS)) + "]"
            started = time.perf_counter()
            conn.execute(Q.BENCH_SET_TENANT, (tenant,))
            conn.execute(
                Q.BENCH_RECALL,
                (f"user{rng.randint(1, SUBJECTS)}", f"who likes {rng.choice(WORDS)}?", vector),
            ).fetchone()
            conn.commit()
            if index >= 10:  # warm-up calls are not counted
                times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {
        "p50": statistics.median(times),
        "p95": times[int(0.95 * (len(times) - 1))],
        "mean": statistics.fmean(times),
    }


def _correctness(
    coordinator: str, service_dsn: str, tenants: int, per_tenant: int
) -> dict[str, Any]:
    with psycopg.connect(coordinator) as conn:
        row = conn.execute(Q.BENCH_COUNT).fetchone()
        per = conn.execute(Q.BENCH_PER_TENANT).fetchone()
    assert row is not None and per is not None
    sample = random.Random(7).sample(range(1, tenants + 1), min(20, tenants))
    confined = 0
    with psycopg.connect(service_dsn) as conn:
        for i in sample:
            conn.execute(Q.BENCH_SET_TENANT, (_tenant(i),))
            seen = conn.execute(Q.BENCH_VISIBLE, (_tenant(i),)).fetchone()
            conn.commit()
            confined += int(seen == (per_tenant, 0))
    return {
        "memories": row[0],
        "tenants": row[1],
        "min_per_tenant": per[0],
        "max_per_tenant": per[1],
        "rls_sample": len(sample),
        "rls_confined": confined,
        "ok": row[0] == tenants * per_tenant
        and row[1] == tenants
        and per[0] == per[1] == per_tenant
        and confined == len(sample),
    }


def run(
    coordinator: str,
    *,
    tenants: int = 1000,
    per_tenant: int = 100,
    queries: int = 200,
    say: Progress = print,
) -> CitusBenchResult:
    """The comparison; coordinator is a superuser DSN of a Citus coordinator's pgmem database."""
    with psycopg.connect(coordinator, autocommit=True) as conn:
        workers = conn.execute(Q.BENCH_WORKERS).fetchone()
        existing = conn.execute(Q.BENCH_EXISTING).fetchone()
    if existing and existing[0]:
        _remove(coordinator)
    single_name = f"pgmem_citus_bench_single_{uuid.uuid4().hex[:6]}"
    try:
        # The plain database is dropped on the way out, then the tenants.
        with scratch_database(coordinator, single_name, owner="pgmem bench --citus") as single:
            say(f"loading {tenants * per_tenant:,} memories over {tenants:,} tenants (Citus)")
            load = {"citus": _load(coordinator, tenants, per_tenant)}
            say("loading the same into one plain PostgreSQL database")
            load["single"] = _load(single, tenants, per_tenant)
            sizes = {
                "citus": _bytes_per_memory(coordinator, True),
                "single": _bytes_per_memory(single, False),
            }
            with _service(coordinator) as citus_service, _service(single) as single_service:
                say("checking correctness through the coordinator")
                correctness = _correctness(coordinator, citus_service, tenants, per_tenant)
                say(f"timing {queries} recalls on each")
                recall = {
                    "citus": _recall_latency(citus_service, tenants, queries, seed=1),
                    "single": _recall_latency(single_service, tenants, queries, seed=1),
                }
            tenant = _tenant(1)
            with psycopg.connect(coordinator) as conn:
                explain = "\n".join(
                    r[0]
                    for r in conn.execute(
                        sql.SQL(Q.BENCH_EXPLAIN).format(sql.Literal(tenant))
                    ).fetchall()
                )
                node = conn.execute(Q.BENCH_TENANT_NODE, (tenant,)).fetchone()
            return CitusBenchResult(
                tenants=tenants,
                memories=tenants * per_tenant,
                workers=int(workers[0]) if workers else 0,
                load_s=load,
                bytes_per_memory=sizes,
                recall_ms=recall,
                correctness=correctness,
                explain=explain,
                tenant_node=f"{tenant} -> {node[0] if node else '?'}",
            )
    finally:
        say("removing the benchmark tenants and the plain database")
        _remove(coordinator)


def _remove(coordinator: str) -> None:
    with psycopg.connect(coordinator) as conn:
        conn.execute(Q.BENCH_REMOVE_TENANTS)
        conn.execute(Q.BENCH_REMOVE_SETTINGS)
