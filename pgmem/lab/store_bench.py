"""``pgmem bench --store``: the LangGraph store's throughput beside LangGraph's own.

The two workloads of LangGraph's large-batch tests (langgraph-checkpoint-postgres
``tests/test_async_store.py``): 10 threads sending 6,000 ops (put, get, list,
search, put again, delete of 100 keys in two namespaces, ten rounds), and 60,000
coroutines of one event loop sending the same mix for 1,000 keys. Each runs against
:class:`~pgmem.integrations.langgraph.PgmemStore` on a fresh tenant of a migrated
scratch database, and against LangGraph's ``PostgresStore`` / ``AsyncPostgresStore``
in a schema of the same database, one after the other in one run; the figure is
the ratio of the wall times. Without langgraph-checkpoint-postgres installed the
baseline is left out.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgmem import schema
from pgmem.client import Memory
from pgmem.lab.bench import Progress, _quiet, bench_database
from pgmem.queries import admin as admin_queries
from pgmem.queries import lab as Q

TENANT = "store_bench"
BASELINE_SCHEMA = "langgraph_baseline"
TARGET_RATIO = 3.0  # within 3x PostgresStore's time


@dataclass
class StoreResult:
    threaded_ops: int
    async_ops: int
    threaded_s: float
    async_s: float
    baseline_threaded_s: float | None
    baseline_async_s: float | None

    def ratio(self, which: str) -> float | None:
        baseline = self.baseline_threaded_s if which == "threaded" else self.baseline_async_s
        ours = self.threaded_s if which == "threaded" else self.async_s
        return None if baseline is None else ours / baseline

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "threaded_ratio": self.ratio("threaded"),
            "async_ratio": self.ratio("async"),
        }

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """(workload, pgmem s, PostgresStore s, ratio, target met)."""
        out = []
        for which, ops, ours, theirs in (
            ("threaded", self.threaded_ops, self.threaded_s, self.baseline_threaded_s),
            ("async", self.async_ops, self.async_s, self.baseline_async_s),
        ):
            ratio = self.ratio(which)
            out.append(
                (
                    f"{ops:,} ops, {'10 threads' if which == 'threaded' else 'one event loop'}",
                    f"{ours:.2f}",
                    "-" if theirs is None else f"{theirs:.2f}",
                    "-" if ratio is None else f"{ratio:.2f}",
                    "-" if ratio is None else ("met" if ratio <= TARGET_RATIO else "NOT met"),
                )
            )
        return out


def _threaded(store: Any, keys: int = 100, rounds: int = 10) -> int:
    """LangGraph's test_large_batches: returns the ops sent."""
    futures: list[Future[Any]] = []
    with ThreadPoolExecutor(max_workers=10) as pool:
        for m in range(rounds):
            ns = ("test", "foo", "bar", "baz", str(m % 2))
            for i in range(keys):
                value = {"foo": f"bar{i}"}
                futures += [
                    pool.submit(store.put, ns, f"key{i}", value=value),
                    pool.submit(store.get, ns, f"key{i}"),
                    pool.submit(store.list_namespaces, prefix=None, max_depth=m + 1),
                    pool.submit(store.search, ("test",)),
                    pool.submit(store.put, ns, f"key{i}", value=value),
                    pool.submit(store.put, ns, f"key{i}", None),
                ]
        for future in futures:
            future.result()
    return len(futures)


async def _coroutines(store: Any, keys: int = 1000, rounds: int = 10) -> int:
    """LangGraph's test_large_batches_async: returns the ops sent."""
    calls: list[Awaitable[Any]] = []
    for m in range(rounds):
        ns = ("test", "foo", "bar", "baz", str(m % 2))
        for i in range(keys):
            value = {"foo": f"bar{i}"}
            calls += [
                store.aput(ns, f"key{i}", value=value),
                store.aget(ns, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=m + 1),
                store.asearch(("test",)),
                store.aput(ns, f"key{i}", value=value),
                store.adelete(ns, f"key{i}"),
            ]
    await asyncio.gather(*calls)
    return len(calls)


def _timed(run: Callable[[], int]) -> tuple[int, float]:
    started = time.perf_counter()
    ops = run()
    return ops, time.perf_counter() - started


def _pgmem(dsn: str) -> tuple[int, float, int, float]:
    from pgmem.integrations.langgraph import PgmemStore

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(admin_queries.CREATE_TENANT, {"tenant": TENANT, "display_name": None})
    with Memory(dsn, tenant=TENANT, embedder=False, llm=False) as memory:
        store = PgmemStore(memory)
        threaded = _timed(lambda: _threaded(store))
        coroutines = _timed(lambda: asyncio.run(_coroutines(store)))
    return (*threaded, *coroutines)


def _baseline(dsn: str) -> tuple[float, float]:
    from langgraph.store.postgres import AsyncPostgresStore, PostgresStore

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(Q.STORE_BENCH_SCHEMA.format(sql.Identifier(BASELINE_SCHEMA)))
    options = conninfo_to_dict(dsn).get("options") or ""
    in_schema = make_conninfo(dsn, options=f"{options} -csearch_path={BASELINE_SCHEMA}".strip())
    with PostgresStore.from_conn_string(in_schema) as store:
        store.setup()
        _, threaded = _timed(lambda: _threaded(store))

    async def coroutines() -> float:
        async with AsyncPostgresStore.from_conn_string(in_schema) as store:
            await store.setup()
            started = time.perf_counter()
            await _coroutines(store)
            return time.perf_counter() - started

    return threaded, asyncio.run(coroutines())


def run(
    server_dsn: str,
    *,
    database: str = "pgmem_bench_store",
    keep: bool = False,
    progress: Progress = _quiet,
) -> StoreResult:
    """Both workloads on both stores, in a fresh database named ``database``."""
    with bench_database(server_dsn, database, keep=keep) as dsn:
        progress(f"store: migrating {database}")
        schema.upgrade(dsn)
        progress("store: PgmemStore, 6,000 threaded ops then 60,000 coroutines")
        threaded_ops, threaded_s, async_ops, async_s = _pgmem(dsn)
        baseline: tuple[float | None, float | None] = (None, None)
        if importlib.util.find_spec("langgraph.store.postgres") is not None:
            progress("store: PostgresStore, the same workloads")
            baseline = _baseline(dsn)
    return StoreResult(threaded_ops, async_ops, threaded_s, async_s, *baseline)
