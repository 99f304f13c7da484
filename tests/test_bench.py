"""`pgmem bench` at a tiny scale: the code runs end to end and reports sane numbers.

No timing is asserted: only that every step ran and measured something.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from pgmem.cli.bench import render_markdown
from pgmem.lab import bench


@pytest.fixture
def bench_dsn(server_dsn: str) -> str:
    return server_dsn


def test_scale_points_follow_the_issue() -> None:
    million = bench.Scale(1_000_000)
    assert (million.subjects, million.small_tenant_memories) == (1_000, 101)
    assert million.total == 1_000_000 + 99 * 101
    assert bench.Scale(10_000).small_tenant_memories == 10


def test_latency_percentiles_use_nearest_rank() -> None:
    latency = bench.Latency.of([float(v) for v in range(1, 101)])
    assert (latency.p50, latency.p95, latency.p99, latency.samples) == (50.0, 95.0, 99.0, 100)
    assert bench.Latency.of([3.0]).p99 == 3.0


def test_bench_runs_end_to_end_at_a_tiny_scale(bench_dsn: str) -> None:
    database = bench.unique_database("pgmem_bench_test")
    messages: list[str] = []
    results = bench.run(
        bench_dsn,
        [1_000],
        queries=5,
        accuracy_queries=5,
        remember=40,
        batch=20,
        database=database,
        progress=messages.append,
    )
    (result,) = results
    assert result.memories == 1_000 + 99 * 10
    assert (result.tenants, result.subjects) == (100, 1 + 99 * 2)
    assert result.recall_ms.samples == result.recall_readonly_ms.samples == 5
    assert 0 < result.recall_ms.p50 <= result.recall_ms.p95 <= result.recall_ms.p99
    assert 0.0 <= result.recall_at_10 <= 1.0 and result.recall_at_10_queries == 5
    assert result.remembered == 40 and sum(result.remember_actions.values()) == 40
    assert result.remember_per_s > 0
    assert result.decayed_first > 0 and result.maintenance_first_s > 0
    assert result.table_bytes_per_memory > 768  # at least the 384 halves of a vector (halfvec)
    assert "memories_embedding" in result.index_bytes
    # The baseline ran on the same rows, and the ratios come from the measured values.
    baseline = result.baseline_search_ms
    assert baseline is not None and baseline.samples == 5 and baseline.p50 > 0
    assert result.baseline_insert_per_s > 0 and result.baseline_bytes_per_memory > 0
    ratios = result.ratios()
    assert ratios["recall_p95"] == pytest.approx(result.recall_ms.p95 / baseline.p95)
    assert ratios["remember_per_s"] == pytest.approx(
        result.remember_per_s / result.baseline_insert_per_s
    )
    assert ratios["bytes_per_memory"] == pytest.approx(
        (result.table_bytes_per_memory + result.index_bytes_per_memory)
        / result.baseline_bytes_per_memory
    )
    assert set(result.targets()) == {
        "recall p95 <= 10 ms",
        "recall p95 <= 1.5x baseline",
        "recall@10 = 1.000",
        "remember >= 500/s",
        "bytes/memory <= 3 KB (table + indexes)",
        "decay + archive <= 10 s (hourly pass)",
        "decay + archive <= 10 s (first pass)",
    }
    assert None not in result.targets().values()
    assert any("recall latency" in m for m in messages)
    # The database is gone afterwards.
    with psycopg.connect(bench_dsn) as conn:
        gone = conn.execute("select 1 from pg_database where datname = %s", (database,)).fetchone()
    assert gone is None
    info = {"nproc": 2, "cpu": "test", "postgres": "15", "pgvector": "0.8.0"}
    table = render_markdown(info, results)
    assert "| recall@10 vs exact scan |" in table and "1,000" in table
    assert "| baseline: exact cosine top-10, p50 / p95 / p99 ms |" in table
    assert "| target: recall p95 <= 1.5x baseline |" in table


def test_bench_can_leave_out_maintenance(bench_dsn: str) -> None:
    (result,) = bench.run(
        bench_dsn,
        [1_000],
        queries=2,
        accuracy_queries=2,
        remember=10,
        batch=10,
        database=bench.unique_database("pgmem_bench_test"),
        maintenance=False,
    )
    assert not result.maintenance_measured and result.decayed_first == 0
    targets = result.targets()
    assert targets["decay + archive <= 10 s (first pass)"] is None
    assert targets["recall@10 = 1.000"] is not None
    table = render_markdown({}, [result])
    assert "| decay + archive, first pass, s | not run |" in table


def test_bench_refuses_an_existing_database(bench_dsn: str) -> None:
    database = bench.unique_database("pgmem_bench_test")
    with psycopg.connect(bench_dsn, autocommit=True) as conn:
        conn.execute(f'create database "{database}"')
    try:
        with pytest.raises(bench.BenchError, match="already exists"):
            bench.run(bench_dsn, [1_000], database=database)
        with psycopg.connect(make_conninfo(bench_dsn, dbname=database)) as conn:
            assert conn.execute("select 1").fetchone() == (1,)  # left untouched
    finally:
        with psycopg.connect(bench_dsn, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{database}"')


def test_guard_bench_measures_both_sides_on_locomo(bench_dsn: str, tmp_path: Path) -> None:
    # The layout of the real file (docs/benchmarks.md has the real run's figure).
    from test_eval import locomo_sample

    from pgmem.lab import guard_bench

    locomo = tmp_path / "locomo-sample.json"
    locomo.write_text(json.dumps(locomo_sample()))
    result = guard_bench.run(bench_dsn, locomo, rounds=2, round_size=5)
    assert result.writes_per_side == 10
    assert result.ms_per_write_on > 0 and result.ms_per_write_off > 0
    assert result.ratio == result.ms_per_write_on / result.ms_per_write_off


def test_store_bench_runs_both_stores_on_langgraphs_workloads(bench_dsn: str) -> None:
    """Both workloads ran on both stores and every op was sent; no timing is asserted."""
    pytest.importorskip("langgraph.store.postgres", reason="the dev extra is not installed")
    from pgmem.lab import store_bench

    result = store_bench.run(bench_dsn, database=bench.unique_database("pgmem_bench_store_test"))
    assert (result.threaded_ops, result.async_ops) == (6_000, 60_000)
    assert result.baseline_threaded_s is not None and result.baseline_async_s is not None
    ratios = result.as_dict()
    assert ratios["threaded_ratio"] > 0 and ratios["async_ratio"] > 0
    assert all(row[4] in ("met", "NOT met") for row in result.rows())
