"""`pgmem bench --data locomo` at a tiny scale: real-text source and the pgvector baseline
run end to end, and the report's ratios and overheads come from the measured values.

No timing is asserted: only that every step ran, measured something, and that the
derived figures are computed from the measured ones.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from pgmem.cli.app import app
from pgmem.cli.bench import render_real_markdown
from pgmem.lab import bench_real as real
from pgmem.lab.bench import BenchError

DIMS = 384


class WordHashEmbedder:
    """Bag of words hashed into 384 dimensions (no model): texts sharing words are similar."""

    model = "test-word-hash"
    dims = DIMS

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []  # (role, texts) per call

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(("passage", len(texts)))
        return [self.embed_one(t) for t in texts]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(("query", len(texts)))
        return [self.embed_one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0]

    def embed_one(self, text: str) -> list[float]:
        v = [0.0] * DIMS
        v[0] = 0.1
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            v[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % DIMS] += 1.0
        n = math.sqrt(sum(x * x for x in v))
        return [x / n for x in v]


def _conversation(n: int, turns: int) -> dict[str, Any]:
    speakers = ("Ana", "Ben")
    session = [
        {
            "speaker": speakers[i % 2],
            "dia_id": f"D1:{i + 1}",
            "text": f"In chat {n} turn {i} I talked about topic{n}x{i % 7} and hobby{i % 5}.",
        }
        for i in range(turns)
    ]
    session.append({"speaker": "Ana", "dia_id": f"D1:{turns + 1}", "text": "Thanks!"})
    return {
        "sample_id": f"conv-{n}",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "10:05 am on 5 June, 2023",
            "session_1": session,
        },
        "qa": [
            {
                "question": f"What did Ana say about topic{n}x{q} in chat {n}?",
                "answer": "x",
                "evidence": [f"D1:{q + 1}"],
                "category": 1,
            }
            for q in range(4)
        ],
    }


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-tiny.json"
    # "Thanks!" closes both conversations: one unique turn for both.
    path.write_text(json.dumps([_conversation(1, 60), _conversation(2, 50)]))
    return path


def test_real_text_is_unique_turns_in_conversation_order(locomo_file: Path) -> None:
    embedder = WordHashEmbedder()
    data = real.RealText.load(locomo_file, embedder)
    assert len(data.turns) == 60 + 1 + 50 == len(set(data.turns))
    assert data.starts == [0, 61]
    assert data.turns[0] == "Ana: In chat 1 turn 0 I talked about topic1x0 and hobby0."
    assert len(data.probes) == 8 and {p.conversation for p in data.probes} == {0, 1}
    # Once for the run: the turns as passages, the questions as queries.
    assert embedder.calls == [("passage", len(data.turns)), ("query", 8)]
    assert data.turn_vectors[5] == embedder.embed_one(data.turns[5])
    # Subject 1 starts at conversation 2, and wraps around to the first turn.
    assert data.subject_turn(1, 0) == 61 and data.subject_turn(1, 50) == 0
    assert data.model == embedder.model
    lookup = real.PrecomputedEmbedder(data.vector_of(), DIMS, data.model)
    assert lookup.embed_one(data.probes[3].text) == data.probes[3].embedding


def test_real_bench_and_baseline_run_end_to_end(server_dsn: str, locomo_file: Path) -> None:
    data = real.RealText.load(locomo_file, WordHashEmbedder())
    database = real.bench.unique_database("pgmem_bench_real_test")
    messages: list[str] = []
    (result,) = real.run(
        server_dsn,
        [100],
        data,
        per_subject=50,
        queries=6,
        remember=20,
        batch=10,
        singles=5,
        clients=3,
        mix_ops=4,
        database=database,
        progress=messages.append,
    )
    assert (result.memories, result.subjects, result.per_subject) == (100, 2, 50)
    # The run's vectors are the tenant's model's, as an application records it.
    assert result.embedding_model == WordHashEmbedder.model
    p, b = result.pgmem, result.baseline
    for side in (p, b):
        assert side.search_server_ms.samples == side.search_client_ms.samples == 6
        assert 0 < side.search_server_ms.p50 <= side.search_server_ms.p95
        assert side.mix_ops == 3 * 4 and side.mix_per_s > 0
        assert side.insert_many_per_s > 0 and side.insert_single_ms.samples == 5
        assert side.episode_many_per_s > 0 and side.episode_single_ms.samples == 5
        assert side.bytes_per_memory > 1_536  # at least the 384 float4 of a vector
    assert result.memory_search_ms.samples == result.memory_search_conn_ms.samples == 6
    assert result.remembered == 20 and sum(result.remember_actions.values()) == 20
    # Stated turns of the subjects' conversations: stored, or the repeat of one.
    assert sum(result.episode_actions.values()) == 20
    assert set(result.episode_actions) <= {"inserted", "reinforced"}
    assert result.event_bytes_per_event > 0 and result.decayed_first > 0
    # The hourly pass is timed right after the first archive pass and after
    # the VACUUM that stands in for autovacuum's in the hour between.
    assert result.decay_unvacuumed_s > 0 and result.vacuum_s > 0 and result.decay_hourly_s > 0
    assert len(result.load_before) == len(result.load_after) == 3

    # Ratios and overheads are the measured values divided / subtracted.
    ratios = result.ratios()
    assert ratios["search_server_p95"] == p.search_server_ms.p95 / b.search_server_ms.p95
    assert ratios["mix_per_s"] == p.mix_per_s / b.mix_per_s
    assert ratios["insert_many_per_s"] == p.insert_many_per_s / b.insert_many_per_s
    assert ratios["insert_single_p95"] == p.insert_single_ms.p95 / b.insert_single_ms.p95
    assert ratios["bytes_per_memory"] == p.bytes_per_memory / b.bytes_per_memory
    assert ratios["episode_many_per_s"] == p.episode_many_per_s / b.episode_many_per_s
    overhead = result.client_overhead_ms()
    assert overhead["memory_pooled"] == result.memory_search_ms.p50 - p.search_server_ms.p50
    assert overhead["baseline_statement"] == b.search_client_ms.p50 - b.search_server_ms.p50
    targets = result.targets()
    assert targets["recall p95 <= 1.5x baseline (server-side)"] == (
        ratios["search_server_p95"] <= real.TARGET_RECALL_VS_BASELINE_P95
    )
    assert targets["episode ingest >= 1x baseline"] == (ratios["episode_many_per_s"] >= 1)
    assert targets["single episode p50 <= 5 ms (server-side)"] == (p.episode_single_ms.p50 <= 5)
    assert targets["concurrency mix >= 0.8x baseline"] == (ratios["mix_per_s"] >= 0.8)
    assert None not in targets.values()
    report = result.as_dict()
    assert report["ratios"] == ratios and report["targets"] == targets
    assert report["pgmem"]["search_server_ms"]["p95"] == p.search_server_ms.p95
    assert any("concurrency mix" in m for m in messages)

    table = render_real_markdown({"nproc": 2, "cpu": "test", "postgres": "16"}, [result])
    assert "| recall p50 / p95 / p99, server-side (ms) |" in table
    assert f"vectors of {WordHashEmbedder.model})" in table
    assert f"{ratios['search_server_p95']:.2f}" in table
    assert f"after a VACUUM of {result.vacuum_s:.1f} s" in table
    assert f"| episodes, batched (stated turns/s) | {p.episode_many_per_s:,.0f} |" in table
    with psycopg.connect(server_dsn) as conn:
        gone = conn.execute("select 1 from pg_database where datname = %s", (database,)).fetchone()
    assert gone is None


def test_real_bench_needs_enough_distinct_turns(locomo_file: Path) -> None:
    data = real.RealText.load(locomo_file, WordHashEmbedder())
    with pytest.raises(BenchError, match="distinct turns"):
        real.run("postgresql:///unused", [1_000], data)


def test_cli_refuses_unknown_data_source() -> None:
    result = CliRunner().invoke(app, ["bench", "--data", "nope"])
    assert result.exit_code != 0
