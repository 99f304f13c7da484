"""`pgmem bench --layers`: short-term and working memory at scale, on synthetic data.

One database (created, migrated, dropped unless kept) holds one tenant ``bench``
with ``sessions`` conversations of ``messages / sessions`` turns each, ten sessions
per subject, their turns interleaved in the heap as concurrent conversations leave
them (a system prompt first, a tool call with its result every ten turns), each
session with a summary reaching all but its last ten turns and one running task
with two recorded steps; plus 100 long-term memories per subject (text only) for
the prompt-versus-recall comparison. Then, as ``pgmem_service`` bound to the tenant
(row-level security on):

1. append throughput, server-side: the ``Execution Time`` of ``EXPLAIN (ANALYZE)``
   around one statement appending ``appends`` turns to random sessions (assistant
   turns, then user turns, which also queue an extraction job); and, for
   reference, client-side: one autocommit round trip per append;
2. the reads an agent makes before each LLM call, server-side: window + summary +
   open task of a random session in one statement;
3. ``pgmem.prompt`` (all layers, one budget) against ``pgmem.recall`` (k = 10) for
   the same subjects and queries, both without reinforcement.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.numeric import Int8

from pgmem import schema
from pgmem.lab.bench import (
    TENANT,
    Latency,
    Progress,
    _quiet,
    _tenant_connection,
    bench_database,
    explain_ms,
)
from pgmem.queries import bench_layers as q

SESSIONS_PER_SUBJECT = 10
MEMORIES_PER_SUBJECT = 100
DEFAULT_MESSAGES = 100_000
DEFAULT_SESSIONS = 1_000

# Targets for short-term and working memory (at 1M messages over 10k sessions).
TARGET_APPEND_PER_S = 2_000.0
TARGET_READ_P95_MS = 5.0
TARGET_PROMPT_OVER_RECALL_MS = 3.0


@dataclass
class LayersResult:
    messages: int
    sessions: int
    load_s: float
    table_bytes_per_message: float
    index_bytes_per_message: float
    append_per_s: float  # server-side, assistant turns
    append_user_per_s: float  # server-side, user turns (with the extraction job)
    append_client_per_s: float  # one autocommit round trip each
    appends: int
    read_ms: Latency
    prompt_ms: Latency
    recall_ms: Latency

    def targets(self) -> dict[str, bool]:
        return {
            "append >= 2,000/s (server-side)": self.append_per_s >= TARGET_APPEND_PER_S,
            "window + summary + task p95 <= 5 ms": self.read_ms.p95 <= TARGET_READ_P95_MS,
            "prompt p95 <= recall p95 + 3 ms": (
                self.prompt_ms.p95 <= self.recall_ms.p95 + TARGET_PROMPT_OVER_RECALL_MS
            ),
        }

    def rows(self) -> list[tuple[str, str]]:
        r, p, c = self.read_ms, self.prompt_ms, self.recall_ms
        rows = [
            ("messages / sessions", f"{self.messages:,} / {self.sessions:,}"),
            ("load s", f"{self.load_s:.0f}"),
            (
                "bytes / message (table, indexes)",
                f"{self.table_bytes_per_message:,.0f}, {self.index_bytes_per_message:,.0f}",
            ),
            (
                f"append, turns/s (server-side, {self.appends:,} turns)",
                f"{self.append_per_s:,.0f} assistant, {self.append_user_per_s:,.0f} user",
            ),
            ("append, turns/s (client, autocommit each)", f"{self.append_client_per_s:,.0f}"),
            (
                "window + summary + task, p50 / p95 / p99 ms",
                f"{r.p50:.2f} / {r.p95:.2f} / {r.p99:.2f}",
            ),
            ("prompt, p50 / p95 / p99 ms", f"{p.p50:.2f} / {p.p95:.2f} / {p.p99:.2f}"),
            ("recall k=10, p50 / p95 / p99 ms", f"{c.p50:.2f} / {c.p95:.2f} / {c.p99:.2f}"),
        ]
        rows += [(f"target: {k}", "met" if v else "NOT met") for k, v in self.targets().items()]
        return rows

    def markdown(self) -> str:
        lines = ["| | |", "|---|---:|"]
        lines += [f"| {label} | {value} |" for label, value in self.rows()]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["targets"] = self.targets()
        return d


def run(
    server_dsn: str,
    *,
    messages: int = DEFAULT_MESSAGES,
    sessions: int = DEFAULT_SESSIONS,
    queries: int = 200,
    appends: int = 5_000,
    database: str = "pgmem_bench_layers",
    keep: bool = False,
    progress: Progress = _quiet,
) -> LayersResult:
    """Build the data set in a fresh database named ``database`` and measure it."""
    if sessions < SESSIONS_PER_SUBJECT or messages < sessions:
        raise ValueError(f"need at least {SESSIONS_PER_SUBJECT} sessions and a turn per session")
    with bench_database(server_dsn, database, keep=keep) as dsn:
        progress(f"layers: migrating {database}")
        schema.upgrade(dsn)
        params = {
            "tenant": TENANT,
            "sessions": Int8(sessions),
            "subjects": Int8(sessions // SESSIONS_PER_SUBJECT),
            "per_session": Int8(messages // sessions),
            "memories_per_subject": Int8(MEMORIES_PER_SUBJECT),
        }
        with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
            progress(f"layers: generating {messages:,} turns in {sessions:,} sessions")
            started = time.perf_counter()
            params["now"] = conn.execute(q.NOW).fetchone()["now"]  # type: ignore[index]
            conn.execute(q.SEED)
            for statement in (
                q.CREATE_TENANT,
                q.CREATE_SUBJECTS,
                q.CREATE_SESSIONS,
                q.GENERATE_MESSAGES,
                q.CREATE_SUMMARIES,
                q.CREATE_TASKS,
                q.CREATE_STEPS,
                q.GENERATE_MEMORIES,
                q.ANALYZE,
            ):
                conn.execute(statement, params)
            load_s = time.perf_counter() - started
            sizes = conn.execute(q.SIZES).fetchone()
            assert sizes is not None
            picked = conn.execute(q.PICK_SESSIONS, {**params, "n": Int8(queries + 20)}).fetchall()

        with _tenant_connection(dsn) as conn:
            progress(f"layers: reads ({queries} sessions)")
            for row in picked[:20]:  # warm plans and caches
                explain_ms(conn, q.READ_LAYERS, row)
                explain_ms(conn, q.PROMPT, row)
            reads = [explain_ms(conn, q.READ_LAYERS, row) for row in picked[20:]]
            progress(f"layers: prompt and recall ({queries} queries)")
            prompts = [explain_ms(conn, q.PROMPT, row) for row in picked[20:]]
            recalls = [explain_ms(conn, q.RECALL, row) for row in picked[20:]]
            progress(f"layers: appends ({appends:,} per measure)")
            assistant_ms = explain_ms(
                conn, q.APPEND_MANY, {**params, "n": Int8(appends), "role": "assistant"}
            )
            user_ms = explain_ms(
                conn, q.APPEND_MANY, {**params, "n": Int8(appends), "role": "user"}
            )
            client = picked[20:]
            started = time.perf_counter()
            for i in range(appends):
                conn.execute(q.APPEND_ONE, client[i % len(client)])
            client_s = time.perf_counter() - started

    messages_stored = int(sizes["messages"])
    return LayersResult(
        messages=messages_stored,
        sessions=int(sizes["sessions"]),
        load_s=load_s,
        table_bytes_per_message=sizes["table_bytes"] / messages_stored,
        index_bytes_per_message=sizes["index_bytes"] / messages_stored,
        append_per_s=appends / (assistant_ms / 1000),
        append_user_per_s=appends / (user_ms / 1000),
        append_client_per_s=appends / client_s,
        appends=appends,
        read_ms=Latency.of(reads),
        prompt_ms=Latency.of(prompts),
        recall_ms=Latency.of(recalls),
    )
