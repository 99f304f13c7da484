"""`pgmem bench --layers` at a tiny scale: every step runs and measures something.

No timing is asserted: only that the data set was built as described and every
measure produced numbers.
"""

from __future__ import annotations

from pgmem.lab import bench, layers_bench


def test_layers_bench_runs_end_to_end_at_a_tiny_scale(server_dsn: str) -> None:
    messages: list[str] = []
    result = layers_bench.run(
        server_dsn,
        messages=400,
        sessions=20,
        queries=5,
        appends=30,
        database=bench.unique_database("pgmem_bench_layers_test"),
        progress=messages.append,
    )
    assert (result.messages, result.sessions, result.appends) == (400, 20, 30)
    assert result.read_ms.samples == result.prompt_ms.samples == result.recall_ms.samples == 5
    for latency in (result.read_ms, result.prompt_ms, result.recall_ms):
        assert 0 < latency.p50 <= latency.p95 <= latency.p99
    assert min(result.append_per_s, result.append_user_per_s, result.append_client_per_s) > 0
    assert result.table_bytes_per_message > 0
    assert set(result.targets()) == {
        "append >= 2,000/s (server-side)",
        "window + summary + task p95 <= 5 ms",
        "prompt p95 <= recall p95 + 3 ms",
    }
    assert "| target: prompt p95 <= recall p95 + 3 ms |" in result.markdown()
    assert messages[0].startswith("layers: migrating")
